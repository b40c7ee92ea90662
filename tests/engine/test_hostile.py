"""End-to-end crawls of the hostile server (tests/hostile.py): every case must end the crawl in
time, leave the expected `error` kind on its result, and keep peak memory bounded."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from crawler.parse import thread as parsing
from crawler.urls.canonical import canonicalize
from tests.support.hostile import (
    HOST,
    PRIVATE_IP,
    PRIVATE_NAME,
    ROBOTS_HOSTS,
    TOTAL_TIMEOUT,
    HostileServer,
    MiB,
    hostile_config,
    peak_rss_growth,
    server,
)

__all__ = ["server"]  # the fixture, from tests.support.hostile

WATCHDOG = 60.0  # seconds: catches a hang only


async def crawl(
    server: HostileServer,
    seeds: list[str],
    *,
    time_limit: float = 5.0,
    **sections: dict[str, Any],
) -> tuple[Crawler, dict[str, CrawlResult], int]:
    """Crawl within `time_limit` seconds; returns the crawler, results by URL, peak RSS growth."""
    with peak_rss_growth() as growth:
        async with asyncio.timeout(time_limit), Crawler(hostile_config(server, **sections)) as c:
            results = [r async for r in c.crawl(seeds)]
    by_url = {r.url: r for r in results}
    assert len(by_url) == len(results), "a URL has two results"
    return c, by_url, growth[0]


def kind(result: CrawlResult) -> str | None:
    return None if result.error is None else result.error.split(":", 1)[0]


# -- one failing fetch per case ---------------------------------------------------------------

FETCH_CASES = [
    # (path, expected error kind, time limit in seconds)
    ("/gzip-bomb", "too_large", 5.0),
    ("/endless", "too_large", 5.0),
    ("/reset", "reset", 5.0),
    ("/reset-mid-body", "truncated", 5.0),
    ("/bad-length", "protocol", 5.0),
    ("/two-lengths", "protocol", 5.0),
    ("/short-body", "truncated", 5.0),
    ("/huge-header", "protocol", 5.0),
    ("/many-headers", "protocol", 5.0),
    ("/endless-headers", "protocol", 5.0),
    ("/slowloris", "timeout", TOTAL_TIMEOUT + 3.0),  # total_timeout (2 s) before the floor's 20 s
    ("/slow-body", "timeout", TOTAL_TIMEOUT + 3.0),
]


@pytest.mark.parametrize(
    ("path", "expected", "limit"), FETCH_CASES, ids=[c[0] for c in FETCH_CASES]
)
@pytest.mark.slow
async def test_fetch_case(server: HostileServer, path: str, expected: str, limit: float) -> None:
    url = server.url(path)
    crawler, results, growth = await crawl(server, [url], time_limit=limit)
    result = results[url]
    assert kind(result) == expected, result.error
    assert result.status is None and result.size == 0
    assert crawler.stats.errors[expected] == 1
    # The gzip bomb inflates to 1 GiB and the endless body never ends; with max_body 10 MiB
    # neither may cost more than a few times the cap.
    assert growth < 64 * MiB, f"peak RSS grew by {growth / MiB:.0f} MiB"


# -- redirects -------------------------------------------------------------------------------


async def test_endless_redirect_chain_stops_after_max_redirects(server: HostileServer) -> None:
    crawler, results, _ = await crawl(server, [server.url("/redirect-chain/0")])
    hops = crawler.config.fetch.max_redirects
    assert set(results) == {server.url(f"/redirect-chain/{n}") for n in range(hops + 1)}
    last = results[server.url(f"/redirect-chain/{hops}")]
    assert last.error == f"redirect: more than {hops} hops"
    assert last.status == 302 and last.location == server.url(f"/redirect-chain/{hops + 1}")
    assert all(r.error is None for r in results.values() if r is not last)
    assert (HOST, f"/redirect-chain/{hops + 1}") not in server.requests


async def test_redirect_loop_fetches_each_url_once(server: HostileServer) -> None:
    _, results, _ = await crawl(server, [server.url("/loop/a")])
    assert set(results) == {server.url("/loop/a"), server.url("/loop/b")}
    assert all(r.status == 302 and r.error is None for r in results.values())
    assert server.requests.count((HOST, "/loop/a")) == 1
    assert server.requests.count((HOST, "/loop/b")) == 1


PRIVATE_CASES = ["/to-private-ip", "/to-private-name"]


def _private_target(server: HostileServer, path: str) -> str:
    host = PRIVATE_IP if path.endswith("-ip") else PRIVATE_NAME
    return f"http://{host}:{server.private_port}/secret"


async def _crawl_to_private(
    server: HostileServer, path: str
) -> tuple[Crawler, dict[str, CrawlResult]]:
    # The scope must admit the target, or it is refused as out of scope before any guard.
    scope = {"allowed_domains": (HOST, PRIVATE_NAME, PRIVATE_IP)}
    crawler, results, _ = await crawl(server, [server.url(path)], scope=scope)
    assert results[server.url(path)].location == _private_target(server, path)
    return crawler, results


@pytest.mark.parametrize("path", PRIVATE_CASES)
async def test_redirect_to_private_address_is_recorded(server: HostileServer, path: str) -> None:
    _, results = await _crawl_to_private(server, path)
    assert _private_target(server, path) in results


@pytest.mark.parametrize("path", PRIVATE_CASES)
async def test_redirect_to_private_address_is_blocked(server: HostileServer, path: str) -> None:
    pytest.importorskip("crawler.fetch.guard")
    crawler, results = await _crawl_to_private(server, path)
    guard = getattr(crawler.fetcher, "guard", None)
    if guard is None or not getattr(guard, "enabled", False):
        pytest.skip("the SSRF guard is not wired into the crawl yet")
    target = results[_private_target(server, path)]
    assert kind(target) == "blocked", target.error
    assert server.private_connections == 0


async def test_default_scope_keeps_redirects_to_private_addresses_away(
    server: HostileServer,
) -> None:
    crawler, results, _ = await crawl(server, [server.url(p) for p in PRIVATE_CASES])
    assert len(results) == 2 and crawler.stats.out_of_scope == 2
    assert server.private_connections == 0


# -- pages that are big, deep or full of junk ------------------------------------------------


async def test_ten_thousand_links(server: HostileServer) -> None:
    url = server.url("/many-links")
    scope = {"max_links_per_page": 1000}
    crawler, results, growth = await crawl(server, [url], crawl={"max_pages": 1}, scope=scope)
    assert results[url].status == 200 and results[url].links == 10_000
    assert crawler.stats.links_seen == 1000  # links taken from the page
    assert len(results) == 1  # max_pages = 1: none of them admitted
    assert growth < 64 * MiB


async def test_deeply_nested_html(server: HostileServer) -> None:
    url = server.url("/deep-nesting")
    _, results, growth = await crawl(server, [url], time_limit=10.0)
    assert results[url].status == 200 and results[url].error is None
    assert results[url].links == 1
    assert server.url("/deep-target") in results
    assert growth < 64 * MiB


@pytest.mark.slow
async def test_tag_flood(server: HostileServer) -> None:
    url = server.url("/tag-flood")
    _, results, growth = await crawl(server, [url], crawl={"max_pages": 1}, time_limit=10.0)
    assert results[url].status == 200 and results[url].links > 10_000
    # 10 MB received (and 10 MB served, same process), a parse tree of MAX_TAGS elements
    assert growth < 176 * MiB, f"peak RSS grew by {growth / MiB:.0f} MiB"


async def test_a_page_stuck_in_the_parser_does_not_hold_up_the_others(
    server: HostileServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The only parse thread held by one page (here: held until every other page is done,
    whatever the machine's speed): a spare thread parses the pages queued behind it, so they
    all come out first. Without the spare, they would wait behind it until the watchdog."""
    monkeypatch.setattr(parsing, "PARSE_THREADS", 1)
    monkeypatch.setattr(parsing, "STUCK_SECONDS", 0.05)
    monkeypatch.setattr(parsing, "THREAD_PARSE_BYTES", 0)  # every page through the threads
    slow = server.url("/stray-end-tags")
    others = [server.url(f"/filler/{i}") for i in range(8)]
    release = threading.Event()
    real_parse = parsing.parse_tree

    def parse_tree(data: bytes, url: str) -> Any:
        if url == slow:
            release.wait(WATCHDOG)  # stuck until the others are out
        return real_parse(data, url)

    monkeypatch.setattr(parsing, "parse_tree", parse_tree)
    order: list[str] = []
    try:
        with caplog.at_level(logging.WARNING, logger="crawler.parse.thread"):
            async with (
                asyncio.timeout(WATCHDOG),
                Crawler(hostile_config(server, politeness={"per_host_concurrency": 4})) as c,
            ):
                async for result in c.crawl([slow, *others]):
                    order.append(result.url)
                    if set(others) <= set(order):
                        release.set()
    finally:
        release.set()
    assert order == [*order[:-1], slow] and sorted(order) == sorted([slow, *others])
    assert "stuck on a slow page" in caplog.text


async def test_invalid_and_enormous_hrefs(server: HostileServer) -> None:
    url = server.url("/bad-hrefs")
    crawler, results, growth = await crawl(server, [url])
    assert results[url].status == 200 and results[url].error is None
    assert server.url("/ok-after-bad") in results
    # over 2048 characters (twice), over 32 query parameters: refused by the trap guards
    assert crawler.stats.out_of_scope >= 3
    assert max(len(path) for _, path in server.requests) < 2048
    assert growth < 64 * MiB


# -- crawler traps ----------------------------------------------------------------------------


async def _trap(
    server: HostileServer, path: str, reason: str
) -> tuple[Crawler, dict[str, CrawlResult]]:
    """Crawl a trap with no depth limit: it must end by itself (the tests then check that the
    deepest page's link is refused for `reason`)."""
    crawler, results, _ = await crawl(server, [server.url(path)], crawl={"max_depth": 0})
    assert crawler.stats.over_limit == 0, "the max_pages safety net stopped it, not a guard"
    assert crawler.stats.out_of_scope > 0
    _counted(crawler, reason)
    return crawler, results


def _refusal(crawler: Crawler, href: str, parent: CrawlResult) -> str | None:
    key = canonicalize(href, parent.url)
    assert key is not None and crawler.scope is not None
    return crawler.scope.check(key, parent.depth + 1)


def _counted(crawler: Crawler, reason: str) -> None:
    """Refused links are counted per reason in the stats."""
    refused = crawler.stats.scope_refused
    assert refused[reason] > 0, refused
    assert crawler.stats_dict()["scope_refused"][reason] == refused[reason]


async def test_relative_link_loop_stopped_by_repeated_segments(server: HostileServer) -> None:
    crawler, results = await _trap(server, "/trap/", "repeated_segment")
    # every path over {a, b} using each letter at most twice: sum of C(i+j, i), i, j <= 2
    assert len(results) == 19
    assert _refusal(crawler, "a/", results[server.url("/trap/a/a/")]) == "repeated_segment"


async def test_ever_deeper_paths_stopped_by_path_depth(server: HostileServer) -> None:
    crawler, results = await _trap(server, "/grow/", "path_depth")
    assert len(results) == 31  # /grow/ has 2 slashes; up to 32
    deepest = max(results.values(), key=lambda r: r.depth)
    assert _refusal(crawler, "s32/", deepest) == "path_depth"


async def test_ever_longer_urls_stopped_by_url_length(server: HostileServer) -> None:
    crawler, results = await _trap(server, "/long/", "url_length")
    assert all(len(url) <= 2048 for url in results)
    deepest = max(results.values(), key=lambda r: r.depth)
    assert len(deepest.url) > 2048 - 200
    assert _refusal(crawler, f"{deepest.url.count('/') - 2:03d}{'x' * 196}/", deepest) == (
        "url_length"
    )


async def test_ever_more_query_parameters_stopped(server: HostileServer) -> None:
    _, results = await _trap(server, "/params", "query_params")
    assert len(results) == 33  # no parameter, then 1 to 32


async def test_endless_calendar_stopped_by_max_depth(server: HostileServer) -> None:
    # Distinct, shallow URLs: no trap guard fires, max_depth does (pairs with a + b <= 6).
    crawler, results, _ = await crawl(
        server, [server.url("/calendar/2026/01")], crawl={"max_depth": 6}
    )
    assert len(results) == 28 and max(r.depth for r in results.values()) == 6
    assert crawler.stats.over_limit == 0


async def test_endless_calendar_stopped_by_pages_per_host(server: HostileServer) -> None:
    crawler, results, _ = await crawl(
        server,
        [server.url("/calendar/2026/01")],
        crawl={"max_depth": 0},
        scope={"max_pages_per_host": 10},
    )
    assert len(results) == 10
    _counted(crawler, "host_limit")


# -- robots.txt -------------------------------------------------------------------------------


def _robots_seed(server: HostileServer, which: str) -> tuple[str, str, str]:
    host = ROBOTS_HOSTS[which]
    return server.url("/", host), server.url("/private/x", host), server.url("/public", host)


async def test_huge_robots_txt_is_cut_and_parsed(server: HostileServer) -> None:
    seed, private, public = _robots_seed(server, "huge")
    _, results, growth = await crawl(server, [seed])
    assert results[seed].status == 200 and results[public].status == 200
    assert kind(results[private]) == "robots"
    assert growth < 64 * MiB


async def test_binary_robots_txt_allows_everything(server: HostileServer) -> None:
    seed, private, public = _robots_seed(server, "binary")
    _, results, _ = await crawl(server, [seed])
    assert {results[u].status for u in (seed, private, public)} == {200}


async def test_5xx_robots_txt_disallows_everything(server: HostileServer) -> None:
    seed, _, _ = _robots_seed(server, "5xx")
    _, results, _ = await crawl(server, [seed])
    assert set(results) == {seed}
    assert kind(results[seed]) == "robots"
    assert not [p for h, p in server.requests if h == ROBOTS_HOSTS["5xx"] and p != "/robots.txt"]


async def test_gzip_robots_txt_with_endless_tail(server: HostileServer) -> None:
    seed, private, _ = _robots_seed(server, "gzip-tail")
    _, results, growth = await crawl(server, [seed], fetch={"total_timeout": 0.5})
    assert growth < 64 * MiB, f"peak RSS grew by {growth / MiB:.0f} MiB"
    assert results[seed].status == 200 and kind(results[private]) == "robots"


# -- the whole hostile site at once ----------------------------------------------------------


@pytest.mark.slow
async def test_whole_hostile_site(server: HostileServer) -> None:
    # Every case at once, but the gzip-tail robots.txt (its own xfail test above).
    seeds = [s for s in server.seeds if ROBOTS_HOSTS["gzip-tail"] not in s]
    crawler, results, growth = await crawl(
        server,
        seeds,
        time_limit=20.0,
        crawl={"concurrency": 16, "max_depth": 3, "max_pages": 400},
        politeness={"per_host_concurrency": 8},
    )
    for path in ("/gzip-bomb", "/endless"):
        assert kind(results[server.url(path)]) == "too_large"
    for path in ("/slowloris", "/slow-body"):
        assert kind(results[server.url(path)]) == "timeout"
    assert kind(results[server.url("/reset")]) == "reset"
    assert server.private_connections == 0
    assert max(len(path) for _, path in server.requests) < 2048
    assert len(results) <= 400
    assert crawler.stats.pages == len(results)
    assert growth < 128 * MiB, f"peak RSS grew by {growth / MiB:.0f} MiB"
