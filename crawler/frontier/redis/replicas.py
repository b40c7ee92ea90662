"""Completions wait for the replicas: `Replicas`, what keeps a failover from losing URLs.

A Redis master replicates asynchronously: when it dies, the replica that takes over may lack its
last writes. A page's completion must not survive while the links it admitted are lost (the page
would never be fetched again, its links never admitted). So before a batch of completions goes
out, the masters that took admissions since the last batch are each asked to confirm them:
``INCR {group}sync`` then ``WAIT 1 timeout`` on one connection of a client of that very node (WAIT
counts the replication offset of the connection's own last write; the stream is in order, so
the replica's acknowledgement of that INCR covers every earlier write to the master, whoever
sent it). A master that cannot be reached (dead, or its slots moved: a failover) fails the check,
and the caller gives its pages back instead of completing them: they are fetched again and their
links admitted again (a repeat, never a loss). A replica that does not answer within the timeout
is waited for twice more, then said on stderr and let go (its master is alive: nothing is lost
unless it dies in that window). Each master is asked ``ROLE`` first (and again when a replica
came short): one with no replica (none set up, or its replica promoted after a failover, its old
master gone) is not waited for, and asked again every `RECHECK` seconds.

Cost: one round trip per master that took admissions, per batch of completions (measured in
docs/scale-out.md). With no replicas there is nothing to wait for: a master that dies takes its
slots with it and the crawl stops on the error (run it again once the master is back, from its
AOF if it had one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any, Final

from redis.asyncio import Redis, RedisCluster
from redis.exceptions import RedisError

from crawler.frontier.redis.shards import Keyspace
from crawler.sieve.redis import RedisClient

__all__ = ["WAIT_MS", "Replicas"]

log = logging.getLogger(__name__)

WAIT_MS: Final = 1000  # a replica's answer, at most (then twice more)
RECHECK: Final = 5.0  # seconds before a master without a replica is asked again (``ROLE``)


def _replicas_of(role: Any) -> int:
    """The replicas a ``ROLE`` reply of a master lists (0 for a node that is not a master)."""
    kind = role[0].decode() if isinstance(role[0], bytes) else str(role[0])
    return len(role[2]) if kind == "master" else 0


class Replicas:
    """The masters' replicas, as completions wait for them (module docstring)."""

    __slots__ = ("_client", "_has", "_keyspace", "_nodes", "waits")

    def __init__(self, client: RedisClient, keyspace: Keyspace) -> None:
        self._client, self._keyspace = client, keyspace
        self._nodes: dict[str, Redis] = {}  # a client of each master, by its address
        self._has: dict[str, tuple[int, float]] = {}  # master -> (replicas, when asked)
        self.waits = 0  # WAITs sent (for the benchmark)

    async def wait(self, groups: Sequence[int], replicas: int) -> bool:
        """Whether the writes to each of `groups`' masters are on `replicas` replicas."""
        client = self._client
        if not isinstance(client, RedisCluster):
            return True  # one node: no replicas of its own to ask (Sentinel is not managed)
        by_node: dict[str, tuple[str, int, str]] = {}
        for g in groups:
            key = self._keyspace.prefixes[g] + "sync"
            node = client.get_node_from_key(key)
            if node is None:  # the slot's master unknown: a failover under way
                return False
            by_node.setdefault(node.name, (node.host, int(node.port), key))
        answers = await asyncio.gather(*(self._wait(name, *where, replicas)
                                         for name, where in by_node.items()))  # fmt: skip
        return all(answers)

    async def _wait(self, name: str, host: str, port: int, key: str, replicas: int) -> bool:
        node = self._nodes.get(name)
        if node is None:
            node = self._nodes[name] = Redis(host=host, port=port, socket_connect_timeout=2.0,
                                             socket_timeout=WAIT_MS / 1000 + 5.0)  # fmt: skip
        try:
            if not await self._has_replicas(name, node):
                return True
            for _ in range(3):
                pipe = node.pipeline(transaction=False)  # one connection: INCR, then WAIT
                pipe.incr(key)
                pipe.execute_command("WAIT", replicas, WAIT_MS)
                _, acked = await pipe.execute()
                self.waits += 1
                if int(acked) >= replicas:
                    return True
                self._has.pop(name, None)  # ask again: a replica may be gone
                if not await self._has_replicas(name, node):
                    return True
            log.warning("Redis at %s: no replica confirmed the crawl's writes within %g s; "
                        "going on", name, 3 * WAIT_MS / 1000)  # fmt: skip
            return True
        except (RedisError, OSError) as exc:
            log.warning("Redis at %s: %s: its last writes may be lost in a failover; the "
                        "pages completed since are given back, to be fetched again", name,
                        exc)  # fmt: skip
            self._nodes.pop(name, None)
            await node.aclose()
            return False

    async def _has_replicas(self, name: str, node: Redis) -> bool:
        """Whether the master `name` has a replica (``ROLE``), as known within `RECHECK`
        seconds; said on stderr when it has none (its writes are then not waited for)."""
        known = self._has.get(name)
        now = time.monotonic()
        if known is None or (known[0] == 0 and now - known[1] >= RECHECK):
            count = _replicas_of(await node.role())
            if count == 0 and (known is None or known[0] != 0):
                log.warning("Redis at %s has no replica: its writes are not waited for (a "
                            "failover of it would lose them)", name)  # fmt: skip
            self._has[name] = known = (count, now)
        return known[0] > 0

    async def close(self) -> None:
        nodes, self._nodes = list(self._nodes.values()), {}
        for node in nodes:
            with contextlib.suppress(RedisError, OSError):
                await node.aclose()
