"""A crawl's figures in one JSON-ready dict (``Crawler.stats_dict()``, ``--stats``): each
component reports its own (`figures()`, `stats`), combined here.

The crawl's own counters (`crawler.output.results.CrawlStats`), then the seen test (the shared
Sieve in a crawl through Redis), the canonicalizer's memo, the content index, the SSRF guard, the
outages (`crawler.fetch.outage`) and the frontier (its politeness by address apart, under
``addresses``: ``ip_delay`` and ``ip_concurrency`` in force, addresses known, hosts waiting on
their address, names being resolved).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Figures", "crawl_stats"]


class Figures(Protocol):
    def figures(self) -> dict[str, Any]: ...


def crawl_stats(
    counters: dict[str, Any],
    *,
    seen: dict[str, Any],
    memo_hit_rate: float,
    threshold: float | None,
    content: Figures | None,
    ssrf_blocked: int,
    outages: dict[str, Any] | None,
    frontier: object | None,
) -> dict[str, Any]:
    """`counters` (the crawl's own), then each component's figures; `frontier`: its stats
    dataclass; `threshold`: what the harvest rate counts as relevant (a topic scorer's)."""
    out = dict(counters)
    out["sieve"] = seen
    out["memo_hit_rate"] = round(memo_hit_rate, 4)
    if threshold is not None:
        out["harvest_threshold"] = threshold
    if content is not None:
        out["content_index"] = content.figures()
    out["ssrf_blocked"] = ssrf_blocked
    if outages is not None:  # the proxy or the network down (crawler.fetch.outage)
        out["outages"] = outages
    if frontier is not None:
        figures = {
            name: getattr(frontier, name) for name in getattr(frontier, "__dataclass_fields__", {})
        }
        out["addresses"] = {name: figures.pop(name) for name in _BY_ADDRESS if name in figures}
        out["frontier"] = figures
    return out


# the frontier's figures of politeness by address (its settings included), apart
_BY_ADDRESS = ("ip_delay", "ip_concurrency", "addresses", "address_waiting", "resolving")
