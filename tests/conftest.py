from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from crawler.config import Config
from crawler.fixture import FixtureSite


@pytest.fixture
async def site() -> AsyncIterator[FixtureSite]:
    """The fixture site on a free loopback port, with a short Crawl-delay."""
    async with FixtureSite(crawl_delay=0.02, slow=0.1) as s:
        yield s


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
    config = config.override("politeness", delay=0.0, backoff_base=0.05)
    config = config.override("crawl", concurrency=8)
    if crawl:
        config = config.override("crawl", **crawl)
    return config
