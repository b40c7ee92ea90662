"""The Sieve's batch insert: numpy-vectorized for big batches, key by key otherwise.

`add_many` and `add_many_hashed` give exactly the answers (and set exactly the bits) of adding the
keys one by one with `Sieve.add` / `Sieve.add_hashed`. numpy only speeds them up: without it (set
``np`` to None here to simulate that) every batch takes the key-by-key path. numpy is imported at
the first batch big enough to use it, not with this module (~60-100 ms of a crawl's start-up).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import mmh3

from crawler.sieve.format import SEED

_UNLOADED: Any = object()

if TYPE_CHECKING:
    import numpy as np
    from bitarray import bitarray
    from numpy.typing import NDArray
else:
    np = _UNLOADED  # numpy, once `_vectorized` has imported it (None: not installed)

__all__ = ["Batched", "add_many", "add_many_hashed"]


class Batched(Protocol):
    """What the batch insert reads and moves of a `crawler.sieve.bloom.Sieve` (its stages, its
    count, its growth): the Sieve's own extension, typed without importing it."""

    _old: tuple[tuple[bitarray, int, int], ...]
    _cur: Any  # the newest BloomStage: m, k, bits, set_bits, _grow_at
    _count: int

    def _grow(self) -> None: ...

    def add(self, item: str | bytes) -> bool: ...

    def add_hashed(self, h1: int, h2: int) -> bool: ...


_digest = mmh3.mmh3_x64_128_digest
_BATCH_MIN = 40  # below this many keys the plain loop beats numpy (measured: even at ~32)
_MASKS: Any = None  # the 8 single-bit masks, as a numpy array


def _vectorized(n: int) -> bool:
    """Whether a batch of `n` keys takes the numpy path (importing numpy at the first one)."""
    global np, _MASKS
    if n < _BATCH_MIN or np is None:
        return False
    if np is _UNLOADED:
        try:  # numpy only speeds up add_many; everything works without it
            import numpy
        except ImportError:  # pragma: no cover - exercised only where numpy is absent
            np = None  # type: ignore[assignment]
            return False
        _MASKS = numpy.array([1 << i for i in range(8)], dtype=numpy.uint8)
        np = numpy
    return True


def add_many(sieve: Batched, items: Sequence[str | bytes]) -> list[bool]:
    """`[sieve.add(x) for x in items]`, vectorized when numpy is present and the batch is big."""
    if not _vectorized(len(items)):
        add = sieve.add
        return [add(x) for x in items]
    try:
        raw = b"".join([_digest(x.encode(), SEED) for x in items])  # type: ignore[union-attr]
    except AttributeError:  # some keys are bytes already
        raw = b"".join([_digest(x if isinstance(x, bytes) else x.encode(), SEED) for x in items])
    return _add_array(sieve, np.frombuffer(raw, dtype="<i8"))


def add_many_hashed(sieve: Batched, pairs: Sequence[tuple[int, int]]) -> list[bool]:
    """`[sieve.add_hashed(h1, h2) for h1, h2 in pairs]`, vectorized like `add_many`."""
    if not _vectorized(len(pairs)):
        add = sieve.add_hashed
        return [add(h1, h2) for h1, h2 in pairs]
    return _add_array(sieve, np.array(pairs, dtype=np.int64).ravel())


def _add_array(sieve: Batched, h: NDArray[np.int64]) -> list[bool]:
    """Vectorized add (h: flat h1, h2, h1, h2...) with exactly the answers of sequential adds.

    Keys seen before the batch are seen. Every newest-stage bit a key would set and that is
    unset before the batch is credited to the FIRST key (batch order) that sets it; a key is
    new iff it is credited at least one bit, exactly as when the keys are added one by one.
    A growth mid-batch commits the prefix up to the growing key and re-runs the rest.
    """
    h1, h2 = h[0::2], h[1::2] | 1
    out = np.zeros(h1.size, dtype=bool)
    pending = np.arange(h1.size)
    while pending.size:
        for bits, m, k1 in sieve._old:
            p = pending
            unset = _unset(bits, _positions(m, k1 + 1, h1[p], h2[p]))
            pending = p[unset.any(axis=1)]
        cur = sieve._cur
        pos = _positions(cur.m, cur.k, h1[pending], h2[pending])
        unset = _unset(cur.bits, pos)
        fresh = pos[unset]
        srt = np.sort(fresh)
        if srt.size > 1 and bool((srt[1:] == srt[:-1]).any()):  # two keys share a new bit
            fresh, first = np.unique(fresh, return_index=True)
            flips = np.bincount(np.nonzero(unset)[0][first], minlength=pending.size)
        else:
            fresh, flips = srt, np.count_nonzero(unset, axis=1)
        last = pending.size
        if cur.set_bits + fresh.size >= cur._grow_at:  # the stage fills up within this batch
            last = int(np.searchsorted(np.cumsum(flips), cur._grow_at - cur.set_bits)) + 1
            fresh = np.unique(pos[:last][unset[:last]])
        buf = np.frombuffer(memoryview(cur.bits), dtype=np.uint8)
        np.bitwise_or.at(buf, fresh >> 3, _MASKS[fresh & 7])
        cur.set_bits += fresh.size
        new = flips[:last] > 0
        out[pending[:last]] = new
        sieve._count += int(np.count_nonzero(new))
        if cur.set_bits >= cur._grow_at:  # as `Sieve.add` does after the key that fills it,
            sieve._grow()  # the batch's last key included (the same stages, not only answers)
        if last == pending.size:
            break
        pending = pending[last:]
    result: list[bool] = out.tolist()
    return result


def _positions(m: int, k: int, h1: NDArray[np.int64], h2: NDArray[np.int64]) -> NDArray[Any]:
    """The (keys, k) matrix of bit positions; int64 floor-mod matches Python's `%`."""
    got: NDArray[Any] = ((h1 % m)[:, None] + (h2 % m)[:, None] * np.arange(k)) % m
    return got


def _unset(bits: bitarray, pos: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Which of the positions are 0 in `bits` (little-endian bit order)."""
    buf = np.frombuffer(memoryview(bits), dtype=np.uint8)
    got: NDArray[np.bool_] = (buf[pos >> 3] & _MASKS[pos & 7]) == 0
    return got
