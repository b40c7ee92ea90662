from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
from aiohttp import web
from hypothesis import settings

from crawler.config.load import Config
from crawler.testing.fixture import FixtureSite
from tests.redis_server import RedisServer

# Property tests draw the same examples on every run (a fixed seed): a failure found once is
# found again, and CI is not a lottery over examples. `HYPOTHESIS_PROFILE=explore` draws anew.
settings.register_profile("fixed", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))


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


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A throwaway Debian redis-server on a free loopback port, one per test module."""
    with RedisServer() as server:
        yield server


@pytest.fixture
async def redis_url(redis_server: RedisServer) -> str:
    """The module's redis-server, emptied for this test."""
    from redis.asyncio import Redis  # redis-py: only the tests of a shared crawl need it

    client = Redis.from_url(redis_server.url)
    await client.flushall()
    await client.aclose()
    return redis_server.url
