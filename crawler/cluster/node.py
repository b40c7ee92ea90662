"""One process's part in a shared crawl: `ClusterNode` (``crawl --redis URL``).

It connects to Redis, joins the crawl named ``[cluster] crawl_id`` (every key under
``crawl:{crawl_id}:``; the first process creates it), refuses to join one started with other
settings (the scope, URL and Sieve settings that decide which URLs are admitted and how they
are keyed, as ``--state`` does; named in the error), and builds the shared Sieve and frontier
(`crawler.sieve.redis`, `crawler.frontier.redis.frontier`) and the engine's view of them
(`crawler.frontier.redis.work.SharedWork`).

Admission (`admit`) sends a page's new keys in one atomic Lua call (Sieve test-and-set and
enqueue). A process-local cache of keys already sent (`SentCache`, bounded) answers "seen" for
a page's navigation links without a round trip, so Redis sees each URL about once per process.
The exact tier (``[sieve] confirm``: on unless "none", since Redis is the crawl's state as
``--state`` is) lives in the same script: fingerprints in Redis intsets confirm every "seen" of
the Bloom filter, so no URL is lost to a false positive.

Every ``heartbeat`` seconds the process writes its stats under ``procs`` (field: its owner id)
and its time under ``alive``: ``crawl --status`` (`crawler.cluster.status`) adds them up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import RedisError

from crawler.config.load import Config
from crawler.errors import ConfigError, SharedStateError
from crawler.fetch.steering import HostRule
from crawler.focus.shared_budget import SharedBudget
from crawler.frontier.addresses import Names
from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.redis.work import SharedWork
from crawler.sieve.redis import RedisSieve, text

if TYPE_CHECKING:
    from crawler.content.redis import RedisContentIndex

__all__ = ["ClusterNode", "SentCache", "check_cluster_config", "crawl_prefix", "redacted"]

log = logging.getLogger(__name__)

FORMAT = "4"  # the shared keys' layout (3: the Sieve's stages over 64 MiB in segments; DONE names
# the process whose completion publishes a wake-up; 4: host queues in chunks, ``ql:{host}``)
POLL_INTERVAL = 1.0  # the longest wait of a process that found nothing to do (it is woken
# when a slot frees up: `crawler.frontier.redis.wake`; this bounds the wait for a lost wake-up)
TURN = 0.25  # seconds a process leaves a contended one-slot host to a hungry one (`Sharing`)
MAX_CONNECTIONS = 64  # to Redis, per process; more calls at once wait for a free connection
POOL_WAIT = 60.0  # seconds a call waits for one before it fails as a Redis error
LEASE_TTL = 30.0  # default [cluster] lease_ttl: renewed every third of it while the process lives


def crawl_prefix(crawl_id: str) -> str:
    return f"crawl:{crawl_id}:"


def redacted(url: str) -> str:
    """A Redis URL without its password (for messages)."""
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme, _, creds = head.partition("://")
    user = creds.partition(":")[0]
    return f"{scheme}://{user}:[redacted]@{tail}" if ":" in creds else url


def check_cluster_config(config: Config, *, state: bool) -> None:
    """ConfigError for what a shared crawl does not do, named; nothing otherwise."""
    if state:
        raise ConfigError("not available with --redis (a crawl shared through Redis): --state "
                          "(Redis is the shared crawl's state: run the same command again to "
                          "go on)")  # fmt: skip
    if config.sieve.kind != "scalable":
        raise ConfigError(f"[sieve] kind = {config.sieve.kind!r} is not shared through Redis: "
                          "a shared crawl's Sieve is the scalable one "
                          "(kind = 'scalable')")  # fmt: skip


class SentCache:
    """The keys this process already sent to the shared Sieve (bounded: two generations of
    ``capacity / 2`` hashes; the older is dropped when the newer fills)."""

    __slots__ = ("_new", "_old", "capacity", "hits")

    def __init__(self, capacity: int = 200_000) -> None:
        if capacity < 2:
            raise ValueError(f"capacity must be >= 2, got {capacity}")
        self.capacity = capacity
        self._new: set[int] = set()
        self._old: set[int] = set()
        self.hits = 0

    def __contains__(self, key: str) -> bool:
        h = hash(key)
        if h in self._new or h in self._old:
            self.hits += 1
            return True
        return False

    def add(self, key: str) -> None:
        if len(self._new) >= self.capacity // 2:
            self._old, self._new = self._new, set()
        self._new.add(hash(key))

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def __repr__(self) -> str:
        return f"SentCache(size={len(self)}, capacity={self.capacity}, hits={self.hits})"


class ClusterNode:
    """This process in the shared crawl (see the module docstring). ``await open()`` first,
    ``await close()`` last."""

    __slots__ = ("_beat", "_budget", "_client", "_run_id", "_settings", "cache", "config", "exact",
                 "frontier", "owner", "prefix", "rescued", "sieve", "started", "url",
                 "work")  # fmt: skip

    def __init__(
        self,
        config: Config,
        settings: dict[str, object],
        *,
        clock: Callable[[], float] | None = None,
        host_rule: Callable[[str], HostRule | None] | None = None,
        names: Names | None = None,
    ) -> None:
        """`names` resolves hosts for the budget by address (the fetcher's `addresses`; unused
        when `[politeness]` sets neither ip_delay nor ip_concurrency)."""
        c, p, s = config.cluster, config.politeness, config.sieve
        self.config = config
        self.url = c.redis
        self.prefix = crawl_prefix(c.crawl_id)
        # the exact tier is on unless "none" (Redis is the crawl's state, as --state is); every
        # process must agree on it
        self.exact = config.sieve.confirm != "none"
        self._settings = {**settings, "sieve.confirm": "exact" if self.exact else "none"}
        self.rescued = 0
        # a blocking pool: redis-py's default one raises "Too many connections" past 100
        # calls at once (a shared crawl of concurrency 100+, each worker awaiting Redis)
        pool = BlockingConnectionPool.from_url(
            c.redis, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT, socket_connect_timeout=5.0
        )
        self._client = Redis.from_pool(pool)
        self.sieve = RedisSieve(
            self._client, self.prefix, capacity=s.capacity, error_rate=s.error_rate,
            ratio=s.ratio, growth=s.growth,
        )  # fmt: skip
        sharing = Sharing(lease_ttl=c.lease_ttl or LEASE_TTL, turn=TURN,
                          exact=self.exact, user_agent=config.crawl.user_agent)  # fmt: skip
        self.frontier = RedisFrontier(
            self._client, self.prefix, self.sieve, p.politeness(), config.crawl.queue_limits(),
            sharing, clock=clock, host_rule=host_rule,
        )  # fmt: skip
        if names is not None and p.by_address:
            self.frontier.resolve_by(names)
        self.owner = self.frontier.owner
        self.work = SharedWork(self.frontier, poll_interval=POLL_INTERVAL)
        self.cache = SentCache()
        self.started = time.time()
        self._beat: asyncio.Task[None] | None = None
        self._budget: SharedBudget | None = None
        self._run_id = ""  # the Redis server's run id: a restart changes it

    async def open(self, stats: Callable[[], dict[str, Any]]) -> None:
        """Join (or create) the shared crawl; SharedStateError if Redis is unreachable or the
        crawl was started with other settings. `stats` gives this process's stats for its
        heartbeats."""
        where = f"Redis at {redacted(self.url)}"
        meta = self.prefix + "meta"
        mine = json.dumps(self._settings, sort_keys=True)
        try:
            await self._refuse_cluster(where)
            # the first process's fields win, in one transaction
            pipe = self._client.pipeline(transaction=True)
            pipe.hsetnx(meta, "format", FORMAT)
            pipe.hsetnx(meta, "settings", mine)
            pipe.hsetnx(meta, "created", _iso(time.time()))
            pipe.hgetall(meta)
            *_, stored = await pipe.execute()
        except (RedisError, OSError) as exc:
            raise SharedStateError(f"cannot use {where}: {exc}") from exc
        have = {text(k): text(v) for k, v in stored.items()}
        if have.get("format") != FORMAT:
            raise SharedStateError(f"the crawl {self.prefix!r} in {where} has format "
                                   f"{have.get('format')!r}, expected {FORMAT}")  # fmt: skip
        saved = json.loads(have.get("settings") or "{}")
        changed = sorted(k for k in set(saved) | set(self._settings)
                         if saved.get(k) != self._settings.get(k))  # fmt: skip
        if changed:
            raise SharedStateError(
                f"the shared crawl {self.prefix!r} in {where} was started with other settings "
                f"({', '.join(changed)}): join it with the same config, or use another "
                "--crawl-id"
            )
        await self.frontier.open()
        await self._heartbeat(stats)
        self._beat = asyncio.create_task(self._upkeep(stats), name="cluster-upkeep")
        log.info("joined the shared crawl %r in %s as %s", self.prefix, where, self.owner)

    async def _refuse_cluster(self, where: str) -> None:
        """SharedStateError if `where` is a node of a Redis Cluster (``INFO cluster``)."""
        info = await self._client.info("cluster")
        if int(info.get("cluster_enabled", 0)):
            raise SharedStateError(
                f"{where} is a node of a Redis Cluster: a shared crawl needs one Redis node "
                "today (its scripts read and write keys of many hosts at once, which a cluster "
                "spreads over nodes by slot); use a standalone redis-server"
            )

    async def admit(
        self, entries: Sequence[Entry], max_admitted: int = 0, *, seeds: bool = False
    ) -> list[AdmitFlag]:
        """What the shared frontier says of each entry (`AdmitFlag`; HOST_LIMIT: ``[scope]
        max_pages_per_host`` counted over every process); keys this process sent before are
        SEEN at once."""
        cache = self.cache
        flags: list[AdmitFlag | None] = [AdmitFlag.SEEN if e.key in cache else None
                                         for e in entries]  # fmt: skip
        todo = [e for e, f in zip(entries, flags, strict=True) if f is None]
        if todo:
            per_host = self.config.scope.max_pages_per_host
            answers = iter(await self.frontier.admit(todo, max_admitted, per_host, seeds=seeds))
            for i, flag in enumerate(flags):
                if flag is None:
                    flags[i] = answer = next(answers)
                    if answer in (AdmitFlag.SEEN, AdmitFlag.ADMITTED):  # the Sieve has it now
                        cache.add(entries[i].key)
        return [flag for flag in flags if flag is not None]

    async def budget(self, limit: int) -> SharedBudget:
        """The fetch budget of a focused crawl, `limit` page results over every process."""
        self._budget = budget = SharedBudget(self._client, self.prefix + "budget", limit)
        await budget.open()
        return budget

    def content_index(self, distance: int) -> RedisContentIndex:
        """The crawl's content-dedup index, one for every process (``[dedup] enabled``)."""
        from crawler.content.redis import RedisContentIndex  # numpy: only with dedup on

        return RedisContentIndex(self._client, self.prefix, distance)

    async def _upkeep(self, stats: Callable[[], dict[str, Any]]) -> None:
        """Renew this process's leases every third of their time; a heartbeat when due."""
        beat = self.config.cluster.heartbeat
        tick = min(beat, self.frontier.lease_ttl / 3)
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + beat
        while True:
            await asyncio.sleep(tick)
            try:
                await self.frontier.renew()
                if loop.time() >= next_beat:
                    next_beat = loop.time() + beat
                    await self._heartbeat(stats)
            except SharedStateError as exc:  # the workers see Redis fail too, and end the crawl
                log.warning("heartbeat: %s", exc)

    async def _heartbeat(self, stats: Callable[[], dict[str, Any]], left: bool = False) -> None:
        """`left`: the process's last heartbeat, as it leaves the crawl (`crawl --status`
        then shows it as left, not as active until its heartbeat is old)."""
        now = time.time()
        record = {"host": socket.gethostname(), "pid": os.getpid(), "started": self.started,
                  "seen": now, "left": left, "stats": stats()}  # fmt: skip
        pipe = self._client.pipeline(transaction=False)
        pipe.hset(self.prefix + "procs", self.owner, json.dumps(record))
        pipe.zadd(self.prefix + "alive", {self.owner: now})
        pipe.hget(self.prefix + "stats", "rescued")
        pipe.info("server")
        try:
            *_, rescued, server = await pipe.execute()
            self.rescued = int(rescued or 0)
            await self.work.refresh()
        except (RedisError, OSError) as exc:
            raise SharedStateError(f"Redis at {redacted(self.url)}: {exc}") from exc
        run_id = str(server.get("run_id", ""))
        if self._run_id and run_id != self._run_id:
            # It may have lost its last writes: this process's cache of sent keys may be wrong.
            where = redacted(self.url)
            self.work.fail(SharedStateError(f"Redis at {where} restarted during the crawl: run "
                                            "the same command again to go on"))  # fmt: skip
        self._run_id = run_id

    def sieve_stats(self) -> dict[str, Any]:
        sieve = self.sieve
        return {
            "kind": "scalable",
            "count": sieve.count,
            "approx_items": round(sieve.approx_items),
            "stages": sieve.stages,
            "size_in_bytes": sieve.size_in_bytes,
            "false_positive_bound": sieve.false_positive_bound,
            "shared": True,
            "confirm": "exact" if self.exact else "none",
            "rescued_false_positives": self.rescued,  # by every process
            "sent_cache_hits": self.cache.hits,
        }

    async def close(self, stats: Callable[[], dict[str, Any]]) -> None:
        """Send what is pending, a last heartbeat, and disconnect (quietly if Redis is gone)."""
        if self._beat is not None:
            self._beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beat
        try:
            try:
                await self.work.drain()
            finally:
                if self._budget is not None:  # its page results count for the next runs
                    await self._budget.drain()
            if self.work.error is None and self._beat is not None:  # it had joined the crawl
                await self.sieve.refresh()
                await self._heartbeat(stats, left=True)
        except SharedStateError as exc:
            log.warning("leaving the shared crawl: %s", exc)
        finally:
            with contextlib.suppress(RedisError, OSError):
                await self._client.aclose()

    def __repr__(self) -> str:
        return f"ClusterNode(prefix={self.prefix!r}, owner={self.owner!r}, work={self.work!r})"


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
