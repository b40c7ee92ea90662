"""The rendered DOM read as the crawl reads markup: `merged` (static and rendered in one).

The serialized DOM goes through the crawl's own parse (`crawler.parse`): its links, metas, title,
text and main content are read as a static page's are. `merged` adds what the serialization
cannot hold (the links of open shadow roots, the navigations the page's scripts tried) and the
static HTML's links the scripts removed, so a rendered page's links are never fewer than its
static ones: its title is the rendered one (else the static one), its robots metas both (a
``nofollow`` in either holds), its text the rendered DOM's (the focus scorer's and the content
fingerprint's input).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from crawler.parse.markup import Markup

__all__ = ["merged"]


def merged(static: Markup, rendered: Markup, extra: Iterable[tuple[str, bool]] = ()) -> Markup:
    """`rendered` with `extra` links (href, nofollow) after its own, then the links of
    `static` it does not have; metas of both; title, base and canonical rendered first."""
    hrefs = list(rendered.hrefs)
    nofollow = list(rendered.nofollow)
    seen = set(hrefs)
    for href, skip in extra:
        if href not in seen:
            seen.add(href)
            if skip:
                nofollow.append(len(hrefs))
            hrefs.append(href)
    static_nofollow = set(static.nofollow)
    for i, href in enumerate(static.hrefs):
        if href not in seen:
            seen.add(href)
            if i in static_nofollow:
                nofollow.append(len(hrefs))
            hrefs.append(href)
    metas = tuple(dict.fromkeys((*static.metas, *rendered.metas)))
    return dataclasses.replace(
        rendered,
        hrefs=tuple(hrefs),
        nofollow=tuple(nofollow),
        metas=metas,
        title=rendered.title or static.title,
        base_href=rendered.base_href or static.base_href,
        canonical_href=rendered.canonical_href or static.canonical_href,
    )
