"""One crawl shared by several processes through Redis (``crawl --redis URL``).

`ClusterNode` is this process's part (joining, settings check, admission, heartbeats),
`SharedWork` the shared frontier as the engine's workers see it, `read_status` what
``crawl --status`` prints. Importing this package imports redis-py: the in-memory crawl never
does.
"""

from __future__ import annotations

from crawler.cluster.node import ClusterNode, SentCache, check_cluster_config, crawl_prefix
from crawler.cluster.status import format_status, read_status, status_command
from crawler.frontier.redis.work import SharedWork

__all__ = [
    "ClusterNode",
    "SentCache",
    "SharedWork",
    "check_cluster_config",
    "crawl_prefix",
    "format_status",
    "read_status",
    "status_command",
]
