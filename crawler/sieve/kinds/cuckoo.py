"""``cuckoo``: the cuckoo filter (Fan, Andersen, Kaminsky & Mitzenmacher 2014).

Buckets of b = 4 slots, each slot an f-bit fingerprint (0 = empty), packed: a bucket is
ceil(4f/8) bytes, slot j its bits j*f .. j*f+f-1. A key's fingerprint comes from h2's top bits,
its first bucket from h1, its other one from the fingerprint alone (partial-key cuckoo hashing):
alt(i, fp) = (splitmix64(fp) - i) mod buckets, an involution for any number of buckets (the
paper's XOR needs a power of two, which can waste half the table). An entry only ever moves
between its two buckets, so what a stage reports depends on its entries alone, not on where
they sit.

Sizing: f = ceil(log2(2b/P)) (a lookup compares 2b slots: rate <= 2b/2^f <= P at any load) and
buckets = ceil(C / (b * 0.95)) (the paper's 95% load).

Every `add` is an entry (`crawler.sieve.kinds.deleting`): a copy of the key's fingerprint, even
when the key is reported already; `add_if_absent` only inserts a key not reported. When an entry
finds no slot in its two buckets after 500 kicks (a crowded table, or the same key added more
than the 8 times its two buckets hold), the entry then evicted goes to the stage's stash: a
count of entries by (bucket pair, fingerprint), looked up with the buckets and saved with the
stage. So an add is never refused and no entry is ever dropped; a copy of a pair already
stashed goes straight there (no kicks). A stage is full at C entries or once its stash is not
empty; the next key it does not report opens the next stage. A `remove` takes the entry from
the stash first, else from a bucket, and a freed slot takes back a stashed entry of its pair.

Removing a key that was added takes its own entry: another key sharing its buckets and
fingerprint is reported by them alike, and has entries of its own. Removing a key never added:
see `crawler.sieve.kinds.deleting` (the entry of the key it collides with, with probability <=
`false_positive_bound`: the paper's "delete only what was inserted").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crawler.sieve.kinds.common import U64, Stage, check_int, splitmix64, splitmix64_np
from crawler.sieve.kinds.deleting import DeletingStaged

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
        # entries that found no slot: (the lower bucket of their pair, fingerprint) -> how many
        self.stash: dict[tuple[int, int], int] = {}
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
        return bool(self.stash) and (min(i1, i2), fp) in self.stash

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

    def _stash_one(self, i: int, fp: int) -> None:
        pair = (min(i, (splitmix64(fp) - i) % self.buckets), fp)
        self.stash[pair] = self.stash.get(pair, 0) + 1

    def _store(self, fp: int, i1: int, i2: int) -> None:
        """One more entry (fp in bucket i1 or i2): a free slot, else kicks, else the stash."""
        if self._place(i1, fp) or self._place(i2, fp):
            return
        if (min(i1, i2), fp) in self.stash:  # its pair overflowed before: no kicks to try
            self._stash_one(i1, fp)
            return
        i, f = (i1, i2)[self._next() & 1], self.f
        for _ in range(MAX_KICKS):
            j = (self._next() >> 8) % BUCKET_SLOTS
            value = self._read(i)
            out = (value >> (j * f)) & self._fmask
            self._write(i, value ^ ((out ^ fp) << (j * f)))
            fp, i = out, (splitmix64(out) - i) % self.buckets
            if self._place(i, fp):
                return
        self._stash_one(i, fp)

    def insert(self, h: tuple[int, int]) -> bool:
        if self.contains(h):
            return False
        self._store(*self.locate(h))
        self.count += 1
        return True

    def record(self, h: tuple[int, int]) -> bool:
        new = not self.contains(h)
        self._store(*self.locate(h))
        self.count += 1
        return new

    def remove(self, h: tuple[int, int]) -> bool:
        fp, i1, i2 = self.locate(h)
        pair = (min(i1, i2), fp)
        n = self.stash.get(pair, 0)
        if n:
            if n > 1:
                self.stash[pair] = n - 1
            else:
                del self.stash[pair]
            return True
        f = self.f
        for i in (i1, i2):
            value = self._read(i)
            for j in range(BUCKET_SLOTS):
                if (value >> (j * f)) & self._fmask == fp:
                    self._write(i, value & ~(self._fmask << (j * f)))
                    self._unstash(i)
                    return True
        return False  # pragma: no cover - callers remove only keys the stage reports

    def _unstash(self, i: int) -> None:
        """A slot of bucket i is free: one stashed entry of a pair holding i takes it."""
        for pair in self.stash:
            low, fp = pair
            if i in (low, (splitmix64(fp) - low) % self.buckets):
                self._place(i, fp)
                if self.stash[pair] > 1:
                    self.stash[pair] -= 1
                else:
                    del self.stash[pair]
                return

    def is_full(self) -> bool:
        return self.count >= self.capacity or bool(self.stash)

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
        if self.stash:
            hit |= self._stashed(np.minimum(i1, i2), fp)
        got: NDArray[np.bool_] = hit
        return got

    def _stashed(self, low: U64, fp: U64) -> NDArray[np.bool_]:
        """Which (lower bucket, fingerprint) pairs the stash holds."""
        if len(self.stash) <= 16:  # (the usual: none or a few)
            hit = np.zeros(len(fp), dtype=bool)
            for b, f in self.stash:
                hit |= (low == np.uint64(b)) & (fp == np.uint64(f))
            return hit
        stash = self.stash
        return np.array([p in stash for p in zip(low.tolist(), fp.tolist(), strict=True)], bool)

    def insert_rows(
        self, hb: tuple[U64, U64], rows: NDArray[np.intp], room: int | None
    ) -> tuple[NDArray[np.bool_], int]:
        """Keys present before the batch stay present (an entry only moves between its two
        buckets), so they are answered at once; the others go one by one."""
        return self._rows(hb, rows, room, every=False)

    def record_rows(
        self, hb: tuple[U64, U64], rows: NDArray[np.intp], room: int | None
    ) -> tuple[NDArray[np.bool_], int]:
        """As `insert_rows`, the keys present before the batch recorded too."""
        return self._rows(hb, rows, room, every=True)

    def _rows(
        self, hb: tuple[U64, U64], rows: NDArray[np.intp], room: int | None, every: bool
    ) -> tuple[NDArray[np.bool_], int]:
        """With `room`, stop after `room` entries or at the one that fills the stash."""
        seen = self.present(hb, rows).tolist()
        h1, h2 = hb[0][rows].tolist(), hb[1][rows].tolist()
        out = np.zeros(len(rows), dtype=bool)
        entries = 0
        for r, known in enumerate(seen):
            h = (h1[r], h2[r])
            if every and known:
                self._store(*self.locate(h))
                self.count += 1
            elif every:
                out[r] = self.record(h)
            elif known or not self.insert(h):
                continue
            else:
                out[r] = True
            entries += 1
            if room is not None and (entries >= room or self.stash):
                return out[: r + 1], r + 1
        return out, len(rows)

    # -- figures and persistence ---------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity, "error_rate": self.error_rate, "count": self.count,
            "f": self.f, "buckets": self.buckets, "rng": self.rng,
            "stash": sorted([b, fp, n] for (b, fp), n in self.stash.items()),
        }  # fmt: skip

    def arrays(self) -> list[bytes]:
        return [bytes(self.table)]

    @property
    def size_in_bytes(self) -> int:
        return len(self.table)


class CuckooFilter(DeletingStaged):
    """Cuckoo stages, growing as the Sieve does; never refuses an add nor drops an entry."""

    kind = "cuckoo"

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
        st.stash = _stash(st, params)
        return st


def _stash(st: CuckooStage, params: dict[str, Any]) -> dict[tuple[int, int], int]:
    """The saved stash, checked (a file of an earlier version has one `victim` entry)."""
    if "stash" not in params:
        victim = params["victim"]
        rows = [] if victim is None else [[*victim, 1]]
    else:
        rows = params["stash"]
    stash: dict[tuple[int, int], int] = {}
    for i, fp, n in rows:
        check_int("fp", fp, 1, st._fmask)
        i = check_int("stash bucket", i, 0, st.buckets - 1)
        low = min(i, (splitmix64(fp) - i) % st.buckets)
        if "stash" in params and (i != low or (low, fp) in stash):
            raise ValueError(f"stash entry {[i, fp]!r} is not one of a pair, once")
        stash[(low, fp)] = check_int("stash count", n, 1, 1 << 62)
    return stash
