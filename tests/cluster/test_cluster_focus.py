"""A focused crawl shared through Redis: scored admission, raising queued URLs across
processes, re-scoring, and the fetch budget counted over every process.

Several crawlers in one test process, each with its own Redis connection and owner id (as
separate processes would), against a real `redis-server` on loopback.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web
from redis.asyncio import Redis

from crawler.admission.shared import SharedAdmission
from crawler.cluster import ClusterNode
from crawler.config.load import Config
from crawler.engine.components import make_scope, make_sieve, make_urls, settings
from crawler.engine.crawler import Crawler
from crawler.engine.focus import Focus
from crawler.errors import ScoreError, SharedStateError
from crawler.focus.budget import FetchBudget
from crawler.focus.scoring import Link
from crawler.focus.shared_budget import SharedBudget
from crawler.frontier.entries import Entry
from crawler.output.results import CrawlResult, CrawlStats
from crawler.sieve import SeenTiers
from crawler.testing.fixture import FixtureSite
from tests.support.server import serve, site_config

TOPIC = [f"/standby-{i}" for i in range(10)]
OTHER = [f"/misc-{i}" for i in range(10)]
S = "http://s.test/"
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 8


def _html(path: str) -> str:
    if path == "/":
        links = "".join(
            f'<li>About {"replication" if p in TOPIC else "cooking"}: <a href="{p}">{p[1:]}</a>'
            for p in OTHER + TOPIC  # the topic's links last: breadth-first would take them last
        )
        return f"<title>Home</title><ul>{links}</ul>"
    return f"<title>{path}</title><p>{path}</p><p><a href=/>home</a></p>"


async def _handler(request: web.Request) -> web.Response:
    if request.path not in {"/", *TOPIC, *OTHER}:
        return web.Response(status=404)
    return web.Response(text=_html(request.path), content_type="text/html")


@pytest.fixture
async def origin() -> AsyncIterator[str]:
    async with serve(_handler) as port:
        yield f"http://127.0.0.1:{port}"


def _config(url: str, **crawl: object) -> Config:
    config = Config().override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    config = config.override("crawl", **{"concurrency": 2, **crawl})
    return config.override("cluster", redis=url, crawl_id="f")


def topic_first(link: Link) -> float:
    return 2.0 if "replication" in link.context else 0.5


async def _crawl(crawler: Crawler, seeds: list[str]) -> list[CrawlResult]:
    async with crawler:
        return [r async for r in crawler.crawl(seeds)]


def _page_results(crawler: Crawler) -> int:
    s = crawler.stats
    return s.pages - s.robots_refused - s.host_down


@pytest.mark.slow
async def test_a_focused_shared_crawl_fetches_each_url_once(
    site: FixtureSite, redis_url: str
) -> None:
    config = site_config(site, concurrency=4).override("cluster", redis=redis_url, crawl_id="t")
    scored: list[Link] = []

    def score(link: Link) -> float:
        scored.append(link)
        return float(len(link.url) % 5)

    a, b = Crawler(config, score=score), Crawler(config, score=score)
    ra, rb = await asyncio.gather(_crawl(a, site.seeds), _crawl(b, site.seeds))
    keys = [r.key for r in ra + rb]
    assert len(keys) == len(set(keys)), "a URL was fetched by both"
    assert set(keys) == site.expected() | site.refused()
    assert ra and rb, "both took part"
    assert scored and all(r.relevance is None for r in ra + rb)  # a score fn rates no page


async def test_best_first_and_the_budget_hold_across_processes(origin: str, redis_url: str) -> None:
    config = _config(redis_url, max_pages=11, concurrency=1)
    a, b = Crawler(config, score=topic_first), Crawler(config, score=topic_first)
    ra, rb = await asyncio.gather(_crawl(a, [origin + "/"]), _crawl(b, [origin + "/"]))
    fetched = [r.url.removeprefix(origin) for r in ra + rb]
    assert len(fetched) == len(set(fetched))
    # the shared budget: 11 page results, and at most the processes' concurrency beyond it
    spent = _page_results(a) + _page_results(b)
    assert 11 <= spent <= 11 + 2 and spent == len(fetched)
    assert set(TOPIC) <= set(fetched), "the topic's pages go first, whichever process asks"
    assert len(set(OTHER) & set(fetched)) == spent - 11  # only what ran past the budget
    assert a.budget is not None and a.budget.exhausted and not a.complete


async def test_a_shared_crawl_builds_one_fetch_budget_the_shared_one(
    origin: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[FetchBudget] = []
    init = FetchBudget.__init__

    def counted(self: FetchBudget, limit: int) -> None:
        built.append(self)
        init(self, limit)

    monkeypatch.setattr(FetchBudget, "__init__", counted)
    crawler = Crawler(_config(redis_url, max_pages=3), score=topic_first)
    await _crawl(crawler, [origin + "/"])
    assert [type(b) for b in built] == [SharedBudget] and crawler.budget is built[0]


async def test_a_second_run_with_a_larger_budget_goes_on(origin: str, redis_url: str) -> None:
    first = Crawler(_config(redis_url, max_pages=5), score=topic_first)
    done = await _crawl(first, [origin + "/"])
    again = Crawler(_config(redis_url, max_pages=8), score=topic_first)
    more = await _crawl(again, [origin + "/"])
    assert len(done) >= 5 and len(done) + len(more) >= 8
    assert len(done) + len(more) <= 8 + 1  # the second run spends only what is left
    assert not {r.url for r in done} & {r.url for r in more}


@pytest.mark.slow
async def test_skipped_links_are_counted_and_not_fetched(origin: str, redis_url: str) -> None:
    def score(link: Link) -> float | None:
        return None if link.url.endswith(("-0", "-1")) else 1.0

    a, b = Crawler(_config(redis_url), score=score), Crawler(_config(redis_url), score=score)
    ra, rb = await asyncio.gather(_crawl(a, [origin + "/"]), _crawl(b, [origin + "/"]))
    fetched = {r.url.removeprefix(origin) for r in ra + rb}
    assert fetched == {"/", *TOPIC, *OTHER} - {"/standby-0", "/standby-1", "/misc-0", "/misc-1"}
    assert a.stats.scope_refused["score"] + b.stats.scope_refused["score"] == 4


async def test_a_raising_score_fn_ends_a_shared_crawl_with_a_clear_error(
    origin: str, redis_url: str
) -> None:
    def score(link: Link) -> float:
        raise ValueError("no model")

    with pytest.raises(ScoreError, match=r"raised ValueError: no model for link http"):
        await _crawl(Crawler(_config(redis_url), score=score), [origin + "/"])
    # the page whose links failed went back to the shared frontier, its budget slot too: a run
    # with a score function that works crawls the whole site (was: nothing, the page was done)
    again = Crawler(_config(redis_url), score=topic_first)
    results = await _crawl(again, [origin + "/"])
    assert {r.url.removeprefix(origin) for r in results} == {"/", *TOPIC, *OTHER}


async def test_a_process_joining_after_the_budget_is_spent_leaves_the_crawl_unfinished(
    origin: str, redis_url: str
) -> None:
    first = Crawler(_config(redis_url, max_pages=5), score=topic_first)
    assert len(await _crawl(first, [origin + "/"])) >= 5
    late = Crawler(_config(redis_url, max_pages=5), score=topic_first)
    assert await _crawl(late, [origin + "/"]) == []
    assert late.budget is not None and late.budget.exhausted
    assert not late.complete and late.frontier is not None and len(late.frontier) >= 10
    # a focused process without a budget would not keep the others' (refused by name)
    with pytest.raises(SharedStateError, match=r"other settings \(crawl.fetch_budget\)"):
        await _crawl(Crawler(_config(redis_url), score=topic_first), [origin + "/"])


# -- one page's links through two processes' admissions --------------------------------------


Joined = tuple[ClusterNode, SharedAdmission]
Nodes = Callable[[], Awaitable[Joined]]


@pytest.fixture
async def nodes(redis_url: str) -> AsyncIterator[Nodes]:
    """Opens a process's part of the shared crawl, with its Admission; all closed after."""
    opened: list[ClusterNode] = []

    async def join() -> Joined:
        config = _config(redis_url).override("focus", keywords=("replication",))
        node = ClusterNode(config, settings(config))
        await node.open(dict)
        opened.append(node)
        scope = make_scope(config)
        scope.add_host("s.test")
        admission = SharedAdmission(urls=make_urls(config), scope=scope,
                                    dedup=SeenTiers(make_sieve(config)), stats=CrawlStats(),
                                    shared=node)  # fmt: skip
        return node, admission

    yield join
    for node in opened:
        await node.close(dict)


async def test_a_better_link_raises_a_url_another_process_queued(nodes: Nodes) -> None:
    (na, a), (_, b) = await nodes(), await nodes()
    hrefs = [f"{S}{i}.html" for i in range(4)]
    page = Entry(url=S, key=S, depth=0)
    assert await a.scored_links(page, hrefs[:3], S, lambda link: 0.5) == 3
    scores = {hrefs[0]: 3.0, hrefs[1]: 0.1, hrefs[2]: 0.5, hrefs[3]: 1.0}
    assert await b.scored_links(page, hrefs, S, lambda link: scores[link.url]) == 1
    assert b.stats.duplicates == 3 and b.stats.admitted == 1
    queued = [await na.frontier.queued_priority(h, h) for h in hrefs]
    assert queued == [3.0, 0.5, 0.5, 1.0]  # raised by the better link; never lowered by one
    taken = await na.frontier.get()  # the best: in flight, no longer queued
    assert taken is not None and taken.url == hrefs[0]
    scored: list[str] = []

    def again(link: Link) -> float:
        scored.append(link.url)
        return 2.0

    # as in memory: the links to queued URLs are scored, not the one in flight, though
    # this process never sent it (one script call tells which are queued, seen or new)
    assert await b.scored_links(page, hrefs, S, again) == 0
    assert scored == hrefs[1:]
    assert [await na.frontier.queued_priority(h, h) for h in hrefs[1:]] == [2.0, 2.0, 2.0]


async def test_rescoring_sets_queued_priorities_and_forgets_the_others(nodes: Nodes) -> None:
    node, admission = await nodes()
    hrefs = [f"{S}{i}.html" for i in range(3)]
    assert await admission.scored_links(Entry(S, S, 0), hrefs, S, lambda link: 1.0) == 3
    taken = await node.frontier.get()  # 0.html: in flight, no longer queued
    assert taken is not None and taken.url == hrefs[0]

    class Later:
        threshold = 0.5

        def __init__(self) -> None:
            self.forgotten: list[str] = []

        def page(self, text: object) -> float:
            return 0.0

        def link(self, link: Link) -> float:
            return 0.0

        def rescore(self, size: int) -> list[tuple[str, str, float]]:
            return [(hrefs[0], hrefs[0], 9.0), (hrefs[1], hrefs[1], 4.0),
                    (hrefs[2], hrefs[2], -1.0)]  # fmt: skip

        def forget(self, url: str) -> None:
            self.forgotten.append(url)

    scorer = Later()
    focus = Focus(None, scorer, CrawlStats())
    assert focus.rescorer is scorer
    assert await focus.rescore(scorer, admission) == 2  # one raised, one lowered
    assert scorer.forgotten == [hrefs[0]]
    queued = [await node.frontier.queued_priority(h, h) for h in hrefs[1:]]
    assert queued == [4.0, -1.0]


async def test_peek_tells_queued_seen_and_new_keys_apart(nodes: Nodes) -> None:
    node, admission = await nodes()
    hrefs = [f"{S}{i}.html" for i in range(3)]
    assert await admission.scored_links(Entry(S, S, 0), hrefs, S, lambda link: 1.5) == 3
    taken = await node.frontier.get()  # in flight: seen, not queued
    assert taken is not None and taken.url == hrefs[0]
    items = [(h, h) for h in [*hrefs, S + "new.html"]]
    assert await node.frontier.peek(items) == [True, 1.5, 1.5, False]
    assert await node.frontier.peek([]) == []


async def test_set_priorities_in_one_round_trip(nodes: Nodes, redis_url: str) -> None:
    node, admission = await nodes()
    hrefs = [f"{S}{i}.html" for i in range(3)]
    assert await admission.scored_links(Entry(S, S, 0), hrefs, S, lambda link: 1.0) == 3
    items = [(hrefs[0], hrefs[0], 2.0), (hrefs[1], hrefs[1], 0.0), (S + "x", S + "x", 5.0)]
    client = Redis.from_url(redis_url)
    await client.config_resetstat()
    assert await node.frontier.set_priorities(items, lower=False) == [1.0, 1.0, None]
    calls = await client.info("commandstats")
    await client.aclose()
    assert calls["cmdstat_evalsha"]["calls"] == 3
    assert not [name for name in calls if "exists" in name]  # no check before the pipeline
    assert [await node.frontier.queued_priority(h, h) for h in hrefs[:2]] == [2.0, 1.0]
    assert await node.frontier.set_priorities(items) == [2.0, 1.0, None]  # lowers too
    assert await node.frontier.queued_priority(hrefs[1], hrefs[1]) == 0.0
    assert await node.frontier.set_priorities([]) == []
    with pytest.raises(ValueError, match="must be a number"):
        await node.frontier.set_priorities([(S, S, float("nan"))])


async def test_the_shared_budget_counts_every_process(redis_url: str) -> None:
    client = Redis.from_url(redis_url)
    a = SharedBudget(client, "b", 3, poll=0.01)
    b = SharedBudget(client, "b", 3, poll=0.01)
    await a.open()
    await b.open()
    assert await a.claim() and await a.claim()
    a.settle(True)
    a.settle(False)  # given back
    await a.drain()
    assert int(await client.get("b") or 0) == 1
    assert await b.claim() and await b.claim()  # b reads 1 spent: 2 slots left
    b.settle(True)
    b.settle(True)
    await b.drain()
    assert b.exhausted and not await b.claim()
    assert not await a.claim()  # a reads the counter again: spent by b
    assert a.exhausted and int(await client.get("b") or 0) == 3
    # a slot held by this process's fetch in flight: claim waits for it to be settled
    c = SharedBudget(client, "c", 1, poll=0.01)
    await c.open()
    assert await c.claim()
    waiting = asyncio.create_task(c.claim())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    c.settle(False)
    assert await asyncio.wait_for(waiting, 1.0)


async def test_one_process_through_redis_fetches_in_the_in_memory_order(redis_url: str) -> None:
    # The home page links 30 pages alternating between two directories, all at one priority
    # (their anchors say nothing); pages under /wal/ are about the topic, and link home. The
    # learner, its re-scoring (every 10 pages rated) and the links decide the order: through
    # Redis they must decide it as in memory, one fetch at a time.
    async def handler(request: web.Request) -> web.Response:
        path = request.path
        if path == "/":
            body = "".join(f'<p><a href="/{d}/{i}">page {i}</a></p>' for i in range(15)
                           for d in ("misc", "wal"))  # fmt: skip
        elif path.startswith(("/misc/", "/wal/")):
            words = "write-ahead log " * 5 if path.startswith("/wal/") else ""
            body = f"<p>{words} {FILLER}</p><p><a href=/>home</a></p>"
        else:
            return web.Response(status=404)
        return web.Response(text=f"<title>t</title>{body}", content_type="text/html")

    config = _config(redis_url, concurrency=1).override("focus", keywords=("write-ahead log",))
    orders = []
    async with serve(handler) as port:
        for shared in (False, True):
            one = config if shared else config.override("cluster", redis="")
            results = await _crawl(Crawler(one), [f"http://127.0.0.1:{port}/"])
            orders.append([r.url.split("/")[3] for r in results])
    memory, redis = orders
    assert memory[1:11] == ["misc", "wal"] * 5 and memory[11:21] == ["wal"] * 10  # it learned
    assert redis == memory
