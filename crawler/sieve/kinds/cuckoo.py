"""``cuckoo``: the cuckoo filter (Fan, Andersen, Kaminsky & Mitzenmacher 2014).

Buckets of b = 4 slots, each slot an f-bit fingerprint (0 = empty), packed: a bucket is
ceil(4f/8) bytes, slot j its bits j*f .. j*f+f-1. A key's fingerprint comes from h2's top bits,
its first bucket from h1, its other one from the fingerprint alone (partial-key cuckoo hashing):
alt(i, fp) = (splitmix64(fp) - i) mod buckets, an involution for any number of buckets (the
paper's XOR needs a power of two, which can waste half the table).

Sizing: f = ceil(log2(2b/P)) (a lookup compares 2b slots: rate <= 2b/2^f <= P at any load) and
buckets = ceil(C / (b * 0.95)) (the paper's 95% load). A stage is full at C keys, or when an
insert fails after 500 kicks: the last evicted fingerprint then waits in the stage's victim slot
(looked up too), so an insert is never refused, and the next key opens the next stage.

Deletion: `remove` deletes one copy of the key's fingerprint from its buckets (or the victim) in
the oldest stage reporting it, which for a key that was added is the stage it went into. For a
key that was added this is exact and makes no other key disappear: another key sharing the same
buckets and fingerprint could never have been inserted beside it (it was reported present). For
a key never added, remove changes nothing unless the key is a false positive (probability <=
`false_positive_bound`); then it deletes the entry of the key it collides with, which is the
documented limit of every cuckoo filter (the paper: delete only what was inserted). A caller
that may remove keys it never added must check them against an exact record first.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crawler.sieve.kinds.common import U64, Stage, Staged, check_int, splitmix64, splitmix64_np

__all__ = ["BUCKET_SLOTS", "LOAD", "MAX_KICKS", "CuckooFilter", "CuckooStage"]

BUCKET_SLOTS = 4
LOAD = 0.95
MAX_KICKS = 500
_M64 = (1 << 64) - 1


class CuckooStage(Stage):
    def __init__(self, capacity: int, error_rate: float) -> None:
        self.capacity, self.error_rate, self.count = capacity, error_rate, 0
        self.f = min(32, max(4, math.ceil(math.log2(2 * BUCKET_SLOTS / error_rate))))
        self.buckets = max(1, math.ceil(capacity / (BUCKET_SLOTS * LOAD)))
        self.stride = -(-BUCKET_SLOTS * self.f // 8)
        self.table = bytearray(self.buckets * self.stride)
        self._np = np.frombuffer(self.table, dtype=np.uint8)
        self.victim: tuple[int, int] | None = None  # (bucket, fingerprint) that found no slot
        self.rng = 0x2545F4914F6CDD1D  # xorshift64 state, for the kicks' slot choice
        f = self.f
        self._fmask = (1 << f) - 1
        self._ones = sum(1 << (j * f) for j in range(BUCKET_SLOTS))
        self._highs = self._ones << (f - 1)

    # -- one key ------------------------------------------------------------------------------
    def locate(self, h: tuple[int, int]) -> tuple[int, int, int]:
        """(fingerprint, first bucket, other bucket)."""
        fp = (h[1] >> (64 - self.f)) % self._fmask + 1
        i1 = h[0] % self.buckets
        return fp, i1, (splitmix64(fp) - i1) % self.buckets

    def _read(self, i: int) -> int:
        off = i * self.stride
        return int.from_bytes(self.table[off : off + self.stride], "little")

    def _write(self, i: int, value: int) -> None:
        off = i * self.stride
        self.table[off : off + self.stride] = value.to_bytes(self.stride, "little")

    def _has(self, i: int, fp: int) -> bool:
        x = self._read(i) ^ (fp * self._ones)  # a slot holding fp is now zero (SWAR test)
        return bool((x - self._ones) & ~x & self._highs)

    def contains(self, h: tuple[int, int]) -> bool:
        fp, i1, i2 = self.locate(h)
        if self._has(i1, fp) or self._has(i2, fp):
            return True
        v = self.victim
        return v is not None and v[1] == fp and v[0] in (i1, i2)

    def _place(self, i: int, fp: int) -> bool:
        value, f = self._read(i), self.f
        for j in range(BUCKET_SLOTS):
            if not (value >> (j * f)) & self._fmask:
                self._write(i, value | (fp << (j * f)))
                return True
        return False

    def _next(self) -> int:
        x = self.rng
        x ^= (x << 13) & _M64
        x ^= x >> 7
        x ^= (x << 17) & _M64
        self.rng = x
        return x

    def insert(self, h: tuple[int, int]) -> bool:
        if self.contains(h):
            return False
        fp, i1, i2 = self.locate(h)
        self.count += 1
        if self._place(i1, fp) or self._place(i2, fp):
            return True
        i, f = (i1, i2)[self._next() & 1], self.f
        for _ in range(MAX_KICKS):
            j = (self._next() >> 8) % BUCKET_SLOTS
            value = self._read(i)
            out = (value >> (j * f)) & self._fmask
            self._write(i, value ^ ((out ^ fp) << (j * f)))
            fp, i = out, (splitmix64(out) - i) % self.buckets
            if self._place(i, fp):
                return True
        self.victim = (i, fp)
        return True

    def remove(self, h: tuple[int, int]) -> bool:
        fp, i1, i2 = self.locate(h)
        f = self.f
        for i in (i1, i2):
            value = self._read(i)
            for j in range(BUCKET_SLOTS):
                if (value >> (j * f)) & self._fmask == fp:
                    self._write(i, value & ~(self._fmask << (j * f)))
                    v, self.victim = self.victim, None
                    if v is not None and not self._place(*v):  # room for the victim now?
                        self.victim = v
                    return True
        if self.victim is not None and self.victim[1] == fp and self.victim[0] in (i1, i2):
            self.victim = None
            return True
        return False  # pragma: no cover - callers remove only keys the stage reports

    def is_full(self) -> bool:
        return self.count >= self.capacity or self.victim is not None

    # -- a batch --------------------------------------------------------------------------------
    def _slots(self, buckets: NDArray[np.int64]) -> NDArray[np.uint64]:
        """The (n, 4) fingerprints of the given buckets."""
        s, f = self.stride, self.f
        raw = self._np[buckets[:, None] * s + np.arange(s)].astype(np.uint64)
        raw = np.concatenate([raw, np.zeros((len(buckets), 4), dtype=np.uint64)], axis=1)
        out = np.empty((len(buckets), BUCKET_SLOTS), dtype=np.uint64)
        for j in range(BUCKET_SLOTS):
            byte, shift = divmod(j * f, 8)
            v = np.zeros(len(buckets), dtype=np.uint64)
            for t in range(-(-(shift + f) // 8)):
                v |= raw[:, byte + t] << np.uint64(8 * t)
            out[:, j] = (v >> np.uint64(shift)) & np.uint64(self._fmask)
        return out

    def present(self, hb: tuple[U64, U64], rows: NDArray[np.intp]) -> NDArray[np.bool_]:
        h1, h2 = hb[0][rows], hb[1][rows]
        n = np.uint64(self.buckets)
        fp = (h2 >> np.uint64(64 - self.f)) % np.uint64(self._fmask) + np.uint64(1)
        i1 = h1 % n
        i2 = (splitmix64_np(fp) % n + n - i1) % n
        hit = (self._slots(i1.astype(np.int64)) == fp[:, None]).any(axis=1)
        hit |= (self._slots(i2.astype(np.int64)) == fp[:, None]).any(axis=1)
        if self.victim is not None:
            vi, vf = self.victim
            hit |= (fp == vf) & ((i1 == vi) | (i2 == vi))
        got: NDArray[np.bool_] = hit
        return got

    def insert_rows(
        self, hb: tuple[U64, U64], rows: NDArray[np.intp], room: int | None
    ) -> tuple[NDArray[np.bool_], int]:
        """Keys present before the batch stay present (an insert only moves a fingerprint
        between its two buckets), so they are answered at once; the others go one by one."""
        seen = self.present(hb, rows).tolist()
        h1, h2 = hb[0][rows].tolist(), hb[1][rows].tolist()
        out = np.zeros(len(rows), dtype=bool)
        credited = 0
        for r, known in enumerate(seen):
            if known or not self.insert((h1[r], h2[r])):
                continue
            out[r] = True
            credited += 1
            if (room is not None and credited >= room) or self.victim is not None:
                return out[: r + 1], r + 1
        return out, len(rows)

    # -- figures and persistence ---------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity, "error_rate": self.error_rate, "count": self.count,
            "f": self.f, "buckets": self.buckets, "rng": self.rng,
            "victim": list(self.victim) if self.victim else None,
        }  # fmt: skip

    def arrays(self) -> list[bytes]:
        return [bytes(self.table)]

    @property
    def size_in_bytes(self) -> int:
        return len(self.table)


class CuckooFilter(Staged):
    """Cuckoo stages, growing as the Sieve does; never refuses an insert."""

    kind = "cuckoo"
    supports_remove = True

    def _new_stage(self, capacity: int, error_rate: float) -> Stage:
        return CuckooStage(capacity, error_rate)

    def _full(self, stage: Stage) -> bool:
        assert isinstance(stage, CuckooStage)
        return stage.is_full()

    def _restore_stage(self, params: dict[str, Any], arrays: list[bytes]) -> Stage:
        st = CuckooStage(params["capacity"], params["error_rate"])
        shape = {k: params[k] for k in ("f", "buckets")}
        if shape != {"f": st.f, "buckets": st.buckets}:
            raise ValueError(f"stage parameters do not match its shape: {params!r}")
        (raw,) = arrays
        if len(raw) != len(st.table):
            raise ValueError(f"stage table: {len(raw)} bytes, expected {len(st.table)}")
        st.table[:] = raw
        st.count = check_int("count", params["count"], 0, 1 << 62)
        st.rng = check_int("rng", params["rng"], 1, (1 << 64) - 1)
        victim = params["victim"]
        if victim is not None:
            i, fp = victim
            st.victim = (
                check_int("victim", i, 0, st.buckets - 1),
                check_int("fp", fp, 1, st._fmask),
            )
        return st
