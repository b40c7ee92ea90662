"""The links of the markup `crawler.parse.defuse` drops past its tag cap, read by a scan.

A page of more than MAX_TAGS tags is parsed up to its cap only (lexbor's tree costs ~0.5 KiB
an element); without more, the links past it were lost: javadoc's class-use/String.html
(~206,700 tags: its last ~900 hrefs) and Node's all.html (238,212 tags: 2,483 hrefs) are real
pages of that size. `tail_links` scans the dropped markup for ``<a>`` and ``<area>`` start tags
(their ``href`` and ``rel``, the attributes read one after another so that a quoted value is
never taken for an attribute) and writes each distinct href once as a bare ``<a href rel>``,
at most TAIL_LINKS of them: appended to the kept markup, they are read like any link of the
page (in document order, after the others; without anchor text). Linear (possessive
quantifiers). Markup the scan cannot see as the tree builder would (an ``<a>`` inside a
comment or a script past the cap) may add a link a browser would not show.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["TAIL_LINKS", "tail_links"]

TAIL_LINKS: Final = 10_000
"""Distinct hrefs read past the tag cap at most (the default `max_links_per_page`)."""

_WS = rb"[\t\n\f\r ]"
_START = re.compile(rb"<(?:a|area)(?=[\t\n\f\r />])([^>]*+)", re.IGNORECASE)
_ATTRIBUTE = re.compile(
    rb"[\t\n\f\r /]*+([^\t\n\f\r />=][^\t\n\f\r />=]*+)(?:" + _WS + rb"*+=" + _WS
    + rb"*+(?:\"([^\"]*+)\"?|'([^']*+)'?|([^\t\n\f\r >]*+)))?"
)  # fmt: skip
# what may be open where the cap cut: a comment, a raw-text element
_CLOSE: Final = b"--></script></style></textarea></title>"


def tail_links(dropped: bytes, limit: int = TAIL_LINKS) -> bytes:
    """Bare ``<a>`` tags for the distinct a/area hrefs of `dropped` markup (the first `limit`),
    behind end tags for what may still be open; b"" when it has none."""
    seen: dict[bytes, bytes] = {}
    for start in _START.finditer(dropped):
        href = rel = None
        for attr in _ATTRIBUTE.finditer(start.group(1)):
            name = attr.group(1).lower()
            if name in (b"href", b"rel"):
                value = attr.group(2) or attr.group(3) or attr.group(4) or b""
                if name == b"href" and href is None:
                    href = value
                elif name == b"rel" and rel is None:
                    rel = value
        if href is None or href in seen:
            continue
        seen[href] = rel or b""
        if len(seen) >= limit:
            break
    if not seen:
        return b""
    tags = (
        b'<a href="%s"%s></a>' % (_quoted(h), b' rel="%s"' % _quoted(r) if r else b"")
        for h, r in seen.items()
    )
    return _CLOSE + b"".join(tags)


def _quoted(value: bytes) -> bytes:
    return value.replace(b'"', b"&quot;")
