"""What the family's kinds share: validation, hashing (one key and a batch), growth by stages.

Every kind hashes a key as the Sieve does (one 128-bit MurmurHash3 x64 with `SEED`, split into two
64-bit halves), taken here as UNSIGNED 64-bit integers (``h & MASK64`` in Python, ``uint64`` in
numpy) so that a key's positions are the same whether it comes alone or in a batch.

`Staged` is the growth of Almeida et al. (2007) for any stage type: stage i holds C*growth^i keys
at P*(1-r)*r^i, a query asks every stage, an insert goes to the newest one, and a stage is full
when that many keys were credited to it (an exact count, not an estimate). The false-positive
bound is the sum of the stages' rates, below P at any overshoot. Here `add` is the test-and-set
`add_if_absent` (a key reported present holds nothing more to record); the kinds that delete
record every add (`crawler.sieve.kinds.deleting`).
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import mmh3
import numpy as np
from numpy.typing import NDArray

from crawler.sieve.format import SEED

__all__ = ["BATCH_MIN", "MASK64", "Stage", "Staged", "check_capacity", "check_error_rate"]
__all__ += ["check_growth", "hash_batch", "hash_one", "splitmix64", "splitmix64_np"]

log = logging.getLogger("crawler.sieve")

MASK64 = (1 << 64) - 1
BATCH_MIN = 40  # below this many keys a plain loop beats numpy (as in crawler.sieve.batch)
U64 = NDArray[np.uint64]
_digest = mmh3.mmh3_x64_128_digest
_hash64 = mmh3.hash64


def check_capacity(capacity: object) -> int:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
    return capacity


def check_error_rate(error_rate: object) -> float:
    if isinstance(error_rate, bool) or not isinstance(error_rate, int | float):
        raise ValueError(f"error_rate must be a number in (0, 1), got {error_rate!r}")
    if not 0.0 < error_rate < 1.0:
        raise ValueError(f"error_rate must be in (0, 1), got {error_rate!r}")
    return float(error_rate)


def check_growth(ratio: object, growth: object) -> tuple[float, float]:
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0.0 < ratio < 1.0:
        raise ValueError(f"ratio must be in (0, 1), got {ratio!r}")
    if isinstance(growth, bool) or not isinstance(growth, int | float) or not growth >= 1.0:
        raise ValueError(f"growth must be >= 1, got {growth!r}")
    return float(ratio), float(growth)


def check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    return value


def as_bytes(key: str | bytes) -> bytes:
    return key.encode() if isinstance(key, str) else key


def hash_one(key: str | bytes) -> tuple[int, int]:
    """The key's (h1, h2) as unsigned 64-bit ints."""
    h1, h2 = _hash64(key, SEED)
    return h1 & MASK64, h2 & MASK64


def hash_batch(keys: Sequence[str | bytes]) -> tuple[U64, U64]:
    """`hash_one` of every key, as two uint64 arrays (one digest call a key)."""
    try:
        raw = b"".join([_digest(k.encode(), SEED) for k in keys])  # type: ignore[union-attr]
    except AttributeError:  # some keys are bytes already
        raw = b"".join([_digest(as_bytes(k), SEED) for k in keys])
    h = np.frombuffer(raw, dtype="<u8")
    return h[0::2], h[1::2]


def splitmix64(x: int) -> int:
    """SplitMix64's output function (a bijective 64-bit mixer)."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def splitmix64_np(x: U64) -> U64:
    """`splitmix64` of every element (uint64 arithmetic wraps as the & MASK64 above)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: U64 = x ^ (x >> np.uint64(31))
    return out


MASKS8 = np.array([1 << i for i in range(8)], dtype=np.uint8)


def first_credit(pos: NDArray[Any], zero: NDArray[np.bool_]) -> tuple[NDArray[np.intp], Any]:
    """Per row, how many of its zero cells no earlier row of the batch also has; and the zero
    cells, sorted, each once.

    A cell zero before the batch is made non-zero by the FIRST row (in batch order) that has it,
    and that row is new (it has a zero cell); so a row is new exactly when it is credited at
    least one cell: the answers of inserting the rows one by one.
    """
    fresh = pos[zero]
    srt = np.sort(fresh)
    if srt.size < 2 or not bool((srt[1:] == srt[:-1]).any()):
        counted: NDArray[np.intp] = np.count_nonzero(zero, axis=1)
        return counted, srt
    order = np.argsort(fresh, kind="stable")  # equal cells keep batch order: first one first
    keep = np.concatenate(([True], srt[1:] != srt[:-1]))
    got: NDArray[np.intp] = np.bincount(np.nonzero(zero)[0][order[keep]], minlength=pos.shape[0])
    return got, srt[keep]


def unique_counts(a: NDArray[Any]) -> tuple[NDArray[Any], NDArray[np.intp]]:
    """`np.unique(a, return_counts=True)` by sorting (numpy's hash-based unique is slower here)."""
    srt = np.sort(a, axis=None)
    if not srt.size:
        return srt, np.zeros(0, dtype=np.intp)
    starts = np.flatnonzero(np.concatenate(([True], srt[1:] != srt[:-1])))
    counts: NDArray[np.intp] = np.diff(np.append(starts, srt.size))
    return srt[starts], counts


class Stage(ABC):
    """One stage of a `Staged` filter: `capacity` keys at `error_rate`, `count` credited."""

    capacity: int
    error_rate: float
    count: int

    @abstractmethod
    def contains(self, h: Any) -> bool: ...

    @abstractmethod
    def insert(self, h: Any) -> bool:
        """Add the key unless the stage already reports it; True if it was new."""

    @abstractmethod
    def present(self, hb: Any, rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        """`contains` for the given rows of a hashed batch."""

    @abstractmethod
    def insert_rows(
        self, hb: Any, rows: NDArray[np.intp], room: int | None
    ) -> tuple[NDArray[np.bool_], int]:
        """Insert the rows in order with the answers of `insert` one by one; stop after the row
        that brings the credited count to `room` more (None: no limit). Returns (answers of the
        committed rows, number of committed rows)."""

    def record(self, h: Any) -> bool:  # pragma: no cover - kinds that delete override it
        """One more entry of the key, whether the stage reports it or not; True if it did not."""
        raise TypeError("this stage cannot delete")

    def record_rows(  # pragma: no cover - kinds that delete override it
        self, hb: Any, rows: NDArray[np.intp], room: int | None
    ) -> tuple[NDArray[np.bool_], int]:
        """`record` of the rows in order; with `room`, stop after that many or at the row that
        fills the stage another way. Returns (answers of the committed rows, their number)."""
        raise TypeError("this stage cannot delete")

    def remove(self, h: Any) -> bool:  # pragma: no cover - kinds that delete override it
        raise TypeError("this stage cannot delete")

    @abstractmethod
    def params(self) -> dict[str, Any]: ...

    @abstractmethod
    def arrays(self) -> list[bytes]: ...

    @property
    @abstractmethod
    def size_in_bytes(self) -> int: ...


class Staged(ABC):
    """A chain of stages growing as `crawler.sieve.Sieve` does (see the module docstring)."""

    kind: ClassVar[str]
    supports_remove: ClassVar[bool] = False
    grows: ClassVar[bool] = True
    n_arrays: ClassVar[int] = 1  # byte arrays a stage saves

    def __init__(
        self, capacity: int, error_rate: float, ratio: float = 0.5, growth: float = 2.0
    ) -> None:
        self.capacity = check_capacity(capacity)
        self.error_rate = check_error_rate(error_rate)
        self.ratio, self.growth = check_growth(ratio, growth)
        self._len = 0
        self._stages: list[Stage] = []
        self._open_stage()

    # -- what a kind provides -------------------------------------------------------------
    @abstractmethod
    def _new_stage(self, capacity: int, error_rate: float) -> Stage: ...

    @abstractmethod
    def _restore_stage(self, params: dict[str, Any], arrays: list[bytes]) -> Stage: ...

    def _hash(self, key: str | bytes) -> Any:
        return hash_one(key)

    def _hash_many(self, keys: Sequence[str | bytes]) -> Any:
        return hash_batch(keys)

    def options(self) -> dict[str, Any]:
        """The kind's own options (saved with the filter; `make_filter` takes them back)."""
        return {"ratio": self.ratio, "growth": self.growth}

    # -- stages -----------------------------------------------------------------------------
    def stage_params(self, i: int) -> tuple[int, float]:
        """Capacity and error rate of stage i: C*growth^i and P*(1-r)*r^i (P alone if the kind
        does not grow)."""
        if not self.grows:
            return self.capacity, self.error_rate
        p = self.error_rate * (1.0 - self.ratio) * self.ratio**i
        return math.ceil(self.capacity * self.growth**i), p

    def _open_stage(self) -> None:
        cap, p = self.stage_params(len(self._stages))
        if self._stages:
            log.warning(
                "%s filter stage %d is full (%d keys); opening stage %d: %d keys at %.3g",
                self.kind, len(self._stages) - 1, self._stages[-1].count,
                len(self._stages), cap, p,
            )  # fmt: skip
        self._stages.append(self._new_stage(cap, p))

    def _full(self, stage: Stage) -> bool:
        return self.grows and stage.count >= stage.capacity

    # -- the interface ------------------------------------------------------------------------
    def add_if_absent(self, key: str | bytes) -> bool:
        """Insert the key unless a stage reports it (test-and-set); True if it was new."""
        h = self._hash(key)
        stages = self._stages
        for st in stages[:-1]:
            if st.contains(h):
                return False
        cur = stages[-1]
        if self._full(cur):  # the next stage opens for the first key the full one lacks
            if cur.contains(h):
                return False
            self._open_stage()
            cur = self._stages[-1]
        if not cur.insert(h):
            return False
        self._len += 1
        self._added()
        return True

    def _added(self) -> None:  # noqa: B027 - a hook, empty unless a kind needs it
        """Called after each key credited (the fixed filter warns from here)."""

    def __contains__(self, key: str | bytes) -> bool:
        h = self._hash(key)
        return any(st.contains(h) for st in self._stages)

    def add_many_if_absent(self, keys: Sequence[str | bytes]) -> list[bool]:
        """`[self.add_if_absent(k) for k in keys]`: the same answers and state, vectorized."""
        if len(keys) < BATCH_MIN:
            add = self.add_if_absent
            return [add(k) for k in keys]
        hb = self._hash_many(keys)
        out = np.zeros(len(keys), dtype=bool)
        pending = np.arange(len(keys))
        for st in self._stages[:-1]:
            pending = pending[~st.present(hb, pending)]
        while pending.size:
            cur = self._stages[-1]
            if self._full(cur):  # as in `add`: the rest is checked against it, then grows
                pending = pending[~cur.present(hb, pending)]
                if pending.size:
                    self._open_stage()
                continue
            room = cur.capacity - cur.count if self.grows else None
            new, last = cur.insert_rows(hb, pending, room)
            out[pending[:last]] = new
            credited = int(np.count_nonzero(new))
            self._len += credited
            if credited:
                self._added()
            pending = pending[last:]
        answers: list[bool] = out.tolist()
        return answers

    # a key a stage of these kinds reports holds nothing more to record: add is the test-and-set
    add = add_if_absent
    add_many = add_many_if_absent

    def remove(self, key: str | bytes) -> bool:
        """Only the kinds that can delete (`crawler.sieve.kinds.deleting`) remove keys."""
        raise TypeError(f"a {self.kind!r} filter cannot remove keys")

    def __len__(self) -> int:
        return self._len

    @property
    def size_in_bytes(self) -> int:
        return sum(st.size_in_bytes for st in self._stages)

    @property
    def false_positive_bound(self) -> float:
        """Sum of the stages' rates (< error_rate however many stages)."""
        return sum(st.error_rate for st in self._stages)

    @property
    def stages(self) -> int:
        return len(self._stages)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(len={self._len}, stages={len(self._stages)}, "
            f"size_in_bytes={self.size_in_bytes}, error_rate={self.error_rate:.3g}, "
            f"false_positive_bound={self.false_positive_bound:.3g})"
        )

    # -- persistence ----------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        from crawler.sieve.kinds import codec

        params = {
            "capacity": self.capacity, "error_rate": self.error_rate, "len": self._len,
            "options": self.options(), "stages": [st.params() for st in self._stages],
        }  # fmt: skip
        return codec.encode(self.kind, params, [a for st in self._stages for a in st.arrays()])

    @classmethod
    def _from_parts(cls, params: dict[str, Any], arrays: list[bytes]) -> Staged:
        """The filter a decoded container describes; ValueError/KeyError/TypeError if invalid."""
        f = cls(params["capacity"], params["error_rate"], **params["options"])
        rows = params["stages"]
        if not isinstance(rows, list) or not rows or len(arrays) != len(rows) * cls.n_arrays:
            raise ValueError("stage table does not match the arrays")
        n = cls.n_arrays
        f._stages = [f._restore_stage(row, arrays[i * n : i * n + n]) for i, row in enumerate(rows)]
        f._len = check_int("len", params["len"], 0, 1 << 62)
        return f
