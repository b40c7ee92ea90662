"""``blocked``: the blocked Bloom filter (Putze, Sanders & Singler 2007): one cache line a key.

h1 picks one 512-bit (64-byte) block, 64-byte aligned in memory; the key's k bits are all in that
block, bit i at ((h2 * SALT_i) mod 2^64) >> 55 (multiply-shift with k fixed odd salts, so a key
has ~2^64 possible patterns, not the few thousand double hashing would give inside 512 bits).

The known penalty (blocks get uneven loads) is paid in bits, not in misses: the shape is the
smallest number of blocks, over k, whose exact rate, the Poisson mixture of per-block rates

    f = sum_i Pois(i; C/blocks) * (1 - (1 - 1/512)^(i*k))^k,

is <= the stage's P. So the measured rate meets P, and `bits_penalty` tells what that cost.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crawler.sieve.bloom import stage_shape
from crawler.sieve.kinds.bits import BitStage
from crawler.sieve.kinds.common import U64, Stage, Staged, splitmix64

__all__ = ["BLOCK_BITS", "BlockedFilter", "BlockedStage", "blocked_rate", "blocked_shape"]

BLOCK_BITS = 512
_SHIFT = 64 - 9  # log2(512)
_SALTS = [splitmix64(i) | 1 for i in range(64)]
_SALTS_NP = np.array(_SALTS, dtype=np.uint64)
_MASK64 = (1 << 64) - 1


def blocked_rate(load: float, k: int) -> float:
    """The false-positive rate of a blocked filter with `load` keys a block on average."""
    q = math.log1p(-1.0 / BLOCK_BITS) * k
    top = int(load + 12.0 * math.sqrt(load) + 30.0)
    term, total = math.exp(-load), 0.0  # Pois(0)
    for i in range(top + 1):
        total += term * (-math.expm1(q * i)) ** k
        term *= load / (i + 1)
    return total


def _max_load(k: int, p: float) -> float:
    """The largest mean load whose rate is still <= p, for k bits a key."""
    lo, hi = 0.0, float(BLOCK_BITS)
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if blocked_rate(mid, k) <= p else (lo, mid)
    return lo


@lru_cache(maxsize=256)
def blocked_shape(capacity: int, error_rate: float) -> tuple[int, int]:
    """(blocks, k): the fewest 512-bit blocks (over k) whose exact rate at `capacity` is <= P."""
    best = max(range(1, 33), key=lambda k: _max_load(k, error_rate))
    return max(1, math.ceil(capacity / _max_load(best, error_rate))), best


class BlockedStage(BitStage):
    """One blocked Bloom filter: `blocks` 64-byte blocks, k bits a key in one of them."""

    def __init__(self, capacity: int, error_rate: float) -> None:
        self.blocks, self.k = blocked_shape(capacity, error_rate)
        self.nbits = self.blocks * BLOCK_BITS
        self.capacity, self.error_rate, self.count = capacity, error_rate, 0
        nbytes = self.nbits // 8
        raw = np.zeros(nbytes + 64, dtype=np.uint8)
        start = -raw.ctypes.data % 64  # every block on its own cache line
        self._buf = raw[start : start + nbytes]
        self._mv = memoryview(self._buf)  # type: ignore[arg-type]
        self._salts = _SALTS[: self.k]

    def _mask(self, h2: int) -> int:
        mask = 0
        for s in self._salts:
            mask |= 1 << (((h2 * s) & _MASK64) >> _SHIFT)
        return mask

    def contains(self, h: tuple[int, int]) -> bool:
        off = (h[0] % self.blocks) << 6
        mask = self._mask(h[1])
        return int.from_bytes(self._mv[off : off + 64], "little") & mask == mask

    def insert(self, h: tuple[int, int]) -> bool:
        off = (h[0] % self.blocks) << 6
        mask = self._mask(h[1])
        block = int.from_bytes(self._mv[off : off + 64], "little")
        if block & mask == mask:
            return False
        self._mv[off : off + 64] = (block | mask).to_bytes(64, "little")
        self.count += 1
        return True

    def positions_one(self, h: tuple[int, int]) -> list[int]:
        base = (h[0] % self.blocks) * BLOCK_BITS
        return [base + (((h[1] * s) & _MASK64) >> _SHIFT) for s in self._salts]

    def positions(self, hb: tuple[U64, U64], rows: NDArray[np.intp]) -> NDArray[np.int64]:
        block = (hb[0][rows] % np.uint64(self.blocks)).astype(np.int64) * BLOCK_BITS
        inner = (hb[1][rows][:, None] * _SALTS_NP[None, : self.k]) >> np.uint64(_SHIFT)
        got: NDArray[np.int64] = block[:, None] + inner.astype(np.int64)
        return got

    def params(self) -> dict[str, Any]:
        return {**self.base_params(), "blocks": self.blocks, "k": self.k}

    @property
    def bits_penalty(self) -> float:
        """Bits a key over a classic filter at the same P (what blocking costs)."""
        return (self.nbits - stage_shape(self.capacity, self.error_rate)[0]) / self.capacity


class BlockedFilter(Staged):
    """Blocked stages, growing as the Sieve does."""

    kind = "blocked"

    def _new_stage(self, capacity: int, error_rate: float) -> Stage:
        return BlockedStage(capacity, error_rate)

    def _restore_stage(self, params: dict[str, Any], arrays: list[bytes]) -> Stage:
        return BlockedStage(params["capacity"], params["error_rate"]).load(params, arrays)
