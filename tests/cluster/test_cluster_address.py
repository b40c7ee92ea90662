"""Politeness by address in a shared crawl, on loopback: two crawlers (each with its own Redis
connection, owner and resolver, as two processes) share one crawl of several virtual hosts
resolved to one address (the ``[fetch] resolve`` override): the server sees ``ip_delay`` between
the requests of both, not of each."""

from __future__ import annotations

import asyncio

import pytest

from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from tests.support.address_site import address_config, logging_site
from tests.support.server import serve
from tests.support.spacing import assert_spaced

HOSTS = [f"v{i}.test" for i in range(6)]
PAGES = 3  # per host, robots.txt apart
IP_DELAY = 0.15


async def crawl_all(crawler: Crawler, seeds: list[str]) -> list[CrawlResult]:
    async with crawler:
        return [r async for r in crawler.crawl(seeds)]


@pytest.mark.slow
async def test_two_crawlers_hold_one_address_to_its_delay_at_the_server(redis_url: str) -> None:
    starts: list[float] = []

    async with serve(logging_site(starts, PAGES)) as port:
        config = address_config(HOSTS, IP_DELAY)
        config = config.override("cluster", redis=redis_url, crawl_id="addr")
        a, b = Crawler(config), Crawler(config)
        seeds = [f"http://{h}:{port}/" for h in HOSTS]
        async with asyncio.timeout(60):
            ra, rb = await asyncio.gather(crawl_all(a, seeds), crawl_all(b, seeds))
    assert len(ra) + len(rb) == len(HOSTS) * PAGES
    assert ra and rb, "both took part"
    assert len(starts) == len(HOSTS) * (PAGES + 1)  # robots.txt counts
    # arrival times at a real server, judged with no tight gap (by host only, 2 crawlers x 6
    # hosts go at once); the exact gaps: tests/frontier/test_frontier_redis_address.py
    assert_spaced(starts, IP_DELAY, "one address, two crawlers")
    assert a.stats_dict()["addresses"]["addresses"] == 1
