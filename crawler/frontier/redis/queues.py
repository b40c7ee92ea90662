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

from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from crawler.fetch.steering import HostRule
from crawler.frontier.base import FrontierStats
from crawler.frontier.entries import Entry
from crawler.frontier.hosts import host_key
from crawler.frontier.redis.lua_admit import (
    ADMIT,
    PEEK,
    AdmitBounds,
    AdmitFlag,
    AdmitRow,
    PeekAnswer,
    admit_args,
    admit_reply,
    peek_args,
    peek_reply,
)
from crawler.frontier.redis.lua_keys import Arg
from crawler.frontier.redis.lua_queue import REPRIORITIZE, Reprioritized, reprioritize_args
from crawler.frontier.redis.members import (
    chunk_records,
    entry_of,
    fingerprint,
    is_chunk,
    member_tail,
    queued_member,
    text,
)
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.sieve.redis import RedisClient, RedisSieve, SharedStateError

__all__ = ["RedisQueues"]


class RedisQueues:
    """A crawl's queues in Redis under `prefix`, admitted through `sieve` (its RedisSieve: same
    client and prefix). The arguments are ``RedisFrontier``'s, checked there."""

    __slots__ = ("_client", "_clock", "_closed", "_dropped_closed", "_host_rule", "_max_queued",
                 "_max_queued_per_host", "_raise_loaded", "_scripts", "concurrency", "delay",
                 "exact", "ip_concurrency", "ip_delay", "prefix", "respect_robots",
                 "sieve")  # fmt: skip

    def __init__(
        self,
        client: RedisClient,
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
        self.ip_delay = float(politeness.ip_delay)
        self.ip_concurrency = politeness.ip_concurrency
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
        return [flag is AdmitFlag.ADMITTED for flag in await self.admit(list(entries))]

    async def admit(
        self,
        batch: list[Entry],
        max_admitted: int = 0,
        max_per_host: int = 0,
        *,
        seeds: bool = False,
        per_call: bool = False,
    ) -> list[AdmitFlag]:
        """`put_many` telling why each entry was or was not queued (`AdmitFlag`): OVER_LIMIT
        once the shared Sieve counts `max_admitted` keys, HOST_LIMIT once the entry's host (its
        key's, port left out) had `max_per_host` URLs admitted by any process (0: no cap; a
        refused key stays unseen). `seeds` count toward their hosts' caps but are not refused
        by them (as in memory). `per_call`: `max_admitted` is the new keys this call may take
        (0: none), the crawl-wide count being kept by the caller (a sharded crawl)."""
        if self._closed:
            self._dropped_closed += len(batch)
            return [AdmitFlag.FULL] * len(batch)
        if not batch:
            return []
        rows = [self._row(entry) for entry in batch]
        bounds = AdmitBounds(self._max_queued, self._max_queued_per_host, self.respect_robots,
                             self.exact, max_admitted, max_per_host, per_call)  # fmt: skip
        while True:
            args = admit_args(self.prefix, self.sieve, bounds, rows, seeds=seeds)
            answer = admit_reply(await self._run("admit", args))
            if answer is not None:
                break
            await self._redis(self.sieve.refresh())  # another process opened a stage
        await self.sieve.shared_counts(answer.newest_bits, answer.sieve_count)
        return answer.flags

    def _row(self, entry: Entry) -> AdmitRow:
        host = host_key(entry.url)
        delay, concurrency = self._host_settings(host)
        return AdmitRow(host, member_tail(entry), entry.priority, delay, concurrency, entry.key)

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
        found = await self._redis(self._client.hget(self._key(f"qk:{host}"), fingerprint(key)))
        if found is None:
            return None
        member = queued_member(text(found))
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
        keys = [(host_key(url), key) for url, key in items]
        while True:
            args = peek_args(self.prefix, self.sieve, keys, exact=self.exact,
                             max_per_host=max_per_host)  # fmt: skip
            answers = peek_reply(await self._run("peek", args))
            if answers is not None:
                break
            await self._redis(self.sieve.refresh())  # another process opened a stage
        return [_known(x) for x in answers]

    async def reprioritize(
        self, url: str, key: str, priority: float, *, lower: bool = False
    ) -> bool:
        """Raise a queued entry's priority (with ``lower``, lower it too): it goes after the
        entries of equal priority; False when nothing changed (rule 10)."""
        if priority != priority:
            raise ValueError(f"priority must be a number, got {priority!r} for {url!r}")
        args = reprioritize_args(self.prefix, host_key(url), key, priority, lower=lower)
        return Reprioritized(await self._run("raise", args)) is Reprioritized.CHANGED

    async def set_priority(self, url: str, key: str, priority: float) -> float | None:
        """``reprioritize(url, key, priority, lower=True)`` that returns the priority the entry
        had, None when no such entry is queued (rule 10); one script, as it reads and sets."""
        if priority != priority:
            raise ValueError(f"priority must be a number, got {priority!r} for {url!r}")
        args = reprioritize_args(self.prefix, host_key(url), key, priority, lower=True, was=True)
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
        route = self.prefix + "stats"  # (the slot's node, on a cluster)
        for url, key, priority in items:
            if priority != priority:
                raise ValueError(f"priority must be a number, got {priority!r} for {url!r}")
            args = reprioritize_args(self.prefix, host_key(url), key, priority, lower=lower,
                                     was=True)  # fmt: skip
            pipe.evalsha(sha, 1, route, *args)
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

    async def sync(self) -> bool:
        """Whether this process's admissions are safe before its completions go out: always,
        on one node (`crawler.frontier.redis.replicas`: a cluster's replicas are waited for)."""
        return True

    def close(self) -> None:
        """Stop handing out work here (other processes go on)."""
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

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
            members = [(text(member), -float(score)) for member, score in items]
            ids = [member[1:] for member, _ in members if is_chunk(member)]
            found = (
                await self._redis(self._client.hmget(self._key(f"ql:{host}"), ids)) if ids else []
            )
            chunks = iter(found)
            for member, priority in members:
                chunk = text(next(chunks)) if is_chunk(member) else None
                out += [entry_of(host, r, priority) for r in chunk_records(member, chunk)]
        return out

    async def stats(self) -> FrontierStats:
        now = self._now() if self._clock is not None else float(await self._redis_time())
        pipe = self._client.pipeline(transaction=False)
        pipe.hgetall(self._key("stats"))
        pipe.scard(self._key("hosts"))
        pipe.zcount(self._key("ready"), "-inf", now)
        pipe.zcard(self._key("ready"))
        pipe.zcard(self._key("leases"))
        pipe.scard(self._key("addrs"))
        counts, hosts, ready, filed, leased, addresses = await self._redis(pipe.execute())
        c = {text(k): int(v) for k, v in counts.items()}
        return FrontierStats(
            hosts=hosts, ready_hosts=ready, waiting_hosts=filed - ready,
            queued=c.get("queued", 0), in_flight=leased, dropped_full=c.get("dropped_full", 0),
            dropped_host_full=c.get("dropped_host_full", 0), dropped_closed=self._dropped_closed,
            refused_robots=c.get("refused_robots", 0), deferred_robots=0, deferred_backoff=0,
            backoffs=c.get("backoffs", 0), retries=c.get("retries", 0),
            robots_fetches=c.get("robots_fetches", 0),
            handed_out=c.get("handed_out", 0), raised=c.get("raised", 0),
            ip_delay=self.ip_delay, ip_concurrency=self.ip_concurrency, addresses=addresses,
            address_waiting=c.get("parked", 0), resolving=self._resolving(),
        )  # fmt: skip

    def _resolving(self) -> int:
        """Resolutions under way in this process (the frontier's, when it resolves)."""
        return 0

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

    async def _run(self, name: str, args: list[Arg]) -> Any:
        # one key named (never read as KEYS): a cluster routes the call to its slot's node
        return await self._redis(self._scripts[name](keys=[self.prefix + "stats"], args=args))

    @staticmethod
    async def _redis(call: Awaitable[Any]) -> Any:
        try:
            return await call
        except (RedisError, OSError) as exc:
            raise SharedStateError(f"Redis: {exc}") from exc
        except AttributeError as exc:  # redis-py: a connection closed under the call
            if "'NoneType' object has no attribute" not in str(exc):
                raise
            raise SharedStateError(f"Redis: connection lost ({exc})") from exc


def _known(answer: PeekAnswer | float) -> float | bool | None:
    """`peek`'s word for a PEEK answer: None at the host cap, the priority it is queued at,
    True when seen, False when new."""
    if answer is PeekAnswer.HOST_LIMIT:
        return None
    if isinstance(answer, PeekAnswer):
        return answer is PeekAnswer.SEEN
    return answer
