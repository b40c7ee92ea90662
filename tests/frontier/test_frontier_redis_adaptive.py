"""The adaptive delay (``[politeness] adaptive``) in the Redis frontier: two instances (two
"processes") report latencies of one host, and the shared delay moves exactly as the in-memory
rules (`hosts.PolitenessRules.response`) move a host's; a robots.txt Crawl-delay is its
floor. Simulated clock, real redis-server."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from redis.asyncio import Redis

from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.hosts import Host, PolitenessRules
from crawler.frontier.queues import HostQueue
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.robots import policy_from_response
from crawler.frontier.settings import Politeness
from tests.support.redis_frontier import PREFIX, Clock, frontier

HOST = "http://slow.test"


def memory_rules(delay: float, concurrency: int) -> PolitenessRules:
    return PolitenessRules(
        Politeness(
            delay=delay,
            per_host_concurrency=concurrency,
            max_delay=10.0,
            adaptive=True,
            backoff_base=1.0,
            backoff_max=300.0,
            max_retry_after=600.0,
            robots_ttl=86400.0,
            robots_attempts=3,
            max_host_failures=0,
        ),
        rng=random.Random(1),
    )


async def next_start(
    frontiers: list[RedisFrontier], clock: Clock, step: float = 0.05
) -> tuple[RedisFrontier, Entry]:
    """Move the clock until one of `frontiers` hands out an entry: (that one, the entry)."""
    for _ in range(100_000):
        for f in frontiers:
            entries, _, _, _ = await f.claim()
            if entries:
                return f, entries[0]
        clock.now = round(clock.now + step, 6)
    raise AssertionError("nothing handed out")


@pytest.mark.parametrize("concurrency", [1, 2])
async def test_the_shared_delay_moves_as_the_in_memory_one(
    clients: list[Redis], concurrency: int
) -> None:
    clock = Clock()
    kw: dict[str, Any] = dict(delay=0.5, per_host_concurrency=concurrency, max_delay=10.0,
                              adaptive=True)  # fmt: skip
    a, b = await frontier(clients[0], clock, **kw), await frontier(clients[1], clock, **kw)
    await a.put_many([Entry(url=f"{HOST}/p{i}", key=f"{HOST}/p{i}") for i in range(14)])
    rules, host = memory_rules(0.5, concurrency), Host(HOST + ":80", HostQueue(), 0.5, concurrency)
    # slow answers, an error (never speeds up), fast ones, one without a latency (a failure)
    latencies = [4.0, 4.0, 6.0, 4.0, None, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    statuses = [200, 200, 503, 200, None, 200, 200, 500, 200, 200, 200, 200, 200, 200]
    starts: list[float] = []
    for i, (latency, status) in enumerate(zip(latencies, statuses, strict=True)):
        # the two take turns asking first: each reports latencies of the one host
        claimer, entry = await next_start([a, b] if i % 2 else [b, a], clock)
        starts.append(clock.now)
        outcome = Outcome(status=status, latency=latency)
        assert await claimer.done(entry, outcome)
        rules.response(host, outcome, clock.now)
        stored = float(await clients[0].hget(f"{PREFIX}h:{HOST}:80", "delay") or 0)
        assert stored == pytest.approx(host.delay), (i, latency, status)
    gaps = [t2 - t1 for t1, t2 in itertools.pairwise(starts)]
    assert max(gaps) > 2.0  # slowed down by the slow answers
    assert gaps[-1] < 1.0  # and back towards the floor once fast
    assert min(gaps) >= 0.5 - 1e-6  # never below the configured delay


async def test_a_crawl_delay_is_the_floor_and_adaptive_keeps_a_higher_delay(
    clients: list[Redis],
) -> None:
    clock = Clock()
    kw: dict[str, Any] = dict(delay=0.5, max_delay=10.0, adaptive=True)
    a = await frontier(clients[0], clock, **kw)
    await a.put_many([Entry(url=f"{HOST}/p{i}", key=f"{HOST}/p{i}") for i in range(4)])
    key = f"{PREFIX}h:{HOST}:80"
    _, entry = await next_start([a], clock)
    assert await a.done(entry, Outcome(status=200, latency=8.0))  # delay (0.5 + 8) / 2
    assert float(await clients[0].hget(key, "delay") or 0) == pytest.approx(4.25)
    body = b"User-agent: *\nCrawl-delay: 2\n"
    await a.set_robots(HOST, policy_from_response(200, body, "sieve"), body)
    assert float(await clients[0].hget(key, "delay") or 0) == pytest.approx(4.25)  # kept
    for _ in range(3):  # fast answers bring it down to the Crawl-delay, not to 0.5
        _, entry = await next_start([a], clock)
        assert await a.done(entry, Outcome(status=200, latency=0.0))
    assert float(await clients[0].hget(key, "delay") or 0) == pytest.approx(2.0)


async def test_without_adaptive_latency_changes_nothing(clients: list[Redis]) -> None:
    clock = Clock()
    a = await frontier(clients[0], clock, delay=0.5)
    await a.put_many([Entry(url=f"{HOST}/p0", key=f"{HOST}/p0")])
    _, entry = await next_start([a], clock)
    assert await a.done(entry, Outcome(status=200, latency=8.0))
    assert float(await clients[0].hget(f"{PREFIX}h:{HOST}:80", "delay") or 0) == 0.5
