"""A crawl shared through Redis (crawler.cluster), several crawlers in one test process.

Each Crawler has its own Redis connection and owner id, as separate processes would; the
multi-process tests (real `crawl` processes, kill -9) are in test_cluster_procs.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web
from redis.asyncio import Redis

from crawler.cli.main import main
from crawler.cli.progress import progress_line
from crawler.cluster import ClusterNode, SentCache, format_status, read_status
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError, SharedStateError
from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.settings import QueueLimits
from crawler.output.results import CrawlResult
from crawler.sieve.redis import RedisSieve
from crawler.state.crawlstate import CrawlState
from crawler.testing.fixture import FixtureSite
from crawler.testing.redis_server import RedisServer
from tests.support.server import serve, site_config
from tests.support.spacing import assert_spaced


def shared(config: Config, url: str, crawl_id: str = "t", **cluster: object) -> Config:
    return config.override("cluster", redis=url, crawl_id=crawl_id, **cluster)


async def crawl_all(crawler: Crawler, seeds: list[str]) -> list[CrawlResult]:
    async with crawler:
        return [r async for r in crawler.crawl(seeds)]


@pytest.mark.slow
async def test_one_shared_crawler_finds_the_fixture_ground_truth(
    site: FixtureSite, redis_url: str
) -> None:
    crawler = Crawler(shared(site_config(site), redis_url))
    results = await crawl_all(crawler, site.seeds)
    keys = [r.key for r in results]
    assert len(keys) == len(set(keys))
    assert set(keys) == site.expected() | site.refused()
    stats = crawler.stats_dict()
    assert stats["sieve"]["shared"] and stats["sieve"]["count"] == stats["admitted"]
    assert crawler.complete
    line = progress_line(crawler)  # the shared Sieve's figures, not this process's unused one
    assert f"seen ~{stats['sieve']['approx_items']:,} URLs (shared sieve, 1 stage)" in line


@pytest.mark.slow
async def test_two_crawlers_share_one_crawl_without_repeats(
    site: FixtureSite, redis_url: str
) -> None:
    config = shared(site_config(site, concurrency=4), redis_url)
    a, b = Crawler(config), Crawler(config)
    ra, rb = await asyncio.gather(crawl_all(a, site.seeds), crawl_all(b, site.seeds))
    keys = [r.key for r in ra + rb]
    assert len(keys) == len(set(keys)), "a URL was fetched by both"
    assert set(keys) == site.expected() | site.refused()
    assert ra and rb, "both took part"
    assert a.stats.admitted + b.stats.admitted == len(site.expected() | site.refused())


@pytest.mark.slow
async def test_politeness_holds_across_crawlers(site: FixtureSite, redis_url: str) -> None:
    """Real time on purpose: three crawlers sharing one Redis, the requests reaching a real
    server spaced. The exact gaps between instances are asserted on an injected clock by
    tests/frontier/test_frontier_redis.py::test_delay_held_across_two_instances_taking_turns."""
    delay = 0.2
    config = shared(site_config(site, concurrency=4), redis_url)
    config = config.override("politeness", delay=delay, respect_robots=False)
    crawlers = [Crawler(config) for _ in range(3)]
    shares = await asyncio.gather(*(crawl_all(c, site.seeds) for c in crawlers))
    total = sum(len(r) for r in shares)
    # they take turns on the hosts: none holds a host while the others idle (without turns
    # one took 33 of 43 pages, the others 5 each); which of the waiting ones goes next is a race
    counts = [len(r) for r in shares]
    assert max(counts) <= 0.6 * total and min(counts) >= 1, counts
    starts: dict[str, list[float]] = {}
    for request in site.requests:
        starts.setdefault(request.host, []).append(request.time)
    assert len(starts) >= 2
    for host, times in starts.items():
        # kept between claims; the server sees it give or take the loop's time from a claim to
        # its request (three crawlers and the site share this test's loop): no tight gap here
        # (tests/support/spacing.py); without shared politeness the gaps would be ~0
        assert_spaced(times, delay, host)


async def test_max_pages_caps_the_shared_crawl(site: FixtureSite, redis_url: str) -> None:
    config = shared(site_config(site, max_pages=10, concurrency=2), redis_url)
    a, b = Crawler(config), Crawler(config)
    ra, rb = await asyncio.gather(crawl_all(a, site.seeds), crawl_all(b, site.seeds))
    assert len({r.key for r in ra + rb}) == 10
    assert a.stats.over_limit + b.stats.over_limit > 0


@pytest.mark.slow
async def test_a_crawler_with_other_scope_settings_is_refused_by_name(
    site: FixtureSite, redis_url: str
) -> None:
    await crawl_all(Crawler(shared(site_config(site), redis_url)), site.seeds)
    other = site_config(site, max_depth=2).override("scope", max_query_params=3)
    with pytest.raises(SharedStateError, match=r"crawl\.max_depth, scope\.max_query_params"):
        await crawl_all(Crawler(shared(other, redis_url)), site.seeds)
    assert len((await read_status(redis_url, "t"))["processes"]) == 1  # the refused one is not
    # another crawl id is another crawl: accepted
    results = await crawl_all(Crawler(shared(other, redis_url, crawl_id="t2")), site.seeds)
    assert results


@pytest.mark.slow
async def test_status_reports_the_shared_crawl(site: FixtureSite, redis_url: str) -> None:
    crawler = Crawler(shared(site_config(site), redis_url, crawl_id="st"))
    results = await crawl_all(crawler, site.seeds)
    status = await read_status(redis_url, "st")
    assert status["finished"] and status["queued"] == 0 and status["leased"] == 0
    assert status["pages"] == crawler.stats.pages == len(results)
    assert status["hosts"] == 2 and status["seen_urls"] == crawler.stats.admitted
    # the process ended cleanly: it says so in its last heartbeat, and is not shown as active
    assert len(status["processes"]) == 1 and status["active_processes"] == 0
    assert status["processes"][0]["left"] and not status["processes"][0]["active"]
    lines: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            lines.append(text)

    format_status(status, Out())  # type: ignore[arg-type]
    assert "finished" in "".join(lines)
    with pytest.raises(SharedStateError, match="no crawl 'nope'"):
        await read_status(redis_url, "nope")


async def test_redis_down_is_a_clear_error_not_a_local_fallback(site: FixtureSite) -> None:
    with RedisServer() as server:
        url = server.url
    config = shared(site_config(site), url)
    with pytest.raises(SharedStateError, match=r"cannot use Redis at redis://127\.0\.0\.1"):
        await crawl_all(Crawler(config), site.seeds)


@pytest.mark.slow
async def test_redis_lost_mid_crawl_ends_the_crawl_and_a_rerun_resumes(site: FixtureSite) -> None:
    with RedisServer(appendonly=True) as server:
        config = shared(site_config(site, concurrency=2), server.url, lease_ttl=1.0)
        config = config.override("politeness", delay=0.05)
        seen: list[CrawlResult] = []

        async def until_redis_stops() -> None:
            async with Crawler(config) as crawler:
                async for result in crawler.crawl(site.seeds):
                    seen.append(result)
                    if len(seen) == 5:
                        server.stop()

        with pytest.raises(SharedStateError, match="Redis"):
            await until_redis_stops()
        server.start()
        again = await crawl_all(Crawler(config), site.seeds)
        keys = {r.key for r in seen + again}
        assert keys == site.expected() | site.refused()


def test_what_a_shared_crawl_does_not_do_is_refused_by_name(tmp_path: Path) -> None:
    config = shared(Config(), "redis://127.0.0.1:1/0").override("politeness", adaptive=True)
    config = config.override("dedup", enabled=True)  # both shared now: not refused
    state = CrawlState.open(tmp_path / "state", settings(config))
    try:
        with pytest.raises(ConfigError, match=r"--redis.*--state") as refused:
            Crawler(config, state=state, score=lambda link: 1.0)
    finally:
        state.abandon()
    message = str(refused.value)
    assert "adaptive" not in message and "dedup" not in message and "score" not in message


def test_the_sent_cache_is_bounded_and_remembers_recent_keys() -> None:
    cache = SentCache(capacity=100)
    for i in range(1000):
        cache.add(f"http://s.test/{i}")
    assert len(cache) <= 100
    assert "http://s.test/999" in cache and "http://s.test/950" in cache
    assert "http://s.test/0" not in cache
    assert cache.hits == 2


def test_cluster_config_is_validated() -> None:
    with pytest.raises(ConfigError, match="crawl_id"):
        Config().override("cluster", crawl_id="a b")
    with pytest.raises(ConfigError, match="redis"):
        Config().override("cluster", redis="http://localhost:6379")
    assert (
        json.dumps(repr(Config().override("cluster", redis="redis://:pw@h:1/0"))).count("pw") == 0
    )


@pytest.mark.slow
async def test_crawl_status_command(
    site: FixtureSite, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    await crawl_all(Crawler(shared(site_config(site), redis_url, crawl_id="cli")), site.seeds)
    args = ["--redis", redis_url, "--crawl-id", "cli", "--status"]
    assert await asyncio.to_thread(main, args) == 0
    out = capsys.readouterr().out
    assert "crawl 'cli'" in out and "finished" in out and "0 active of 1 seen" in out
    assert "    left " in out  # the process that ran it ended cleanly
    assert await asyncio.to_thread(main, ["--redis", redis_url, "--crawl-id", "x", "--status"]) == 2
    assert "no crawl 'x'" in capsys.readouterr().err
    assert main(["--status"]) == 2
    assert "--status reads a shared crawl" in capsys.readouterr().err


@pytest.mark.parametrize("exact", [False, True], ids=["bloom-only", "exact-tier"])
async def test_the_exact_tier_in_redis_rescues_every_false_positive(
    redis_url: str, exact: bool
) -> None:
    client = Redis.from_url(redis_url)
    sieve = RedisSieve(client, "x:", capacity=10, error_rate=0.5)  # saturates at once
    frontier = RedisFrontier(
        client,
        "x:",
        sieve,
        limits=QueueLimits(max_queued_per_host=10**6),
        sharing=Sharing(exact=exact),
    )
    await frontier.open()
    urls = [f"http://s.test/{i}" for i in range(2000)]
    flags: list[bool] = []
    for i in range(0, len(urls), 100):
        flags += await frontier.put_many([Entry(url=u, key=u, depth=1) for u in urls[i : i + 100]])
    rescued = int(await client.hget("x:stats", "rescued") or 0)
    again = await frontier.put_many([Entry(url=u, key=u, depth=1) for u in urls[:100]])
    await client.aclose()
    assert not any(again)  # a key admitted is seen, exact tier or not
    if exact:
        assert all(flags) and rescued > 0  # the filter alone would have dropped these
    else:
        assert not all(flags) and rescued == 0


async def test_a_redis_restart_during_the_crawl_ends_it(redis_url: str) -> None:
    # A restarted Redis may have lost its last writes, which this process's cache of sent keys
    # would not know: its run id is checked at every heartbeat.
    node = ClusterNode(shared(Config(), redis_url), {})
    await node.open(dict)
    assert node.work.error is None
    node._run_id = "another server"  # as if it had restarted since the last heartbeat
    await node._heartbeat(dict)
    assert isinstance(node.work.error, SharedStateError)
    assert "restarted during the crawl" in str(node.work.error)
    with pytest.raises(SharedStateError, match="restarted"):
        await node.work.get()
    await node.close(dict)


def test_without_redis_py_a_shared_crawl_is_a_clear_error() -> None:
    code = (
        "import sys\nsys.modules['redis'] = None  # as if redis-py were not installed\n"
        "from crawler.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    for extra in (["--status"], ["http://127.0.0.1:1/"]):
        args = [sys.executable, "-c", code, "--redis", "redis://127.0.0.1:1/0", "-q", *extra]
        done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2, done.stderr
        assert "pip install 'sieve-crawler[redis]'" in done.stderr, done.stderr


async def test_max_pages_per_host_counts_over_every_process(redis_url: str) -> None:
    # two hosts of 12 pages each, linked from both homes; a cap of 5 URLs a host must hold for
    # the crawl, not for each process (each would admit 5 of its own)
    async def handler(request: web.Request) -> web.Response:
        links = "".join(f'<a href="http://{h}:{request.url.port}/p{i}">{i}</a>'
                        for h in ("a.test", "b.test") for i in range(12))  # fmt: skip
        return web.Response(text=f"<title>{request.path}</title>{links}", content_type="text/html")

    async with serve(handler) as port:
        config = Config().override("fetch", resolve={"a.test": "127.0.0.1", "b.test": "127.0.0.1"})
        config = config.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
        config = config.override("crawl", concurrency=2)
        config = config.override(
            "scope", max_pages_per_host=5, allowed_domains=("a.test", "b.test")
        )
        config = shared(config, redis_url)
        seeds = [f"http://a.test:{port}/", f"http://b.test:{port}/"]
        a, b = Crawler(config), Crawler(config)
        ra, rb = await asyncio.gather(crawl_all(a, seeds), crawl_all(b, seeds))
    hosts = [r.url.split("/")[2].split(":")[0] for r in ra + rb]
    assert sorted(hosts) == ["a.test"] * 5 + ["b.test"] * 5
    assert ra and rb, "both took part"
    refused = a.stats.scope_refused["host_limit"] + b.stats.scope_refused["host_limit"]
    assert refused >= 2 * (12 + 1 - 5)  # each host's other pages, refused at least once


async def test_an_adaptive_shared_crawl_slows_down_for_a_slow_host(redis_url: str) -> None:
    # the engine's latencies reach the shared delay: a host answering in ~50 ms ends with a
    # delay of that order in Redis, from 0 (the configured delay)
    async def handler(request: web.Request) -> web.Response:
        await asyncio.sleep(0.05)
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(8))
        return web.Response(text=f"<title>{request.path}</title>{links}", content_type="text/html")

    async with serve(handler) as port:
        config = Config().override(
            "politeness", delay=0.0, ip_delay=0.0, respect_robots=False, adaptive=True
        )
        config = shared(config.override("crawl", concurrency=2), redis_url)
        results = await crawl_all(Crawler(config), [f"http://127.0.0.1:{port}/"])
    assert len(results) == 9
    client = Redis.from_url(redis_url)
    try:
        delay = float(await client.hget(f"crawl:t:h:http://127.0.0.1:{port}", "delay") or 0)
    finally:
        await client.aclose()
    assert 0.01 < delay < 0.2
