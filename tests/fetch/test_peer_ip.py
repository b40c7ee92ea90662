"""Every response carries its peer's IP address (WARC-IP-Address), even from a server that sends
``Connection: close``: the address is taken when the request is sent, not after the response,
when the connection may be gone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.settings import Transport
from crawler.output.warc import WarcOutput
from tests.support.server import serve

PAGES = 300
HOST = "close.test"


async def _handler(request: web.Request) -> web.StreamResponse:
    if request.path == "/robots.txt":
        response = web.Response(status=404, text="none")
        response.force_close()
        return response
    n = int(request.path.strip("/") or 0)
    links = "".join(f'<a href="/{m}">{m}</a>' for m in (2 * n + 1, 2 * n + 2) if m < PAGES)
    response = web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
    response.force_close()  # "Connection: close", the connection closed after the body
    return response


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async with serve(_handler) as p:
        yield p


async def test_every_response_has_the_ip_over_connection_close(port: int) -> None:
    async with Fetcher(Transport(user_agent="t", resolve={HOST: "127.0.0.1"})) as f:
        responses = await asyncio.gather(
            *(f.fetch(f"http://{HOST}:{port}/{n}") for n in range(PAGES))
        )
    assert all(r.header("Connection") == "close" for r in responses)
    assert [r.ip for r in responses] == ["127.0.0.1"] * PAGES


async def test_every_warc_response_record_has_the_ip_address(port: int, tmp_path: Path) -> None:
    config = Config().override("fetch", resolve={HOST: "127.0.0.1"})
    config = config.override("politeness", delay=0.0, ip_delay=0.0, per_host_concurrency=4)
    warc = WarcOutput(tmp_path / "crawl.warc.gz")
    async with Crawler(config, recorder=warc.write) as crawler:
        results = [r async for r in crawler.crawl([f"http://{HOST}:{port}/0"])]
    warc.close()
    assert len(results) == PAGES
    with warc.files[0].open("rb") as fh:
        responses = [r for r in ArchiveIterator(fh) if r.rec_type == "response"]
    assert len(responses) == PAGES + 1  # and robots.txt
    ips = [r.rec_headers.get_header("WARC-IP-Address") for r in responses]
    assert ips == ["127.0.0.1"] * len(responses)
