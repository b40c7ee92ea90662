"""Cheap estimates of how deep a page's elements nest, vectorized with numpy (imported at the
first page that needs them: a crawl of small pages never does).

- `tag_profile`: every "<" opens an element and every "</" closes one, the depth floored at
  zero (~0.1 ms per 100 KB). It counts a void `<br>`, a `<li>` whose `</li>` the page leaves
  out (the next `<li>` closes it) or an SVG `<path/>` as an element that stays open, so long
  lists and pages of inline icons look thousands deep.
- `named_peak`, for the pages `tag_profile` alarms on: reads each tag's name (its first 8
  bytes) and counts as the tree builder does where a count is far off: void elements open
  nothing; "<x/>" closes itself in foreign content (from `<svg>`/`<math>` to its end tag, or to
  a tag that breaks out of it, `<div>` and the like); and the elements that close one another
  are bounded by what must lie between two of them in the stack of open elements: two `<li>`
  only with a special element other than address, div and p between them (`<ul>`, `<dd>`...),
  likewise `<dd>`/`<dt>`; two `<p>` only with a scope boundary (`<table>`, `<td>`,
  `<button>`...) between them; two headings, or two `<option>`, only with another element
  between them; a table's rows, sections and cells at most 3 per open table (implied or not).
  Counts are kept per group of names (li, dd/dt, p, headings, option, table, table parts,
  other special elements, the rest), each floored at zero (~0.25 us a tag). Inline SVG's
  `<path/>`, `<title>` and such are read as foreign content: a page of 800 icons is 4 deep.

Both are estimates, not the tree builder (see `crawler.parse.defuse.model` for the model it defers
to when they alarm): an end tag counts as closing an element of its group even where the tree
builder ignores it, so markup built for that (`<div></b>` repeated) hides its nesting from
both, as do tags hidden in comments or raw text from `named_peak`'s foreign-content regions.
`crawler.parse.defuse` says what bounds that.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from crawler.parse.defuse.names import (
    BREAKOUT,
    HEADINGS,
    INTEGRATION_POINTS,
    KEEP,
    SPECIAL,
    TABLE_PARTS,
    VOID,
)

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["named_peak", "tag_profile"]

_LT, _GT, _SLASH, _EQUALS = ord("<"), ord(">"), ord("/"), ord("=")
_GUARD_BLOCK = 1 << 18  # bytes per step of `tag_profile` (~10 MB of arrays)
_NAMED_BLOCK = 1 << 17  # bytes per step of `named_peak` (its arrays: ~200 bytes per tag)
_TAG_REACH = 1 << 12  # how far past a step's bytes its tags' ">" are looked for
_MARKED = bytes(c in b"<>\"'=" for c in range(256))  # the bytes `named_peak` needs the places of
_FIELD_BITS = 20  # `_self_closing` counts '"', "'" and "=" at once, each in a field of these bits
# the groups counted apart, and the flags of a name
_OTHER, _SPECIAL, _LI, _DD, _P, _HEADING, _OPTION, _TABLE, _CELL = range(9)
_VOID_FLAG, _BREAKOUT_FLAG, _FOREIGN_FLAG, _INTEGRATION_FLAG, _END_BREAKOUT_FLAG = 1, 2, 4, 8, 16


def _key(name: bytes) -> int:
    """A name's first 8 bytes as a little-endian integer (the key `named_peak` reads)."""
    return int.from_bytes(name[:8].ljust(8, b"\0"), "little")


@cache
def _tables() -> tuple[Any, ...]:
    """The lookup tables of `named_peak`: sorted name keys with their groups and flags (and a
    last entry no key reaches) and byte classes."""
    import numpy as np

    names = BREAKOUT | INTEGRATION_POINTS | KEEP | SPECIAL | TABLE_PARTS | VOID
    names |= {b"font", b"html", b"body", b"head", b"svg", b"math", b"option"}
    groups = {b"li": _LI, b"dd": _DD, b"dt": _DD, b"p": _P, b"option": _OPTION, b"table": _TABLE}
    groups |= dict.fromkeys(HEADINGS, _HEADING)
    groups |= dict.fromkeys(TABLE_PARTS - {b"table"}, _CELL)
    rows: dict[int, tuple[int, int]] = {}
    for name in sorted(names):
        group = groups.get(name, _SPECIAL if name in SPECIAL else _OTHER)
        if name in (b"address", b"div"):  # special, but no boundary for li, dd, p
            group = _OTHER
        flags = _VOID_FLAG if name in VOID | {b"html", b"body", b"head"} else 0
        flags |= _BREAKOUT_FLAG if name in BREAKOUT | {b"font"} else 0
        flags |= _FOREIGN_FLAG if name in (b"svg", b"math") else 0
        flags |= _INTEGRATION_FLAG if name in INTEGRATION_POINTS else 0
        flags |= _END_BREAKOUT_FLAG if name in (b"p", b"br") else 0
        rows[_key(name)] = (group, flags)
    keys = sorted(rows)
    table_keys = np.array([*keys, (1 << 64) - 1], dtype=np.uint64)
    table_groups = np.array([rows[k][0] for k in keys] + [_OTHER], dtype=np.int8)
    table_flags = np.array([rows[k][1] for k in keys] + [0], dtype=np.uint8)
    letter = np.zeros(256, dtype=bool)
    letter[np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", np.uint8)] = True
    ends_name = np.zeros(256, dtype=bool)  # and the zeros after the body
    ends_name[np.frombuffer(b"\0\t\n\f\r />", np.uint8)] = True
    ends_value = np.zeros(256, dtype=bool)  # before the "/" of "/>": the tag is self-closing
    ends_value[np.frombuffer(b"\"'\t\n\f\r ", np.uint8)] = True
    return table_keys, table_groups, table_flags, letter, ends_name, ends_value


@cache
def _count_fields() -> npt.NDArray[Any]:
    """Per byte value, what it adds to `_self_closing`'s packed count (int64): 1 for '"',
    2**_FIELD_BITS for "'", 2**(2 * _FIELD_BITS) for "=", 0 for the rest."""
    import numpy as np

    fields = np.zeros(256, dtype=np.int64)
    for n, byte in enumerate(b"\"'="):
        fields[byte] = 1 << (n * _FIELD_BITS)
    return fields


def tag_profile(data: bytes, block: int = _GUARD_BLOCK) -> tuple[int, int]:
    """(number of "<", an over-estimate of the deepest element nesting) of `data`.

    Vectorized over the positions of the "<", `block` bytes at a time (bounding the index
    arrays of a huge body): with S the running sum of the +1/-1 steps, the floored depth is
    S - min(0, lowest S so far).
    """
    import numpy as np

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


def named_peak(data: bytes, block: int = _NAMED_BLOCK) -> int:
    """An estimate of the deepest element nesting of `data` that reads tag names (see above),
    `block` bytes at a time (~200 bytes of arrays per tag in a block)."""
    import numpy as np

    buf = np.zeros(len(data) + 16, dtype=np.uint8)  # zeros after the body: no gather runs off
    buf[: len(data)] = np.frombuffer(data, np.uint8)
    # True at each byte whose position is needed (bytes.translate: ~3x quicker than a gather)
    marks = np.frombuffer(data.translate(_MARKED), dtype=bool)
    state = _Carry()
    peak = 0
    for start in range(0, len(data), block):
        peak = max(peak, _block_peak(buf, marks, start, min(start + block, len(data)), state))
    return peak


class _Carry:
    """What `named_peak` carries from one block to the next: the floored count of each group
    of names, the last foreign-content events (as tag numbers), the tags read so far."""

    __slots__ = ("counts", "events", "tags")

    def __init__(self) -> None:
        self.counts = [0] * _CELL
        self.events = [-1, -1, -1, -1]  # foreign start, stop, integration point in, out
        self.tags = 0

    def __repr__(self) -> str:
        return f"<_Carry tags={self.tags} counts={self.counts} events={self.events}>"


def _block_peak(
    buf: npt.NDArray[Any], marks: npt.NDArray[Any], start: int, stop: int, state: _Carry
) -> int:
    """The peak of `named_peak`'s estimate over the tags starting in buf[start:stop] (`marks`:
    True at each "<", ">", quote and "=")."""
    import numpy as np

    table_keys, table_groups, table_flags, letter, ends_name, ends_value = _tables()
    size = len(buf) - 16
    # the positions of each "<", ">", quote and "=" (and _TAG_REACH bytes more, where the
    # block's last tags end)
    where = np.flatnonzero(marks[start : min(size, stop + _TAG_REACH)]) + start
    kind = buf[where]
    lt_at = np.flatnonzero((kind == _LT) & (where < stop))  # the tags' "<", as indexes of `where`
    lt = where[lt_at]
    end = buf[lt + 1] == _SLASH
    first = lt + 1 + end  # the name's first byte
    tag = letter[buf[first]]  # "<!doctype", "<!--", "< 3": no element
    lt_at, lt, end, first = lt_at[tag], lt[tag], end[tag], first[tag]
    if not lt.size:
        return 0
    # the 8 bytes from each name's start (an unaligned gather), lowercased, cut at its end
    words = np.ndarray(shape=(size + 9,), dtype="<u8", buffer=buf, strides=(1,))[first]
    # a byte 1 where a byte ends the name: the lowest such bit, less one, masks the bytes before
    # (no such byte: 0 - 1 wraps around to all eight)
    ends = ends_name[words.view(np.uint8)].view("<u8")
    keys = (words | np.uint64(0x2020_2020_2020_2020)) & ((ends & (~ends + np.uint64(1))) - 1)
    row = np.searchsorted(table_keys, keys)
    row[table_keys[row] != keys] = len(table_keys) - 1
    group, flags = table_groups[row], table_flags[row]
    closed = _self_closing(buf, lt_at, end, ends_value, where, kind)
    # foreign content: after an <svg>/<math> start tag, until its end tag or a breakout tag,
    # but for the HTML inside an integration point (<title>, <foreignObject>...)
    index = np.arange(state.tags, state.tags + lt.size)
    state.tags += lt.size
    starts_foreign = ~end & ~closed & (flags & _FOREIGN_FLAG != 0)
    stops = np.where(end, flags & (_FOREIGN_FLAG | _END_BREAKOUT_FLAG), flags & _BREAKOUT_FLAG)
    integration = flags & _INTEGRATION_FLAG != 0
    events = np.stack([starts_foreign, stops != 0, ~end & integration, end & integration])
    carried = np.array(state.events)[:, None]
    last = np.maximum.accumulate(np.where(events, index, carried), axis=1)
    before = np.empty_like(last)  # per kind of event, the last one before each tag
    before[:, 0:1] = carried
    before[:, 1:] = last[:, :-1]
    state.events = last[:, -1].tolist()
    started, stopped, entered, left = before
    region = started > stopped
    foreign = region & ((entered < left) | (entered < started))
    foreign &= np.where(end, flags & _END_BREAKOUT_FLAG == 0, flags & _BREAKOUT_FLAG == 0)
    steps = np.where(end, -1, 1).astype(np.int32)
    opens_nothing = np.where(foreign, closed, flags & _VOID_FLAG != 0)  # "</br>" neither
    opens_nothing |= closed & (flags & _FOREIGN_FLAG != 0)  # <svg/>
    steps[opens_nothing] = 0
    group[foreign | (region & end & integration)] = _OTHER  # foreign elements: none is special
    # per group of names, the running sum of its steps floored at zero (from the carried count)
    counts = np.where(group == np.arange(_CELL, dtype=np.int8)[:, None], steps, 0).cumsum(
        axis=1, dtype=np.int32
    )
    counts += np.array(state.counts, dtype=np.int32)[:, None]
    low = np.minimum.accumulate(counts, axis=1)
    np.minimum(low, 0, out=low)
    counts -= low
    state.counts = counts[:, -1].tolist()
    other, special, li, dd, p, heading, option, table = counts
    parts = 4 * table  # a table, and the section, row and cell open in it (maybe implied)
    depth = other + special + parts
    depth += np.minimum(li, 1 + special + heading + dd + parts)
    depth += np.minimum(dd, 1 + special + heading + li + parts)
    depth += np.minimum(p, 1 + special + parts)
    # a heading (an option) closes the one that is the current node: two only nest around
    # another element
    depth += np.minimum(heading, 1 + depth + option) + np.minimum(option, 1 + depth + heading)
    return int(depth.max())


def _self_closing(
    buf: npt.NDArray[Any], lt_at: npt.NDArray[Any], end: npt.NDArray[Any],
    ends_value: npt.NDArray[Any], where: npt.NDArray[Any], kind: npt.NDArray[Any],
) -> npt.NDArray[Any]:  # fmt: skip
    """Per tag: a start tag written "<x .../>" whose "/" is not part of an unquoted value (its
    end, or all of it after "=" and whitespace), with an even number of each quote up to the
    first ">" (else it may end further on). `where`
    and `kind`: the positions of the "<", ">", quotes and "=" around the tags, and which;
    `lt_at`: the indexes in `where` of the tags' "<"."""
    import numpy as np

    gt_at = np.flatnonzero(kind == _GT)
    closed: npt.NDArray[Any] = np.zeros(lt_at.size, dtype=bool)
    if not gt_at.size:
        return closed
    nearest = np.searchsorted(gt_at, lt_at)  # each tag's first ">"
    found = nearest < gt_at.size
    close_at = gt_at[np.minimum(nearest, gt_at.size - 1)]
    closed = found & ~end & (buf[where[close_at] - 1] == _SLASH)
    candidates = np.flatnonzero(closed)
    if not candidates.size:
        return closed
    close_at = close_at[candidates]
    # the quotes and "=" between each candidate's "<" and ">", from one running count of the
    # three packed in bit fields of an int64 (a window holds fewer than 2**20 of each)
    counted = np.cumsum(_count_fields()[kind])
    between = counted[close_at] - counted[lt_at[candidates]]
    odd = (between | (between >> _FIELD_BITS)) & 1  # an odd number of '"' or of "'"
    # the "/" ends an unquoted value unless a quote or whitespace comes before it, and after
    # "=" and whitespace only it is one ("a= />", not "a=b />"): the last mark before ">" is "="
    gt = where[close_at]
    after_value = ends_value[buf[gt - 2]]
    eq = np.flatnonzero(after_value & (kind[close_at - 1] == _EQUALS))
    if eq.size:
        lo, hi = where[close_at[eq] - 1] + 1, gt[eq] - 1  # the bytes between "=" and "/"
        after_value[eq[_blank(buf, lo, hi, ends_value)]] = False
    ok = (odd == 0) & (after_value | (between >> 2 * _FIELD_BITS == 0))
    closed[candidates[~ok]] = False
    return closed


def _blank(
    buf: npt.NDArray[Any], lo: npt.NDArray[Any], hi: npt.NDArray[Any], blank: npt.NDArray[Any]
) -> npt.NDArray[Any]:
    """Per range: whether the bytes from `lo` to `hi` (excluded, at least one) are all `blank`."""
    import numpy as np

    size = hi - lo
    first = np.cumsum(size) - size  # where each range's bytes begin among all of them
    at = np.arange(int(size.sum())) - np.repeat(first - lo, size)
    filled: npt.NDArray[Any] = np.logical_or.reduceat(~blank[buf[at]], first)
    return ~filled
