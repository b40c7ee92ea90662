"""``counting``: the counting Bloom filter (Fan, Cao, Almeida & Broder 1998): deletion by counters.

The classic filter's shape and positions (`classic.ClassicStage`), each bit a 4-bit counter (two
a byte, counter i in the low nibble of byte i//2 when i is even). A key is present when all its
k counters are non-zero. Adding a new key increments its counters; adding a key already
reported present changes nothing (set semantics: add, add, remove leaves it absent).

Counters saturate at 15 and a saturated counter is never decremented: it may hold more keys than
it can count, and decrementing it could make one of them disappear. (The cost: a key whose every
counter saturated cannot be removed; at the filter's load a counter reaches 15 with probability
~1e-15.)

`remove(key)` acts only when the key is reported present, on the oldest stage reporting it (the
stage it was inserted into: see `Staged.remove`). For a key that was added, it is exact: the
key's own increments are undone and no other key disappears. For a key never added, it changes
nothing unless the key is a false positive (probability <= `false_positive_bound`): a filter
cannot tell a false positive from a key it holds, and then the decrements may make another key
disappear. Callers that may remove keys they never added (the crawl's `forget`) must check them
against an exact record first.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from crawler.sieve.bloom import stage_shape
from crawler.sieve.kinds.bits import commit_prefix
from crawler.sieve.kinds.classic import double_hash_positions
from crawler.sieve.kinds.common import U64, Stage, Staged, check_int, first_credit, unique_counts

__all__ = ["MAX_COUNT", "CountingFilter", "CountingStage"]

MAX_COUNT = 15


class CountingStage(Stage):
    """m 4-bit counters, k of them a key."""

    def __init__(self, capacity: int, error_rate: float) -> None:
        self.capacity, self.error_rate, self.count = capacity, error_rate, 0
        self.m, self.k = stage_shape(capacity, error_rate)
        self.cells = bytearray(self.m // 2)
        self._buf = np.frombuffer(self.cells, dtype=np.uint8)

    def positions_one(self, h: tuple[int, int]) -> list[int]:
        m = self.m
        a, b = h[0] % m, (h[1] | 1) % m
        return [x % m for x in range(a, a + self.k * b, b)]

    def counter(self, i: int) -> int:
        return (self.cells[i >> 1] >> ((i & 1) << 2)) & 15

    def contains(self, h: tuple[int, int]) -> bool:
        cells = self.cells
        return all((cells[x >> 1] >> ((x & 1) << 2)) & 15 for x in self.positions_one(h))

    def insert(self, h: tuple[int, int]) -> bool:
        pos = self.positions_one(h)
        cells = self.cells
        if all((cells[x >> 1] >> ((x & 1) << 2)) & 15 for x in pos):
            return False
        for x in pos:
            shift = (x & 1) << 2
            if (cells[x >> 1] >> shift) & 15 < MAX_COUNT:
                cells[x >> 1] += 1 << shift
        self.count += 1
        return True

    def remove(self, h: tuple[int, int]) -> bool:
        cells = self.cells
        for x in self.positions_one(h):
            shift = (x & 1) << 2
            if 0 < (cells[x >> 1] >> shift) & 15 < MAX_COUNT:
                cells[x >> 1] -= 1 << shift
        return True

    def _counters(self, pos: NDArray[np.int64]) -> NDArray[np.uint8]:
        got: NDArray[np.uint8] = (self._buf[pos >> 1] >> ((pos & 1) << 2).astype(np.uint8)) & 15
        return got

    def _positions(self, hb: tuple[U64, U64], rows: NDArray[np.intp]) -> NDArray[np.int64]:
        return double_hash_positions(self.m, self.k, hb[0][rows], hb[1][rows])

    def present(self, hb: tuple[U64, U64], rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        got: NDArray[np.bool_] = np.asarray(self._counters(self._positions(hb, rows)).all(axis=1))
        return got

    def insert_rows(
        self, hb: tuple[U64, U64], rows: NDArray[np.intp], room: int | None
    ) -> tuple[NDArray[np.bool_], int]:
        pos = self._positions(hb, rows)
        zero = self._counters(pos) == 0
        new = first_credit(pos, zero)[0] > 0
        last = commit_prefix(new, room)
        new = new[:last]
        cells, adds = unique_counts(pos[:last][new])
        value = np.minimum(self._counters(cells).astype(np.int64) + adds, MAX_COUNT)
        for odd in (0, 1):  # one assignment per nibble: no two cells of one byte in either
            sel = (cells & 1) == odd
            byte, keep = cells[sel] >> 1, np.uint8(0xF0 if odd == 0 else 0x0F)
            self._buf[byte] = (self._buf[byte] & keep) | (value[sel] << (4 * odd)).astype(np.uint8)
        self.count += int(np.count_nonzero(new))
        return new, last

    def params(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "error_rate": self.error_rate, "count": self.count,
                "m": self.m, "k": self.k}  # fmt: skip

    def arrays(self) -> list[bytes]:
        return [bytes(self.cells)]

    @property
    def size_in_bytes(self) -> int:
        return len(self.cells)


class CountingFilter(Staged):
    """Counting stages, growing as the Sieve does; `remove` as the module docstring says."""

    kind = "counting"
    supports_remove = True

    def _new_stage(self, capacity: int, error_rate: float) -> Stage:
        return CountingStage(capacity, error_rate)

    def _restore_stage(self, params: dict[str, Any], arrays: list[bytes]) -> Stage:
        st = CountingStage(params["capacity"], params["error_rate"])
        if st.params() != {**params, "count": 0}:
            raise ValueError(f"stage parameters do not match its shape: {params!r}")
        (raw,) = arrays
        if len(raw) != len(st.cells):
            raise ValueError(f"stage counters: {len(raw)} bytes, expected {len(st.cells)}")
        st.cells[:] = raw
        st.count = check_int("count", params["count"], 0, 1 << 62)
        return st
