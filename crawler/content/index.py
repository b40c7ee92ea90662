"""The content-dedup index: exact (content hash) and near (simhash within k bits) duplicates.

`NearDuplicateIndex` finds, for a 64-bit simhash, the earliest added simhash within Hamming
distance k, without comparing against every page. It is the pigeonhole special case of Manku,
Jain and Das Sarma's permuted tables ("Detecting near-duplicates for web crawling", WWW 2007):
split the 64 bits into k+1 blocks; two simhashes within k bits differ in at most k blocks, so
they agree exactly on at least one. One table per block, keyed by (up to) 16 bits of that
block, finds every candidate; each candidate is checked with a popcount. A query costs k+1
table lookups plus about (k+1)·N/2^16 candidate checks for N pages of well spread simhashes
(65,536 times fewer than a scan: 6 candidates at 100k pages, 61 at 1M).

Why not Manku's full scheme (k=3: 6 blocks, C(6,3) = 20 tables keyed by ~32 bits)? It keeps
candidates near zero up to billions of pages, but stores every page 20 times (in sorted arrays
to merge, or in hash tables costing ~100 B per entry): ~2 KB/page in Python against ~24 B/page
here, for a crawl this size (one process, millions of pages) where 4 tables already leave a
few dozen popcounts per page. Larger k means narrower blocks (k=4: 13 bits, 8,192 buckets per
table) and more candidates; k=0 finds equal simhashes only.

Tables are chained buckets in flat arrays: per table a head array (2^bits int32: the newest
page in each bucket) and per page and table a next pointer (int32), plus the page's simhash
(uint64): 8 + 4·(k+1) bytes per page, with no Python object per page.

`ContentIndex` adds the exact tier (the first URL per distinct content hash; the hash kept as 16
bytes, bucketed the same way) and the pages' URLs (UTF-8 in one bytearray, with end offsets).
Only pages with a new content hash enter it; `check` classifies and adds a page in one call.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from crawler.content.fingerprint import Fingerprint

__all__ = ["KEY_BITS", "MAX_DISTANCE", "ContentIndex", "Match", "NearDuplicateIndex", "block_keys"]

log = logging.getLogger(__name__)

KEY_BITS = 16
"""Bits of a block that key its table (all of a narrower block)."""
MAX_DISTANCE = 10
"""Largest k accepted (11 blocks of 5-6 bits: 32-64 buckets per table; more is a scan)."""

_NONE = -1


def block_keys(distance: int) -> list[tuple[int, int]]:
    """(shift, mask) of each of the `distance` + 1 blocks' table keys: `(simhash >> shift) &
    mask` is a simhash's key in that block's table. Widths as even as possible (64 = 16+16+16+16
    for k=3), each keyed by at most `KEY_BITS` of its bits."""
    blocks = distance + 1
    layout = []
    start = 0
    for i in range(blocks):
        width = 64 // blocks + (i < 64 % blocks)
        layout.append((start, (1 << min(width, KEY_BITS)) - 1))
        start += width
    return layout


class NearDuplicateIndex:
    """Simhashes (64-bit ints) with ids 0, 1, 2... in the order added; `query` returns the
    smallest id within `distance` bits."""

    __slots__ = ("_heads", "_masks", "_next", "_shifts", "_sims", "candidates", "distance", "equal")

    def __init__(self, distance: int = 3) -> None:
        if isinstance(distance, bool) or not isinstance(distance, int):
            raise TypeError(f"distance must be an int, got {distance!r}")
        if not 0 <= distance <= MAX_DISTANCE:
            raise ValueError(f"distance must be in 0..{MAX_DISTANCE}, got {distance}")
        self.distance = distance
        layout = block_keys(distance)
        self._shifts = [shift for shift, _ in layout]
        self._masks = [mask for _, mask in layout]
        self._heads = [array("i", [_NONE]) * (mask + 1) for mask in self._masks]
        self._next = array("i")  # page id * blocks + table -> the next older page in its bucket
        self._sims = array("Q")
        self.candidates = 0  # simhashes compared by queries (for the benchmark)
        self.equal = False  # the last query met its very simhash

    def __len__(self) -> int:
        return len(self._sims)

    def add(self, simhash: int, *, file: bool = True) -> int:
        """Add a simhash; returns its id. With `file` false it gets its id but no place in the
        tables, so no query finds it: for a simhash an earlier id has (queries find that one:
        its id is smaller), which keeps pages alike but for their numbers (one simhash for a
        thousand calendar months) from crowding one bucket that every query walks."""
        doc = len(self._sims)
        if doc >= 2**31 - 1:
            raise OverflowError("NearDuplicateIndex holds at most 2**31 - 1 simhashes")
        self._sims.append(simhash)
        nxt = self._next
        if not file:
            nxt.extend(array("i", [_NONE]) * len(self._heads))
            return doc
        for heads, shift, mask in zip(self._heads, self._shifts, self._masks, strict=True):
            key = (simhash >> shift) & mask
            nxt.append(heads[key])
            heads[key] = doc
        return doc

    def query(self, simhash: int) -> int | None:
        """The smallest id whose simhash is within `distance` bits of `simhash`, or None;
        `equal` tells whether a filed id has this very simhash."""
        best = -1
        k, sims, nxt, blocks = self.distance, self._sims, self._next, len(self._heads)
        seen = 0
        equal = False
        for t, (heads, shift, mask) in enumerate(
            zip(self._heads, self._shifts, self._masks, strict=True)
        ):
            doc = heads[(simhash >> shift) & mask]
            while doc != _NONE:  # newest first: walk the whole bucket for the earliest
                seen += 1
                bits = (sims[doc] ^ simhash).bit_count()
                if bits <= k and (best < 0 or doc < best):
                    best = doc
                equal = equal or bits == 0
                doc = nxt[doc * blocks + t]
        self.candidates += seen
        self.equal = equal
        return None if best < 0 else best

    def simhash(self, doc: int) -> int:
        return self._sims[doc]

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (the fixed head arrays included)."""
        arrays = [self._next, self._sims, *self._heads]
        return sum(a.buffer_info()[1] * a.itemsize for a in arrays)

    def __repr__(self) -> str:
        return (
            f"<NearDuplicateIndex distance={self.distance} tables={len(self._heads)} "
            f"pages={len(self)} candidates={self.candidates}>"
        )


class Match(NamedTuple):
    """How a page relates to the pages before it."""

    duplicate_of: str | None  # the first page with the same content hash
    near_duplicate_of: str | None  # else the earliest page within the near distance


Store = Callable[[int, bytes, str], None]
"""Persists a page that entered the index: (simhash, content hash, URL)."""


class ContentIndex:
    """Every distinct page content seen so far: exact and near lookup, and the pages' URLs."""

    __slots__ = ("_exact_heads", "_exact_next", "_hashes", "_url_ends", "_urls", "_zero", "near",
                 "store")  # fmt: skip

    def __init__(self, distance: int = 3, store: Store | None = None) -> None:
        self.near = NearDuplicateIndex(distance)
        self.store = store
        self._hashes = bytearray()  # 16 bytes per page
        self._exact_heads = array("i", [_NONE]) * (1 << KEY_BITS)
        self._exact_next = array("i")
        self._urls = bytearray()
        self._url_ends = array("Q")
        self._zero = False  # a page of simhash 0 is filed (the first: `_filed`)

    def __len__(self) -> int:
        return len(self._url_ends)

    def url(self, doc: int) -> str:
        start = self._url_ends[doc - 1] if doc else 0
        return self._urls[start : self._url_ends[doc]].decode("utf-8", "replace")

    def find_exact(self, digest: bytes) -> int | None:
        """The page with this content hash, or None."""
        doc = self._exact_heads[int.from_bytes(digest[:2], "little")]
        hashes, nxt = self._hashes, self._exact_next
        while doc != _NONE:
            if hashes[16 * doc : 16 * doc + 16] == digest:
                return doc
            doc = nxt[doc]
        return None

    def _add(self, fp: Fingerprint, url: str) -> int:
        """Add a page (after `_near` queried its simhash: a simhash filed already is not filed
        again, `NearDuplicateIndex.add`)."""
        if len(fp.content_hash) != 16:
            raise ValueError("content hashes are 16 bytes")
        doc = self.near.add(fp.simhash, file=self._filed(fp.simhash))
        self._hashes += fp.content_hash
        key = int.from_bytes(fp.content_hash[:2], "little")
        self._exact_next.append(self._exact_heads[key])
        self._exact_heads[key] = doc
        self._urls += url.encode("utf-8", "replace")
        self._url_ends.append(len(self._urls))
        return doc

    def check(self, url: str, fp: Fingerprint) -> Match:
        """Classify the page fetched from `url` against the pages before it, and add it if its
        content is new. A page is never a duplicate of itself (a page fetched again after a
        crash finds its own earlier record: it is neither a duplicate nor added twice). A page
        with no word to fingerprint (simhash 0: no text, or only numbers and dates) has no near
        duplicate: the simhashes of two such pages say nothing of their likeness."""
        doc = self.find_exact(fp.content_hash)
        if doc is not None:
            first = self.url(doc)
            if first != url:
                return Match(first, None)
            near = self._near(fp.simhash)  # itself, or an earlier page
            return Match(None, None if near is None or near >= doc else self.url(near))
        near = self._near(fp.simhash)
        self._add(fp, url)
        if self.store is not None:
            self.store(fp.simhash, fp.content_hash, url)
        return Match(None, None if near is None else self.url(near))

    def _near(self, simhash: int) -> int | None:
        return self.near.query(simhash) if simhash else None

    def _filed(self, simhash: int) -> bool:
        """Whether to file `simhash` in the near tables: not when a page filed has it (the
        last `_near` query saw; for 0, which is never queried, the first page of 0 only)."""
        if simhash:
            return not self.near.equal
        first, self._zero = not self._zero, True
        return first

    def load(self, rows: Iterable[tuple[int, bytes, str]]) -> int:
        """Add saved (simhash, content hash, URL) rows, oldest first; returns how many."""
        n = 0
        for simhash, digest, url in rows:
            if self.find_exact(digest) is None:
                self._near(simhash)
                self._add(Fingerprint(digest, simhash), url)
                n += 1
        return n

    @property
    def nbytes(self) -> int:
        """Bytes held by the index's arrays (the fixed head arrays included)."""
        arrays = [self._exact_heads, self._exact_next, self._url_ends]
        own = sum(a.buffer_info()[1] * a.itemsize for a in arrays)
        return self.near.nbytes + own + len(self._hashes) + len(self._urls)

    def figures(self) -> dict[str, Any]:
        """The index's figures for the stats: its distinct pages and its memory."""
        return {"pages": len(self), "bytes": self.nbytes}

    def __repr__(self) -> str:
        return f"<ContentIndex pages={len(self)} near={self.near!r} nbytes={self.nbytes}>"
