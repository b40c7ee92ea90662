"""Watching a crawl from outside: Prometheus metrics while it runs, an HTML report afterwards.

| module | holds |
| --- | --- |
| `digest` | What a crawl report shows, aggregated one result at a time: `Digest` |
| `metrics` | A crawl's Prometheus metrics: `CrawlMetrics`, a collector in a registry of the ... |
| `page` | The report as one self-contained HTML page: `render_page` |
| `report` | The crawl report (``--report FILE``, ``crawl report OUT.jsonl``): one HTML file ... |
| `server` | ``--metrics HOST:PORT``: the crawl's metrics served at ``/metrics``, on the ... |
| `svg` | The report's charts, drawn as inline SVG: horizontal bars, and columns over time |

It reads the figures of every other component (the engine's stats above all), so it sits above
the engine; the `crawl` command uses it. What other folders use is exported here, imported when
first used (prometheus-client only with `CrawlMetrics` or `MetricsServer`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.observe.digest import Digest
    from crawler.observe.metrics import CrawlMetrics
    from crawler.observe.report import LiveReport, read_stats, report_from_jsonl, write_report
    from crawler.observe.server import MetricsServer

__all__ = [
    "CrawlMetrics",
    "Digest",
    "LiveReport",
    "MetricsServer",
    "read_stats",
    "report_from_jsonl",
    "write_report",
]

__getattr__ = lazy(
    __name__,
    {
        "CrawlMetrics": "metrics",
        "Digest": "digest",
        "LiveReport": "report",
        "MetricsServer": "server",
        "read_stats": "report",
        "report_from_jsonl": "report",
        "write_report": "report",
    },
)
