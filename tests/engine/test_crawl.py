"""End-to-end crawls of the fixture site through the library API."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from crawler.testing.fixture import FixtureSite
from crawler.urls.canonical import canonicalize
from tests.support.server import site_config
from tests.support.spacing import SLACK, assert_spaced

RETRIED = {"/broken", "/busy"}


async def crawl(site: FixtureSite, **crawl: object) -> tuple[Crawler, list[CrawlResult]]:
    async with Crawler(site_config(site, **crawl)) as crawler:
        results = [r async for r in crawler.crawl(site.seeds)]
    return crawler, results


def requested(site: FixtureSite) -> Counter[str]:
    keys: Counter[str] = Counter()
    for req in site.requests:
        key = canonicalize(site.url(req.host, req.path))
        assert key is not None
        keys[key] += 1
    return keys


@pytest.mark.slow
async def test_crawl_equals_ground_truth(site: FixtureSite) -> None:
    crawler, results = await crawl(site)
    keys = [r.key for r in results]
    assert len(keys) == len(set(keys)), "a URL has two results"
    assert set(keys) == site.expected(16) | site.refused()
    # server side: nothing fetched twice (except the retried ones), nothing forbidden fetched
    counts = requested(site)
    robots = {site.url(h, "/robots.txt") for h in ("site-a.test", "site-b.test")}
    assert set(counts) == site.expected(16) | robots
    twice = {k for k, n in counts.items() if n > 1}
    assert twice == {site.url("site-a.test", p) for p in RETRIED}
    assert not set(counts) & site.never()
    assert crawler.stats.pages == len(results)


@pytest.mark.slow
async def test_robots_respected_and_fetched_once_per_host(site: FixtureSite) -> None:
    crawler, results = await crawl(site)
    by_key = {r.key: r for r in results}
    secret = by_key[site.url("site-a.test", "/private/secret")]
    assert secret.status is None
    assert secret.error is not None and secret.error.startswith("robots:")
    robots = [r for r in site.requests if r.path == "/robots.txt"]
    assert sorted(r.host for r in robots) == ["site-a.test", "site-b.test"]
    assert all(r.user_agent.startswith("sieve-crawler/") for r in site.requests)
    assert crawler.stats.robots_refused == 1


@pytest.mark.slow
async def test_crawl_delay_respected_server_side() -> None:
    """The robots.txt Crawl-delay spaces the requests a real server sees. Real time, so no tight
    gap (tests/support/spacing.py); the exact gaps are asserted in simulated time by
    tests/frontier/test_frontier_rules.py::test_crawl_delay_raises_a_rule_delay_never_lowers_it."""
    async with FixtureSite(crawl_delay=0.1, slow=0.05) as site:
        await crawl(site)
        starts: dict[str, list[float]] = defaultdict(list)
        for req in site.requests:
            starts[req.host].append(req.time)
    assert len(starts["site-a.test"]) > 20
    # without the delay the gaps would be the ~0.05 s of a response
    assert_spaced(starts["site-a.test"], 0.1, "site-a.test")


@pytest.mark.slow
async def test_redirects(site: FixtureSite) -> None:
    _, results = await crawl(site)
    by_key = {r.key: r for r in results}
    first = by_key[site.url("site-a.test", "/redirect/1")]
    assert first.status == 301
    assert first.location == site.url("site-a.test", "/redirect/2")
    assert by_key[site.url("site-a.test", "/landing")].status == 200
    # a loop: each URL once, each a 302 result
    assert by_key[site.url("site-a.test", "/loop/a")].status == 302
    assert by_key[site.url("site-a.test", "/loop/b")].status == 302
    # to another host; the target is also linked from site-b: fetched once
    assert by_key[site.url("site-b.test", "/from-a")].status == 200


@pytest.mark.slow
async def test_errors_and_retries(site: FixtureSite) -> None:
    crawler, results = await crawl(site)
    by_key = {r.key: r for r in results}
    assert by_key[site.url("site-a.test", "/missing")].status == 404
    assert by_key[site.url("site-a.test", "/broken")].status == 500
    assert by_key[site.url("site-a.test", "/busy")].status == 200
    counts = requested(site)
    assert counts[site.url("site-a.test", "/broken")] == 1 + crawler.config.fetch.retries
    # a real server's arrival times: no tight gap (the exact hold is asserted in simulated time
    # by tests/frontier/test_frontier_rules.py::test_a_429_retry_after_holds_a_host_...)
    busy = [r.time for r in site.requests if r.path == "/busy"]
    assert busy[1] - busy[0] >= site.retry_after * SLACK, "Retry-After not honoured"
    assert crawler.stats.retries >= 3


@pytest.mark.slow
async def test_content_types(site: FixtureSite) -> None:
    _, results = await crawl(site)
    by_key = {r.key: r for r in results}
    data = by_key[site.url("site-a.test", "/data.json")]
    assert data.content_type is not None and data.content_type.startswith("application/json")
    assert data.links == 0
    lying = by_key[site.url("site-a.test", "/lying")]
    assert lying.title == "Lying" and lying.new_links == 1
    index = by_key[site.url("site-a.test", "/")]
    assert index.title == "Site A" and index.depth == 0 and index.parent is None


@pytest.mark.slow
async def test_many_spellings_fetched_once_as_first_written(site: FixtureSite) -> None:
    _, results = await crawl(site)
    pages = [r for r in results if r.key == site.url("site-a.test", "/page?a=1&b=2")]
    assert len(pages) == 1
    assert pages[0].url == site.url("site-a.test", "/page?a=1&b=2")
    assert pages[0].parent == site.url("site-a.test", "/")


@pytest.mark.slow
@pytest.mark.parametrize("depth", [1, 3])
async def test_max_depth(site: FixtureSite, depth: int) -> None:
    _, results = await crawl(site, max_depth=depth)
    assert {r.key for r in results} == site.expected(depth) | site.refused()
    assert max(r.depth for r in results) <= depth


async def test_max_pages(site: FixtureSite) -> None:
    crawler, results = await crawl(site, max_pages=6)
    assert len({r.key for r in results}) == len(results) <= 6
    assert crawler.stats.over_limit > 0


async def test_breaking_out_early_stops_cleanly(site: FixtureSite) -> None:
    async with Crawler(site_config(site)) as crawler:
        seen = []
        async for result in crawler.crawl(site.seeds):
            seen.append(result)
            if len(seen) == 3:
                break
    assert len(seen) == 3
    import asyncio

    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("crawl-worker")]
    before = len(site.requests)
    await asyncio.sleep(0.2)
    assert len(site.requests) == before, "workers kept fetching after the consumer left"


async def test_breaking_out_ends_the_crawl_with_its_async_with(
    site: FixtureSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The library example's loop (README, docs/library.md), left with `break` (no
    `aclosing`): when `async with` ends, the crawl has ended too: no worker meets the closed
    session ("internal error"), the state is closed (its lock released: the same program can
    open it again) and the stats are final."""
    from crawler.engine.components import settings
    from crawler.state.crawlstate import CrawlState

    config = site_config(site)
    async with Crawler(config, state=CrawlState.open(tmp_path, settings(config))) as crawler:
        async for _ in crawler.crawl(site.seeds):
            break
    assert not [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    again = CrawlState.open(tmp_path, settings(config))  # was: "in use by another crawl"
    assert again.previous_status == "interrupted"
    again.abandon()


async def test_breaking_out_stops_the_workers_before_async_with_ends(site: FixtureSite) -> None:
    """A program that breaks out and goes on inside its `async with` (no `aclosing`) does not
    keep fetching pages nobody reads until the block ends."""
    import asyncio

    async with Crawler(site_config(site)) as crawler:
        async for _ in crawler.crawl(site.seeds):
            break
        # the loop closes the abandoned generator at once (a generous bound, no sleep)
        await asyncio.wait_for(crawler._run.wait(), timeout=30)
        assert all(t.done() for t in crawler._workers), "workers kept fetching after break"


@pytest.mark.slow
@pytest.mark.parametrize("threaded", [False, True], ids=["inline", "parse-thread"])
async def test_internal_error_becomes_a_result(
    site: FixtureSite, monkeypatch: pytest.MonkeyPatch, threaded: bool
) -> None:
    import crawler.parse.markup as markup
    import crawler.parse.thread as parsing

    real = markup.LexborHTMLParser
    threads: set[str] = set()

    def flaky(data: bytes) -> object:
        threads.add(threading.current_thread().name)
        if b"<title>About" in data:
            raise RuntimeError("boom")
        return real(data)

    monkeypatch.setattr(markup, "LexborHTMLParser", flaky)
    monkeypatch.setattr(parsing, "THREAD_PARSE_BYTES", -1 if threaded else 1 << 40)
    _, results = await crawl(site)
    by_key = {r.key: r for r in results}
    about = by_key[site.url("site-a.test", "/about")]
    assert about.error == "internal: RuntimeError: boom"
    assert site.url("site-b.test", "/b-page") in by_key  # the crawl went on
    on_loop = threading.main_thread().name in threads
    assert on_loop is not threaded
    assert any(name.startswith("crawl-parse") for name in threads) is threaded


async def test_bad_seed_is_refused_before_crawling(site: FixtureSite) -> None:
    from crawler.errors import SeedError

    async with Crawler(site_config(site)) as crawler:
        with pytest.raises(SeedError, match="mailto"):
            async for _ in crawler.crawl(["mailto:x@y.z"]):
                pass


async def test_a_crawl_without_async_with_is_refused_plainly(
    site: FixtureSite, tmp_path: Path
) -> None:
    # it logged "internal error ... Fetcher is not open" for each robots.txt try, then reported
    # every seed as refused by robots.txt
    from crawler.engine.components import settings
    from crawler.state.crawlstate import CrawlState

    config = site_config(site).override("state", dir=str(tmp_path / "state"))
    crawler = Crawler(config, state=CrawlState.open(tmp_path / "state", settings(config)))
    with pytest.raises(RuntimeError, match=r"needs an open Crawler: async with Crawler\(config\)"):
        async for _ in crawler.crawl(site.seeds):
            pass
    assert not site.requests
    CrawlState.open(tmp_path / "state", settings(config)).abandon()  # its lock was let go
    async with Crawler(site_config(site)) as closed:
        pass
    with pytest.raises(RuntimeError, match="needs an open Crawler"):  # nor once closed
        async for _ in closed.crawl(site.seeds):
            pass


async def test_one_seed_string_is_refused_plainly(site: FixtureSite) -> None:
    # each of its characters was taken for a seed: "not a crawlable http(s) URL: 'h'"
    async with Crawler(site_config(site)) as crawler:
        with pytest.raises(TypeError, match=r"not one: crawl\(\['http://"):
            async for _ in crawler.crawl(site.seeds[0]):
                pass


async def test_a_crawler_runs_one_crawl(site: FixtureSite) -> None:
    async with Crawler(site_config(site, max_pages=2)) as crawler:
        async for _ in crawler.crawl(site.seeds):
            pass
        assert crawler.complete
        with pytest.raises(RuntimeError, match="already crawled"):
            async for _ in crawler.crawl(site.seeds):
                pass


async def test_stopped_crawl_is_not_complete(site: FixtureSite) -> None:
    async with Crawler(site_config(site)) as crawler:
        async for _ in crawler.crawl(site.seeds):
            crawler.stop()
    assert crawler.stopped
    assert not crawler.complete


async def test_frontier_bounds_are_counted_not_silent(site: FixtureSite) -> None:
    config = site_config(site).override("crawl", max_queued_per_host=3)
    async with Crawler(config) as crawler:
        results = [r async for r in crawler.crawl(site.seeds)]
    assert crawler.stats.dropped_full > 0
    assert crawler.stats_dict()["dropped_full"] == crawler.stats.dropped_full
    assert len(results) < len(site.expected() | site.refused())


async def test_a_host_refusing_connections_fails_as_a_connection_error() -> None:
    """A refused connection is an answer: robots.txt is asked twice, then the page's result is
    that connection failure (it was counted as a robots refusal after 6 tries, ~21 s)."""
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = Config().override(
        "politeness", delay=0.0, ip_delay=0.0, backoff_base=0.01, backoff_max=0.05
    )
    async with Crawler(config) as crawler:
        [result] = [r async for r in crawler.crawl([f"http://127.0.0.1:{port}/"])]
    assert result.error is not None
    assert result.error.startswith(f"connect: cannot connect to 127.0.0.1:{port}")
    assert "robots.txt, 2 tries" in result.error
    assert crawler.stats.errors["connect"] == 1 and crawler.stats.robots_refused == 0
    assert crawler.stats.robots_fetches == 2


@pytest.mark.slow
async def test_gil_switch_interval_is_lowered_during_the_crawl_only(site: FixtureSite) -> None:
    import sys

    import crawler.parse.thread as parsing

    before = sys.getswitchinterval()
    during = set()
    async with Crawler(site_config(site)) as crawler:
        async for _ in crawler.crawl([site.url("site-a.test", "/")]):
            during.add(sys.getswitchinterval())
    assert len(during) == 1
    assert during.pop() == pytest.approx(min(before, parsing.SWITCH_INTERVAL))
    assert sys.getswitchinterval() == before


@pytest.mark.slow
async def test_young_gc_threshold_is_raised_during_the_crawl_only(site: FixtureSite) -> None:
    import gc

    from crawler.engine.gctune import YOUNG_THRESHOLD

    before = gc.get_threshold()
    during = set()
    async with Crawler(site_config(site)) as crawler:
        async for _ in crawler.crawl([site.url("site-a.test", "/")]):
            during.add(gc.get_threshold())
    assert during == {(max(before[0], YOUNG_THRESHOLD), *before[1:])}
    assert gc.get_threshold() == before


@pytest.mark.slow
async def test_a_library_crawl_says_when_it_keeps_no_state_or_warc(
    site: FixtureSite, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # config.toml's [state] dir and [output] warc are opened by the crawl command; a program
    # that builds a Crawler from the same config and passes neither is told it keeps nothing
    from crawler.engine.components import settings
    from crawler.state.crawlstate import CrawlState

    config = (
        site_config(site)
        .override("state", dir=str(tmp_path / "state"))
        .override("output", warc=str(tmp_path / "out.warc.gz"))
    )
    with caplog.at_level("WARNING", logger="crawler.engine.components"):
        async with Crawler(config) as crawler:
            assert [r async for r in crawler.crawl([site.url("site-a.test", "/")])]
    messages = [r.getMessage() for r in caplog.records]
    assert any("[state] dir" in m and "CrawlState.open" in m for m in messages)
    assert any("[output] warc" in m and "recorder=" in m for m in messages)
    assert not (tmp_path / "state").exists() and not (tmp_path / "out.warc.gz").exists()

    caplog.clear()
    state = CrawlState.open(str(tmp_path / "state"), settings(config))
    with caplog.at_level("WARNING", logger="crawler.engine.components"):
        async with Crawler(config, state=state, recorder=lambda response: None) as crawler:
            assert [r async for r in crawler.crawl([site.url("site-a.test", "/")])]
    assert not caplog.records
