"""A focused crawl of the hostile site (tests/hostile.py): reading anchors, contexts and page
text, scoring and the fetch budget hold up against pages built to hurt (generous time bounds
only guard against hanging)."""

from __future__ import annotations

import asyncio

import pytest

from crawler.engine.crawler import Crawler
from crawler.focus.scoring import Link
from tests.support.hostile import (
    ROBOTS_HOSTS,
    HostileServer,
    MiB,
    hostile_config,
    peak_rss_growth,
    server,
)

__all__ = ["server"]  # the fixture


@pytest.mark.slow
async def test_focused_crawl_of_the_whole_hostile_site(server: HostileServer) -> None:
    seeds = [s for s in server.seeds if ROBOTS_HOSTS["gzip-tail"] not in s]
    seeds += [server.url("/tag-flood"), server.url("/stray-end-tags")]
    config = hostile_config(
        server,
        crawl={"concurrency": 16, "max_depth": 3, "max_pages": 300},
        politeness={"per_host_concurrency": 8},
        focus={"keywords": ("calendar", "link")},
    )
    scored: list[Link] = []

    async def score(link: Link) -> float:
        scored.append(link)
        return 1.0 if "calendar" in link.url else 0.5

    with peak_rss_growth() as growth:
        async with asyncio.timeout(60), Crawler(config, score=score) as crawler:
            results = [r async for r in crawler.crawl(seeds)]
    pages = [r for r in results if r.error is None or not r.error.startswith("robots")]
    assert len(pages) <= 300  # the fetch budget
    assert crawler.stats.admitted > len(pages)  # admitted freely, fetched best first
    assert any(r.relevance is not None for r in results)
    assert all(len(link.anchor) <= 256 and len(link.context) <= 200 for link in scored)
    assert server.private_connections == 0
    assert growth[0] < 192 * MiB, f"peak RSS grew by {growth[0] / MiB:.0f} MiB"
