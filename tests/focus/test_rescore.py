"""Re-scoring queued URLs as a focused crawl learns: the frontier lowering a priority when asked
(rule 10's ``lower=True``), the topic scorer keeping each queued URL's best link evidence and
scoring it again, and `Focus.rescore` applying the new priorities. Simulated time: no sleeps."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from aiohttp import web

from crawler.admission.gate import Admission
from crawler.config.load import Config
from crawler.engine.components import make_frontier, make_scope, make_urls
from crawler.engine.crawler import Crawler
from crawler.engine.focus import Focus
from crawler.focus.relevance import TopicScorer
from crawler.focus.relevance.evidence import EvidenceTable
from crawler.focus.scoring import Link, PageText, Rescorer
from crawler.frontier import Frontier
from crawler.frontier.entries import Entry
from crawler.frontier.settings import Politeness
from crawler.output.results import CrawlStats
from crawler.sieve import SeenTiers, Sieve
from crawler.state.crawlstate import CrawlState
from tests.support.frontier_sim import simulate
from tests.support.priority import drain, page
from tests.support.server import serve

A = "http://a.test/"
B = "http://b.test/"
S = "http://s.test/"
FILLER = "the quick brown fox jumps over the lazy dog while nothing else happens here. "


def url(i: int | str, base: str = A) -> str:
    return f"{base}{i}"


def change(frontier: Frontier, target: str, priority: float) -> bool:
    return frontier.reprioritize(target, target, priority, lower=True)


# -- the frontier -------------------------------------------------------------------------------


def test_lowering_places_the_entry_after_equal_or_higher_and_counts_no_raise() -> None:
    async def main() -> tuple[list[Entry], int]:
        frontier = Frontier(Politeness(respect_robots=False))
        for i, p in enumerate([0.9, 0.5, 0.2, 0.5]):
            assert frontier.put(page(url(i), p))
        assert not frontier.reprioritize(url(0), url(0), 0.1)  # without lower: never lowered
        assert change(frontier, url(0), 0.5)  # ties with 1 and 3: after them
        assert not change(frontier, url(0), 0.5)  # equal: nothing changes
        assert change(frontier, url(2), 0.7)  # a raise through the same call
        assert frontier.queued_priority(url(0), url(0)) == 0.5
        assert len(frontier) == 4
        got = await drain(frontier)
        return got, frontier.stats.raised

    got, raised = simulate(main)
    assert [(e.url, e.priority) for e in got] == [
        (url(2), 0.7), (url(1), 0.5), (url(3), 0.5), (url(0), 0.5)
    ]  # fmt: skip
    assert raised == 1  # the lowering is not a raise


def test_a_host_whose_best_url_was_lowered_yields_to_a_better_host() -> None:
    async def main() -> list[str]:
        frontier = Frontier(Politeness(per_host_concurrency=1, respect_robots=False))
        assert frontier.put(page(url(0), 0.9))
        assert frontier.put(page(url(1), 0.1))
        assert frontier.put(page(url(0, B), 0.5))
        assert change(frontier, url(0), 0.0)  # a.test's best is now 0.1
        return [e.url for e in await drain(frontier)]

    assert simulate(main) == [url(0, B), url(1), url(0)]


def test_random_changes_match_a_reference_model() -> None:
    # puts, raises, lowerings and hand-outs at random (one host), against a plain model: the
    # best priority first; ties in the order of the last put or change.
    rng = random.Random(16)

    async def main() -> None:
        frontier = Frontier(Politeness(respect_robots=False))
        model: dict[str, tuple[float, int]] = {}
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
                priority = model[target][0] + rng.choice([-0.3, -0.1, 0.0, 0.1, 0.3])
                changed = change(frontier, target, priority)
                assert changed == (priority != model[target][0])
                if changed:
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

    simulate(main)


# -- the scorer's evidence ----------------------------------------------------------------------


def link(target: str, *, anchor: str = "", parent: str = S, depth: int = 1) -> Link:
    return Link(target, target, anchor, "", "", depth, parent, None, None)


def test_a_url_keeps_the_evidence_of_its_best_link() -> None:
    scorer = TopicScorer(["replication standby"])
    target = url("x.html", S)
    bare = scorer.link(link(target, depth=3))
    named = scorer.link(link(target, anchor="replication", depth=3))
    assert named > bare
    assert scorer.link(link(target, depth=3)) == named  # a worse link changes nothing
    (_, _, now), *_ = scorer.rescore(10)
    assert now == named


def test_rescoring_follows_what_the_learner_learned_since() -> None:
    scorer = TopicScorer(["replication standby"])
    queued = {d: scorer.link(link(url(f"{d}/queued.html", S))) for d in ("good", "bad")}
    assert queued["good"] == queued["bad"]  # nothing learned yet
    relevant = "replication standby " * 5 + FILLER * 20
    for i in range(6):  # rated pages: the good/ directory relevant, bad/ not
        for d, text in (("good", relevant), ("bad", FILLER * 20)):
            rated = url(f"{d}/{i}.html", S)
            scorer.link(link(rated))
            scorer.page(PageText(rated, "", "", text))
    now = {u.split("/")[-2]: p for u, _, p in scorer.rescore(100)}
    assert set(now) == {"good", "bad"}  # the rated pages are not rescored any more
    assert now["good"] > queued["good"] > now["bad"]


def test_forgotten_urls_are_not_rescored_and_batches_go_round_robin() -> None:
    scorer = TopicScorer(["wal"])
    targets = [url(f"{i}.html", S) for i in range(10)]
    for target in targets:
        scorer.link(link(target))
    scorer.forget(targets[0])
    seen = [u for _ in range(3) for u, _, _ in scorer.rescore(3)]
    assert seen == targets[1:10]  # three batches of three: each URL once
    assert [u for u, _, _ in scorer.rescore(3)] == targets[1:4]  # and around again


def test_the_evidence_table_is_bounded() -> None:
    table = EvidenceTable(capacity=5)
    for i in range(20):
        table.add(url(i), url(i), 0.0)
        assert len(table) <= 5
    assert [u for u, _, _ in table.batch(10)] == [url(i) for i in range(15, 20)]
    assert table.add(url(19), url(19), -1.0) == 0.0  # the better evidence is kept
    assert table.add(url(19), url(19), 2.0) == 2.0


# -- Focus.rescore ------------------------------------------------------------------------------


def _admission(state: CrawlState | None = None) -> tuple[Admission, Frontier]:
    config = Config().override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    scope = make_scope(config)
    scope.add_host("s.test")
    frontier = make_frontier(config)
    adm = Admission(urls=make_urls(config), scope=scope,
                    dedup=SeenTiers(Sieve(capacity=1000, error_rate=1e-6)), frontier=frontier,
                    stats=CrawlStats(), state=state)  # fmt: skip
    return adm, frontier


class FixedRescorer:
    """A stand-in scorer: every link 0, and `later` as its rescored priorities."""

    threshold = 0.5

    def __init__(self) -> None:
        self.later: dict[str, float] = {}
        self.forgotten: list[str] = []

    def page(self, text: PageText) -> float:
        return 0.0

    def link(self, link: Link) -> float:
        return 0.0

    def rescore(self, size: int) -> list[tuple[str, str, float]]:
        return [(u, u, p) for u, p in self.later.items()][:size]

    def forget(self, url: str) -> None:
        self.forgotten.append(url)


async def test_focus_rescore_raises_lowers_journals_and_forgets(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", {"test": 1})
    adm, frontier = _admission(state)
    scorer = FixedRescorer()
    assert isinstance(scorer, Rescorer)
    focus = Focus(None, scorer, CrawlStats())
    assert focus.rescorer is scorer
    parent = Entry(url=S, key=S, depth=0)
    hrefs = [f"{S}{i}.html" for i in range(4)]
    assert await adm.scored_links(parent, hrefs, S, scorer.link) == 4
    taken = await frontier.get()  # 0.html: in flight, no longer queued
    assert taken is not None and taken.url == hrefs[0]
    scorer.later = {hrefs[0]: 5.0, hrefs[1]: -1.0, hrefs[2]: 0.0, hrefs[3]: 2.0}
    assert await focus.rescore(scorer, adm) == 2  # 1 lowered, 3 raised; 2 unchanged
    assert scorer.forgotten == [hrefs[0]]
    frontier.done(taken)
    assert [(e.url, e.priority) for e in await drain(frontier)] == [
        (hrefs[3], 2.0), (hrefs[2], 0.0), (hrefs[1], -1.0)
    ]  # fmt: skip
    state.commit()
    state.abandon()
    resumed = CrawlState.open(tmp_path / "s", {"test": 1})
    journaled = {e.key: e.priority for e in resumed.pending()}
    assert journaled[hrefs[3]] == 2.0  # the raise was journaled
    assert journaled[hrefs[1]] == 0.0  # a lowering is not (the scorer starts over on resume)
    resumed.abandon()


def test_a_user_score_function_is_not_rescored() -> None:
    scorer = FixedRescorer()
    assert Focus(lambda link: 1.0, scorer, CrawlStats()).rescorer is None
    assert Focus(None, scorer, CrawlStats()).rescorer is scorer


async def test_a_focused_crawl_rescores_its_queue_as_it_learns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The home page links 30 pages, alternating between two directories, all queued at once
    # with the same priority (their anchors say nothing); pages under /wal/ are about the topic.
    # Every 10 pages rated the queue is re-scored: once /wal/ has proved relevant, its pages
    # still queued go before the /misc/ ones (without re-scoring they would keep alternating).
    async def handler(request: web.Request) -> web.Response:
        path = request.path
        if path == "/robots.txt":
            return web.Response(status=404)
        if path == "/":
            body = "".join(f'<p><a href="/{d}/{i}">page {i}</a></p>' for i in range(15)
                           for d in ("misc", "wal"))  # fmt: skip
        else:
            body = "<p>" + ("write-ahead log " * 5 if path.startswith("/wal/") else "") + FILLER
        return web.Response(text=f"<title>t</title>{body}", content_type="text/html")

    calls: list[int] = []
    original = Focus.rescore

    async def counted(self: Focus, rescorer: Rescorer, admission: Admission) -> int:
        calls.append(await original(self, rescorer, admission))
        return calls[-1]

    monkeypatch.setattr(Focus, "rescore", counted)
    config = (
        Config()
        .override("politeness", delay=0.0, ip_delay=0.0)
        .override("crawl", concurrency=1)
        .override("focus", keywords=("write-ahead log",))
    )
    async with serve(handler) as port:
        origin = f"http://127.0.0.1:{port}"
        async with Crawler(config) as crawler:
            urls = [r.url async for r in crawler.crawl([origin + "/"])]
    assert len(urls) == 31
    assert [u.split("/")[3] for u in urls[1:11]] == ["misc", "wal"] * 5  # the tie, in order
    assert calls and calls[0] > 0  # the first round (10 pages rated) moved queued URLs
    assert [u.split("/")[3] for u in urls[11:21]] == ["wal"] * 10  # then /wal/ first


async def test_a_focused_crawl_learns_from_the_pages_its_links_redirect_to() -> None:
    # /old/N redirect to /new/N: the learner rates the features of each /old/N link by the
    # page it leads to (was: never, the page's URL was not the one scored)
    async def handler(request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/robots.txt":
            return web.Response(status=404)
        if path.startswith("/old/"):
            raise web.HTTPMovedPermanently("/new/" + path[5:])
        body = "".join(f'<a href="/old/{i}">page {i}</a>' for i in range(4)) if path == "/" else ""
        text = "<p>write-ahead log " * 3 + FILLER
        return web.Response(text=f"<title>t</title>{body}{text}", content_type="text/html")

    config = (
        Config()
        .override("politeness", delay=0.0, ip_delay=0.0)
        .override("focus", keywords=("wal",))
    )
    async with serve(handler) as port, Crawler(config) as crawler:
        results = [r async for r in crawler.crawl([f"http://127.0.0.1:{port}/"])]
    assert sorted(r.status for r in results) == [200] * 5 + [301] * 4
    assert crawler.focus is not None and isinstance(crawler.focus.scorer, TopicScorer)
    assert crawler.focus.scorer._learner.observed == 4  # the four /new/ pages
