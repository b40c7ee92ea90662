"""One scored-admission algorithm over two stores: the same pages through an in-memory crawl and
a crawl shared through Redis give the same answers, counters and queued priorities."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from crawler.admission.gate import Admission
from crawler.admission.shared import SharedAdmission
from crawler.cluster import ClusterNode
from crawler.config.load import Config
from crawler.engine.components import make_frontier, make_scope, make_sieve, make_urls, settings
from crawler.focus.scoring import Link
from crawler.frontier.entries import Entry
from crawler.output.results import CrawlStats
from crawler.sieve import SeenTiers

S = "http://s.test/"
MAX_PAGES = 6


def _config(redis_url: str = "") -> Config:
    config = Config().override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    config = config.override("focus", keywords=("replication",))
    return config.override("cluster", redis=redis_url, crawl_id="stores") if redis_url else config


def _gate(config: Config, node: ClusterNode | None) -> Admission:
    scope = make_scope(config)
    scope.add_host("s.test")
    gate = {"urls": make_urls(config), "scope": scope, "dedup": SeenTiers(make_sieve(config)),
            "stats": CrawlStats(), "max_pages": MAX_PAGES}  # fmt: skip
    if node is None:
        return Admission(frontier=make_frontier(config), **gate)  # type: ignore[arg-type]
    return SharedAdmission(shared=node, **gate)


def _scores(table: dict[int, float | None]) -> Callable[[Link], float | None]:
    return lambda link: table.get(int(link.url.rsplit("/", 1)[1].split(".")[0]), 1.0)


# pages: (links as page numbers, score per page number; unlisted: 1.0; None: skipped)
PAGES: list[tuple[list[int], dict[int, float | None]]] = [
    ([0, 1, 2, 3], {1: None, 2: 0.5}),  # 3 admitted, 1 skipped
    ([0, 1, 2, 4], {0: 3.0, 2: 0.1}),  # 0 raised, 2 not lowered, 1 skipped before, 4 new
    ([1, 5, 2], {5: None, 2: 2.0}),  # 1 a duplicate, 5 skipped, 2 raised
    ([6, 5, 7, 8, 9], {}),  # 5 a duplicate; 6, 7 admitted; then max_pages: 8, 9 over it
]


async def _run(gate: Admission, queued: Callable[[str], object]) -> list[object]:
    answers: list[object] = []
    parent = Entry(S, S, 0)
    for numbers, table in PAGES:
        hrefs = [f"{S}{n}.html" for n in numbers]
        answers.append(await gate.scored_links(parent, hrefs, S, _scores(table)))
    stats = gate.stats
    answers += [stats.admitted, stats.duplicates, stats.over_limit, dict(stats.scope_refused)]
    for n in range(10):
        answers.append(await _maybe_await(queued(f"{S}{n}.html")))
    return answers


async def _maybe_await(value: object) -> object:
    if hasattr(value, "__await__"):
        return await value  # type: ignore[misc]
    return value


@pytest.fixture
async def node(redis_url: str) -> AsyncIterator[ClusterNode]:
    config = _config(redis_url)
    node = ClusterNode(config, settings(config))
    await node.open(dict)
    yield node
    await node.close(dict)


async def test_the_same_pages_give_the_same_answers_in_memory_and_through_redis(
    node: ClusterNode,
) -> None:
    memory = _gate(_config(), None)
    frontier = memory.frontier
    assert frontier is not None
    in_memory = await _run(memory, lambda url: frontier.queued_priority(url, url))
    through_redis = await _run(_gate(node.config, node),
                               lambda url: node.frontier.queued_priority(url, url))  # fmt: skip
    assert in_memory == through_redis
    assert in_memory[:4] == [3, 1, 0, 2]  # admitted per page
    assert in_memory[4:8] == [MAX_PAGES, 6, 2, {"score": 2}]
    assert in_memory[8:] == [3.0, None, 2.0, 1.0, 1.0, None, 1.0, 1.0, None, None]
