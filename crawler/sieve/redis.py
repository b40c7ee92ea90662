"""The Sieve in plain Redis: one crawl's URL-seen test shared by several processes.

Same filter as the in-memory :class:`crawler.sieve.bloom.Sieve`, kept in Redis strings (Debian's
Redis 7.0 has no RedisBloom): stage *i* of at most `SEGMENT_BITS` (64 MiB) is the string
``{prefix}sieve:{i}`` whose bit *x* (Redis bit offsets, most significant bit of byte 0 first) is
the stage's bit *x*. A larger stage is split into S equal segments (``sieve:{i}``, then
``sieve:{i}:{j}``), a blocked Bloom filter: a key's segment comes from h2's top 24 bits, which
its probes do not use, and all its k probes fall in that segment. The stages' shapes, the
hashing (``hash_pair``: one 128-bit MurmurHash3, Kirsch-Mitzenmacher positions) and the growth rule
(`stage_shape`, `stage_params`, `grow_threshold`) are the in-memory Sieve's own functions, so the
two set the same bits for the same keys and keep the same guarantees: stage *i* holds
``C*growth^i`` keys at ``P*(1-r)*r^i``, so the compounded false-positive rate stays below P.

Test-and-set is atomic across processes: a key is new when ``BITFIELD stage SET u1 x 1 ...`` (one
command, so atomic in Redis) flips one of its k bits in the newest stage; of two processes adding
one new key at once, exactly one sees a flip. Older stages are only read (``BITFIELD_RO``), first,
in the same round trip when there are none. Each batch is one MULTI/EXEC that also reads the number
of stages: if another process opened a stage meanwhile, the keys this batch took as new are set
again in the stages opened since, and count as new only if they flip bits there too (so of two
processes that disagreed on the newest stage, still exactly one wins). Set-bit counters and the
exact count ride along with the next batch (``INCRBY``), except when they may cross the growth
threshold: then they are sent at once and the process that sees the crossing opens the next stage
with a compare-and-set script, logs the warning, and everybody follows at its next batch.

Round trips: one per batch of keys while the crawl fits stage 0 (two when older stages must be
read). Redis CPU: one BITFIELD per key and stage read or written (~5-6 µs each on this machine).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from enum import IntEnum
from typing import Any, TypeAlias

from redis.asyncio import Redis, RedisCluster
from redis.exceptions import RedisError

from crawler.errors import SharedStateError
from crawler.sieve.bloom import (
    check_params,
    estimate_items,
    hash_pair,
    stage_params,
)
from crawler.sieve.format import SEED
from crawler.sieve.segments import SEGMENT_BITS
from crawler.sieve.segments import Stage as _Stage

__all__ = [
    "EXACT_BUCKETS",
    "SEGMENT_BITS",
    "RedisClient",
    "RedisSieve",
    "SharedStateError",
    "exact_buckets",
    "text",
]

RedisClient: TypeAlias = Redis | RedisCluster
"""A client of one Redis node, or of a Redis Cluster (a sharded crawl:
`crawler.frontier.redis.shards`)."""

log = logging.getLogger("crawler.sieve")  # the logger name the docs give for growth warnings

EXACT_BUCKETS = 65_536  # the exact tier's sets of fingerprints (`crawler.frontier.redis.lua_admit`)
EXACT_FILL = 400  # fingerprints a set holds at the crawl's capacity: under Redis's default
# set-max-intset-entries (512), so each stays an intset of 8 bytes a fingerprint


def exact_buckets(capacity: int, groups: int = 1) -> int:
    """The exact tier's sets in each of `groups` groups for a crawl of `capacity` URLs: about
    `EXACT_FILL` fingerprints a set at capacity (64 at least, 2**24 at most)."""
    return max(64, min(2**24, capacity // (EXACT_FILL * groups)))


_FORMAT = "2"  # 2: a stage over `SEGMENT_BITS` is split into segments

# KEYS: the number of stages; ARGV: the number the caller saw. Opens one more stage unless
# another process already did; answers a `Grown`.
_GROW = """
local n = tonumber(redis.call('GET', KEYS[1]) or '1')
if n == tonumber(ARGV[1]) then
    redis.call('SET', KEYS[1], n + 1)
    return 1
end
return 0
"""


class Grown(IntEnum):
    """What ``_GROW`` says."""

    ALREADY = 0  # another process opened the stage first
    OPENED = 1


def grow_call(stages_key: str, seen: int) -> tuple[list[str], list[int]]:
    """``_GROW``'s (KEYS, ARGV): open stage `seen` (the stages this process knows)."""
    return [stages_key], [seen]


class RedisSieve:
    """A scalable Bloom filter in Redis under `prefix`. ``await open()`` before use.

    `add_many` is the hot path (one round trip per batch); `refresh` reads the shared figures
    (count, set bits per stage) that the properties report.
    """

    __slots__ = (
        "_count_unsent", "_grow", "_redis", "_stages", "_unsent", "count", "error_rate",
        "exact_buckets", "growth", "initial_capacity", "prefix", "ratio", "segment_bits",
    )  # fmt: skip

    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        *,
        capacity: int = 1_000_000,
        error_rate: float = 1e-4,
        ratio: float = 0.85,
        growth: float = 2.0,
        segment_bits: int = SEGMENT_BITS,
    ) -> None:
        check_params(capacity, error_rate, ratio, growth)
        if segment_bits <= 0 or segment_bits % 64:
            raise ValueError(f"segment_bits must be a positive multiple of 64, not {segment_bits}")
        self.segment_bits = segment_bits
        self._redis = client
        self.prefix = prefix
        self.initial_capacity = capacity
        self.error_rate = float(error_rate)
        self.ratio = float(ratio)
        self.growth = float(growth)
        self.count = 0  # the shared exact count at the last refresh or batch
        # the exact tier's sets beside this filter (the shared frontier's; a crawl sets it from
        # its capacity and groups: `exact_buckets`)
        self.exact_buckets = EXACT_BUCKETS
        self._stages: list[_Stage] = []
        self._unsent: dict[int, int] = {}  # stage -> bits flipped here, not yet added in Redis
        self._count_unsent = 0
        self._grow = client.register_script(_GROW)
        _Stage(*self._stage_params(0), 0, segment_bits)  # refused before any write if too big

    # -- keys --------------------------------------------------------------------------------
    def _key(self, name: str) -> str:
        return f"{self.prefix}sieve:{name}"

    def _seg_key(self, stage: int, seg: int) -> str:
        """Segment `seg` of stage `stage`: ``sieve:{stage}`` for the first (a one-segment
        stage's key is the stage's), ``sieve:{stage}:{seg}`` for the others."""
        return self._key(f"{stage}:{seg}" if seg else str(stage))

    @property
    def _params(self) -> dict[str, str]:
        return {
            "format": _FORMAT,
            "seed": str(SEED),
            "capacity": str(self.initial_capacity),
            "error_rate": repr(self.error_rate),
            "ratio": repr(self.ratio),
            "growth": repr(self.growth),
            "segment_bits": str(self.segment_bits),
        }

    # -- setup -------------------------------------------------------------------------------
    async def open(self) -> None:
        """Create the shared Sieve, or join it; SharedStateError if its settings differ."""
        meta = self._key("meta")
        try:  # first writer wins, field by field, in one transaction: no half-written meta
            pipe = self._redis.pipeline(transaction=True)
            for name, value in self._params.items():
                pipe.hsetnx(meta, name, value)
            pipe.hgetall(meta)
            *_, stored = await pipe.execute()
        except RedisError as exc:
            raise SharedStateError(f"Redis: {exc}") from exc
        have = {text(k): text(v) for k, v in stored.items()}
        differ = [
            f"sieve.{name} (shared: {have.get(name)}, here: {value})"
            for name, value in self._params.items()
            if have.get(name) != value
        ]
        if differ:
            raise SharedStateError(
                f"the shared Sieve at {self.prefix!r} has other settings: " + ", ".join(differ)
            )
        await self.refresh()

    async def refresh(self) -> None:
        """Read the shared figures: number of stages, set bits per stage, exact count."""
        await self._flush()
        try:
            n = int(await self._redis.get(self._key("stages")) or 1)
            self._follow(n)
            pipe = self._redis.pipeline(transaction=False)
            for i in range(n):
                pipe.get(self._key(f"bits:{i}"))
            pipe.get(self._key("count"))
            *bits, count = await pipe.execute()
        except RedisError as exc:
            raise SharedStateError(f"Redis: {exc}") from exc
        for stage, value in zip(self._stages, bits, strict=True):
            stage.set_bits = int(value or 0)
        self.count = int(count or 0)

    def _follow(self, n: int) -> None:
        """Know the first `n` stages (others may have opened them)."""
        while len(self._stages) < n:
            i = len(self._stages)
            self._stages.append(_Stage(*self._stage_params(i), i, self.segment_bits))

    def _stage_params(self, i: int) -> tuple[int, float]:
        return stage_params(self.initial_capacity, self.error_rate, self.ratio, self.growth, i)

    # -- the hot path ------------------------------------------------------------------------
    async def add(self, key: str) -> bool:
        return (await self.add_many([key]))[0]

    async def add_many(self, keys: Sequence[str]) -> list[bool]:
        """Insert `keys`; for each, True if it was new. Atomic per key across processes."""
        if not keys:
            return []
        if not self._stages:
            raise RuntimeError("RedisSieve is not open: await open() first")
        pairs = [hash_pair(key) for key in keys]
        try:
            flags = await self._read_old(pairs)
            flags = await self._set_newest(pairs, flags)
        except RedisError as exc:
            raise SharedStateError(f"Redis: {exc}") from exc
        return flags

    async def _read_old(self, pairs: list[tuple[int, int]]) -> list[bool]:
        """Which keys may be new: those no older stage holds (True = not in an older stage)."""
        old = self._stages[:-1]
        if not old:
            return [True] * len(pairs)
        pipe = self._redis.pipeline(transaction=False)
        for h1, h2 in pairs:
            for i, stage in enumerate(old):
                seg, args = stage.probes(h1, h2, "GET")
                pipe.execute_command("BITFIELD_RO", self._seg_key(i, seg), *args)
        replies = await pipe.execute()
        n = len(old)
        return [not any(all(replies[j * n + i]) for i in range(n)) for j in range(len(pairs))]

    async def _set_newest(self, pairs: list[tuple[int, int]], maybe: list[bool]) -> list[bool]:
        newest = len(self._stages) - 1
        stage = self._stages[newest]
        pipe = self._redis.pipeline(transaction=True)
        pipe.get(self._key("stages"))
        counters = self._queue_counters(pipe)
        todo = [j for j, m in enumerate(maybe) if m]
        for j in todo:
            seg, args = stage.probes(*pairs[j], "SET")
            pipe.execute_command("BITFIELD", self._seg_key(newest, seg), *args)
        replies = await pipe.execute()
        self._read_counters(counters, replies[1 : 1 + len(counters)])
        flags = [False] * len(pairs)
        flips = 0
        for j, old_bits in zip(todo, replies[1 + len(counters) :], strict=True):
            flipped = len(old_bits) - sum(old_bits)
            flips += flipped
            flags[j] = flipped > 0
        self._note(newest, flips)
        now = int(replies[0] or 1)
        if now > newest + 1:  # others opened stages meanwhile: settle against the newest ones
            self._follow(now)
            flags = await self._settle(pairs, flags, newest + 1)
        new = sum(flags)
        self._count_unsent += new
        self.count += new
        await self._maybe_grow()
        return flags

    async def _settle(
        self, pairs: list[tuple[int, int]], flags: list[bool], first: int
    ) -> list[bool]:
        """Keys taken as new in a stage that was no longer the newest: set them in every stage
        opened since; they stay new only if they flip bits in each (a process that knew the
        newer stage may have taken them in meanwhile)."""
        for i in range(first, len(self._stages)):
            stage = self._stages[i]
            todo = [j for j, new in enumerate(flags) if new]
            if not todo:
                break
            pipe = self._redis.pipeline(transaction=False)
            for j in todo:
                seg, args = stage.probes(*pairs[j], "SET")
                pipe.execute_command("BITFIELD", self._seg_key(i, seg), *args)
            flips = 0
            for j, old_bits in zip(todo, await pipe.execute(), strict=True):
                flipped = len(old_bits) - sum(old_bits)
                flips += flipped
                flags[j] = flipped > 0
            self._note(i, flips)
        return flags

    def _note(self, stage: int, flips: int) -> None:
        if flips:
            self._unsent[stage] = self._unsent.get(stage, 0) + flips
            self._stages[stage].set_bits += flips

    def _queue_counters(self, pipe: Any) -> list[int]:
        """Queue the held-back counters on `pipe`; returns the stage of each INCRBY (-1: count)."""
        order = []
        for i, flips in self._unsent.items():
            pipe.incrby(self._key(f"bits:{i}"), flips)
            order.append(i)
        if self._count_unsent:
            pipe.incrby(self._key("count"), self._count_unsent)
            order.append(-1)
        self._unsent = {}
        self._count_unsent = 0
        return order

    def _read_counters(self, order: list[int], replies: Sequence[Any]) -> None:
        """Take the shared totals the INCRBYs answered (they include other processes' work)."""
        for i, total in zip(order, replies, strict=True):
            if i < 0:
                self.count = int(total)
            else:
                self._stages[i].set_bits = int(total) + self._unsent.get(i, 0)

    async def _flush(self) -> None:
        """Send the counters held back (at most one batch's worth)."""
        if not self._unsent and not self._count_unsent:
            return
        pipe = self._redis.pipeline(transaction=False)
        order = self._queue_counters(pipe)
        self._read_counters(order, await pipe.execute())

    async def _maybe_grow(self) -> None:
        """Open the next stage once the newest one's set bits reach its threshold (shared count:
        sent at once when this process's own count may have crossed it)."""
        newest = len(self._stages) - 1
        stage = self._stages[newest]
        if stage.set_bits < stage.grow_at:
            return
        flips = self._unsent.pop(newest, 0)
        shared = await self._redis.incrby(self._key(f"bits:{newest}"), flips)
        stage.set_bits = int(shared)
        if stage.set_bits < stage.grow_at:
            return
        keys, args = grow_call(self._key("stages"), newest + 1)
        if await self._grow(keys=keys, args=args) == Grown.OPENED:
            cap, p = self._stage_params(newest + 1)
            log.warning(
                "sieve stage %d passed its capacity (estimate %.1f > %d items); "
                "opening stage %d with capacity %d at error rate %.3g",
                newest, estimate_items(stage.set_bits, stage.m, stage.k), stage.capacity,
                newest + 1, cap, p,
            )  # fmt: skip
        self._follow(newest + 2)

    # -- for a caller that sets the bits itself (the Redis frontier's atomic admission) ------
    def layout(self) -> list[tuple[int, int]]:
        """(segment bits, k) of each stage known here, oldest first (the newest is the one to
        set); a one-segment stage's segment is the whole stage."""
        return [(stage.seg_m, stage.k) for stage in self._stages]

    def starts(self, h1: int, h2: int) -> list[int]:
        """The Kirsch-Mitzenmacher (start, step) of a `hash_pair` in each known stage, flat, the
        segment folded into the start: with ``seg_m`` from `layout`, the key's segment is
        ``start // seg_m`` (its key as `_seg_key` names it) and its positions there are
        ``(start % seg_m + j*step) % seg_m`` for j < k, as `add_many` sets them."""
        out: list[int] = []
        for stage in self._stages:
            seg, a, b = stage.place(h1, h2)
            out += (seg * stage.seg_m + a, b)
        return out

    async def shared_counts(self, newest_bits: int, count: int) -> None:
        """Take the shared totals a caller's own test-and-set returned (set bits of the newest
        stage, exact count), and open the next stage if that one is full."""
        self._stages[-1].set_bits = newest_bits + self._unsent.get(len(self._stages) - 1, 0)
        self.count = count + self._count_unsent
        if self._stages[-1].set_bits >= self._stages[-1].grow_at:
            try:
                await self._maybe_grow()
            except RedisError as exc:
                raise SharedStateError(f"Redis: {exc}") from exc

    async def contains(self, key: str) -> bool:
        """True if `key` is (probably) in the shared Sieve. Read-only."""
        return (await self.contains_many([key]))[0]

    async def contains_many(self, keys: Sequence[str]) -> list[bool]:
        """`contains` of each key, in one round trip. Read-only."""
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            h1, h2 = hash_pair(key)
            for i, stage in enumerate(self._stages):
                seg, args = stage.probes(h1, h2, "GET")
                pipe.execute_command("BITFIELD_RO", self._seg_key(i, seg), *args)
        try:
            replies = await pipe.execute()
        except RedisError as exc:
            raise SharedStateError(f"Redis: {exc}") from exc
        n = len(self._stages)
        return [any(all(bits) for bits in replies[j * n : j * n + n]) for j in range(len(keys))]

    async def stage_bytes(self, i: int) -> bytes:
        """Stage `i`'s bits as Redis holds them, its segments end to end (in a segment, bit x =
        bit 7 - x % 8 of byte x // 8). Reads the whole stage: for tests and small stages."""
        stage = self._stages[i]
        out = b""
        for seg in range(stage.segments):
            data = await self._redis.get(self._seg_key(i, seg))
            raw = data.encode("latin-1") if isinstance(data, str) else data or b""
            out += raw.ljust(stage.seg_m // 8, b"\0")
        return out

    def segment_layout(self) -> list[tuple[int, int]]:
        """(segments, bytes per segment) of each stage known here, oldest first."""
        return [(stage.segments, stage.seg_m // 8) for stage in self._stages]

    # -- figures (as of the last refresh or batch) ---------------------------------------
    @property
    def stages(self) -> int:
        return len(self._stages)

    @property
    def approx_items(self) -> float:
        return sum(estimate_items(s.set_bits, s.m, s.k) for s in self._stages)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.m // 8 for s in self._stages)

    @property
    def false_positive_bound(self) -> float:
        return sum(s.error_rate for s in self._stages)

    def __repr__(self) -> str:
        return (
            f"RedisSieve(prefix={self.prefix!r}, count={self.count}, stages={self.stages}, "
            f"approx_items={self.approx_items:.0f}, size_in_bytes={self.size_in_bytes}, "
            f"error_rate={self.error_rate:.3g})"
        )


def text(value: Any) -> str:
    """A Redis reply (bytes or not) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)
