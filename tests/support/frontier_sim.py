"""Helpers shared by several test modules (moved from test_frontier.py)."""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from crawler.frontier import (
    Entry,
    EntryKind,
    Frontier,
    Outcome,
    host_key,
)
from crawler.frontier.robots import ALLOW_ALL, RobotsPolicy, policy_from_response
from crawler.testing.simtime import SimulatedLoop

T = TypeVar("T")


Respond = Callable[[Entry, float], tuple[Outcome | None, bool]]


Record = tuple[float, float, Entry]  # start, end, entry


def simulate(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    with asyncio.Runner(loop_factory=SimulatedLoop) as runner:
        return runner.run(main())


def page(url: str, depth: int = 0) -> Entry:
    return Entry(url=url, key=url, depth=depth)


def fill(frontier: Frontier, hosts: int, per_host: int, scheme: str = "http") -> None:
    for i in range(per_host):
        for h in range(hosts):
            assert frontier.put(page(f"{scheme}://h{h}.test/p{i}"))


async def crawl(
    frontier: Frontier,
    *,
    workers: int = 4,
    fetch: float | Callable[[Entry], float] = 0.1,
    respond: Respond | None = None,
    robots: Callable[[Entry], RobotsPolicy] | None = None,
) -> list[Record]:
    """Workers that fetch in simulated time; returns (start, end, entry) for every hand-out."""
    loop = asyncio.get_running_loop()
    log: list[Record] = []

    async def worker() -> None:
        while (entry := await frontier.get()) is not None:
            start = loop.time()
            outcome, retry = None, False
            if entry.kind is not EntryKind.REFUSED:
                await asyncio.sleep(fetch(entry) if callable(fetch) else fetch)
                if entry.kind is EntryKind.ROBOTS:
                    frontier.set_robots(entry.url, robots(entry) if robots else ALLOW_ALL)
                elif respond is not None:
                    outcome, retry = respond(entry, start)
            log.append((start, loop.time(), entry))
            frontier.done(entry, outcome, retry=retry)

    await asyncio.gather(*(worker() for _ in range(workers)))
    return log


def starts_by_host(log: list[Record]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for start, _, entry in log:
        if entry.kind is not EntryKind.REFUSED:
            out[host_key(entry.url)].append(start)
    return out


def min_gap(starts: list[float]) -> float:
    s = sorted(starts)
    return min((b - a for a, b in itertools.pairwise(s)), default=float("inf"))


def robots_body(text: str) -> Callable[[Entry], RobotsPolicy]:
    return lambda entry: policy_from_response(200, text.encode(), "sieve-crawler/0.1")
