"""``bloom``: the classic fixed Bloom filter (Bloom 1970), the baseline of every comparison.

m = ceil(-C ln P / ln^2 2) bits (a multiple of 64) and k = round(log2 1/P) positions, the Sieve's
stage shape (`crawler.sieve.bloom.stage_shape`); positions g_i = (h1 mod m + i*(h2|1 mod m)) mod m.
It never grows: past `capacity` keys it warns once (the ``crawler.sieve`` logger) and its rate
climbs as (1 - e^{-kn/m})^k says.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from crawler.sieve.bloom import stage_shape
from crawler.sieve.kinds.bits import BitStage
from crawler.sieve.kinds.common import U64, Stage, Staged, log

__all__ = ["BloomFilter", "ClassicStage", "double_hash_positions"]


def double_hash_positions(m: int, k: int, h1: U64, h2: U64) -> NDArray[np.int64]:
    """The (keys, k) matrix of positions (h1 mod m + i*((h2|1) mod m)) mod m, i < k."""
    a = (h1 % np.uint64(m)).astype(np.int64)
    b = ((h2 | np.uint64(1)) % np.uint64(m)).astype(np.int64)
    got: NDArray[np.int64] = (a[:, None] + b[:, None] * np.arange(k, dtype=np.int64)) % m
    return got


class ClassicStage(BitStage):
    """A plain Bloom filter of `stage_shape(capacity, error_rate)`, or of `shape` = (m, k) with m
    a multiple of 64 (the benchmark builds the multi-layer paper's filters)."""

    def __init__(
        self, capacity: int, error_rate: float, shape: tuple[int, int] | None = None
    ) -> None:
        self.m, self.k = shape or stage_shape(capacity, error_rate)
        self.nbits = self.m
        self._alloc(capacity, error_rate)

    def positions_one(self, h: tuple[int, int]) -> list[int]:
        m = self.m
        a, b = h[0] % m, (h[1] | 1) % m
        return [x % m for x in range(a, a + self.k * b, b)]  # b is odd, m even: never 0

    def positions(self, hb: tuple[U64, U64], rows: NDArray[np.intp]) -> NDArray[np.int64]:
        return double_hash_positions(self.m, self.k, hb[0][rows], hb[1][rows])

    def params(self) -> dict[str, Any]:
        return {**self.base_params(), "m": self.m, "k": self.k}


class BloomFilter(Staged):
    """The classic filter: one stage, no growth, one warning once past capacity."""

    kind = "bloom"
    grows = False

    def __init__(self, capacity: int, error_rate: float) -> None:
        super().__init__(capacity, error_rate)
        self._warned = False

    def options(self) -> dict[str, Any]:
        return {}

    def _new_stage(self, capacity: int, error_rate: float) -> Stage:
        return ClassicStage(capacity, error_rate)

    def _restore_stage(self, params: dict[str, Any], arrays: list[bytes]) -> Stage:
        return ClassicStage(params["capacity"], params["error_rate"]).load(params, arrays)

    def _added(self) -> None:
        if not self._warned and self._len > self.capacity:
            self._warned = True
            log.warning(
                "bloom filter passed its capacity (%d keys > %d): it does not grow, its "
                "false-positive rate now climbs past %.3g",
                self._len, self.capacity, self.error_rate,
            )  # fmt: skip

    @classmethod
    def _from_parts(cls, params: dict[str, Any], arrays: list[bytes]) -> Staged:
        f = super()._from_parts(params, arrays)
        assert isinstance(f, BloomFilter)
        f._warned = f._len > f.capacity
        return f

    @property
    def false_positive_bound(self) -> float:
        """P while within capacity; past it, the formula's rate at the current count."""
        st = self._stages[0]
        assert isinstance(st, ClassicStage)
        if self._len <= self.capacity:
            return self.error_rate
        return float((-np.expm1(-st.k * self._len / st.m)) ** st.k)
