"""``--metrics HOST:PORT``: the crawl's metrics served at ``/metrics``, on the crawl's own event
loop (aiohttp's server: no thread, and a scrape reads the figures between two steps of the
crawl, never in the middle of one).

`MetricsServer.start` binds before the crawl starts: an address in use, or one that cannot be
bound, is a `ConfigError` naming the option (the command exits 2, nothing crawled).
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from crawler.config.checks import listen_address
from crawler.errors import ConfigError
from crawler.observe.metrics import CrawlMetrics

__all__ = ["MetricsServer"]


class MetricsServer:
    """An HTTP server answering ``GET /metrics`` with `metrics`' exposition."""

    def __init__(self, metrics: CrawlMetrics, runner: web.AppRunner, address: str) -> None:
        self.metrics = metrics
        self._runner = runner
        self.address = address  # host:port as bound (the port chosen, for port 0)
        self.scrapes = 0

    @classmethod
    async def start(
        cls, metrics: CrawlMetrics, listen: str, option: str = "--metrics"
    ) -> MetricsServer:
        """Serve `metrics` on `listen` (``HOST:PORT``, loopback without a host)."""
        try:
            host, port = listen_address(listen)
        except ValueError as exc:
            raise ConfigError(f"{option} {listen}: {exc}") from None
        app = web.Application()
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        server = cls(metrics, runner, f"{host}:{port}")
        app.router.add_get("/metrics", server._serve)
        await runner.setup()
        site = web.TCPSite(runner, host, port)  # (a port a server listens on is refused)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise ConfigError(f"{option} {listen}: cannot listen there: "
                              f"{exc.strerror or exc}") from None  # fmt: skip
        sockets = [s for s in runner.addresses if isinstance(s, tuple)]
        if sockets:
            bound_host, bound_port = sockets[0][:2]
            shown = f"[{bound_host}]" if ":" in bound_host else bound_host
            server.address = f"{shown}:{bound_port}"
        return server

    async def _serve(self, request: web.Request) -> web.Response:
        self.scrapes += 1
        body = self.metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def close(self) -> None:
        await self._runner.cleanup()
