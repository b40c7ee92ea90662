"""The queues of the Redis frontier: what goes in, and what is queued.

:class:`RedisQueues` is the part of :class:`crawler.frontier.redis.frontier.RedisFrontier` that
keeps the crawl's queues in Redis under one key prefix (keys: ``crawler.frontier.redis.lua_keys``):
admission (``put_many``/``admit``: the shared Sieve's test-and-set and the enqueue in one
``ADMIT`` script call), re-prioritizing (``REPRIORITIZE``), the views (``pending``, ``stats``,
``robots``) and the calls every script goes through (the clock, Redis errors as
`SharedStateError`). Hand-out and leases are the subclass's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from crawler.fetch.steering import HostRule
from crawler.frontier.base import FrontierStats
from crawler.frontier.entries import Entry
from crawler.frontier.hosts import host_key
from crawler.frontier.redis.lua_queue import ADMIT, PEEK, REPRIORITIZE
from crawler.frontier.redis.members import entry_of, member_tail, text
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.sieve.bloom import hash_pair
from crawler.sieve.redis import RedisSieve, SharedStateError
from crawler.urls.host import split_host

__all__ = ["ADMITTED", "FULL", "HOST_FULL", "HOST_LIMIT", "OVER_LIMIT", "SEEN", "RedisQueues"]

# what `admit` says of each entry (the ADMIT script's flags)
SEEN, ADMITTED, FULL, HOST_FULL, OVER_LIMIT, HOST_LIMIT = 0, 1, 2, 3, 4, 5


class RedisQueues:
    """A crawl's queues in Redis under `prefix`, admitted through `sieve` (its RedisSieve: same
    client and prefix). The arguments are ``RedisFrontier``'s, checked there."""

    __slots__ = ("_client", "_clock", "_closed", "_dropped_closed", "_host_rule", "_max_queued",
                 "_max_queued_per_host", "_raise_loaded", "_scripts", "concurrency", "delay",
                 "exact", "prefix", "respect_robots", "sieve")  # fmt: skip

    def __init__(
        self,
        client: Redis,
        prefix: str,
        sieve: RedisSieve,
        politeness: Politeness,
        limits: QueueLimits,
        *,
        exact: bool,
        clock: Callable[[], float] | None,
        host_rule: Callable[[str], HostRule | None] | None,
    ) -> None:
        self._client = client
        self.prefix = prefix
        self.sieve = sieve
        self.delay = float(politeness.delay)
        self.concurrency = politeness.per_host_concurrency
        self._max_queued = limits.max_queued
        self._max_queued_per_host = limits.max_queued_per_host
        self.exact = exact
        self.respect_robots = politeness.respect_robots
        self._clock = clock
        self._host_rule = host_rule
        self._closed = False
        self._dropped_closed = 0
        self._scripts: dict[str, AsyncScript] = {}
        self._raise_loaded = ""  # the sha of the REPRIORITIZE script once loaded (set_priorities)
        self._register({"admit": ADMIT, "peek": PEEK, "raise": REPRIORITIZE})

    def _register(self, sources: dict[str, str]) -> None:
        """Register Lua scripts, by the names ``_run`` calls them."""
        for name, src in sources.items():
            self._scripts[name] = self._client.register_script(src)

    # -- admission ----------------------------------------------------------------------------
    async def put(self, entry: Entry) -> bool:
        return (await self.put_many([entry]))[0]

    async def put_many(self, entries: Iterable[Entry]) -> list[bool]:
        """Test each entry's key against the shared Sieve and queue the new ones, all in one
        atomic script (rule 11); True for each entry queued (new and within the bounds)."""
        return [flag == ADMITTED for flag in await self.admit(list(entries))]

    async def admit(
        self,
        batch: list[Entry],
        max_admitted: int = 0,
        max_per_host: int = 0,
        *,
        seeds: bool = False,
    ) -> list[int]:
        """`put_many` telling why each entry was or was not queued: ADMITTED, SEEN, FULL,
        HOST_FULL, OVER_LIMIT once the shared Sieve counts `max_admitted` keys, or HOST_LIMIT
        once the entry's host (its key's, port left out) had `max_per_host` URLs admitted by
        any process (0: no cap; a refused key stays unseen). `seeds` count toward their hosts'
        caps but are not refused by them (as in memory)."""
        if self._closed:
            self._dropped_closed += len(batch)
            return [FULL] * len(batch)
        if not batch:
            return []
        rows: list[Any] = []
        pairs = [hash_pair(entry.key) for entry in batch]
        for entry in batch:
            host = host_key(entry.url)
            delay, conc = self._host_settings(host)
            scope_host = ("!" if seeds else "") + split_host(entry.key)
            rows.append((host, member_tail(entry), repr(-entry.priority), repr(delay), conc,
                         scope_host))  # fmt: skip
        while True:
            layout = self.sieve.layout()
            args: list[Any] = [self.prefix, "", len(layout), self._max_queued,
                               self._max_queued_per_host, len(batch),
                               "1" if self.respect_robots else "", max_admitted,
                               "1" if self.exact else ""]  # fmt: skip
            for m, k in layout:
                args += (m, k)
            for row, (h1, h2) in zip(rows, pairs, strict=True):
                args += row[:5]
                args += self.sieve.starts(h1, h2)
                args += (format((h1 >> 48) & 0xFFFF, "x"), h1, row[5])
            args.append(max_per_host)
            reply = await self._run("admit", args)
            if int(reply[0]) >= 0:
                break
            await self._redis(self.sieve.refresh())  # another process opened a stage
        await self.sieve.shared_counts(int(reply[0]), int(reply[1]))
        return [int(flag) for flag in reply[2:]]

    def _host_settings(self, host: str) -> tuple[float, int]:
        rule = self._host_rule(host) if self._host_rule is not None else None
        delay, conc = self.delay, self.concurrency
        if rule is not None:
            delay = self.delay if rule.delay is None else float(rule.delay)
            conc = conc if rule.per_host_concurrency is None else rule.per_host_concurrency
        return delay, conc

    # -- priorities ---------------------------------------------------------------------------
    async def queued_priority(self, url: str, key: str) -> float | None:
        host = host_key(url)
        member = await self._redis(self._client.hget(self._key(f"qk:{host}"), key))
        if member is None:
            return None
        score = await self._redis(self._client.zscore(self._key(f"q:{host}"), member))
        return None if score is None else -float(score)

    async def peek(
        self, items: Sequence[tuple[str, str]], max_per_host: int = 0
    ) -> list[float | bool | None]:
        """What the shared crawl knows of each (url, key), changing nothing: None when its
        host (the key's, port left out) had `max_per_host` URLs admitted (0: no cap), else the
        priority it is queued at, else True when the Sieve has it (fetched, in flight,
        refused) and False when it is new (confirmed by the exact tier, when on). One script
        call."""
        if not items:
            return []
        while True:
            layout = self.sieve.layout()
            args: list[Any] = [self.prefix, "", len(layout), "1" if self.exact else ""]
            for m, k in layout:
                args += (m, k)
            for url, key in items:
                h1, h2 = hash_pair(key)
                args += (host_key(url), key, *self.sieve.starts(h1, h2))
                args += (format((h1 >> 48) & 0xFFFF, "x"), h1, split_host(key))
            args.append(max_per_host)
            reply = await self._run("peek", args)
            if int(reply[0]) >= 0:
                break
            await self._redis(self.sieve.refresh())  # another process opened a stage
        return [
            (None if x == 2 else bool(x)) if isinstance(x, int) else -float(x) for x in reply[1:]
        ]

    async def reprioritize(
        self, url: str, key: str, priority: float, *, lower: bool = False
    ) -> bool:
        """Raise a queued entry's priority (with ``lower``, lower it too): it goes after the
        entries of equal priority; False when nothing changed (rule 10)."""
        if priority != priority:
            raise ValueError(f"priority must be a number, got {priority!r} for {url!r}")
        args = [self.prefix, host_key(url), key, repr(-float(priority)), "1" if lower else ""]
        return bool(await self._run("raise", args))

    async def set_priority(self, url: str, key: str, priority: float) -> float | None:
        """``reprioritize(url, key, priority, lower=True)`` that returns the priority the entry
        had, None when no such entry is queued (rule 10); one script, as it reads and sets."""
        if priority != priority:
            raise ValueError(f"priority must be a number, got {priority!r} for {url!r}")
        args = [self.prefix, host_key(url), key, repr(-float(priority)), "1", "1"]
        was = await self._run("raise", args)
        return None if was is None else -float(was)

    async def set_priorities(
        self, items: Sequence[tuple[str, str, float]], *, lower: bool = True
    ) -> list[float | None]:
        """`set_priority` for many (url, key, priority) in one round trip (a pipeline of the same
        script; each call atomic on its own); with ``lower=False`` a priority is only raised.
        Each entry's priority before, None where no such entry is queued. The script is loaded
        once, not checked before every pipeline (redis-py's ``SCRIPT EXISTS``: a round trip);
        a Redis restart in between ends the shared crawl anyway."""
        sha = self._scripts["raise"].sha
        if self._raise_loaded != sha:
            await self._redis(self._client.script_load(REPRIORITIZE))
            self._raise_loaded = sha
        pipe = self._client.pipeline(transaction=False)
        for url, key, priority in items:
            if priority != priority:
                raise ValueError(f"priority must be a number, got {priority!r} for {url!r}")
            pipe.evalsha(sha, 0, self.prefix, host_key(url), key, repr(-float(priority)),
                         "1" if lower else "", "1")  # fmt: skip
        if not items:
            return []
        replies = await self._redis(pipe.execute())
        return [None if was is None else -float(was) for was in replies]

    # -- state ----------------------------------------------------------------------------------
    async def robots(self, key: str) -> tuple[int | None, bytes] | None:
        """The stored robots.txt answer (status, body) of a host, None if none was stored."""
        status, body = await self._redis(
            self._client.hmget(self._key(f"h:{host_key(key)}"), ["robots_status", "robots_body"])
        )
        if status is None:
            return None
        return (int(status) if status else None), bytes(body or b"")

    def close(self) -> None:
        """Stop handing out work here (other processes go on)."""
        self._closed = True

    async def pending(self) -> list[Entry]:
        """Every queued entry with its priority, host by host (by name), each in hand-out order
        (rule 9)."""
        out: list[Entry] = []
        hosts = sorted(
            text(h) for h in await self._redis(self._client.smembers(self._key("hosts")))
        )
        for host in hosts:
            items = await self._redis(self._client.zrange(self._key(f"q:{host}"), 0, -1,
                                                          withscores=True))  # fmt: skip
            out += [entry_of(host, text(member), -float(score)) for member, score in items]
        return out

    async def stats(self) -> FrontierStats:
        now = self._now() if self._clock is not None else float(await self._redis_time())
        pipe = self._client.pipeline(transaction=False)
        pipe.hgetall(self._key("stats"))
        pipe.scard(self._key("hosts"))
        pipe.zcount(self._key("ready"), "-inf", now)
        pipe.zcard(self._key("ready"))
        pipe.zcard(self._key("leases"))
        counts, hosts, ready, filed, leased = await self._redis(pipe.execute())
        c = {text(k): int(v) for k, v in counts.items()}
        return FrontierStats(
            hosts=hosts, ready_hosts=ready, waiting_hosts=filed - ready,
            queued=c.get("queued", 0), in_flight=leased, dropped_full=c.get("dropped_full", 0),
            dropped_host_full=c.get("dropped_host_full", 0), dropped_closed=self._dropped_closed,
            refused_robots=c.get("refused_robots", 0), deferred_robots=0, deferred_backoff=0,
            backoffs=c.get("backoffs", 0), retries=c.get("retries", 0),
            robots_fetches=c.get("robots_fetches", 0),
            handed_out=c.get("handed_out", 0), raised=c.get("raised", 0),
        )  # fmt: skip

    async def reclaimed(self) -> int:
        """Leases reclaimed after they expired, by every process."""
        return int(await self._redis(self._client.hget(self._key("stats"), "reclaimed")) or 0)

    # -- plumbing -------------------------------------------------------------------------------
    def _key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def _now(self) -> float:
        if self._clock is not None:
            return self._clock()
        return asyncio.get_running_loop().time()

    def _now_arg(self) -> str:
        return "" if self._clock is None else repr(self._clock())

    async def _redis_time(self) -> float:
        secs, micros = await self._redis(self._client.time())
        return float(secs) + float(micros) / 1e6

    async def _run(self, name: str, args: list[Any]) -> Any:
        return await self._redis(self._scripts[name](keys=[], args=args))

    @staticmethod
    async def _redis(call: Awaitable[Any]) -> Any:
        try:
            return await call
        except (RedisError, OSError) as exc:
            raise SharedStateError(f"Redis: {exc}") from exc
