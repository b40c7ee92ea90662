"""How a process reaches the crawl's Redis: one node, or any node of a Redis Cluster.

`connect` makes a client of one node (a blocking pool: redis-py's default one raises "Too many
connections" past 100 calls at once, a shared crawl of concurrency 100+); `discover` asks that
node ``INFO cluster`` and, on a node of a Redis Cluster, replaces it with redis-py's asyncio
cluster client, which learns the slots from that node, sends each key's command to its master and
follows MOVED/ASK redirects. A master that dies is a connection error until its replica takes
over: `CrawlCluster` reloads the slots and tries again, with backoff, for `FAILOVER_WAIT`
seconds (said on stderr), then the crawl ends with the Redis error (run the same command again
to go on).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Final

from redis.asyncio import BlockingConnectionPool, Redis, RedisCluster
from redis.exceptions import (
    ClusterDownError,
    MasterDownError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from crawler.errors import SharedStateError
from crawler.sieve.redis import RedisClient

__all__ = ["FAILOVER_WAIT", "MAX_CONNECTIONS", "CrawlCluster", "connect", "discover", "lost"]

log = logging.getLogger("crawler.cluster")

MAX_CONNECTIONS: Final = 64  # to Redis (per node of a cluster), per process
POOL_WAIT: Final = 60.0  # seconds a call waits for a free connection before it fails
FAILOVER_WAIT: Final = 30.0  # about how long calls retry while a cluster fails a master over
_OUTAGE: Final = (RedisConnectionError, RedisTimeoutError, ClusterDownError, MasterDownError,
                  SlotNotCoveredError, TryAgainError, OSError)  # fmt: skip


class CrawlCluster(RedisCluster):
    """redis-py's asyncio cluster client whose calls outlast a failover: a call that fails for
    want of a live master (connection refused or lost, CLUSTERDOWN, TRYAGAIN, a slot not
    covered) is tried again with backoff (0.05 s doubling to 1 s) for `FAILOVER_WAIT` seconds,
    the slots reloaded each time (the cluster client's own redirects: MOVED, ASK); the first
    retry of an outage is said on stderr, and its end. A call may thus run twice (its reply lost
    with the connection): every script of the crawl is safe to repeat (a second completion is
    stale, a second admission finds its keys seen, a second claim's lease is reclaimed)."""

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if "target_nodes" in kwargs:  # a call for one node (WAIT): its caller decides
            return await super().execute_command(*args, **kwargs)
        deadline, delay, said = time.monotonic() + FAILOVER_WAIT, 0.05, False
        while True:
            try:
                reply = await super().execute_command(*args, **kwargs)
            except (*_OUTAGE, AttributeError) as exc:
                if not lost(exc) or time.monotonic() + delay > deadline:
                    raise
                if not said:
                    log.warning("Redis Cluster: %s: %s; retrying through the cluster's "
                                "redirects for up to %g s", type(exc).__name__, exc,
                                FAILOVER_WAIT)  # fmt: skip
                    said = True
                self._initialize = True  # reload the slots: a replica may have taken over
                await asyncio.sleep(delay)
                delay = min(1.0, delay * 2)
                continue
            if said:
                log.warning("Redis Cluster: reachable again, the crawl goes on")
            return reply


def lost(exc: BaseException) -> bool:
    """Whether `exc` says a connection was lost: an outage, or redis-py's race when a connection
    closed under a call writing to it (``'NoneType' object has no attribute 'writelines'``, met
    in a failover: its other calls' connections are dropped as the slots are reloaded)."""
    if isinstance(exc, AttributeError):
        return "'NoneType' object has no attribute" in str(exc)
    return isinstance(exc, _OUTAGE)


def connect(url: str) -> Redis:
    """A client of the node at `url` (not connected yet)."""
    pool = BlockingConnectionPool.from_url(
        url, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT, socket_connect_timeout=5.0
    )
    return Redis.from_pool(pool)


async def discover(client: RedisClient, url: str) -> tuple[RedisClient, int]:
    """The client to use for `url` and the cluster's masters (0: one node, `client` itself).
    Raises redis-py's errors (the caller says where)."""
    if isinstance(client, RedisCluster):
        return client, len(client.get_primaries())
    info = await client.info("cluster")
    if not int(info.get("cluster_enabled", 0)):
        return client, 0
    await client.aclose()
    cluster = CrawlCluster.from_url(
        url, max_connections=MAX_CONNECTIONS, socket_connect_timeout=5.0, socket_timeout=10.0
    )
    try:
        await cluster.initialize()
    except RedisClusterException as exc:  # not a RedisError: e.g. slots not all covered
        await cluster.aclose()
        raise SharedStateError(f"the Redis Cluster of that node cannot serve the crawl: {exc} "
                               "(check it with redis-cli --cluster check)") from exc  # fmt: skip
    except BaseException:
        await cluster.aclose()
        raise
    return cluster, len(cluster.get_primaries())
