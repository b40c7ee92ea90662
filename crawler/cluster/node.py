"""One process's part in a shared crawl: `ClusterNode` (``crawl --redis URL``).

It connects to Redis (one node, or any node of a Redis Cluster: `crawler.cluster.connect`),
joins the crawl named ``[cluster] crawl_id`` (its keys under ``crawl:{crawl_id}:``, or on a
cluster under each group's hash tag: `crawler.frontier.redis.shards`; the first process creates
it and its number of groups), refuses to join one started with other settings (the scope, URL
and Sieve settings that decide which URLs are admitted and how they are keyed, as ``--state``
does; named in the error), and builds the shared Sieve and frontier of each group
(`crawler.sieve.redis`, `crawler.frontier.redis.sharded`) and the engine's view of them
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

from redis.asyncio import RedisCluster
from redis.exceptions import RedisError

from crawler.cluster.connect import connect, discover, lost
from crawler.config.load import Config
from crawler.errors import ConfigError, SharedStateError
from crawler.fetch.steering import HostRule
from crawler.focus.shared_budget import SharedBudget
from crawler.frontier.addresses import Names
from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import default_owner
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.redis.sharded import ShardedFrontier, group_sieves
from crawler.frontier.redis.shards import GROUPS_PER_MASTER, Keyspace
from crawler.frontier.redis.work import SharedWork
from crawler.sieve.redis import RedisClient, text

if TYPE_CHECKING:
    from crawler.content.redis import RedisContentIndex

__all__ = ["ClusterNode", "SentCache", "check_cluster_config", "crawl_prefix", "redacted"]

log = logging.getLogger(__name__)

FORMAT = "4"  # the shared keys' layout (3: the Sieve's stages over 64 MiB in segments; DONE names
# the process whose completion publishes a wake-up; 4: host queues in chunks, ``ql:{host}``,
# and the groups of hosts, ``groups`` in meta)
POLL_INTERVAL = 1.0  # the longest wait of a process that found nothing to do (it is woken
# when a slot frees up: `crawler.frontier.redis.wake`; this bounds the wait for a lost wake-up)
TURN = 0.25  # seconds a process leaves a contended one-slot host to a hungry one (`Sharing`)
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

    def clear(self) -> None:
        """Forget every key (Redis may have lost some: they are sent again)."""
        self._new.clear()
        self._old.clear()

    def __repr__(self) -> str:
        return f"SentCache(size={len(self)}, capacity={self.capacity}, hits={self.hits})"


class ClusterNode:
    """This process in the shared crawl (see the module docstring). ``await open()`` first,
    ``await close()`` last."""

    __slots__ = ("_beat", "_budget", "_client", "_parts", "_run_id", "_settings", "cache", "config",
                 "exact", "frontier", "keyspace", "owner", "prefix", "rescued", "started", "url",
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
        c, p = config.cluster, config.politeness
        self.config = config
        self.url = c.redis
        self.prefix = crawl_prefix(c.crawl_id)
        # the exact tier is on unless "none" (Redis is the crawl's state, as --state is); every
        # process must agree on it
        self.exact = config.sieve.confirm != "none"
        self._settings = {**settings, "sieve.confirm": "exact" if self.exact else "none"}
        self.rescued = 0
        self._client: RedisClient = connect(c.redis)
        self._parts = (clock, host_rule, names if p.by_address else None)
        self.owner = default_owner()
        self.keyspace = Keyspace(c.crawl_id)
        self.frontier = self._frontier(self.keyspace)  # the crawl's own, once open() knows it
        self.work = SharedWork(self.frontier, poll_interval=POLL_INTERVAL)
        self.cache = SentCache()
        self.started = time.time()
        self._beat: asyncio.Task[None] | None = None
        self._budget: SharedBudget | None = None
        self._run_id = ""  # the Redis server's run id: a restart changes it

    def _frontier(self, keyspace: Keyspace) -> ShardedFrontier:
        """The crawl's frontier laid out by `keyspace`: a Sieve per group, one frontier."""
        c, s, p = self.config.cluster, self.config.sieve, self.config.politeness
        clock, host_rule, names = self._parts
        sieves = group_sieves(self._client, keyspace, s.capacity, error_rate=s.error_rate,
                              ratio=s.ratio, growth=s.growth)  # fmt: skip
        sharing = Sharing(lease_ttl=c.lease_ttl or LEASE_TTL, turn=TURN, exact=self.exact,
                          user_agent=self.config.crawl.user_agent, owner=self.owner)  # fmt: skip
        frontier = ShardedFrontier(self._client, keyspace, sieves, p.politeness(),
                                   self.config.crawl.queue_limits(), sharing, clock=clock,
                                   host_rule=host_rule)  # fmt: skip
        if names is not None:
            frontier.resolve_by(names)
        return frontier

    async def open(self, stats: Callable[[], dict[str, Any]]) -> None:
        """Join (or create) the shared crawl; SharedStateError if Redis is unreachable or the
        crawl was started with other settings. `stats` gives this process's stats for its
        heartbeats."""
        where = f"Redis at {redacted(self.url)}"
        mine = json.dumps(self._settings, sort_keys=True)
        try:
            self._client, masters = await discover(self._client, self.url)
            keyspace = Keyspace(self.config.cluster.crawl_id, cluster=masters > 0)
            meta = keyspace.prefix + "meta"
            groups = self.config.cluster.groups or max(1, GROUPS_PER_MASTER * masters)
            # the first process's fields win, in one transaction
            pipe = self._client.pipeline(transaction=True)
            pipe.hsetnx(meta, "format", FORMAT)
            pipe.hsetnx(meta, "settings", mine)
            pipe.hsetnx(meta, "created", _iso(time.time()))
            pipe.hsetnx(meta, "groups", groups)
            pipe.hgetall(meta)
            *_, stored = await pipe.execute()
        except SharedStateError as exc:
            raise SharedStateError(f"cannot use {where}: {exc}") from None
        except (RedisError, OSError) as exc:
            raise SharedStateError(f"cannot use {where}: {exc}") from exc
        have = {text(k): text(v) for k, v in stored.items()}
        self._check_meta(have, where, groups)
        self.keyspace = Keyspace(keyspace.crawl_id, int(have["groups"]), cluster=masters > 0)
        self.prefix = self.keyspace.prefix
        self.frontier = self._frontier(self.keyspace)
        if masters:  # completions wait for a replica where a master has one (replicas.py)
            self.frontier.durable = 1
        self.frontier.on_lost = self.cache.clear
        self.work = SharedWork(self.frontier, poll_interval=POLL_INTERVAL)
        await self.frontier.open()
        await self._heartbeat(stats)
        self._beat = asyncio.create_task(self._upkeep(stats), name="cluster-upkeep")
        log.info("joined the shared crawl %r in %s as %s (%d group%s of hosts)", self.prefix,
                 where, self.owner, self.keyspace.groups,
                 "" if self.keyspace.groups == 1 else "s")  # fmt: skip

    def _check_meta(self, have: dict[str, str], where: str, groups: int) -> None:
        """SharedStateError if the crawl as stored (`have`) is not one this process may join."""
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
        stored = int(have.get("groups") or 1)
        if self.config.cluster.groups and stored != groups:
            raise SharedStateError(
                f"the shared crawl {self.prefix!r} in {where} has {stored} groups of hosts, not "
                f"the {groups} of [cluster] groups: leave it out to join, or use another "
                "--crawl-id"
            )
        have["groups"] = str(stored)

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
        for prefix in self.keyspace.prefixes:
            pipe.hget(prefix + "stats", "rescued")
        try:
            _, _, *rescued = await pipe.execute()
            self.rescued = sum(int(x or 0) for x in rescued)
            await self.work.refresh()
            if isinstance(self._client, RedisCluster):  # a failover is not a restart
                return
            server = await self._client.info("server")
        except (RedisError, OSError, AttributeError) as exc:  # (redis-py: a connection lost)
            if isinstance(exc, AttributeError) and not lost(exc):
                raise
            raise SharedStateError(f"Redis at {redacted(self.url)}: {exc}") from exc
        run_id = str(server.get("run_id", ""))
        if self._run_id and run_id != self._run_id:
            # It may have lost its last writes: this process's cache of sent keys may be wrong.
            where = redacted(self.url)
            self.work.fail(SharedStateError(f"Redis at {where} restarted during the crawl: run "
                                            "the same command again to go on"))  # fmt: skip
        self._run_id = run_id

    def sieve_stats(self) -> dict[str, Any]:
        """The shared Sieve's figures, every group's (a lookup asks one group: the bound is
        the largest group's)."""
        sieves = self.frontier.sieves
        return {
            "kind": "scalable",
            "count": sum(s.count for s in sieves),
            "approx_items": round(sum(s.approx_items for s in sieves)),
            "stages": max(s.stages for s in sieves),
            "size_in_bytes": sum(s.size_in_bytes for s in sieves),
            "false_positive_bound": max(s.false_positive_bound for s in sieves),
            "groups": len(sieves),
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
                await asyncio.gather(*(sieve.refresh() for sieve in self.frontier.sieves))
                await self._heartbeat(stats, left=True)
        except SharedStateError as exc:
            log.warning("leaving the shared crawl: %s", exc)
        finally:
            with contextlib.suppress(RedisError, OSError):
                await self.frontier.replicas.close()
                await self._client.aclose()

    def __repr__(self) -> str:
        return f"ClusterNode(prefix={self.prefix!r}, owner={self.owner!r}, work={self.work!r})"


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
