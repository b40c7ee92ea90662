"""The per-link path on its own: SeenTiers's answers, and how one page's links are counted."""

from __future__ import annotations

import random

import pytest

from crawler.admission.gate import Admission
from crawler.config.load import Config
from crawler.engine.components import make_frontier, make_scope, make_urls
from crawler.frontier.entries import Entry
from crawler.output.results import CrawlStats
from crawler.sieve import SeenTiers, Sieve
from crawler.sieve.seen import SeenStore


@pytest.mark.parametrize("exact", [False, True], ids=["bloom", "exact-tier"])
@pytest.mark.parametrize("recent", [4, 65_536])
def test_dedup_answers_like_adding_keys_one_by_one(exact: bool, recent: int) -> None:
    rng = random.Random(7)
    universe = [f"http://s.test/p{i}" for i in range(300)]
    dedup = SeenTiers(Sieve(capacity=10_000, error_rate=1e-6), SeenStore() if exact else None,
                  recent=recent)  # fmt: skip
    taken: set[str] = set()
    for _ in range(60):  # pages of distinct keys, repeating across pages as navigation does
        page = rng.sample(universe, rng.randint(1, 60))
        expected = [key not in taken for key in page]
        taken.update(page)
        assert dedup.add_many(page) == expected
    assert dedup.sieve.count == len(taken)


def admission(max_pages: int = 0) -> tuple[Admission, CrawlStats]:
    config = Config().override("politeness", delay=0.0, ip_delay=0.0)
    scope = make_scope(config)
    scope.add_host("s.test")
    stats = CrawlStats()
    adm = Admission(urls=make_urls(config), scope=scope,
                    dedup=SeenTiers(Sieve(capacity=1000, error_rate=1e-6)),
                    frontier=make_frontier(config), stats=stats, max_pages=max_pages)  # fmt: skip
    return adm, stats


async def test_links_differing_only_by_fragment_are_one_link_counted_as_repeats() -> None:
    adm, stats = admission()
    parent = Entry(url="http://s.test/", key="http://s.test/", depth=0)
    hrefs = ["a.html#one", "a.html#two", "a.html", "#top", "http://x.test/#z", "http://x.test/"]
    assert await adm.links(parent, hrefs, "http://s.test/dir/") == 2  # a.html and the page itself
    assert stats.links_seen == 6
    assert stats.scope_refused["domain"] == 2  # both x.test links, each occurrence counted
    assert stats.duplicates == 2  # a.html's two repeats
    assert await adm.links(parent, hrefs, "http://s.test/dir/") == 0  # a second page: all seen
    assert stats.duplicates == 2 + 4


@pytest.mark.parametrize("exact", [False, True], ids=["bloom", "exact-tier"])
def test_a_key_twice_in_one_batch_is_new_once(exact: bool) -> None:
    dedup = SeenTiers(Sieve(capacity=1000, error_rate=1e-6), SeenStore() if exact else None)
    assert dedup.add_many(["http://s.test/a", "http://s.test/a", "http://s.test/b"]) == [
        True, False, True,
    ]  # fmt: skip
    assert dedup.rescued == 0


def test_the_exact_tier_rescues_every_false_positive_of_a_saturated_sieve() -> None:
    sieve = Sieve(capacity=10, error_rate=0.5)
    dedup = SeenTiers(sieve, SeenStore(), recent=1)
    keys = [f"http://s.test/{i}" for i in range(2000)]
    for start in range(0, len(keys), 50):
        assert dedup.add_many(keys[start : start + 50]) == [True] * 50
    assert dedup.rescued > 0  # the filter alone would have dropped these
    assert dedup.add_many(keys[:50]) == [False] * 50


async def test_links_refused_by_max_pages_are_counted_per_link_not_per_page() -> None:
    adm, stats = admission(max_pages=2)
    root = Entry(url="http://s.test/", key="http://s.test/", depth=0)
    assert await adm.seed(root)
    assert await adm.links(root, ["/a", "/b", "/c", "/d"], root.url) == 1  # room for /a only
    assert (stats.admitted, stats.over_limit, stats.duplicates) == (2, 3, 0)
    page_a = Entry(url="http://s.test/a", key="http://s.test/a", depth=1)
    # the limit was reached
    assert await adm.links(page_a, ["/b", "/c", "/e", "/f"], page_a.url) == 0
    # /b and /c were refused on the first page already (and taken in): duplicates now; /e and
    # /f are new URLs refused: two more. (A full crawl used to count one refusal per page.)
    assert (stats.admitted, stats.over_limit, stats.duplicates) == (2, 5, 2)
