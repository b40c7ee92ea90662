"""A shared crawl's frontier over its host groups: `ShardedFrontier`.

The crawl's hosts are split into groups (`crawler.frontier.redis.shards.Keyspace`: one on a
single Redis node, G on a Redis Cluster), each group a `RedisFrontier` with its own part of the
Sieve under its own hash tag: every script touches one group, so one slot. This class gives the
engine (`SharedWork`) and the admission (`ClusterNode`) the one frontier they knew: an entry, a
robots.txt answer, a look-up go to their host's group; a batch is split by group and its groups
asked at once (the cluster client sends each node its part).

Claims: a claim asks the groups in turn, from a cursor that moves one group a claim (so no
group starves), until it has what its workers wait for. A group that had nothing ready is not
asked again before the time it said its next host is ready, or `STALE` seconds (work another
process admitted there is found that late at most: 12 groups cost an idle process 24 claims a
second), unless a wake-up of that group, an address recorded there, or a completion or
admission of this process makes it worth asking at once. The crawl
is over when every group, asked afresh, has nothing queued and nothing leased.

Crawl-wide figures stay exact: ``stats()`` sums every group's counters (one call per group, at
once); ``max_pages`` (`admit` with ``max_admitted``) is held by one crawl-wide counter
(``{crawl prefix}admitted``): a batch first reserves its room there (``RESERVE``: at most the
batch's size, at most what is left), each group then admits at most what was reserved, and what
it did not use is given back. A process killed between the two leaves its reservation unused:
the crawl may stop short of ``max_pages`` by at most one batch per process killed, never pass it.
One group (a single node) keeps the Sieve's count as the cap, with no extra round trip.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields, replace
from typing import Any, Final, TypeVar

from crawler.frontier.addresses import Names
from crawler.frontier.base import FrontierStats
from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.hosts import host_key
from crawler.frontier.redis.frontier import RedisFrontier, default_owner
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.frontier.redis.replicas import Replicas
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.redis.shards import Keyspace
from crawler.frontier.redis.wake import Wakes
from crawler.frontier.robots import RobotsPolicy
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.sieve.redis import RedisClient, RedisSieve, exact_buckets

__all__ = ["RESERVE", "ShardedFrontier", "group_sieves"]

T = TypeVar("T")

# KEYS: the crawl-wide count of URLs admitted; ARGV: the keys a batch may add, the cap. Takes
# (and answers) the room for at most that many: no more than the cap is ever admitted.
RESERVE: Final = """
local have = tonumber(redis.call('GET', KEYS[1]) or '0')
local room = math.max(0, math.min(tonumber(ARGV[1]), tonumber(ARGV[2]) - have))
if room > 0 then redis.call('INCRBY', KEYS[1], room) end
return room
"""

STALE: Final = 0.5  # seconds a group that had nothing ready is not asked again, unless woken
_SUMMED: Final = tuple(f.name for f in fields(FrontierStats)
                       if f.name not in ("ip_delay", "ip_concurrency"))  # fmt: skip


def group_sieves(
    client: RedisClient, keyspace: Keyspace, capacity: int, *, error_rate: float, ratio: float,
    growth: float,
) -> list[RedisSieve]:  # fmt: skip
    """A Sieve for each group of `keyspace`: the crawl's `capacity` shared out among them (each
    group's bound P holds by itself: a key is tested in one group only), and exact-tier sets
    for it (`exact_buckets`)."""
    groups = keyspace.groups
    share = -(-capacity // groups)
    sieves = [RedisSieve(client, prefix, capacity=share, error_rate=error_rate, ratio=ratio,
                         growth=growth) for prefix in keyspace.prefixes]  # fmt: skip
    for sieve in sieves:
        sieve.exact_buckets = exact_buckets(capacity, groups)
    return sieves


class _Resolutions:
    """The groups' host resolutions, as `SharedWork` sets them up (`recorded`): an address
    recorded in a group makes that group worth asking (`wake`), then calls `recorded`."""

    __slots__ = ("_groups", "_wake")

    def __init__(self, groups: Sequence[RedisFrontier], wake: Callable[[list[int]], None]) -> None:
        self._groups, self._wake = groups, wake

    @property
    def recorded(self) -> None:
        return None

    @recorded.setter
    def recorded(self, callback: Callable[[], None] | None) -> None:
        for g, group in enumerate(self._groups):
            if group.resolution is not None:
                group.resolution.recorded = functools.partial(self._recorded, g, callback)

    def _recorded(self, group: int, callback: Callable[[], None] | None) -> None:
        self._wake([group])
        if callback is not None:
            callback()


class ShardedFrontier:
    """The frontier of a crawl whose keys are laid out by `keyspace`, one `RedisFrontier` per
    group over `sieves` (one per group, same client); see the module docstring. ``await
    open()`` before use."""

    __slots__ = ("_asked", "_cursor", "_due", "_figures", "_flying", "_reserve", "_written",
                 "client", "durable", "groups", "keyspace", "lease_ttl", "on_lost", "owner",
                 "poll_interval", "replicas", "resolution", "wakes")  # fmt: skip

    def __init__(
        self,
        client: RedisClient,
        keyspace: Keyspace,
        sieves: Sequence[RedisSieve],
        politeness: Politeness,
        limits: QueueLimits,
        sharing: Sharing,
        **options: Any,
    ) -> None:
        """`options`: `RedisFrontier`'s keywords (clock, sleep, rng, host_rule), each group's."""
        if len(sieves) != keyspace.groups:
            raise ValueError(f"{len(sieves)} sieves for {keyspace.groups} groups")
        self.client, self.keyspace = client, keyspace
        self.owner = sharing.owner or default_owner()
        sharing = replace(sharing, owner=self.owner)
        self.groups = [
            RedisFrontier(client, prefix, sieve, politeness, limits, sharing, **options)
            for prefix, sieve in zip(keyspace.prefixes, sieves, strict=True)
        ]
        self.lease_ttl = self.groups[0].lease_ttl
        self.poll_interval = sharing.poll_interval
        self.wakes = Wakes(client, keyspace.prefixes, self.owner)
        self.wakes.on_heard = lambda g: self.wake([g])  # another process freed a slot there
        self.resolution: _Resolutions | None = None
        n = len(self.groups)
        self._cursor = 0
        self._due = [0.0] * n  # (monotonic) when a group is worth asking again
        self._asked = [0.0] * n  # when each group's figures were read
        self._figures = [(0, 0)] * n  # (queued, leased) of each group, as last read
        self._flying: dict[int, int] = {}  # id(entry) -> its group
        self._reserve = client.register_script(RESERVE)
        self._written: set[int] = set()  # groups admitted to since the last `sync`
        self.replicas = Replicas(client, keyspace)
        self.durable = 0  # replicas a completion waits for (`sync`); set for a cluster's
        self.on_lost: Callable[[], None] | None = None  # writes may be lost: forget what was sent

    def resolve_by(self, names: Names) -> None:
        """Schedule by address too (`RedisFrontier.resolve_by`), in every group."""
        for group in self.groups:
            group.resolve_by(names)
        self.resolution = _Resolutions(self.groups, self.wake)
        self.resolution.recorded = None

    async def open(self) -> None:
        await asyncio.gather(*(group.open() for group in self.groups))

    def group(self, host: str) -> RedisFrontier:
        """The group of a host (its politeness key, or any URL on it)."""
        return self.groups[self.keyspace.group_of(host_key(host))]

    # -- hand-out -------------------------------------------------------------------------------
    async def claim(self, count: int = 1) -> tuple[list[Entry], float | None, int, int]:
        """`RedisFrontier.claim` over the groups (module docstring): (entries, seconds until a
        group may have work or None, queued, leased), the figures summed over every group."""
        n, now = len(self.groups), time.monotonic()
        start, self._cursor = self._cursor, (self._cursor + 1) % n
        entries: list[Entry] = []
        for g in [(start + i) % n for i in range(n)]:
            if len(entries) >= count:
                break
            if self._due[g] <= now:
                entries += await self._claim_group(g, count - len(entries), now)
        queued = sum(q for q, _ in self._figures)
        leased = sum(x for _, x in self._figures)
        if not entries and queued == 0 and leased == 0 and min(self._asked) < now:
            for g in range(n):  # the end, as far as this process knows: make sure of it
                if self._asked[g] < now:
                    entries += await self._claim_group(g, count - len(entries), now)
            queued = sum(q for q, _ in self._figures)
            leased = sum(x for _, x in self._figures)
        busy = [self._due[g] for g in range(n) if self._figures[g] != (0, 0)]
        ready_in = max(0.0, min(busy) - now) if busy else None
        return entries, ready_in, queued, leased

    async def _claim_group(self, g: int, count: int, now: float) -> list[Entry]:
        got, ready_in, queued, leased = await self.groups[g].claim(max(count, 0))
        self._figures[g], self._asked[g] = (queued, leased), now
        if len(got) < count:  # nothing more ready there now: not before its next host is
            self._due[g] = now + (STALE if ready_in is None else min(ready_in, STALE))
        for entry in got:
            self._flying[id(entry)] = g
        return got

    async def get(self) -> Entry | None:
        """`RedisFrontier.get` over the groups: the next entry that may be fetched now,
        waiting politely; None once nothing is queued or leased in any group."""
        await self.wakes.listen()
        while not self.groups[0].closed:
            await self.maybe_reclaim()
            self.wakes.clear()
            entries, ready_in, queued, leased = await self.claim()
            if entries:
                return entries[0]
            if queued == 0 and leased == 0:
                break
            await self.wakes.wait(self.poll_interval if ready_in is None else ready_in)
        await self.wakes.close()
        return None

    def wake(self, groups: Iterable[int] | None = None) -> None:
        """Make `groups` (None: all) worth asking at the next claim."""
        for g in range(len(self.groups)) if groups is None else groups:
            self._due[g] = 0.0

    async def maybe_reclaim(self) -> None:
        for group in self.groups:
            await group.maybe_reclaim()

    async def reclaim(self, limit: int = 1000) -> int:
        return sum([await group.reclaim(limit) for group in self.groups])

    async def renew(self) -> int:
        return sum(await asyncio.gather(*(group.renew() for group in self.groups)))

    # -- completions ----------------------------------------------------------------------------
    def _split(self, entries: Iterable[T], host: Any) -> dict[int, list[tuple[int, T]]]:
        """Items by group (each with its index), `host(item)` naming its host."""
        out: dict[int, list[tuple[int, T]]] = {}
        for i, item in enumerate(entries):
            out.setdefault(self.keyspace.group_of(host_key(host(item))), []).append((i, item))
        return out

    async def _each(self, parts: dict[int, list[tuple[int, T]]], call: Any, size: int) -> list[Any]:
        """`call(group, items)` for each group's part, at once; the answers in the items' order."""
        out: list[Any] = [None] * size
        groups = list(parts)
        answers = await asyncio.gather(*(call(self.groups[g], [x for _, x in parts[g]])
                                         for g in groups))  # fmt: skip
        for g, answer in zip(groups, answers, strict=True):
            for (i, _), value in zip(parts[g], answer, strict=True):
                out[i] = value
        return out

    async def sync(self) -> bool:
        """Before completions: whether the admissions made here since the last call are on
        ``durable`` replicas of each master that took them (True at once when none are asked
        for). False when a master that took some is gone (its replica may have taken over
        without them): the caller gives its pages back instead of completing them, and
        `on_lost` forgets the keys this process sent (they may have to be sent again)."""
        written, self._written = self._written, set()
        if not self.durable or not written:
            return True
        if await self.replicas.wait(sorted(written), self.durable):
            return True
        if self.on_lost is not None:
            self.on_lost()
        return False

    async def done_many(self, items: Iterable[tuple[Entry, Outcome | None, bool]]) -> list[bool]:
        batch = list(items)
        parts: dict[int, list[tuple[int, tuple[Entry, Outcome | None, bool]]]] = {}
        for i, item in enumerate(batch):
            g = self._flying.pop(id(item[0]), None)
            if g is None:
                g = self.keyspace.group_of(host_key(item[0].url))
            parts.setdefault(g, []).append((i, item))
        self.wake(parts)
        return await self._each(parts, lambda group, xs: group.done_many(xs), len(batch))

    async def done(self, entry: Entry, outcome: Outcome | None = None, *, retry: bool = False
                   ) -> bool:  # fmt: skip
        return (await self.done_many([(entry, outcome, retry)]))[0]

    async def release(self, entries: list[Entry]) -> int:
        parts: dict[int, list[Entry]] = {}
        for entry in entries:
            g = self._flying.pop(id(entry), None)
            parts.setdefault(self.keyspace.group_of(host_key(entry.url)) if g is None else g,
                             []).append(entry)  # fmt: skip
        return sum([await self.groups[g].release(xs) for g, xs in parts.items()])

    async def set_robots(self, key: str, policy: RobotsPolicy, body: bytes | None = None) -> None:
        await self.group(key).set_robots(key, policy, body)

    def refusal(self, entry: Entry) -> str:
        return self.group(entry.url).refusal(entry)

    async def robots(self, key: str) -> tuple[int | None, bytes] | None:
        return await self.group(key).robots(key)

    # -- admission ------------------------------------------------------------------------------
    async def admit(
        self, batch: list[Entry], max_admitted: int = 0, max_per_host: int = 0, *,
        seeds: bool = False,
    ) -> list[AdmitFlag]:  # fmt: skip
        """`RedisQueues.admit` over the groups; ``max_admitted`` crawl-wide (module docstring)."""
        if len(self.groups) == 1:
            self._written.add(0)
            return await self.groups[0].admit(batch, max_admitted, max_per_host, seeds=seeds)
        parts = self._split(batch, lambda e: e.url)
        self.wake(parts)
        self._written.update(parts)
        if not max_admitted:
            return await self._each(
                parts, lambda group, xs: group.admit(xs, 0, max_per_host, seeds=seeds), len(batch)
            )
        counter = self.keyspace.prefix + "admitted"
        room = int(await self._run(self._reserve(keys=[counter], args=[len(batch), max_admitted])))
        if room == len(batch):  # room for all: every group at once, the unused room back
            flags = await self._each(parts, lambda group, xs: group.admit(
                xs, len(xs), max_per_host, seeds=seeds, per_call=True), len(batch))  # fmt: skip
            room -= sum(flag is AdmitFlag.ADMITTED for flag in flags)
        else:  # near the cap: group after group, each taking what the room still allows
            flags = [AdmitFlag.OVER_LIMIT] * len(batch)
            for g, items in parts.items():
                answers = await self.groups[g].admit([x for _, x in items], room, max_per_host,
                                                     seeds=seeds, per_call=True)  # fmt: skip
                for (i, _), flag in zip(items, answers, strict=True):
                    flags[i] = flag
                room -= sum(flag is AdmitFlag.ADMITTED for flag in answers)
        if room > 0:
            await self._run(self.client.decrby(counter, room))
        return flags

    async def peek(
        self, items: Sequence[tuple[str, str]], max_per_host: int = 0
    ) -> list[float | bool | None]:
        parts = self._split(items, lambda item: item[0])
        return await self._each(parts, lambda group, xs: group.peek(xs, max_per_host), len(items))

    async def set_priorities(
        self, items: Sequence[tuple[str, str, float]], *, lower: bool = True
    ) -> list[float | None]:
        parts = self._split(items, lambda item: item[0])
        return await self._each(parts, lambda group, xs: group.set_priorities(xs, lower=lower),
                                len(items))  # fmt: skip

    async def queued_priority(self, url: str, key: str) -> float | None:
        return await self.group(url).queued_priority(url, key)

    async def reprioritize(self, url: str, key: str, priority: float, *, lower: bool = False
                           ) -> bool:  # fmt: skip
        return await self.group(url).reprioritize(url, key, priority, lower=lower)

    # -- figures --------------------------------------------------------------------------------
    async def stats(self) -> FrontierStats:
        """Every group's figures, summed (one call per group, at once)."""
        parts = await asyncio.gather(*(group.stats() for group in self.groups))
        sums = {name: sum(getattr(s, name) for s in parts) for name in _SUMMED}
        return replace(parts[0], **sums)

    async def reclaimed(self) -> int:
        return sum(await asyncio.gather(*(group.reclaimed() for group in self.groups)))

    async def pending(self) -> list[Entry]:
        out: list[Entry] = []
        for part in await asyncio.gather(*(group.pending() for group in self.groups)):
            out += part
        return sorted(out, key=lambda e: host_key(e.url))  # stable: each host's order kept

    @property
    def sieves(self) -> list[RedisSieve]:
        return [group.sieve for group in self.groups]

    def close(self) -> None:
        for group in self.groups:
            group.close()

    @staticmethod
    async def _run(call: Any) -> Any:
        return await RedisFrontier._redis(call)

    def __repr__(self) -> str:
        return (f"ShardedFrontier(prefix={self.keyspace.prefix!r}, groups={len(self.groups)}, "
                f"owner={self.owner!r})")  # fmt: skip
