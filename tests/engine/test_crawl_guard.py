"""The SSRF guard in a crawl: the seeds' loopback host is crawled, a redirect and a link to a
second loopback address (127.0.0.2, not a seed's) and to the cloud metadata address are refused
with `blocked` results, and nothing connects to them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from tests.support.server import serve

METADATA = "http://169.254.169.254/latest/meta-data/"


@pytest.fixture
async def forbidden() -> AsyncIterator[tuple[int, list[int]]]:
    """A TCP listener on 127.0.0.2 that counts connections."""
    seen: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(1)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.2", 0)
    async with server:
        yield server.sockets[0].getsockname()[1], seen


async def test_crawl_refuses_private_targets(forbidden: tuple[int, list[int]]) -> None:
    port2, connections = forbidden
    evil = f"http://evil.test:{port2}/admin"

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/go":
            return web.Response(status=302, headers={"Location": f"http://127.0.0.2:{port2}/x"})
        links = "".join(f'<a href="{h}">x</a>' for h in ("/go", evil, METADATA))
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    async with serve(handler) as port:
        config = Config().override(
            "fetch", resolve={"seed.test": "127.0.0.1", "evil.test": "127.0.0.2"}, retries=0
        )
        config = config.override("politeness", delay=0.0, ip_delay=0.0)
        config = config.override(
            "scope", allowed_domains=("seed.test", "evil.test", "127.0.0.2", "169.254.169.254")
        )
        async with Crawler(config) as crawler:
            results = {r.url: r async for r in crawler.crawl([f"http://seed.test:{port}/"])}
    assert results[f"http://seed.test:{port}/"].status == 200
    assert results[f"http://seed.test:{port}/go"].status == 302
    for url, needle in [
        (f"http://127.0.0.2:{port2}/x", "blocked: 127.0.0.2 is loopback"),
        (evil, "blocked: evil.test: 127.0.0.2 is loopback"),
        (METADATA, "blocked: 169.254.169.254 is link-local"),
    ]:
        error = results[url].error
        assert error is not None and error.startswith(needle), (url, error)
    assert connections == []
