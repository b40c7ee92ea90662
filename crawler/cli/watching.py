"""A run's watchers from outside (`crawler.observe`): ``--metrics`` served while the crawl runs,
``--report`` written when it ends.

`Watching.open` binds the metrics address first, before the state, the outputs or the crawl
are touched (an address in use is a one-line error, exit 2); `attach` hooks both to the crawler;
`finish` writes the report (the crawl finished, was interrupted, or failed) and `close` stops
the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError

if TYPE_CHECKING:  # prometheus-client and the report's modules: only when asked for
    from crawler.observe import LiveReport, MetricsServer

__all__ = ["Watching"]


class Watching:
    """The metrics server and the live report of one run, either or both absent."""

    def __init__(self, server: MetricsServer | None, report: LiveReport | None) -> None:
        self.server = server
        self.report = report

    @classmethod
    async def open(cls, config: Config, *, say: Callable[[str], None]) -> Watching:
        """Start serving metrics if ``[metrics] listen`` asks for it (`say` tells where)."""
        server = report = None
        if config.output.report == "-":
            raise ConfigError("--report -: the report is a file; give its name")
        if config.metrics.listen:
            from crawler.observe import CrawlMetrics, MetricsServer

            shared = config.cluster.crawl_id if config.cluster.redis else None
            server = await MetricsServer.start(CrawlMetrics(shared), config.metrics.listen)
            say(f"metrics at http://{server.address}/metrics")
        if config.output.report:
            from crawler.observe import LiveReport

            report = LiveReport(config.output.report, config.focus.threshold)
        return cls(server, report)

    def attach(self, crawler: Crawler) -> None:
        if self.server is not None:
            self.server.metrics.attach(crawler)
        if self.report is not None:
            self.report.attach(crawler)

    def finish(self, crawler: Crawler, *, interrupted: bool, say: Callable[[str], None]) -> None:
        """Write the report (an `OutputError` when it cannot be)."""
        if self.report is not None:
            size = self.report.write(crawler.stats_dict(), interrupted=interrupted)
            say(f"report written to {self.report.path} ({size:,} bytes)")

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()
