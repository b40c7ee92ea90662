"""Raising a queued URL's priority (FrontierBackend rule 10) and batch puts (rule 11): order,
never lowering, stale heap items skipped, pending/len/bounds, robots sweep, retries, and the
state journal keeping a raised priority across a resume. Simulated time: no real sleeps."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from aiohttp import web
from protego import Protego

from crawler.admission.gate import Admission
from crawler.config.load import Config
from crawler.engine.components import make_frontier, make_scope, make_urls, settings
from crawler.engine.crawler import Crawler
from crawler.focus.scoring import Link
from crawler.frontier import Entry, EntryKind, Frontier, Outcome
from crawler.frontier.queues import HostQueue
from crawler.frontier.robots import RobotsPolicy
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.output.results import CrawlStats
from crawler.sieve import SeenTiers, Sieve
from crawler.state.crawlstate import CrawlState
from tests.support.frontier_sim import simulate
from tests.support.priority import drain, page
from tests.support.server import serve

A = "http://a.test/"


def url(i: int | str) -> str:
    return f"{A}{i}"


def raise_(frontier: Frontier, target: str, priority: float) -> bool:
    return frontier.reprioritize(target, target, priority)


def test_a_raised_entry_goes_after_the_queued_ones_of_equal_or_higher_priority() -> None:
    async def main() -> tuple[list[Entry], list[Entry], int]:
        frontier = Frontier(Politeness(respect_robots=False))
        for i, p in enumerate([0.5, 0.2, 0.9, 0.2, 0.5]):
            assert frontier.put(page(url(i), p))
        assert raise_(frontier, url(3), 0.5)  # ties with 0 and 4: after them
        assert raise_(frontier, url(1), 0.95)  # the best now
        assert frontier.queued_priority(url(1), url(1)) == 0.95
        return list(frontier.pending()), await drain(frontier), frontier.stats.raised

    pending, got, raised = simulate(main)
    expected = [(1, 0.95), (2, 0.9), (0, 0.5), (4, 0.5), (3, 0.5)]
    assert [(e.url, e.priority) for e in got] == [(url(i), p) for i, p in expected]
    assert pending == got  # each queued entry once, with its raised priority, in hand-out order
    assert raised == 2


def test_never_lowered_and_a_no_op_for_entries_not_queued() -> None:
    async def main() -> list[Entry]:
        frontier = Frontier(Politeness(respect_robots=False))
        for i, p in enumerate([0.3, 0.6, 0.1]):
            frontier.put(page(url(i), p))
        assert not raise_(frontier, url(1), 0.6)  # equal: not higher
        assert not raise_(frontier, url(1), 0.2)  # lower: never
        assert not raise_(frontier, url("unknown"), 5.0)
        assert not raise_(frontier, "http://other.test/x", 5.0)  # unknown host
        assert frontier.queued_priority(url("unknown"), url("unknown")) is None
        first = await frontier.get()  # in flight now
        assert first is not None and first.url == url(1)
        assert frontier.queued_priority(url(1), url(1)) is None
        assert not raise_(frontier, url(1), 9.0)
        frontier.done(first)
        assert not raise_(frontier, url(1), 9.0)  # done
        assert frontier.stats.raised == 0
        return [first, *await drain(frontier)]

    got = simulate(main)
    assert [(e.url, e.priority) for e in got] == [(url(1), 0.6), (url(0), 0.3), (url(2), 0.1)]


def test_set_priority_returns_what_it_had_and_sets_either_way() -> None:
    async def main() -> tuple[list[Entry], int]:
        frontier = Frontier(Politeness(respect_robots=False))
        for i, p in enumerate([0.3, 0.6, 0.1]):
            frontier.put(page(url(i), p))
        assert frontier.set_priority(url(1), url(1), 0.05) == 0.6  # lowered
        assert frontier.set_priority(url(2), url(2), 0.1) == 0.1  # equal: no change
        assert frontier.set_priority(url(2), url(2), 0.7) == 0.1  # raised: now the best
        assert frontier.set_priority(url("unknown"), url("unknown"), 5.0) is None
        assert frontier.set_priority("http://other.test/x", "http://other.test/x", 5.0) is None
        with pytest.raises(ValueError, match="must be a number"):
            frontier.set_priority(url(0), url(0), float("nan"))
        first = await frontier.get()
        assert first is not None
        assert frontier.set_priority(first.url, first.key, 9.0) is None  # in flight
        frontier.done(first)
        return [first, *await drain(frontier)], frontier.stats.raised

    got, raised = simulate(main)
    assert [(e.url, e.priority) for e in got] == [(url(2), 0.7), (url(0), 0.3), (url(1), 0.05)]
    assert raised == 1  # the lowering is not a raise


def test_a_crawl_without_priorities_tracks_nothing_until_asked() -> None:
    frontier = Frontier(Politeness(respect_robots=False))
    for i in range(5):
        frontier.put(page(url(i)))
    queue = next(iter(frontier._hosts.values())).queue
    assert not queue.tracked and not queue.ordered  # the plain deque of an unscored crawl
    assert frontier.queued_priority(url(2), url(2)) == 0.0  # asking turns tracking on
    assert queue.tracked
    assert raise_(frontier, url(3), 1.0)
    order = simulate(lambda: drain(frontier))
    assert [e.url for e in order] == [url(i) for i in (3, 0, 1, 2, 4)]


def test_random_raises_match_a_reference_model_and_stale_items_never_surface() -> None:
    # puts, raises and hand-outs interleaved at random (one host), against a plain model:
    # the best priority first; ties in the order of the last put/raise.
    rng = random.Random(15)

    async def main() -> None:
        frontier = Frontier(Politeness(respect_robots=False))
        model: dict[str, tuple[float, int]] = {}  # url -> (priority, order of last put/raise)
        fresh = 0
        for clock in range(3000):
            op = rng.random()
            if op < 0.4 or not model:
                target = url(fresh)
                fresh += 1
                priority = rng.choice([0.0, 0.1, 0.2, 0.5])
                assert frontier.put(page(target, priority))
                model[target] = (priority, clock)
            elif op < 0.8:
                target = rng.choice(list(model))
                priority = model[target][0] + rng.choice([-0.1, 0.0, 0.1, 0.3])
                raised = raise_(frontier, target, priority)
                assert raised == (priority > model[target][0])
                if raised:
                    model[target] = (priority, clock)
            else:
                entry = await frontier.get()
                assert entry is not None
                best = min(model, key=lambda u: (-model[u][0], model[u][1]))
                assert (entry.url, entry.priority) == (best, model.pop(best)[0])
                frontier.done(entry)
            assert len(frontier) == len(model)
        expected = sorted(model, key=lambda u: (-model[u][0], model[u][1]))
        assert [(e.url, e.priority) for e in frontier.pending()] == [
            (u, model[u][0]) for u in expected
        ]
        assert [e.url for e in await drain(frontier)] == expected
        assert len(frontier) == 0 and list(frontier.pending()) == []

    simulate(main)


def test_stale_items_are_compacted_away() -> None:
    queue = HostQueue()
    queue.track()
    context = (0, None, 0, 0, False)
    queue.push("/a", context, 0.0)
    queue.push("/b", context, 0.0)
    for step in range(1, 1000):
        assert queue.raise_(("/a",), step / 10)
    assert len(queue) == 2
    assert queue._heap is not None and len(queue._heap) <= 2 * 2 + 64 + 1  # bounded
    assert [r[0] for r in queue] == ["/a", "/b"]
    assert queue.pop()[2] == 99.9 and queue.pop()[0] == "/b"
    assert queue.best == float("-inf")
    assert not queue.raise_(("/a",), 200.0)  # popped: not queued any more


def test_the_per_host_bound_counts_a_raised_entry_once() -> None:
    frontier = Frontier(Politeness(respect_robots=False), QueueLimits(max_queued_per_host=3))
    for i in range(3):
        assert frontier.put(page(url(i), 0.1))
    for step in range(10):
        assert raise_(frontier, url(step % 3), 0.2 + step)
    assert len(frontier) == 3 and frontier.stats.queued == 3
    assert not frontier.put(page(url(3), 0.1))  # still full: 3 entries, not 13
    assert frontier.stats.dropped_host_full == 1
    got = simulate(lambda: drain(frontier))
    assert sorted(e.url for e in got) == [url(i) for i in range(3)]  # each handed out once


def test_a_url_put_twice_is_one_entry_with_the_better_priority() -> None:
    frontier = Frontier(Politeness(respect_robots=False))
    frontier.put(page(url(0), 0.1))
    frontier.put(page(url(1), 0.5))
    frontier.put(page(url(0), 0.9))  # e.g. a resumed journal: still one entry
    assert len(frontier) == 2
    got = simulate(lambda: drain(frontier))
    assert [(e.url, e.priority) for e in got] == [(url(0), 0.9), (url(1), 0.5)]


def test_the_robots_sweep_refuses_a_raised_entry_once() -> None:
    async def main() -> list[Entry]:
        frontier = Frontier()
        for i in range(4):
            frontier.put(page(url(f"private/{i}" if i % 2 else i), 0.1))
        assert raise_(frontier, url("private/1"), 0.8)
        assert raise_(frontier, url(2), 0.7)
        robots = await frontier.get()
        assert robots is not None and robots.kind is EntryKind.ROBOTS
        rules = Protego.parse("User-agent: *\nDisallow: /private/\n")
        frontier.set_robots(A, RobotsPolicy(status=200, parser=rules))
        frontier.done(robots, Outcome(status=200))
        assert len(frontier) == 4
        return await drain(frontier)

    got = simulate(main)
    refused = [e.url for e in got if e.kind is EntryKind.REFUSED]
    fetched = [(e.url, e.priority) for e in got if e.kind is EntryKind.PAGE]
    assert sorted(refused) == [url("private/1"), url("private/3")]
    assert fetched == [(url(2), 0.7), (url(0), 0.1)]


def test_a_retry_keeps_the_raised_priority_and_the_stale_item_stays_gone() -> None:
    async def main() -> list[Entry]:
        frontier = Frontier(Politeness(respect_robots=False))
        frontier.put(page(url(0), 0.1))
        frontier.put(page(url(1), 0.5))
        assert raise_(frontier, url(0), 0.9)
        first = await frontier.get()
        assert first is not None and (first.url, first.priority) == (url(0), 0.9)
        frontier.done(first, Outcome(status=503), retry=True)
        assert len(frontier) == 2
        return await drain(frontier)

    got = simulate(main)
    assert [(e.url, e.priority, e.retries) for e in got] == [(url(0), 0.9, 1), (url(1), 0.5, 0)]


def test_url_and_key_differing_are_found_by_the_key() -> None:
    frontier = Frontier(Politeness(respect_robots=False))
    frontier.put(Entry(url=url("x?b=1&a=2"), key=url("x?a=2&b=1"), priority=0.1))
    frontier.put(page(url(1), 0.5))
    assert frontier.queued_priority(url("x?a=2&b=1"), url("x?a=2&b=1")) == 0.1
    assert frontier.reprioritize(url("x?a=2&b=1"), url("x?a=2&b=1"), 0.6)
    got = simulate(lambda: drain(frontier))
    assert [e.url for e in got] == [url("x?b=1&a=2"), url(1)]


def test_put_many_hands_waiting_getters_the_best_of_the_batch() -> None:
    async def main(batched: bool) -> list[str]:
        frontier = Frontier(Politeness(per_host_concurrency=4, respect_robots=False))
        frontier.put(page(url("seed")))
        seed = await frontier.get()  # in flight: the getters below wait for more
        getters = [asyncio.ensure_future(frontier.get()) for _ in range(3)]
        await asyncio.sleep(0)
        batch = [page(url(i), p) for i, p in enumerate([0.1, 0.2, 0.9, 0.3, 0.8, 0.7])]
        if batched:
            assert frontier.put_many(batch) == [True] * 6
        else:
            assert all(frontier.put(entry) for entry in batch)
        got = [e for e in await asyncio.gather(*getters) if e is not None]
        assert seed is not None and len(frontier) == 3
        return sorted(e.url for e in got)

    assert simulate(lambda: main(True)) == [url(2), url(4), url(5)]
    assert simulate(lambda: main(False)) == [url(0), url(1), url(2)]  # one by one: the first


def test_the_state_journal_keeps_a_raised_priority_across_a_resume(tmp_path: Path) -> None:
    settings = {"test": 1}
    state = CrawlState.open(tmp_path / "s", settings)
    entries = [page(url(i), p) for i, p in enumerate([0.1, 0.5, 0.3])]
    for entry in entries:
        state.admitted(entry)
    state.reprioritized(url(0), 0.9)  # raised before its row was even written
    state.completed(url(1))
    state.reprioritized(url(2), 0.7)
    state.reprioritized(url(1), 5.0)  # done: its row is not touched
    state.abandon()  # a crash: only what was committed, plus this last commit
    resumed = CrawlState.open(tmp_path / "s", settings)
    pending = {e.url: e.priority for e in resumed.pending()}
    resumed.abandon()
    assert pending == {url(0): 0.9, url(2): 0.7}
    frontier = Frontier(Politeness(respect_robots=False))
    for entry in CrawlState.open(tmp_path / "s", settings).pending():
        frontier.put(entry)
    assert [e.url for e in simulate(lambda: drain(frontier))] == [url(0), url(2)]


# -- admission: a link to a queued URL -----------------------------------------------------------


def _admission(state: CrawlState | None = None) -> tuple[Admission, Frontier]:
    config = Config().override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    scope = make_scope(config)
    scope.add_host("s.test")
    frontier = make_frontier(config)
    adm = Admission(urls=make_urls(config), scope=scope,
                    dedup=SeenTiers(Sieve(capacity=1000, error_rate=1e-6)), frontier=frontier,
                    stats=CrawlStats(), state=state)  # fmt: skip
    return adm, frontier


def test_admission_raises_a_queued_url_found_again_with_a_better_link(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", {"test": 1})
    adm, frontier = _admission(state)
    scored: list[tuple[str, str]] = []

    def score(link: Link) -> float:
        scored.append((link.url.rsplit("/", 1)[1], link.anchor))
        return 1.0 if "standby" in link.anchor else 0.1

    def anchors(**texts: str) -> dict[str, tuple[str, str, str]]:
        return {href: (text, "", "") for href, text in texts.items()}

    async def main() -> list[str]:
        index = Entry(url="http://s.test/", key="http://s.test/")
        links = ["x", "y", "z"]
        new = await adm.scored_links(index, links, "http://s.test/", score,
                                     anchors=anchors(x="x", y="y", z="z"))  # fmt: skip
        assert new == 3
        taken = await frontier.get()  # x: in flight from now on
        assert taken is not None and taken.url == "http://s.test/x"
        scored.clear()
        guide = Entry(url="http://s.test/guide", key="http://s.test/guide", depth=1)
        better = anchors(x="standby x", y="y", z="standby z")
        new = await adm.scored_links(guide, links, "http://s.test/", score, anchors=better)
        assert new == 0  # nothing new: z raised, y kept, x (in flight) not even scored
        assert sorted(scored) == [("y", "y"), ("z", "standby z")]
        assert frontier.stats.raised == 1
        frontier.done(taken)
        return [e.url for e in await drain(frontier)]

    assert simulate(main) == ["http://s.test/z", "http://s.test/y"]
    assert adm.stats.duplicates == 3
    state.completed("http://s.test/x")
    state.abandon()
    resumed = CrawlState.open(tmp_path / "s", {"test": 1})
    assert {e.key: e.priority for e in resumed.pending()} == {
        "http://s.test/y": 0.1, "http://s.test/z": 1.0,
    }  # fmt: skip
    resumed.abandon()


# -- end to end on loopback ----------------------------------------------------------------------

_SITE = {
    "/": '<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a> <a href="/d">d</a> '
    '<a href="/guide">standby guide</a>',
    "/guide": '<p>All about it: <a href="/d">standby setup</a></p>',
}


async def _site(request: web.Request) -> web.Response:
    if request.path == "/robots.txt":
        return web.Response(status=404)
    body = _SITE.get(request.path, "<p>nothing here</p>")
    return web.Response(text=f"<title>{request.path}</title>{body}", content_type="text/html")


def _by_anchor(link: Link) -> float:
    return 1.0 if "standby" in link.anchor else 0.1


async def _order(origin: str) -> list[str]:
    config = (
        Config().override("politeness", delay=0.0, ip_delay=0.0).override("crawl", concurrency=1)
    )
    async with Crawler(config, score=_by_anchor) as crawler:
        return [r.url.removeprefix(origin) async for r in crawler.crawl([origin + "/"])]


async def test_a_better_link_found_later_gets_a_queued_url_fetched_sooner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # /d is first linked from / with the anchor "d" (0.1), then from /guide with "standby
    # setup" (1.0): raised, it is fetched right after /guide instead of after /a, /b, /c.
    async with serve(_site) as port:
        origin = f"http://127.0.0.1:{port}"
        raised = await _order(origin)
        monkeypatch.setattr(Frontier, "reprioritize", lambda *args: False)
        kept = await _order(origin)
    assert raised == ["/", "/guide", "/d", "/a", "/b", "/c"]
    assert kept == ["/", "/guide", "/a", "/b", "/c", "/d"]


async def test_a_raised_priority_survives_an_interrupted_crawl_and_its_resume(
    tmp_path: Path,
) -> None:
    # budget 2: / and /guide are fetched, /guide raises /d; the resume fetches /d first.
    async with serve(_site) as port:
        origin = f"http://127.0.0.1:{port}"
        config = (
            Config()
            .override("politeness", delay=0.0, ip_delay=0.0)
            .override("crawl", concurrency=1)
        )
        runs = []
        for budget in (2, 3):
            budgeted = config.override("crawl", max_pages=budget)
            state = CrawlState.open(tmp_path / "s", settings(config))
            async with Crawler(budgeted, score=_by_anchor, state=state) as crawler:
                results = [r async for r in crawler.crawl([origin + "/"])]
            runs.append([r.url.removeprefix(origin) for r in results])
            if budget == 2:
                reopened = CrawlState.open(tmp_path / "s", settings(config))
                pending = {e.url.removeprefix(origin): e.priority for e in reopened.pending()}
                reopened.abandon()
                assert pending == {"/a": 0.1, "/b": 0.1, "/c": 0.1, "/d": 1.0}
    assert runs == [["/", "/guide"], ["/d"]]
