"""The per-host page cap and the adaptive delay of a shared crawl hold as in memory: seeds count
toward the cap without being refused, a page's own links never overshoot it, the cap is the
first refusal; a robots.txt refusal gives back the delay it took; processes must agree on the
adaptive delay, and a crawl stored by the previous format is refused. Real redis-server."""

from __future__ import annotations

import json

import pytest
from aiohttp import web
from redis.asyncio import Redis

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.errors import SharedStateError
from crawler.focus.scoring import Link
from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.frontier.robots import policy_from_response
from crawler.frontier.settings import Politeness
from crawler.output.results import CrawlResult
from crawler.sieve.redis import RedisSieve
from tests.support.redis_frontier import Clock
from tests.support.server import serve

H = "http://h.test"


async def _handler(request: web.Request) -> web.Response:
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(12))
    return web.Response(text=f"<title>{request.path}</title>{links}", content_type="text/html")


def _config(redis_url: str | None, **politeness: object) -> Config:
    config = Config().override(
        "politeness", delay=0.0, ip_delay=0.0, respect_robots=False, **politeness
    )
    config = config.override("crawl", concurrency=2).override("scope", max_pages_per_host=5)
    return config.override("cluster", redis=redis_url, crawl_id="r") if redis_url else config


async def _crawl(config: Config, seeds: list[str]) -> tuple[Crawler, list[CrawlResult]]:
    crawler = Crawler(config)
    async with crawler:
        return crawler, [r async for r in crawler.crawl(seeds)]


@pytest.mark.parametrize("shared", [False, True])
async def test_seeds_count_toward_the_cap_but_are_not_refused(redis_url: str, shared: bool) -> None:
    async with serve(_handler) as port:
        seeds = [f"http://127.0.0.1:{port}/s{i}" for i in range(7)]  # more seeds than the cap
        crawler, results = await _crawl(_config(redis_url if shared else None), seeds)
    assert sorted(r.url.rsplit("/", 1)[1] for r in results) == [f"s{i}" for i in range(7)]
    assert crawler.stats.scope_refused["host_limit"] > 0  # their links: the cap was spent


@pytest.mark.parametrize("shared", [False, True])
async def test_a_pages_links_do_not_overshoot_the_cap(redis_url: str, shared: bool) -> None:
    # one page, 12 links to its host, a cap of 5: the seed and 4 of them (all 12 passed the
    # scope together before any was admitted, and the in-memory crawl took all 12)
    async with serve(_handler) as port:
        crawler, results = await _crawl(_config(redis_url if shared else None),
                                        [f"http://127.0.0.1:{port}/"])  # fmt: skip
    assert len(results) == 5
    assert crawler.stats.scope_refused["host_limit"] >= 8


async def test_the_host_cap_is_the_first_refusal(redis_url: str) -> None:
    client = Redis.from_url(redis_url)
    try:
        f = RedisFrontier(client, "c:", RedisSieve(client, "c:", capacity=1000, error_rate=1e-3))
        await f.open()
        pages = [Entry(url=f"{H}/p{i}", key=f"{H}/p{i}") for i in range(2)]
        assert await f.admit(pages[:1], 1, 1) == [AdmitFlag.ADMITTED]
        # max_pages and the host's cap both reached: the scope's refusal, as in memory
        assert await f.admit(pages[1:], 1, 1) == [AdmitFlag.HOST_LIMIT]
    finally:
        await client.aclose()


async def test_a_robots_refusal_gives_back_the_delay_it_took(redis_url: str) -> None:
    client = Redis.from_url(redis_url)
    try:
        clock = Clock()
        f = RedisFrontier(
            client,
            "c:",
            RedisSieve(client, "c:", capacity=1000, error_rate=1e-3),
            politeness=Politeness(
                delay=1.0, per_host_concurrency=2, adaptive=True, respect_robots=True
            ),
            clock=clock,
        )
        await f.open()
        body = b"User-agent: *\nDisallow: /private\n"
        await f.set_robots(H, policy_from_response(200, body, "sieve"), body)
        await f.put_many([Entry(url=H + p, key=H + p) for p in ("/a", "/private/x", "/b")])
        (a,), *_ = await f.claim()  # t = 1000
        clock.now = 1001.0
        (refused,), *_ = await f.claim()  # disallowed: its slot and its delay given back
        assert await f.done(refused)
        assert await f.done(a, Outcome(status=200, latency=0.0))  # delay stays 1 s, from /a
        got, *_ = await f.claim()
        assert [e.url for e in got] == [H + "/b"]  # not held a second delay by the refusal
    finally:
        await client.aclose()


async def test_processes_must_agree_on_the_adaptive_delay(redis_url: str) -> None:
    async with serve(_handler) as port:
        seeds = [f"http://127.0.0.1:{port}/"]
        await _crawl(_config(redis_url, adaptive=True), seeds)
        with pytest.raises(SharedStateError, match=r"politeness\.adaptive"):
            await _crawl(_config(redis_url), seeds)


async def test_a_crawl_of_the_previous_format_is_refused(redis_url: str) -> None:
    # format 3 kept one queue member per URL in ``q:{host}`` and again in ``qk:{host}``: its
    # queues would be read as chunks (format 2 also kept a Sieve stage of up to 512 MB in one
    # string, format 1 lacked the per-host cap and adaptive delay)
    client = Redis.from_url(redis_url)
    try:
        await client.hset("crawl:r:meta", mapping={"format": "3", "settings": json.dumps({})})
    finally:
        await client.aclose()
    with pytest.raises(SharedStateError, match=r"format '3', expected 4"):
        await _crawl(_config(redis_url), ["http://127.0.0.1:1/"])


@pytest.mark.parametrize("shared", [False, True])
async def test_links_of_a_capped_host_are_not_scored(redis_url: str, shared: bool) -> None:
    # a focused crawl refuses a capped host's links before scoring them (the scope's test):
    # only the seed's 12 links are scored, not the same links again on each later page
    scored: list[Link] = []

    def score(link: Link) -> float:
        scored.append(link)
        return 1.0

    async with serve(_handler) as port:
        crawler = Crawler(_config(redis_url if shared else None), score=score)
        async with crawler:
            results = [r async for r in crawler.crawl([f"http://127.0.0.1:{port}/"])]
    assert len(results) == 5
    assert len(scored) == 12
    assert crawler.stats.scope_refused["host_limit"] >= 8 + 4 * 12
