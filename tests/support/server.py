"""Helpers shared by several test modules (moved from conftest.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from crawler.config.load import Config
from crawler.testing.fixture import FixtureSite


@contextlib.asynccontextmanager
async def serve(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]], host: str = "127.0.0.1"
) -> AsyncIterator[int]:
    """Serve `handler` for every GET path on `host` (loopback) and a free port; yield the port."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, 0).start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


def site_config(site: FixtureSite, **crawl: object) -> Config:
    """Default config pointed at the fixture site: resolver override, no extra delay."""
    config = Config().override("fetch", resolve=site.resolve)
    config = config.override("politeness", delay=0.0, ip_delay=0.0, backoff_base=0.05)
    config = config.override("crawl", concurrency=8)
    if crawl:
        config = config.override("crawl", **crawl)
    return config
