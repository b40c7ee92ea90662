"""The whole hostile suite (tests/hostile.py) as one host in one crawl, with the default settings
but ``delay = 0``: one slow or broken URL must not hold the host's other pages for minutes."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.frontier.hosts import SUSPECT_STREAK
from crawler.output.results import CrawlResult
from tests.support.hostile import HOST, RAW_CASES, WEB_CASES, HostileServer

# Every case's record: its error kind, or its status when it is an HTTP answer.
EXPECTED = {
    "/gzip-bomb": "too_large",
    "/endless": "too_large",
    "/reset": "reset",
    "/reset-mid-body": "truncated",
    "/bad-length": "protocol",
    "/two-lengths": "protocol",
    "/short-body": "truncated",
    "/huge-header": "protocol",
    "/many-headers": "protocol",
    "/endless-headers": "protocol",
    "/slowloris": "too_slow",  # headers at 1 byte/s: cut after min_rate_window (20 s)
    "/slow-body": "too_slow",  # body at 1 byte/s: cut after min_rate_window (20 s)
    "/status/404": 404,
    "/status/500": 500,
    "/redirect-chain/0": 302,
    "/loop/a": 302,
    "/to-private-ip": 302,
    "/to-private-name": 302,
    "/many-links": 200,
    "/deep-nesting": 200,
    "/bad-hrefs": 200,
    "/calendar/2026/01": 200,
    "/trap/": 200,
    "/grow/": 200,
    "/long/": 200,
    "/params": 200,
}
RETRIED_KINDS = {"reset", "truncated"}  # crawler.errors: cheap, likely transient
RETRIED_STATUSES = {500}
# aiohttp itself sends a GET again at once when the connection closed before any response (RFC
# 9112 9.3.1, for a kept-alive connection the server closed meanwhile): a reset costs two requests.
SENT_PER_ATTEMPT = {"reset": 2}


def _record(result: CrawlResult) -> str | int | None:
    if result.error is not None and result.status is None:
        return result.error.split(":", 1)[0]
    return result.status


@pytest.mark.slow
async def test_whole_suite_as_one_host_in_one_crawl() -> None:
    assert set(EXPECTED) == set(WEB_CASES) | set(RAW_CASES)
    async with HostileServer() as server:
        config = Config().override("fetch", resolve=server.resolve)
        config = config.override("politeness", delay=0.0, ip_delay=0.0)
        started = time.monotonic()
        async with asyncio.timeout(180), Crawler(config) as crawler:
            results = [r async for r in crawler.crawl([server.url("/")])]
        elapsed = time.monotonic() - started
        requests = Counter(path for host, path in server.requests if host == HOST)
    print(f"one-host hostile crawl: {len(results)} results in {elapsed:.1f} s")
    by_url = {r.url: r for r in results}
    assert len(by_url) == len(results), "a URL has two results"
    for path, expected in EXPECTED.items():
        result = by_url[server.url(path)]
        assert _record(result) == expected, (path, result.error)
    # nothing fetched twice unless retried; a failure of one URL never backed the host off
    retries = config.fetch.retries
    assert requests.pop("/robots.txt") == 1
    extra = 0
    for path, count in requests.items():
        result = by_url[server.url(path)]
        record = _record(result)
        attempts = 1 + retries if record in RETRIED_KINDS or record in RETRIED_STATUSES else 1
        per_attempt = SENT_PER_ATTEMPT.get(str(record), 1)
        assert count == attempts * per_attempt, (path, count, result.error)
        extra += attempts - 1
    assert crawler.stats.retries == extra == 4 * retries  # /reset, 2 truncated, the 500
    assert crawler.stats_dict()["frontier"]["backoffs"] == 0
    assert len(requests) == len(results)  # every URL fetched has its record


async def test_a_host_that_resets_every_url_is_backed_off() -> None:
    # One URL that resets is that URL's problem (above: no backoff); distinct URLs resetting in a
    # row (hosts.SUSPECT_STREAK) are the host's.
    async with HostileServer() as server:
        config = Config().override("fetch", resolve=server.resolve, retries=0)
        config = config.override("politeness", delay=0.0, ip_delay=0.0, backoff_base=0.05)
        seeds = [server.url(f"/reset?n={n}") for n in range(2 * SUSPECT_STREAK)]
        async with asyncio.timeout(30), Crawler(config) as crawler:
            results = [r async for r in crawler.crawl(seeds)]
    assert sorted(r.url for r in results) == sorted(seeds)
    assert {_record(r) for r in results} == {"reset"}
    assert crawler.stats_dict()["frontier"]["backoffs"] == 2  # after the 3rd and the 6th
