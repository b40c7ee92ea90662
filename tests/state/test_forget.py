"""`Crawler.forget` across a resume: a forgotten URL is admissible again in every later run of
the crawl (its state's journal, exact tier and Sieve snapshot agree), whether it was forgotten
inside the loop (done, or still pending: the result being handled), before `crawl()`, or just
before a crash; after the crawl it is a clear error, and so is a closed state."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.frontier import Entry
from crawler.output.results import CrawlResult
from crawler.sieve import fingerprint, make_filter
from crawler.state.crawlstate import CrawlState
from crawler.state.db import StateError
from crawler.testing.fixture import FixtureSite
from tests.support.server import site_config

WATCHDOG = 120.0  # seconds: catches a hang only
SETTINGS = {"scope.include": [], "crawl.max_depth": 16}


def counting(site: FixtureSite, max_pages: int) -> Config:
    return site_config(site, max_pages=max_pages).override("sieve", kind="counting")


async def run(
    config: Config, directory: Path, seeds: list[str], forget: str = "", at: int = 0
) -> tuple[Crawler, list[CrawlResult], bool | None]:
    """One run of the crawl in `directory`; `forget` before crawl() (at=0) or in the loop."""
    results: list[CrawlResult] = []
    had = None
    state = CrawlState.open(directory, settings(config))
    async with asyncio.timeout(WATCHDOG), Crawler(config, state=state) as crawler:
        if forget and not at:
            had = crawler.forget(forget)
        async for result in crawler.crawl(seeds):
            results.append(result)
            if forget and len(results) == at:
                had = crawler.forget(forget)
    return crawler, results, had


@pytest.mark.slow
async def test_forget_before_crawl_holds_on_the_resume(site: FixtureSite, tmp_path: Path) -> None:
    home = site.seeds[0]
    _, first, _ = await run(counting(site, 10), tmp_path / "st", [home])
    assert len(first) == 10
    _, rest, had = await run(counting(site, 60), tmp_path / "st", [home], forget=home)
    assert had  # the state had it
    assert Counter(r.url for r in rest)[home] == 1  # given as a seed again: fetched again


async def test_the_result_forgotten_in_the_loop_is_admitted_by_the_resume(
    site: FixtureSite, tmp_path: Path
) -> None:
    home = site.seeds[0]
    _, first, had = await run(counting(site, 10), tmp_path / "st", [home], forget=home, at=1)
    assert had and first[0].url == home
    state = CrawlState.open(tmp_path / "st", settings(counting(site, 60)))
    assert first[0].key not in set(state.admitted_keys())  # dropped once it was done
    state.abandon()
    _, rest, _ = await run(counting(site, 60), tmp_path / "st", [home])
    assert Counter(r.url for r in rest)[home] == 1


async def test_forget_after_the_crawl_is_a_clear_error(site: FixtureSite, tmp_path: Path) -> None:
    crawler, _, _ = await run(counting(site, 5), tmp_path / "st", site.seeds)
    with pytest.raises(RuntimeError, match="this crawl has ended"):
        crawler.forget(site.seeds[0])
    assert crawler.state is not None
    with pytest.raises(StateError, match="the crawl state is closed") as caught:
        crawler.state.forget(site.seeds[0])
    assert "free some space" not in str(caught.value)


def entry(i: int) -> Entry:
    key = f"http://a.test/p{i}"
    return Entry(url=key, key=key, depth=1, parent="http://a.test/")


def crawled(path: Path, n: int) -> CrawlState:
    """A state with `n` done URLs, all in its Sieve snapshot (and its exact tier)."""
    state = CrawlState.open(path, SETTINGS)
    sieve = make_filter("counting", capacity=1000, error_rate=0.01)
    for i in range(n):
        state.admitted(entry(i))
        sieve.add(entry(i).key)
        state.seen.add(fingerprint(entry(i).key))
        state.completed(entry(i).key)
    state.checkpoint(sieve, {})
    return state


def restored(path: Path) -> tuple[CrawlState, set[str]]:
    """The state reopened as after a crash, and the keys of p0..p9 its restored Sieve holds."""
    state = CrawlState.open(path, SETTINGS)
    sieve = state.restore_sieve(make_filter("counting", capacity=1000, error_rate=0.01))
    return state, {entry(i).key for i in range(10) if entry(i).key in sieve}


def test_a_key_forgotten_before_a_crash_leaves_the_restored_sieve(tmp_path: Path) -> None:
    state = crawled(tmp_path / "s", 4)
    state.forget(entry(1).key)
    state.abandon()  # a crash: no snapshot after the forget
    state, held = restored(tmp_path / "s")
    assert held == {entry(i).key for i in (0, 2, 3)}
    assert fingerprint(entry(1).key) not in state.seen
    state.abandon()


def test_rows_after_a_forget_are_numbered_above_the_snapshot(tmp_path: Path) -> None:
    # the last row forgotten: SQLite would give its id again, which the snapshot covers
    state = crawled(tmp_path / "s", 4)
    state.forget(entry(3).key)
    state.admitted(entry(4))
    state.completed(entry(4).key)
    state.abandon()
    state, held = restored(tmp_path / "s")
    assert held == {entry(i).key for i in (0, 1, 2, 4)}  # p4 replayed, p3 left out
    state.abandon()


def test_a_url_forgotten_while_pending_is_dropped_once_done(tmp_path: Path) -> None:
    state = crawled(tmp_path / "s", 2)
    state.admitted(entry(2))
    assert state.forget(entry(2).key)  # pending: kept for a crash until it is done
    assert entry(2).key in {e.key for e in state.pending()}
    state.completed(entry(2).key, ('"v1"', None))
    assert state.validators(entry(2).key) is None
    assert entry(2).key not in set(state.admitted_keys())
    # forgotten while pending, then linked again before it was done: it stays to fetch
    state.admitted(entry(5))
    state.commit()
    state.forget(entry(5).key)
    state.admitted(entry(5))
    state.completed(entry(5).key)
    assert entry(5).key in {e.key for e in state.pending()}
    state.abandon()
