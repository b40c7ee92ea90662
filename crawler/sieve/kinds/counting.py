"""``counting``: the counting Bloom filter (Fan, Cao, Almeida & Broder 1998): deletion by counters.

The classic filter's shape and positions (`classic.ClassicStage`), each bit a 4-bit counter (two
a byte, counter i in the low nibble of byte i//2 when i is even). A key is present when all its
k counters are non-zero. Every `add` increments the key's k counters, reported present or not
(an entry each: add, add, remove leaves it present); `add_if_absent` only when it is not
reported. `remove` decrements them, in the stage holding the key's entries
(`crawler.sieve.kinds.deleting`): for a key that was added no counter of another key's reaches
zero, so no other key disappears.

Counters saturate at 15 and a saturated counter is never decremented: it may hold more entries
than it can count, and decrementing it could make one of them disappear. The cost: a key whose
every counter saturated stays reported after its removes (a false positive, never a false
negative). At the filter's load a counter reaches 15 with probability ~1e-15; a key added 15
times or more saturates its own.

Removing a key never added: see `crawler.sieve.kinds.deleting` (it may take another key's
counts, with probability <= `false_positive_bound`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from crawler.sieve.bloom import stage_shape
from crawler.sieve.kinds.bits import commit_prefix
from crawler.sieve.kinds.classic import double_hash_positions
from crawler.sieve.kinds.common import U64, Stage, check_int, first_credit, unique_counts
from crawler.sieve.kinds.deleting import DeletingStaged

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

    def record(self, h: tuple[int, int]) -> bool:
        pos = self.positions_one(h)
        cells = self.cells
        new = not all((cells[x >> 1] >> ((x & 1) << 2)) & 15 for x in pos)
        for x in pos:
            shift = (x & 1) << 2
            if (cells[x >> 1] >> shift) & 15 < MAX_COUNT:
                cells[x >> 1] += 1 << shift
        self.count += 1
        return new

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
        new = first_credit(pos, self._counters(pos) == 0)[0] > 0
        last = commit_prefix(new, room)
        new = new[:last]
        self._increment(pos[:last][new])
        self.count += int(np.count_nonzero(new))
        return new, last

    def record_rows(
        self, hb: tuple[U64, U64], rows: NDArray[np.intp], room: int | None
    ) -> tuple[NDArray[np.bool_], int]:
        """Every row one entry: a row is new when it has a counter at zero no earlier row has."""
        last = len(rows) if room is None else min(room, len(rows))
        pos = self._positions(hb, rows[:last])
        new = first_credit(pos, self._counters(pos) == 0)[0] > 0
        self._increment(pos)
        self.count += last
        return new, last

    def _increment(self, pos: NDArray[np.int64]) -> None:
        """Add one to the counters of each row of `pos` (a cell as often as it appears),
        saturating at MAX_COUNT as one by one."""
        cells, adds = unique_counts(pos)
        value = np.minimum(self._counters(cells).astype(np.int64) + adds, MAX_COUNT)
        for odd in (0, 1):  # one assignment per nibble: no two cells of one byte in either
            sel = (cells & 1) == odd
            byte, keep = cells[sel] >> 1, np.uint8(0xF0 if odd == 0 else 0x0F)
            self._buf[byte] = (self._buf[byte] & keep) | (value[sel] << (4 * odd)).astype(np.uint8)

    def params(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "error_rate": self.error_rate, "count": self.count,
                "m": self.m, "k": self.k}  # fmt: skip

    def arrays(self) -> list[bytes]:
        return [bytes(self.cells)]

    @property
    def size_in_bytes(self) -> int:
        return len(self.cells)


class CountingFilter(DeletingStaged):
    """Counting stages, growing as the Sieve does; `remove` as the module docstring says."""

    kind = "counting"

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
