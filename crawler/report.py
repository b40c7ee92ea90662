"""A crawl's figures in one JSON-ready dict (``Crawler.stats_dict()``, ``--stats``).

The crawl's own counters (`crawler.results.CrawlStats`), then the Sieve (the shared one in a
crawl through Redis), the canonicalizer's memo, the content index, the SSRF guard, the outages
(`crawler.outage`) and the frontier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crawler.engine import Crawler
    from crawler.sieve import SeenFilter

__all__ = ["crawl_stats"]


def filter_figures(f: SeenFilter) -> dict[str, Any]:
    """The URL-seen filter's figures, whatever its kind: the keys it took in (`count`), its
    estimate of them (the scalable Sieve's, from its set bits; the count for the others), its
    stages (1 for a kind that never grows), its memory and false-positive bound."""
    stages = getattr(f, "stages", 1)
    approx = getattr(f, "approx_items", len(f))
    figures = {
        "kind": f.kind,
        "count": len(f),
        "approx_items": round(approx),
        "stages": stages if isinstance(stages, int) else len(stages),
        "size_in_bytes": f.size_in_bytes,
        "false_positive_bound": f.false_positive_bound,
    }
    estimate = getattr(f, "false_positive_estimate", None)  # the scalable Sieve's, from its bits
    if estimate is not None:
        figures["false_positive_estimate"] = estimate
    return figures


def crawl_stats(crawler: Crawler) -> dict[str, Any]:
    out = crawler.stats.as_dict()
    if crawler.cluster is not None:  # the shared Sieve (this process's local one is unused)
        out["sieve"] = crawler.cluster.sieve_stats()
    else:
        dedup = crawler.dedup
        out["sieve"] = {
            **filter_figures(crawler.sieve),
            "confirm": "exact" if dedup.exact is not None else "none",
            "rescued_false_positives": dedup.rescued,
            "measured_false_positive_rate": dedup.measured_false_positive_rate,
        }
    out["memo_hit_rate"] = round(crawler.urls.memo_hit_rate, 4)
    scorer = crawler.focus.scorer if crawler.focus is not None else None
    if scorer is not None:  # what the harvest rate counts as relevant
        out["harvest_threshold"] = scorer.threshold
    content = crawler.content
    if content is not None:
        from crawler.content import ContentIndex  # numpy: only with dedup on

        if isinstance(content, ContentIndex):
            out["content_index"] = {"pages": len(content), "bytes": content.nbytes}
        else:  # shared through Redis: `crawl --status` counts its pages
            out["content_index"] = {"shared": True, "checked": content.checked}
    guard = crawler.fetcher.guard
    out["ssrf_blocked"] = guard.blocked if guard is not None else 0
    if crawler.fetcher.outage is not None:  # the proxy or the network down (crawler.outage)
        out["outages"] = crawler.fetcher.outage.stats()
    if crawler.frontier is not None:
        fs = crawler.frontier.stats
        out["frontier"] = {
            name: getattr(fs, name) for name in getattr(fs, "__dataclass_fields__", {})
        }
    return out
