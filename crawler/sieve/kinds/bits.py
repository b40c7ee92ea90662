"""`BitStage`: a stage whose key is a set of bit positions (classic, blocked and multi-layer).

A kind gives the positions (`positions_one` for one hashed key, `positions` for rows of a hashed
batch); this class tests and sets them, one key at a time through the bitarray and a batch at a
time through a numpy view of the same bytes (bit i is bit i%8 of byte i//8, as in the Sieve).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
from bitarray import bitarray
from numpy.typing import NDArray

from crawler.sieve.kinds.common import MASKS8, Stage, check_int, first_credit

__all__ = ["BitStage", "commit_prefix"]


def commit_prefix(new: NDArray[np.bool_], room: int | None) -> int:
    """How many rows to commit: all, or up to the row whose credit brings the count to `room`."""
    if room is None or int(np.count_nonzero(new)) < room:
        return int(new.size)
    return int(np.searchsorted(np.cumsum(new), room)) + 1


class BitStage(Stage):
    """A stage of `nbits` bits; subclasses set `nbits` before calling `_alloc`."""

    nbits: int

    def _alloc(self, capacity: int, error_rate: float) -> None:
        self.capacity, self.error_rate, self.count = capacity, error_rate, 0
        self.bits = bitarray(self.nbits, endian="little")
        self.bits.setall(0)
        self._buf = np.frombuffer(memoryview(self.bits), dtype=np.uint8)

    @abstractmethod
    def positions_one(self, h: Any) -> list[int]: ...

    @abstractmethod
    def positions(self, hb: Any, rows: NDArray[np.intp]) -> NDArray[np.int64]: ...

    def contains(self, h: Any) -> bool:
        bits = self.bits
        return all(bits[x] for x in self.positions_one(h))

    def insert(self, h: Any) -> bool:
        bits, flips = self.bits, 0
        for x in self.positions_one(h):
            if not bits[x]:
                bits[x] = 1
                flips += 1
        if flips:
            self.count += 1
        return flips > 0

    def _zero(self, pos: NDArray[np.int64]) -> NDArray[np.bool_]:
        got: NDArray[np.bool_] = (self._buf[pos >> 3] & MASKS8[pos & 7]) == 0
        return got

    def present(self, hb: Any, rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        got: NDArray[np.bool_] = np.logical_not(self._zero(self.positions(hb, rows)).any(axis=1))
        return got

    def insert_rows(
        self, hb: Any, rows: NDArray[np.intp], room: int | None
    ) -> tuple[NDArray[np.bool_], int]:
        pos = self.positions(hb, rows)
        zero = self._zero(pos)
        flips, fresh = first_credit(pos, zero)
        new = flips > 0
        last = commit_prefix(new, room)
        if last < new.size:
            fresh = np.unique(pos[:last][zero[:last]])
        np.bitwise_or.at(self._buf, fresh >> 3, MASKS8[fresh & 7])
        self.count += int(np.count_nonzero(new[:last]))
        return new[:last], last

    def base_params(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "error_rate": self.error_rate, "count": self.count}

    def arrays(self) -> list[bytes]:
        return [self._buf.tobytes()]

    def load(self, params: dict[str, Any], arrays: list[bytes]) -> BitStage:
        """Fill a freshly built stage from saved parameters and bits (ValueError if they do not
        fit the stage the parameters describe)."""
        if self.params() != {**params, "count": 0}:
            raise ValueError(f"stage parameters do not match its shape: {params!r}")
        (raw,) = arrays
        if len(raw) != self._buf.size:
            raise ValueError(f"stage bits: {len(raw)} bytes, expected {self._buf.size}")
        self._buf[:] = np.frombuffer(raw, dtype=np.uint8)
        self.count = check_int("count", params["count"], 0, 1 << 62)
        return self

    @property
    def size_in_bytes(self) -> int:
        return int(self._buf.size)
