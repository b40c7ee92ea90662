"""Making response bytes safe to hand to lexbor: markup that would make it quadratic or huge.

Lexbor's tree builder walks the stack of open elements for many tags, so a page nested N deep
costs O(N^2) (100k nested <div> take ~20 s), and its tree costs ~0.5 KiB per element. `defuse`
turns elements nested deeper than DEPTH_LIMIT into text and drops the markup after MAX_TAGS
tags. It runs on the event loop before every parse, so the common case is cheap: a small page
with fewer tags than the alarm depth cannot nest deeper (one `bytes.count`, ~0.5 us per KB),
and the nesting of the others is estimated vectorized (numpy, imported at the first such page):
~0.1 ms per 100 KB. Markup can still be built to make lexbor slow (see
`_escape_deep_nesting` and MAX_ATTRIBUTES); a host that has served such a page gets `strict`
screening, which follows the HTML tokenizer's tag states (~12 ms per MB) and keeps fewer tags.
"""

from __future__ import annotations

import logging
import re

__all__ = ["DEPTH_LIMIT", "MAX_ATTRIBUTES", "MAX_TAGS", "STRICT_MAX_TAGS", "defuse"]

logger = logging.getLogger(__name__)

DEPTH_LIMIT = 512
"""Element nesting kept when a page is pathologically deep (browsers cap the tree similarly)."""

MAX_TAGS = 200_000
"""Tags parsed at most. Lexbor's tree costs about 0.5 KiB per element, so a 10 MiB body of
nothing but tags would take 0.5 GiB; markup from the (MAX_TAGS + 1)-th "<" left by the
deep-nesting guard on is dropped."""

STRICT_MAX_TAGS = 10_000
"""Tags parsed at most in strict mode (pages of a host that has served markup built to be slow)."""

MAX_ATTRIBUTES = 64
"""Strict mode turns tags with this many attributes or more into text: lexbor checks each new
attribute against the element's others, so 40,000 distinct attributes on one element take ~3 s."""

_LT, _SLASH = ord("<"), ord("/")
_GUARD_BLOCK = 1 << 18  # bytes per vectorized step of the nesting estimate (~10 MB of arrays)
_DEPTH_ALARM = 2 * DEPTH_LIMIT
_COUNT_BYTES = 32 * 1024  # bodies up to this size have their "<" counted before any estimate
_TAG_RE = re.compile(rb"<(/?)([A-Za-z][^\t\n\f\r />]*)")
_VOID = frozenset(
    b"area base br col embed hr img input keygen link meta param source track wbr".split()
)
# Never hidden: elements we read, raw-text elements (hiding one would turn its text into markup),
# and containers whose content must stay out of the document (template) or foreign (svg, math).
_KEEP = frozenset(
    b"a area base link meta title script style textarea xmp iframe noembed noframes noscript"
    b" plaintext template svg math".split()
)


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
    text, then everything from the (MAX_TAGS + 1)-th "<" on dropped. `strict` (for a host
    that has served markup built to be slow) also turns into text the tags with MAX_ATTRIBUTES
    attributes or more or a "<" inside, and keeps STRICT_MAX_TAGS tags: the nesting estimate
    can be fooled (see `_escape_deep_nesting`), the tag cap bounds what that costs."""
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
    tags, peak = _tag_profile(data)
    if peak > _DEPTH_ALARM:
        data = _escape_deep_nesting(data)
        tags = data.count(b"<")  # escaped tags create no elements
    if tags <= max_tags:
        return data
    import numpy as np

    cut = int(np.flatnonzero(np.frombuffer(data, np.uint8) == _LT)[max_tags])
    logger.warning("%s: more than %d tags, the rest of the page is not parsed", url, max_tags)
    return data[:cut]


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


def _tag_profile(data: bytes, block: int = _GUARD_BLOCK) -> tuple[int, int]:
    """(number of "<", an over-estimate of the deepest element nesting) of `data`.

    Each "<" opens an element and each "</" closes one (so void elements count as opens), the
    depth floored at zero. Vectorized over the positions of the "<", `block` bytes at a time
    (bounding the index arrays of a huge body): with S the running sum of the +1/-1 steps, the
    floored depth is S - min(0, lowest S so far).
    """
    import numpy as np  # here: a crawl of small pages never needs it (see _COUNT_BYTES)

    a = np.frombuffer(data, np.uint8)
    tags = peak = level = 0
    for start in range(0, len(a), block):
        window = a[start : start + block + 1]  # and the byte after the block's last "<"
        pos = np.flatnonzero(window[:block] == _LT)
        if not len(pos):
            continue
        tags += len(pos)
        after = window.take(np.minimum(pos + 1, len(window) - 1))
        steps = np.where(after == _SLASH, -1, 1)
        steps[0] += level
        depth = np.cumsum(steps)
        low = np.minimum.accumulate(depth)
        np.minimum(low, 0, out=low)
        depth -= low
        peak = max(peak, int(depth.max()))
        level = int(depth[-1])
    return tags, peak


def _escape_deep_nesting(data: bytes) -> bytes:
    """Return `data`, with elements nested deeper than DEPTH_LIMIT turned into text.

    Lexbor's tree builder walks the stack of open elements for many tags, so a page nested N
    deep costs O(N^2) (100k nested <div> take ~20 s). `_tag_profile` spots such pages cheaply;
    only those get this tag-by-tag pass that escapes the "<" of start tags beyond the limit (and
    of their end tags) as "&lt;". Links, meta, base, title and raw-text elements are never
    touched, and "&lt;" decodes back to "<" inside attribute values and titles.

    Known gap: the estimate counts every "</" as a close, so end tags that close nothing
    ("<div></b>" repeated) hide the nesting; lexbor still nests (100k such pairs, 900 KB: ~20 s,
    bounded by MAX_TAGS; logged by markup.parse_tree; meanwhile the crawl's Parser adds a spare
    thread, and screens the host's later pages strictly: STRICT_MAX_TAGS bounds their nesting,
    see crawler.parsing). Counting closes per tag name would not close the gap either:
    an end tag also closes nothing across a <div>, <table>... (the tree builder's "special"
    elements), which only a tag-by-tag model of the builder tells.
    """
    pieces: list[bytes] = []
    last = 0
    depth = 0
    hidden: dict[bytes, int] = {}
    for match in _TAG_RE.finditer(data):
        name = match.group(2).lower()
        if name in _VOID:
            continue
        if match.group(1):
            if hidden.get(name):
                hidden[name] -= 1
            else:
                depth = max(depth - 1, 0)
                continue
        elif depth < DEPTH_LIMIT or name in _KEEP:
            depth += 1
            continue
        else:
            hidden[name] = hidden.get(name, 0) + 1
        pieces.append(data[last : match.start()])
        pieces.append(b"&lt;")
        last = match.start() + 1
    if not pieces:
        return data
    logger.debug("defused %d deeply nested tags", len(pieces) // 2)
    pieces.append(data[last:])
    return b"".join(pieces)
