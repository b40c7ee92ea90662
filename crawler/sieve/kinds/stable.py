"""``stable``: the stable Bloom filter (Deng & Rafiei 2006): fixed memory, forgets old keys.

m cells of d bits (Max = 2^d - 1), K positions a key. Adding a key, in the paper's order: ask
whether all its K cells are non-zero (the answer), decrement Pd pseudo-random cells (those at
zero stay), set its K cells to Max. Every key of the stream is added (a repeat refreshes it).

Parameters from the paper. At the stable point the fraction of zero cells is
p0 = (1 / (1 + 1/(Pd (1/K - 1/m))))^Max and the false-positive rate (1 - p0)^K; Pd is chosen so
that rate equals P (the paper's Pd formula). A key's cell survives `age` later inserts unless it
is decremented Max times, ~Poisson(age*Pd/m): a key is still reported after `age` inserts with
probability >= Pr[Poisson(age*Pd/m) <= Max-1]^K (refreshes by other keys only help). m is the
smallest with that >= `recall` (0.99) at age `recall_window` (capacity/100 by default: the
issue's ">= 99% of the last capacity/100 keys"), over d in 1..8 and K in 1..32 with Pd <= 64
(each decrement is a random write: a larger d saves cells but costs thousands of them an insert).
Cells are one byte each, so m bytes is the memory.

The decremented cells are splitmix64(t*Pd + j) mod m for the t-th insert (t saved in the file),
so a batch computes exactly the state and answers of adding its keys one by one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from crawler.sieve.kinds.common import (
    BATCH_MIN,
    check_capacity,
    check_error_rate,
    check_int,
    hash_batch,
    hash_one,
    splitmix64_np,
)

__all__ = ["MAX_DECREMENTS", "StableFilter", "stable_shape"]

MAX_DECREMENTS = 64  # Pd is an insert's cost (random writes): shapes needing more are skipped


def _poisson_cdf(k: int, lam: float) -> float:
    term = total = math.exp(-lam)
    for i in range(1, k + 1):
        term *= lam / i
        total += term
    return total


def decrements(k: int, max_value: int, p: float, m: float) -> float:
    """The paper's Pd: the decrements an insert whose stable false-positive rate is p."""
    p0 = 1.0 - float(p) ** (1.0 / k)
    return float(1.0 / ((p0 ** (-1.0 / max_value) - 1.0) * (1.0 / k - 1.0 / m)))


@lru_cache(maxsize=64)
def stable_shape(window: int, error_rate: float, recall: float) -> tuple[int, int, int, int]:
    """(m, K, d, Pd): the fewest cells keeping a key `window` inserts old with prob >= recall."""
    best: tuple[int, int, int, int] | None = None
    for d in range(1, 9):
        top = (1 << d) - 1
        for k in range(1, 33):
            lo, hi = 0.0, 4.0 * top + 40.0  # the largest age*Pd/m keeping the recall
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if _poisson_cdf(top - 1, mid) ** k >= recall else (lo, mid)
            if lo <= 0:
                continue
            pd, m = math.ceil(decrements(k, top, error_rate, math.inf)), 0
            while pd <= MAX_DECREMENTS:  # Pd rounded up: the rate stays <= P; m follows Pd
                m = -(-max(64, math.ceil(window * pd / lo)) // 64) * 64
                need = math.ceil(decrements(k, top, error_rate, m)) if m > k else pd + 1
                if need <= pd:
                    break
                pd = need
            if pd <= MAX_DECREMENTS and (best is None or m < best[0]):
                best = (m, k, d, pd)
    assert best is not None
    return best


class StableFilter:
    """A stable Bloom filter: never grows, remembers recent keys, forgets old ones."""

    kind: ClassVar[str] = "stable"
    supports_remove: ClassVar[bool] = False

    def __init__(
        self,
        capacity: int,
        error_rate: float,
        recall_window: int | None = None,
        recall: float = 0.99,
    ) -> None:
        self.capacity = check_capacity(capacity)
        self.error_rate = check_error_rate(error_rate)
        window = max(1, capacity // 100) if recall_window is None else recall_window
        self.recall_window = check_int("recall_window", window, 1, 1 << 48)
        if isinstance(recall, bool) or not isinstance(recall, float) or not 0.0 < recall < 1.0:
            raise ValueError(f"recall must be a float in (0, 1), got {recall!r}")
        self.recall = recall
        self.m, self.k, self.d, self.pd = stable_shape(self.recall_window, self.error_rate, recall)
        self.max = (1 << self.d) - 1
        self.cells = bytearray(self.m)
        self._np = np.frombuffer(self.cells, dtype=np.uint8)
        self.inserts = 0  # t: inserts so far (the decrements' counter)
        self._len = 0

    def _positions(self, h1: int, h2: int) -> list[int]:
        m = self.m
        a, b = h1 % m, (h2 | 1) % m
        return [x % m for x in range(a, a + self.k * b, b)]

    def __contains__(self, key: str | bytes) -> bool:
        cells = self.cells
        return all(cells[x] for x in self._positions(*hash_one(key)))

    def add(self, key: str | bytes) -> bool:
        cells, m = self.cells, self.m
        pos = self._positions(*hash_one(key))
        new = not all(cells[x] for x in pos)
        base = self.inserts * self.pd
        seq = np.arange(base, base + self.pd, dtype=np.uint64)
        for x in (splitmix64_np(seq) % np.uint64(m)).tolist():
            if cells[x]:
                cells[x] -= 1
        for x in pos:
            cells[x] = self.max
        self.inserts += 1
        self._len += new
        return new

    def add_many(self, keys: Sequence[str | bytes]) -> list[bool]:
        """The answers and state of adding the keys one by one, from one sort of the batch's
        events (query < decrement < set within an insert) by (cell, time)."""
        n = len(keys)
        if n < BATCH_MIN:
            return [self.add(k) for k in keys]
        m, k, pd = self.m, self.k, self.pd
        h1, h2 = hash_batch(keys)
        a = (h1 % np.uint64(m)).astype(np.int64)
        b = ((h2 | np.uint64(1)) % np.uint64(m)).astype(np.int64)
        qpos = ((a[:, None] + b[:, None] * np.arange(k)) % m).ravel()
        seq = np.arange(self.inserts * pd, (self.inserts + n) * pd, dtype=np.uint64)
        dpos = (splitmix64_np(seq) % np.uint64(m)).astype(np.int64)
        t = np.arange(n, dtype=np.int64)
        cell = np.concatenate([qpos, dpos, qpos])
        time = np.concatenate([np.repeat(t, k), np.repeat(t, pd), np.repeat(t, k)])
        kind = np.repeat(np.array([0, 1, 2], dtype=np.int64), [n * k, n * pd, n * k])
        order = np.argsort(cell * (3 * n) + time * 3 + kind)  # by cell, time, then kind
        cell, kind = cell[order], kind[order]
        e = np.arange(cell.size)
        start = np.concatenate(([True], cell[1:] != cell[:-1]))
        is_set = kind == 2
        reset = np.maximum.accumulate(np.where(start | is_set, e, 0))
        is_dec = (kind == 1).astype(np.int64)
        cum = np.cumsum(is_dec)
        decs = cum - (cum[reset] - is_dec[reset])  # decrements in [reset, e]
        base = np.where(is_set[reset], self.max, self._np[cell[reset]].astype(np.int64))
        value = base - decs  # the cell after event e (<= 0: zero)
        q = kind == 0
        alive = np.empty(n * k, dtype=bool)
        alive[order[q]] = value[q] > 0  # a query event is no decrement: value before it
        new: NDArray[np.bool_] = np.logical_not(alive.reshape(n, k).all(axis=1))
        last = np.flatnonzero(np.concatenate((cell[1:] != cell[:-1], [True])))
        self._np[cell[last]] = np.maximum(value[last], 0).astype(np.uint8)
        self.inserts += n
        self._len += int(np.count_nonzero(new))
        answers: list[bool] = new.tolist()
        return answers

    # it cannot delete, so the test-and-set is `add` (which refreshes a repeated key)
    add_if_absent = add
    add_many_if_absent = add_many

    def remove(self, key: str | bytes) -> bool:
        raise TypeError("a 'stable' filter cannot remove keys (it forgets them by itself)")

    def __len__(self) -> int:
        """Adds that answered True (keys new, or forgotten and seen again)."""
        return self._len

    @property
    def size_in_bytes(self) -> int:
        return self.m

    @property
    def false_positive_bound(self) -> float:
        """The stable point's rate (1 - p0)^K (the rate before it is lower)."""
        p0 = (1.0 / (1.0 + 1.0 / (self.pd * (1.0 / self.k - 1.0 / self.m)))) ** self.max
        return float((1.0 - p0) ** self.k)

    def recall_at(self, age: int) -> float:
        """The model's lower bound on reporting a key `age` inserts old."""
        return _poisson_cdf(self.max - 1, age * self.pd / self.m) ** self.k

    def __repr__(self) -> str:
        return (
            f"StableFilter(m={self.m}, K={self.k}, d={self.d}, Pd={self.pd}, "
            f"inserts={self.inserts}, false_positive_bound={self.false_positive_bound:.3g})"
        )

    def to_bytes(self) -> bytes:
        from crawler.sieve.kinds import codec

        params = {
            "capacity": self.capacity, "error_rate": self.error_rate, "len": self._len,
            "options": {"recall_window": self.recall_window, "recall": self.recall},
            "inserts": self.inserts, "m": self.m, "k": self.k, "d": self.d, "pd": self.pd,
        }  # fmt: skip
        return codec.encode(self.kind, params, [bytes(self.cells)])

    @classmethod
    def _from_parts(cls, params: dict[str, Any], arrays: list[bytes]) -> StableFilter:
        f = cls(params["capacity"], params["error_rate"], **params["options"])
        if [params[x] for x in ("m", "k", "d", "pd")] != [f.m, f.k, f.d, f.pd]:
            raise ValueError("shape does not match the parameters")
        (raw,) = arrays
        if len(raw) != f.m or max(raw, default=0) > f.max:
            raise ValueError("cells do not fit the shape")
        f.cells[:] = raw
        f.inserts = check_int("inserts", params["inserts"], 0, 1 << 62)
        f._len = check_int("len", params["len"], 0, 1 << 62)
        return f
