"""Link extraction from fetched pages (selectolax / lexbor).

`extract` turns a response body into a `Page`: the hrefs to follow (``a[href]`` and
``area[href]``, in document order), the base URL they resolve against, the page's title and
canonical URL, and the robots directives that apply to it (``<meta name=robots>``,
``<meta name=TOKEN>`` and the ``X-Robots-Tag`` header). It never raises on what a server sends:
binary bodies, lying or missing Content-Types, unknown charsets, invalid UTF-8, BOMs and absurdly
deep nesting all still produce a `Page` record.

`extract` is `read_page(parse_markup(...))`: `crawler.parse.markup` turns the bytes into a `Markup`
record (the crawl parses big bodies in a parse thread, see `crawler.parse.thread`), and `read_page`
interprets it (robots directives, base, canonical, nofollow; pure Python).

For a focused crawl, ``extract(..., anchors=True, text=True)`` also reads each link's anchor text,
rel and surrounding text (`Page.anchors`) and the page's `PageText` (`Page.text`); without them
the tree is read exactly as before (nothing extra is computed).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urljoin

from crawler.focus.scoring import PageText
from crawler.parse.markup import TITLE_MAX_CHARS, Markup, parse_markup, refresh_url
from crawler.parse.sniff import is_html
from crawler.urls.canonical import document_base
from crawler.urls.syntax import STRIP, legacy_query

__all__ = ["TITLE_MAX_CHARS", "Page", "extract", "is_html", "read_page"]


T = TypeVar("T")

_HTTP = ("http://", "https://")
MAX_CANONICAL = 2048  # characters of a rel=canonical URL kept (as [scope] max_url_length's default)

logger = logging.getLogger(__name__)

# X-Robots-Tag: "name: value" directives that are not user-agent scopes.
_VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)
_UA_SCOPE_RE = re.compile(r"[a-z0-9_*][a-z0-9_.*-]*\Z")


@dataclass(frozen=True, slots=True, repr=False)
class Page:
    """What one response body yields. Always produced, whatever the body holds."""

    is_html: bool
    charset: str | None
    title: str | None
    base: str
    canonical: str | None
    links: tuple[str, ...]
    links_found: int
    nofollow_skipped: int
    truncated: bool
    noindex: bool
    nofollow: bool
    # per distinct href, fragment cut: (anchor, rel, context), if read (see `Markup.anchors`)
    anchors: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    text: PageText | None = None  # the page's text, if read (a focused crawl)

    def __repr__(self) -> str:
        return (
            f"Page(is_html={self.is_html}, charset={self.charset!r}, title={self.title!r}, "
            f"base={self.base!r}, canonical={self.canonical!r}, links={len(self.links)}/"
            f"{self.links_found} (nofollow_skipped={self.nofollow_skipped}, "
            f"truncated={self.truncated}), noindex={self.noindex}, nofollow={self.nofollow})"
        )


def extract(
    body: bytes,
    url: str,
    *,
    content_type: str | None = None,
    x_robots_tag: str | Sequence[str] | None = None,
    respect_nofollow: bool = True,
    max_links: int = 10_000,
    user_agent_token: str | None = None,
    anchors: bool = False,
    text: bool = False,
) -> Page:
    """Parse one response body fetched from `url`.

    `x_robots_tag` is the header's value, or all its values when it was sent several times (each
    is then scoped on its own). Directives scoped to a user agent ("googlebot: nofollow") apply
    only when the scope equals `user_agent_token` (case-insensitive, the part before any "/");
    `<meta name=TOKEN>` is read alongside `<meta name=robots>` likewise. With `respect_nofollow`,
    links with rel=nofollow are skipped and a nofollow page yields no links. At most `max_links`
    distinct links are kept, the first in document order, each with all its repeats (a href
    repeated, or differing only from its "#" on, is one link; `truncated` tells, and a WARNING on
    `crawler.parse.links` names the page); `links_found` counts every a/area href (and frame src,
    refresh target, and a frameset page's <noframes> links) seen. `anchors` and `text` read what
    a focused crawl scores (see `crawler.parse.markup.read_tree`).

    Raises ValueError only for bad arguments (a negative `max_links`, a non-bytes body).
    """
    markup = parse_markup(_as_bytes(body), url, content_type, anchors=anchors, text=text)
    return read_page(
        markup,
        url,
        x_robots_tag=x_robots_tag,
        respect_nofollow=respect_nofollow,
        max_links=max_links,
        user_agent_token=user_agent_token,
    )


def read_page(
    markup: Markup,
    url: str,
    *,
    x_robots_tag: str | Sequence[str] | None = None,
    respect_nofollow: bool = True,
    max_links: int = 10_000,
    user_agent_token: str | None = None,
    refresh: str | None = None,
) -> Page:
    """The `Page` of a body parsed by `parse_markup` (arguments as for `extract`); `refresh`:
    the value of a (non-standard, widely followed) ``Refresh`` response header, whose URL is a
    link of the page after the others."""
    _check_max_links(max_links)
    ua = _ua_token(user_agent_token)
    noindex, nofollow = _header_robots(x_robots_tag, ua)
    charset = markup.charset
    for name, content in markup.metas:
        if name == "robots" or (ua is not None and name == ua):
            meta_noindex, meta_nofollow = _robots_directives(content, ua)
            noindex |= meta_noindex
            nofollow |= meta_nofollow

    hrefs, base_href, href = markup.hrefs, markup.base_href, markup.canonical_href
    anchors = markup.anchors
    if refresh and (target := refresh_url(refresh)):
        hrefs = (*hrefs, target)
    if charset is not None and not charset.startswith("utf"):  # a legacy charset's queries
        hrefs = tuple([legacy_query(h, charset) for h in hrefs])
        base_href = None if base_href is None else legacy_query(base_href, charset)
        href = None if href is None else legacy_query(href, charset)
        if anchors:
            encoded: dict[str, tuple[str, str, str]] = {}
            for h, details in anchors.items():
                encoded.setdefault(legacy_query(h, charset), details)
            anchors = encoded
    base = url
    if base_href is not None:
        base = document_base(url, base_href)
    canonical = _join(base if base.startswith(_HTTP) else url, href) if href else None
    if canonical is not None and len(canonical) > MAX_CANONICAL:
        canonical = None  # a hostile page's megabyte of rel=canonical would bloat its record

    found, title = len(hrefs), markup.title
    text = None
    if markup.text is not None:
        text = PageText(url, title or "", *markup.text)
    if nofollow and respect_nofollow:
        return Page(markup.is_html, charset, title, base, canonical, (), found, found, False,
                    noindex, True, {}, text)  # fmt: skip
    skipped = 0
    if respect_nofollow and markup.nofollow:
        skipped = len(markup.nofollow)
        hrefs = _without(hrefs, markup.nofollow)
    links, truncated = hrefs, False
    if len(hrefs) > max_links:  # only then can it hold more distinct links than that
        links, truncated = _first_distinct(hrefs, max_links, url)
    return Page(
        markup.is_html, charset, title, base, canonical, links, found, skipped, truncated,
        noindex, nofollow, anchors, text,
    )  # fmt: skip


def _without(items: tuple[T, ...], skipped: tuple[int, ...]) -> tuple[T, ...]:
    """`items` without the ones at the (ascending) indices `skipped`."""
    kept: list[T] = []
    start = 0
    for i in skipped:  # copy the runs between skipped items
        kept += items[start:i]
        start = i + 1
    kept += items[start:]
    return tuple(kept)


def _first_distinct(hrefs: tuple[str, ...], limit: int, url: str) -> tuple[tuple[str, ...], bool]:
    """The occurrences in `hrefs` of its first `limit` distinct links (fragment cut), and
    whether any link was left out (logged). A page repeats its links: javadoc's index pages
    hold ~25,000 hrefs to ~2,700 URLs, and a cap on hrefs lost a third of those URLs."""
    kept: set[str] = set()
    left_out: set[str] = set()
    for href in hrefs:
        cut = href.partition("#")[0]
        if cut not in kept:
            if len(kept) < limit:
                kept.add(cut)
            else:
                left_out.add(cut)
    if not left_out:
        return hrefs, False
    logger.warning(
        "%s: %d distinct links, the first %d taken ([scope] max_links_per_page)",
        url, len(kept) + len(left_out), limit,
    )  # fmt: skip
    return tuple([h for h in hrefs if h.partition("#")[0] in kept]), True


def _check_max_links(max_links: object) -> None:
    if isinstance(max_links, bool) or not isinstance(max_links, int) or max_links < 0:
        raise ValueError(f"max_links must be a non-negative int, got {max_links!r}")


def _as_bytes(body: object) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, bytearray | memoryview):
        return bytes(body)
    raise ValueError(f"body must be bytes, got {type(body).__name__}")


def _ua_token(user_agent_token: str | None) -> str | None:
    if user_agent_token is None:
        return None
    token = user_agent_token.partition("/")[0].strip().lower()
    return token or None


def _header_robots(value: str | Sequence[str] | None, ua: str | None) -> tuple[bool, bool]:
    """(noindex, nofollow) from X-Robots-Tag value(s); each value starts unscoped."""
    if value is None:
        return False, False
    values = [value] if isinstance(value, str) else value
    noindex = nofollow = False
    for one in values:
        one_noindex, one_nofollow = _robots_directives(one, ua, scoped=True)
        noindex |= one_noindex
        nofollow |= one_nofollow
    return noindex, nofollow


def _robots_directives(value: str, ua: str | None, *, scoped: bool = False) -> tuple[bool, bool]:
    """(noindex, nofollow) from a comma-separated robots directive list.

    With `scoped` (X-Robots-Tag), "name: directives" switches the scope to user agent `name` for
    the directives that follow it; they apply only when `name` is `ua` (or "*").
    """
    noindex = nofollow = False
    applies = True
    for raw in value.lower().split(","):
        part = raw.strip()
        if scoped and ":" in part:
            scope, _, rest = part.partition(":")
            scope = scope.strip()
            if scope not in _VALUED_DIRECTIVES and _UA_SCOPE_RE.match(scope):
                applies = scope == "*" or scope == ua
                part = rest
        if not applies:
            continue
        for directive in part.split():
            if directive == "noindex":
                noindex = True
            elif directive == "nofollow":
                nofollow = True
            elif directive == "none":
                noindex = nofollow = True
    return noindex, nofollow


def _join(base: str, href: str) -> str | None:
    try:
        return urljoin(base, href.strip(STRIP))
    except ValueError:  # e.g. an unbalanced IPv6 bracket
        return None
