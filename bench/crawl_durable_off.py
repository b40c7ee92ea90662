"""The `crawl` command whose completions do not wait for replicas: a bench-only knob.

    python -m bench.crawl_durable_off SEEDS --redis URL ...   (the `crawl` command's arguments)

On a Redis Cluster whose masters have replicas, a process's completions first wait for a
replica of each master it admitted to (``ShardedFrontier.durable`` = 1, `ClusterNode.open`;
`crawler.frontier.redis.replicas`). Here `durable` is set to 0 once the process has joined the
crawl, so `python -m bench cluster` measures what that wait costs (pages/s, round trips). Not a
user-facing setting: a crawl on a cluster with replicas always waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crawler.cli.command import entry
from crawler.cluster.node import ClusterNode

_open = ClusterNode.open


async def _open_not_durable(self: ClusterNode, stats: Callable[[], dict[str, Any]]) -> None:
    await _open(self, stats)
    self.frontier.durable = 0


if __name__ == "__main__":
    ClusterNode.open = _open_not_durable  # type: ignore[method-assign]
    entry()
