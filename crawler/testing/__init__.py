"""For tests, benchmarks and the demo: the fixture site on loopback, a throwaway redis-server or
Redis Cluster, the simulated clock.

| module | holds |
| --- | --- |
| `fixture` | A deterministic fixture site on loopback, for the tests and `crawl --demo` |
| `scripted` | The fixture's script-driven host, ``app.test``: links made only by scripts |
| `redis_server` | A throwaway Debian redis-server on a free loopback port, in a temp dir |
| `redis_cluster` | A throwaway Redis Cluster on loopback: Debian redis-servers, masters, replicas |
| `simtime` | Simulated time for asyncio: an event loop whose clock jumps straight to the ... |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.testing.fixture import FixtureSite

__all__ = [
    "FixtureSite",
]

__getattr__ = lazy(
    __name__,
    {
        "FixtureSite": "fixture",
    },
)
