"""The circuit breaker (crawler.frontier.hosts, crawler.frontier): a host whose fetches keep failing
is put down, and its other pages are refused at once instead of being tried for hours."""

from __future__ import annotations

import random

import pytest

from crawler.engine.crawler import Crawler
from crawler.errors import ConnectError, ProtocolError
from crawler.frontier import Frontier
from crawler.frontier.entries import Entry, EntryKind, Outcome
from crawler.frontier.settings import Politeness
from tests.support.down_site import down_site, pages
from tests.support.frontier_sim import crawl, simulate


def frontier(max_host_failures: int) -> Frontier:
    return Frontier(
        Politeness(
            respect_robots=False,
            backoff_base=1.0,
            backoff_max=300.0,
            max_host_failures=max_host_failures,
        ),
        rng=random.Random(3),
    )


def down_then(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
    """down.test refuses connections (retried, as the engine does twice); up.test answers."""
    if entry.url.startswith("http://down.test/"):
        return Outcome(blame=ConnectError.blame, attempt=entry.retries), entry.retries < 2
    return Outcome(status=200), False


def test_a_host_that_keeps_failing_is_put_down_and_its_pages_refused() -> None:
    f = frontier(5)
    for entry in pages("down.test", 50) + pages("up.test", 10):
        f.put(entry)
    log = simulate(lambda: crawl(f, workers=4, fetch=0.01, respond=down_then))
    down = [(start, e) for start, _, e in log if e.url.startswith("http://down.test/")]
    tried = [e for _, e in down if e.kind is EntryKind.PAGE]
    refused = [e for _, e in down if e.kind is EntryKind.REFUSED]
    assert len(tried) == 5  # the 5th failure in a row puts the host down
    assert {e.url for e in refused} == {e.url for e in pages("down.test", 50)} - {
        e.url for e in tried if e.retries == 2
    }  # every other URL gets its record at once (one that used up its retries: its failure)
    assert max(start for start, _ in down) < 60.0  # not hours of backoff
    assert f.refusal(refused[0]).startswith("host_down: 5 fetches in a row failed")
    # the host that answers is not affected
    up = [e for _, _, e in log if e.url.startswith("http://up.test/")]
    assert len(up) == 10 and all(e.kind is EntryKind.PAGE for e in up)


def test_pages_queued_after_the_host_went_down_are_refused_at_once() -> None:
    f = frontier(2)
    for entry in pages("down.test", 2):
        f.put(entry)
    simulate(lambda: crawl(f, workers=1, fetch=0.01, respond=down_then))
    assert f.put(Entry(url="http://down.test/late", key="http://down.test/late"))
    log = simulate(lambda: crawl(f, workers=1, fetch=0.01, respond=down_then))
    assert [e.kind for _, _, e in log] == [EntryKind.REFUSED]
    assert f.refusal(log[0][2]).startswith("host_down: ")


def test_an_answer_resets_the_count() -> None:
    # failures and answers alternating: never 3 in a row, so never down
    def flaky(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        if int(entry.url.rsplit("/", 1)[1]) % 2:
            return Outcome(status=200), False
        return Outcome(blame=ConnectError.blame, attempt=entry.retries), False

    f = frontier(3)
    for entry in pages("flaky.test", 20):
        f.put(entry)
    log = simulate(lambda: crawl(f, workers=1, fetch=0.01, respond=flaky))
    assert len(log) == 20 and all(e.kind is EntryKind.PAGE for _, _, e in log)


def test_failures_of_the_urls_own_never_put_a_host_down() -> None:
    def broken(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        return Outcome(blame=ProtocolError.blame, attempt=0), False  # the URL's own fault

    f = frontier(3)
    for entry in pages("broken.test", 20):
        f.put(entry)
    log = simulate(lambda: crawl(f, workers=2, fetch=0.01, respond=broken))
    assert len(log) == 20 and all(e.kind is EntryKind.PAGE for _, _, e in log)


def test_zero_never_gives_up() -> None:
    f = frontier(0)
    for entry in pages("down.test", 6):
        f.put(entry)
    log = simulate(lambda: crawl(f, workers=2, fetch=0.01, respond=down_then))
    assert all(e.kind is EntryKind.PAGE for _, _, e in log)
    assert len(log) == 18  # every URL tried three times


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="max_host_failures"):
        frontier(-1)


async def test_a_crawl_records_every_url_of_a_host_that_is_down() -> None:
    config, seeds = down_site(30)
    async with Crawler(config) as crawler:
        results = [r async for r in crawler.crawl(seeds)]
    assert sorted(r.url for r in results) == sorted(seeds)  # nothing lost
    kinds = [r.error.split(":", 1)[0] for r in results if r.error]
    assert len(kinds) == 30 and set(kinds) == {"connect", "host_down"}
    assert kinds.count("connect") <= 3  # the failures that put it down (retries included)
    stats = crawler.stats_dict()
    assert stats["host_down"] == kinds.count("host_down") and stats["robots_refused"] == 0
