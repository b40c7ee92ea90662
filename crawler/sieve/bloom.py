"""The Sieve: a scalable Bloom filter answering "have I seen this canonical URL?".

Every position comes from ONE 128-bit MurmurHash3 (x64) of the item, split into two signed 64-bit
halves (h1, h2) and combined Kirsch–Mitzenmacher style: g_i = (h1 + i*h2) mod m (floor modulo, as
Python's ``%``), h2 forced odd. As m is a multiple of 64 and h2 is odd, the k <= 64 positions of
one item are always distinct. The seed is fixed, so a saved filter means the same thing in every
process. Stages follow Almeida et al., "Scalable Bloom Filters" (2007): stage i has capacity
C*growth^i and error rate P*(1-r)*r^i, so the compounded false-positive rate stays below P however
many stages accrete.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import mmh3
from bitarray import bitarray

from crawler.sieve import batch as sieve_batch
from crawler.sieve import format as sieve_format
from crawler.sieve.format import SEED, SieveFormatError

__all__ = ["SEED", "BloomStage", "Sieve", "SieveFormatError", "StageStats", "check_params"]
__all__ += ["estimate_items", "fingerprint", "grow_threshold", "hash_pair", "stage_params"]
__all__ += ["stage_shape"]

log = logging.getLogger("crawler.sieve")  # the logger name the docs give for growth warnings

_hash64 = mmh3.hash64


def hash_pair(item: str | bytes) -> tuple[int, int]:
    """The two halves (h1, h2) of the item's 128-bit MurmurHash3 (x64, SEED) as signed 64-bit ints.

    They are the little-endian halves of ``mmh3.mmh3_x64_128_digest``; a ``str`` hashes as its
    UTF-8 bytes. Feed the pair to `Sieve.add_hashed` to avoid hashing twice.
    """
    return _hash64(item, SEED)


def fingerprint(item: str | bytes) -> int:
    """A signed 64-bit fingerprint (fits SQLite's INTEGER): h1 of `hash_pair`, the Sieve's hash."""
    return _hash64(item, SEED)[0]


def stage_shape(capacity: int, error_rate: float) -> tuple[int, int]:
    """(m, k) of a stage: m bits (a multiple of 64) and k positions for `capacity` items at
    `error_rate`. Every backend builds its stages with this, so they agree bit for bit."""
    m = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
    return -(-m // 64) * 64, max(1, round(-math.log2(error_rate)))


def estimate_items(set_bits: int, m: int, k: int) -> float:
    """Swamidass–Baldi estimate of the distinct items behind `set_bits` of m: -(m/k) ln(1-X/m)."""
    if set_bits >= m:
        return math.inf
    return -(m / k) * math.log1p(-set_bits / m) if set_bits else 0.0


def grow_threshold(capacity: int, m: int, k: int) -> int:
    """The smallest set-bit count whose cardinality estimate exceeds `capacity`: the stage is
    full (and the next one opens) once that many bits are set."""
    x = min(m, math.floor(m * -math.expm1(-capacity * k / m)) + 1)
    while x > 0 and estimate_items(x - 1, m, k) > capacity:
        x -= 1
    while estimate_items(x, m, k) <= capacity:
        x += 1
    return x


def stage_params(
    capacity: int, error_rate: float, ratio: float, growth: float, i: int
) -> tuple[int, float]:
    """Capacity and error rate of stage `i`: C*growth^i and P*(1-r)*r^i."""
    return math.ceil(capacity * growth**i), error_rate * (1.0 - ratio) * ratio**i


class StageStats(NamedTuple):
    """A snapshot of one stage's figures."""

    stage: int
    capacity: int
    error_rate: float
    k: int
    m: int
    set_bits: int
    estimated_items: float


class BloomStage:
    """One plain Bloom filter for `capacity` items at false-positive rate `error_rate`."""

    __slots__ = ("_grow_at", "bits", "capacity", "error_rate", "k", "m", "set_bits")

    def __init__(self, capacity: int, error_rate: float) -> None:
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
        if not 0.0 < error_rate < 1.0:
            raise ValueError(f"error_rate must be in (0, 1), got {error_rate!r}")
        self.capacity = capacity
        self.error_rate = float(error_rate)
        self.m, self.k = stage_shape(capacity, error_rate)
        self.bits = bitarray(self.m, endian="little")
        self.bits.setall(0)
        self.set_bits = 0
        self._grow_at = grow_threshold(capacity, self.m, self.k)

    @classmethod
    def _restore(cls, rec: sieve_format.StageRecord) -> BloomStage:
        """The stage a decoded (already validated) record describes."""
        stage = cls.__new__(cls)
        stage.capacity, stage.error_rate, stage.k, stage.m, stage.set_bits, stage.bits = rec
        stage._grow_at = grow_threshold(stage.capacity, stage.m, stage.k)
        return stage

    @property
    def estimated_items(self) -> float:
        """Swamidass–Baldi estimate of distinct items inserted: -(m/k) ln(1 - X/m)."""
        return estimate_items(self.set_bits, self.m, self.k)

    @property
    def false_positive_rate(self) -> float:
        """The expected false-positive rate at the current fill: (X/m)^k."""
        return float((self.set_bits / self.m) ** self.k)

    def positions(self, h1: int, h2: int) -> list[int]:
        """The k bit positions of a hash pair."""
        m = self.m
        a, b = h1 % m, (h2 | 1) % m
        return [x % m for x in range(a, a + self.k * b, b)]

    def contains_hashed(self, h1: int, h2: int) -> bool:
        bits = self.bits
        return all(bits[x] for x in self.positions(h1, h2))

    def add_hashed(self, h1: int, h2: int) -> bool:
        """Set the pair's bits; True if any bit flipped (the item was new to this stage)."""
        bits, flips = self.bits, 0
        for x in self.positions(h1, h2):
            if not bits[x]:
                bits[x] = 1
                flips += 1
        self.set_bits += flips
        return flips > 0

    def add(self, item: str | bytes) -> bool:
        return self.add_hashed(*_hash64(item, SEED))

    def __contains__(self, item: str | bytes) -> bool:
        return self.contains_hashed(*_hash64(item, SEED))

    def stats(self, index: int = 0) -> StageStats:
        return StageStats(
            index, self.capacity, self.error_rate, self.k, self.m, self.set_bits,
            self.estimated_items,
        )  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"BloomStage(capacity={self.capacity}, error_rate={self.error_rate:.3g}, k={self.k}, "
            f"m={self.m}, set_bits={self.set_bits}, estimate={self.estimated_items:.0f})"
        )


def check_params(capacity: int, error_rate: float, ratio: float, growth: float) -> None:
    """ValueError naming the first Sieve parameter out of range."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
    if not 0.0 < error_rate < 1.0:
        raise ValueError(f"error_rate must be in (0, 1), got {error_rate!r}")
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"ratio must be in (0, 1), got {ratio!r}")
    if not growth >= 1.0:
        raise ValueError(f"growth must be >= 1, got {growth!r}")


class Sieve:
    """A scalable Bloom filter: a chain of `BloomStage`s whose total false-positive rate stays < P.

    Why the defaults: ``capacity`` 1,000,000 keys covers a focused crawl in one 2.9 MB stage (16
    hash positions); ``error_rate`` 1e-4 wrongly skips about one new page in 10,000, invisible in
    a crawl's coverage; ``ratio`` 0.85 tightens each new stage only slowly (k grows by one every
    ~4 stages, so later stages stay cheap) while leaving stage 0 P*0.15; ``growth`` 2 doubles
    stage sizes, so a crawl 100x over its capacity tests only 7 stages per key.
    """

    __slots__ = (
        "_all", "_bits", "_count", "_cur", "_k", "_m", "_old", "_stages",
        "error_rate", "growth", "initial_capacity", "ratio",
    )  # fmt: skip

    def __init__(
        self,
        capacity: int = 1_000_000,
        error_rate: float = 1e-4,
        ratio: float = 0.85,
        growth: float = 2.0,
    ) -> None:
        check_params(capacity, error_rate, ratio, growth)
        self.initial_capacity = capacity
        self.error_rate = float(error_rate)
        self.ratio = float(ratio)
        self.growth = float(growth)
        self._count = 0
        self._stages: list[BloomStage] = []
        self._all: tuple[tuple[bitarray, int, int], ...] = ()
        self._old: tuple[tuple[bitarray, int, int], ...] = ()
        self._open_stage()

    # -- stage chain ------------------------------------------------------------------------
    def stage_params(self, i: int) -> tuple[int, float]:
        """Capacity and error rate of stage `i`: C*growth^i and P*(1-r)*r^i."""
        return stage_params(self.initial_capacity, self.error_rate, self.ratio, self.growth, i)

    def _open_stage(self, stage: BloomStage | None = None) -> None:
        if stage is None:
            stage = BloomStage(*self.stage_params(len(self._stages)))
        self._stages.append(stage)
        self._all = tuple((s.bits, s.m, s.k - 1) for s in self._stages)
        self._old = self._all[:-1]
        self._cur, self._bits, self._m, self._k = stage, stage.bits, stage.m, stage.k

    def _grow(self) -> None:
        cur, i = self._cur, len(self._stages)
        cap, p = self.stage_params(i)
        log.warning(
            "sieve stage %d passed its capacity (estimate %.1f > %d items); "
            "opening stage %d with capacity %d at error rate %.3g",
            i - 1, cur.estimated_items, cur.capacity, i, cap, p,
        )  # fmt: skip
        self._open_stage(BloomStage(cap, p))

    # -- the hot path -----------------------------------------------------------------------
    def add(self, item: str | bytes) -> bool:
        """Insert `item`; True if it was new, False if it was (probably) seen before."""
        h1, h2 = _hash64(item, SEED)
        return self.add_hashed(h1, h2)

    def add_hashed(self, h1: int, h2: int) -> bool:
        """`add` for a pair from `hash_pair` (so the caller can keep h1 as a fingerprint)."""
        h2 |= 1
        for bits, m, k1 in self._old:  # seen by an older stage? (k1 = k - 1)
            x = h1 % m
            if bits[x]:
                b = h2 % m
                for _ in range(k1):
                    x = (x + b) % m
                    if not bits[x]:
                        break
                else:
                    return False
        bits, m = self._bits, self._m
        b = h2 % m
        a = h1 % m
        flips = 0
        for x in range(a, a + self._k * b, b):
            x %= m
            if not bits[x]:
                bits[x] = 1
                flips += 1
        if not flips:
            return False
        cur = self._cur
        cur.set_bits += flips
        self._count += 1
        if cur.set_bits >= cur._grow_at:
            self._grow()
        return True

    def contains_hashed(self, h1: int, h2: int) -> bool:
        """`in` for a pair from `hash_pair`."""
        h2 |= 1
        for bits, m, k1 in self._all:
            x = h1 % m
            if bits[x]:
                b = h2 % m
                for _ in range(k1):
                    x = (x + b) % m
                    if not bits[x]:
                        break
                else:
                    return True
        return False

    def __contains__(self, item: str | bytes) -> bool:
        h1, h2 = _hash64(item, SEED)  # contains_hashed, inlined: +10% lookups/s (measured)
        h2 |= 1
        for bits, m, k1 in self._all:
            x = h1 % m
            if bits[x]:
                b = h2 % m
                for _ in range(k1):
                    x = (x + b) % m
                    if not bits[x]:
                        break
                else:
                    return True
        return False

    def add_many(self, items: Sequence[str | bytes]) -> list[bool]:
        """`[self.add(x) for x in items]` (same answers, same bits), vectorized for big batches."""
        return sieve_batch.add_many(self, items)

    def add_many_hashed(self, pairs: Sequence[tuple[int, int]]) -> list[bool]:
        """`add_many` for pairs from `hash_pair`."""
        return sieve_batch.add_many_hashed(self, pairs)

    add_if_absent = add  # nothing more to record for a key it reports: the test-and-set
    add_many_if_absent = add_many

    def update(self, items: Iterable[str | bytes]) -> None:
        """Add every item (in batches of 4096)."""
        batch: list[str | bytes] = []
        for item in items:
            batch.append(item)
            if len(batch) >= 4096:
                self.add_many(batch)
                batch.clear()
        self.add_many(batch)

    # -- figures ---------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Exact number of `add` calls that returned True."""
        return self._count

    def __len__(self) -> int:
        return self._count

    @property
    def approx_items(self) -> float:
        """Sum of the stages' cardinality estimates."""
        return sum(s.estimated_items for s in self._stages)

    @property
    def capacity(self) -> int:
        """Items the open stages hold before the next growth (sum of stage capacities)."""
        return sum(s.capacity for s in self._stages)

    @property
    def stages(self) -> tuple[StageStats, ...]:
        return tuple(s.stats(i) for i, s in enumerate(self._stages))

    @property
    def size_in_bytes(self) -> int:
        """Bytes of filter bits (all stages)."""
        return sum(s.m // 8 for s in self._stages)

    @property
    def false_positive_bound(self) -> float:
        """Sum of the stages' configured error rates: always < error_rate."""
        return sum(s.error_rate for s in self._stages)

    @property
    def false_positive_estimate(self) -> float:
        """Chance that an unseen key is reported seen now: 1 - prod(1 - (X_i/m_i)^k_i)."""
        return -math.expm1(math.fsum(math.log1p(-s.false_positive_rate) for s in self._stages))

    def __repr__(self) -> str:
        return (
            f"Sieve(count={self._count}, approx_items={self.approx_items:.0f}, "
            f"capacity={self.capacity}, stages={len(self._stages)}, "
            f"size_in_bytes={self.size_in_bytes}, error_rate={self.error_rate:.3g}, "
            f"false_positive_bound={self.false_positive_bound:.3g}, "
            f"false_positive_estimate={self.false_positive_estimate:.3g})"
        )

    # -- persistence (the format lives in crawler.sieve.format) ---------------------------
    def to_bytes(self) -> bytes:
        """Versioned header, parameters, stage table, every stage's bits, blake2b-128 checksum."""
        header = sieve_format.Header(
            self.error_rate, self.ratio, self.growth, self.initial_capacity, self._count
        )
        return sieve_format.encode(header, self._stages)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> Sieve:
        """Rebuild a Sieve from `to_bytes` output; raises `SieveFormatError` naming the problem."""
        return cls._assemble(*sieve_format.decode(data, check_params))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write `to_bytes()` atomically: temp file in the same directory, fsync, rename."""
        sieve_format.write_atomic(path, self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Sieve:
        """Read a file written by `save`; raises `SieveFormatError` (with the path) if it is bad."""
        return cls._assemble(*sieve_format.read(path, check_params))

    @classmethod
    def _assemble(
        cls, header: sieve_format.Header, stages: list[sieve_format.StageRecord]
    ) -> Sieve:
        """The Sieve a decoded (already validated) file describes."""
        sieve = cls(1, header.error_rate, header.ratio, header.growth)
        sieve.initial_capacity, sieve._count, sieve._stages = header.capacity, header.item_count, []
        for rec in stages:
            sieve._open_stage(BloomStage._restore(rec))
        return sieve
