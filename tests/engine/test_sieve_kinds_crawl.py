"""The Sieve family in the crawl: `[sieve] kind` (`crawl --sieve KIND`) picks the URL-seen
filter; every kind crawls the fixture site to its ground truth, is saved and restored by
`--state`, named in the stats; `Crawler.forget` lets a URL in again with a kind that deletes;
a shared crawl (`--redis`) refuses every kind but the scalable one, by name."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from crawler.cluster.node import check_cluster_config
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError
from crawler.output.results import CrawlResult
from crawler.sieve import FILTER_KINDS
from crawler.state.crawlstate import CrawlState
from crawler.state.db import StateError
from crawler.testing.fixture import FixtureSite
from tests.support.server import site_config

WATCHDOG = 120.0  # seconds: catches a hang only


def truth(site: FixtureSite) -> set[str]:
    return site.expected() | site.refused()


def configured(site: FixtureSite, kind: str) -> Config:
    # a stable filter remembers the last capacity/100 keys (>= 99%); older ones may be forgotten
    # and fetched again, by design: its capacity here holds the whole site (43 URLs) in that
    capacity = 100_000 if kind == "stable" else 1000
    return site_config(site).override("sieve", kind=kind, capacity=capacity)


async def crawl(
    config: Config, seeds: list[str], state: CrawlState | None = None, stop_after: int = 0
) -> tuple[Crawler, list[CrawlResult]]:
    results: list[CrawlResult] = []
    async with asyncio.timeout(WATCHDOG), Crawler(config, state=state) as crawler:
        async for result in crawler.crawl(seeds):
            results.append(result)
            if stop_after and len(results) == stop_after:
                crawler.stop()
    return crawler, results


@pytest.mark.slow
@pytest.mark.parametrize("kind", FILTER_KINDS)
async def test_every_kind_crawls_the_site_to_its_ground_truth(site: FixtureSite, kind: str) -> None:
    crawler, results = await crawl(configured(site, kind), site.seeds)
    keys = Counter(r.key for r in results)
    assert set(keys) == truth(site) and max(keys.values()) == 1
    figures = crawler.stats_dict()["sieve"]
    assert figures["kind"] == kind
    assert figures["count"] >= len(results) - len(site.refused())  # every page's key went in
    assert figures["size_in_bytes"] > 0 and 0 < figures["false_positive_bound"] < 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["blocked", "cuckoo", "stable"])
async def test_a_crawl_of_any_kind_is_resumed_from_its_state(
    site: FixtureSite, kind: str, tmp_path: Path
) -> None:
    config = configured(site, kind)
    state = CrawlState.open(tmp_path / "st", settings(config))
    _, first = await crawl(config, site.seeds, state, stop_after=10)
    assert 10 <= len(first) < len(truth(site))
    state = CrawlState.open(tmp_path / "st", settings(config))
    crawler, rest = await crawl(config, site.seeds, state)
    assert crawler.sieve.kind == kind  # restored from the snapshot, of its own kind
    keys = Counter(r.key for r in first + rest)
    assert set(keys) == truth(site)
    assert max(keys.values()) == 1, "a URL the restored filter had was fetched again"


async def test_a_resume_with_another_kind_is_refused_by_name(
    site: FixtureSite, tmp_path: Path
) -> None:
    config = configured(site, "cuckoo")
    await crawl(config, site.seeds, CrawlState.open(tmp_path / "st", settings(config)), 5)
    with pytest.raises(StateError, match=r"other settings \(sieve\.kind\): sieve\.kind 'cuckoo', "
                       r"now 'counting'; resume with"):  # fmt: skip
        CrawlState.open(tmp_path / "st", settings(configured(site, "counting")))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["counting", "cuckoo"])
@pytest.mark.parametrize("confirm", ["none", "exact"])
async def test_forget_lets_a_url_be_admitted_again(
    site: FixtureSite, kind: str, confirm: str
) -> None:
    config = configured(site, kind).override("sieve", confirm=confirm)
    home = site.seeds[0]
    results: list[CrawlResult] = []
    async with asyncio.timeout(WATCHDOG), Crawler(config) as crawler:
        async for result in crawler.crawl([home]):
            results.append(result)
            if result.url == home and len(results) == 1:
                assert crawler.forget(home)  # it was in the filter
                assert not crawler.forget(home)  # and is no longer
    fetched = Counter(r.key for r in results)
    assert fetched[results[0].key] == 2  # found again on a page linking home, fetched again
    assert max(n for key, n in fetched.items() if key != results[0].key) == 1


async def test_forget_needs_a_kind_that_deletes(site: FixtureSite) -> None:
    async with Crawler(configured(site, "scalable")) as crawler:
        with pytest.raises(TypeError, match="'counting' or 'cuckoo'"):
            crawler.forget(site.seeds[0])
    async with Crawler(configured(site, "cuckoo")) as crawler:
        with pytest.raises(ValueError, match="not a crawlable"):
            crawler.forget("mailto:someone@example.org")


@pytest.mark.parametrize("kind", [k for k in FILTER_KINDS if k != "scalable"])
def test_a_shared_crawl_refuses_every_kind_but_scalable(kind: str) -> None:
    config = Config().override("sieve", kind=kind)
    with pytest.raises(ConfigError, match=rf"\[sieve\] kind = '{kind}' is not shared through"):
        check_cluster_config(config, state=False)
    check_cluster_config(Config(), state=False)  # the scalable Sieve is


def test_an_unknown_kind_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"kind: must be one of 'scalable', 'bloom', .*'stable'"):
        Config().override("sieve", kind="quotient")


@pytest.mark.parametrize("kind", ["counting", "cuckoo"])
def test_forgetting_a_key_never_taken_in_removes_nothing_with_the_exact_tier(kind: str) -> None:
    """A filter cannot tell a key it holds from a false positive: the exact tier can. With it,
    forgetting a key never taken in leaves the filter alone (no other key can go)."""
    from crawler.sieve import SeenTiers, make_filter
    from crawler.sieve.seen import SeenStore

    # a tiny, crowded filter: many of the never-added keys below are its false positives
    dedup = SeenTiers(make_filter(kind, capacity=64, error_rate=0.2), SeenStore())
    added = [f"http://a.test/{i}" for i in range(64)]
    assert all(dedup.add_many(added))
    strangers = [f"http://b.test/{i}" for i in range(2_000)]
    positives = [key for key in strangers if key in dedup.sieve]
    assert positives, "no false positive to test with: make the filter smaller"
    assert not any(dedup.forget(key) for key in positives)
    assert all(key in dedup.sieve for key in added)  # none of them went
    assert dedup.forget(added[0]) and added[0] not in dedup.sieve
