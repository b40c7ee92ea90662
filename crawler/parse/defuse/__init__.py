"""Making response bytes safe to hand to lexbor: markup that would make it quadratic or huge.

Lexbor's tree builder walks the stack of open elements for many tags, so a page nested N deep
costs O(N^2) (100k nested <div> take ~20 s), and its tree costs ~0.5 KiB per element. `defuse`
turns elements nested deeper than DEPTH_LIMIT into text and drops the markup after MAX_TAGS
tags but for its links (`crawler.parse.defuse.tail`). It runs on the event loop before every parse,
so the common case is cheap, in three steps that each look closer at fewer pages:
1. a small page with fewer tags than the alarm depth cannot nest deeper (one `bytes.count`,
   ~0.5 us per KB);
2. `estimate.tag_profile` counts "<" as opens and "</" as closes (numpy, imported at the first
   such page; ~0.1 ms per 100 KB); where it alarms (a long list whose `</li>` are left out,
   a page of inline SVG icons, a thousand `<br>`), `estimate.named_peak` reads tag names and
   counts as the tree builder does (~0.25 us a tag: ~4 ms per MB of tag-dense pages, 128 KiB
   at a time);
3. only where that alarms too, `model.escape_deep_nesting` follows the tree builder's stack of
   open elements tag by tag (~1 us a tag) and turns the elements beyond DEPTH_LIMIT into text.
On the sqlite3-doc site, the count alarms on 20 of 766 pages (syntax diagrams in SVG, the
changelog's lists), the names on none: every page reaches lexbor unchanged. Markup can still be
built to make lexbor slow (end tags that close nothing hide nesting from the estimates, see
`crawler.parse.defuse.estimate`; MAX_ATTRIBUTES); a host that has served such a page gets `strict`
screening, which follows the HTML tokenizer's tag states (~12 ms per MB) and keeps fewer tags.
"""

from __future__ import annotations

import logging
import re

from crawler.parse.defuse.estimate import named_peak, tag_profile
from crawler.parse.defuse.model import escape_deep_nesting
from crawler.parse.defuse.tail import tail_links

__all__ = ["DEPTH_LIMIT", "MAX_ATTRIBUTES", "MAX_TAGS", "STRICT_MAX_TAGS", "defuse"]

logger = logging.getLogger(__name__)

DEPTH_LIMIT = 512
"""Element nesting kept when a page is pathologically deep (browsers cap the tree similarly)."""

MAX_TAGS = 200_000
"""Tags parsed at most. Lexbor's tree costs about 0.5 KiB per element, so a 10 MiB body of
nothing but tags would take 0.5 GiB; markup from the (MAX_TAGS + 1)-th "<" left by the
deep-nesting guard on is dropped, but for its links (`crawler.parse.defuse.tail`)."""

STRICT_MAX_TAGS = 10_000
"""Tags parsed at most in strict mode (pages of a host that has served markup built to be slow)."""

MAX_ATTRIBUTES = 64
"""Strict mode turns tags with this many attributes or more into text: lexbor checks each new
attribute against the element's others, so 40,000 distinct attributes on one element take ~3 s."""

_LT, _SLASH = ord("<"), ord("/")
_DEPTH_ALARM = 2 * DEPTH_LIMIT
_COUNT_BYTES = 32 * 1024  # bodies up to this size have their "<" counted before any estimate


# Strict screening follows the HTML tokenizer's tag states (WHATWG 13.2.5.6-13.2.5.40) from every
# "<" + letter, wherever it is: whether lexbor sees a tag there depends on the tree builder
# (comments, scripts, CDATA in SVG...), which a scan cannot follow. A tag is passed over whole
# only if it is "clean": under MAX_ATTRIBUTES attributes and no "<" up to its end, so no other
# tag can start inside what is skipped. Every other "<" + letter is escaped ("&lt;"), and the
# scan goes on right after it. Quantifiers are possessive or atomic: the scan is linear.
_WS = rb"[\t\n\f\r ]*+"
_NOT = rb"\t\n\f\r /><"  # bytes that end a tag or attribute name (and "<": not clean)
# a value, once "=" is there: quoted if it starts with a quote (never retried as unquoted)
_CLEAN_VALUE = rb"(?:\"[^\"<]*+(?:\"|\Z)|'[^'<]*+(?:'|\Z)|(?:[^\"'\t\n\f\r ><][^\t\n\f\r ><]*+)?)"
_CLEAN_ATTRIBUTE = (
    rb"(?>[^" + _NOT + rb"][^=" + _NOT + rb"]*+(?:" + _WS + rb"=" + _WS + _CLEAN_VALUE
    + rb"|(?!" + _WS + rb"=)))"
)  # fmt: skip
_SEP = rb"[\t\n\f\r /]*+"  # between attributes: whitespace, or "/" not followed by ">"
_CLEAN_TAG = (
    rb"</?[A-Za-z][^" + _NOT + rb"]*+(?:" + _SEP + _CLEAN_ATTRIBUTE
    + rb"){0,%d}+" % (MAX_ATTRIBUTES - 1) + _SEP + rb"(?:>|\Z)"
)  # fmt: skip
_UP_TO_UNCLEAN = re.compile(rb"(?:" + _CLEAN_TAG + rb"|[^<]++|<(?!/?[A-Za-z]))*+")


def defuse(data: bytes, url: str, *, strict: bool = False) -> bytes:
    """`data` made safe to hand to lexbor: elements nested deeper than DEPTH_LIMIT turned into
    text, then everything from the (MAX_TAGS + 1)-th "<" on dropped but for the links a
    scan finds there (`crawler.parse.defuse.tail`: bare <a> tags appended). `strict` (for a host
    that has served markup built to be slow) also turns into text the tags with MAX_ATTRIBUTES
    attributes or more or a "<" inside, and keeps STRICT_MAX_TAGS tags: the nesting estimates
    can be fooled (see `crawler.parse.defuse.estimate`), the tag cap bounds what that costs."""
    if len(data) <= _DEPTH_ALARM:  # fewer "<" than the alarm: nothing to defuse
        return data
    max_tags = MAX_TAGS
    if strict:
        data = _escape_unclean_tags(data, url)
        max_tags = STRICT_MAX_TAGS
    if len(data) <= _COUNT_BYTES and data.count(b"<") <= _DEPTH_ALARM:
        # No element can nest deeper than the tags there are, and the tag caps are higher:
        # counting (~0.5 us per KB) beats numpy's fixed cost on a small page.
        return data
    tags, peak = tag_profile(data)
    if peak > _DEPTH_ALARM and named_peak(data) > _DEPTH_ALARM:
        data, escaped = escape_deep_nesting(data, DEPTH_LIMIT)
        if escaped:
            logger.debug("%s: defused %d deeply nested tags", url, escaped)
            tags = data.count(b"<")  # escaped tags create no elements
    if tags <= max_tags:
        return data
    import numpy as np

    cut = int(np.flatnonzero(np.frombuffer(data, np.uint8) == _LT)[max_tags])
    # past the cap, only the links are read (by a scan: crawler.parse.defuse.tail); not in strict
    # mode, whose cap bounds the time markup built to be slow costs
    links = b"" if strict else tail_links(data[cut:])
    logger.warning(
        "%s: more than %d tags, the rest of the page is not parsed%s", url, max_tags,
        f" but for its links ({links.count(b'<a ')}, read by a scan)" if links else "",
    )  # fmt: skip
    return data[:cut] + links


def _escape_unclean_tags(data: bytes, url: str) -> bytes:
    """`data` with the "<" of every tag that is not clean (see above) escaped."""
    pieces: list[bytes] = []
    start = 0
    # always matches (maybe nothing); where it stops, an unclean tag starts
    while (end := _UP_TO_UNCLEAN.match(data, start).end()) < len(data):  # type: ignore[union-attr]
        pieces += (data[start:end], b"&lt;")
        start = end + 1
    if not pieces:
        return data
    logger.warning(
        "%s: escaped %d tags with %d attributes or more, or a '<' inside", url,
        len(pieces) // 2, MAX_ATTRIBUTES,
    )  # fmt: skip
    pieces.append(data[start:])
    return b"".join(pieces)
