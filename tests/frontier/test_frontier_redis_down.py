"""The circuit breaker in the Redis frontier (crawler.frontier.redis.frontier), on a real
redis-server: a host whose fetches keep failing is put down for every process sharing the crawl, and
its other pages are refused at once (as tests/test_host_down.py asks of the in-memory frontier)."""

from __future__ import annotations

import asyncio
import io
import random
from collections.abc import Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from crawler.cluster import format_status, read_status
from crawler.engine.crawler import Crawler
from crawler.errors import ConnectError, ProtocolError
from crawler.frontier.entries import Entry, EntryKind, Outcome
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.testing.redis_server import RedisServer
from tests.support.down_site import down_site, pages
from tests.support.redis_frontier import PREFIX, Clock
from tests.support.redis_frontier import frontier as redis_frontier

Respond = Callable[[Entry], tuple[Outcome, bool]]
Log = list[tuple[float, int, Entry]]  # (claimed at, by which process, the entry)


async def frontier(client: Redis, clock: Clock, max_host_failures: int, **kw: Any) -> RedisFrontier:
    return await redis_frontier(client, clock, backoff_base=1.0, backoff_max=300.0,
                                max_host_failures=max_host_failures, rng=random.Random(3),
                                **kw)  # fmt: skip


def down_then(entry: Entry) -> tuple[Outcome, bool]:
    """down.test refuses connections (retried, as the engine does twice); up.test answers."""
    if entry.url.startswith("http://down.test/"):
        return Outcome(blame=ConnectError.blame, attempt=entry.retries), entry.retries < 2
    return Outcome(status=200), False


async def crawl(fs: list[RedisFrontier], clock: Clock, respond: Respond) -> Log:
    """One fetch at a time (0.01 s each), the processes `fs` claiming in turn; the clock jumps
    to the next ready time when nothing is ready. Every claimed entry, in order."""
    log: Log = []
    turn = 0
    while True:
        f = fs[turn % len(fs)]
        entries, ready_in, queued, leased = await f.claim()
        if not entries:
            if queued == 0 and leased == 0:
                return log
            assert ready_in is not None  # nothing is in flight here: some host is filed
            clock.now += max(ready_in, 0.001)
            continue
        turn += 1
        (entry,) = entries
        log.append((clock.now, turn % len(fs), entry))
        if entry.kind is EntryKind.REFUSED:  # its lease held no slot: the host stays free
            assert await f.done(entry)
            continue
        outcome, retry = respond(entry)
        clock.now += 0.01
        assert await f.done(entry, outcome, retry=retry)


def urls(log: Log, kind: EntryKind, host: str = "down.test") -> list[str]:
    return [e.url for _, _, e in log if e.kind is kind and e.url.startswith(f"http://{host}/")]


async def test_a_host_that_keeps_failing_is_put_down_and_its_pages_refused(
    clients: list[Redis], clock: Clock
) -> None:
    f = await frontier(clients[0], clock, 5)
    await f.put_many(pages("down.test", 50) + pages("up.test", 10))
    log = await crawl([f], clock, down_then)
    tried = [(e.url, e.retries) for _, _, e in log if e.kind is EntryKind.PAGE
             and e.url.startswith("http://down.test/")]  # fmt: skip
    # the 5th failure in a row puts the host down: /0 used up its retries (its failure is its
    # record), /1 failed twice and its retry is refused, never tried again
    assert tried == [("http://down.test/0", 0), ("http://down.test/0", 1),
                     ("http://down.test/0", 2), ("http://down.test/1", 0),
                     ("http://down.test/1", 1)]  # fmt: skip
    refused = [e for _, _, e in log if e.kind is EntryKind.REFUSED]
    assert sorted(e.url for e in refused) == sorted(e.url for e in pages("down.test", 50)[1:])
    assert refused[0].url == "http://down.test/1" and refused[0].retries == 2
    # at once: every refusal comes right after the failure that put the host down, at its time
    at = next(i for i, (_, _, e) in enumerate(log) if e.kind is EntryKind.REFUSED)
    assert all(e.kind is EntryKind.REFUSED for _, _, e in log[at : at + 49])
    assert log[at + 48][0] == log[at][0] and log[at][0] - log[0][0] < 60.0  # not hours
    assert f.refusal(refused[0]).startswith("host_down: 5 fetches in a row failed")
    assert all(f.refusal(e) == f.refusal(refused[0]) for e in refused)
    # the host that answers is not affected
    assert len(urls(log, EntryKind.PAGE, "up.test")) == 10
    assert urls(log, EntryKind.REFUSED, "up.test") == []
    stats = await f.stats()
    assert (stats.refused_robots, stats.queued, stats.in_flight) == (49, 0, 0)
    assert await clients[0].hget(PREFIX + "stats", "hosts_down") == b"1"


async def test_pages_admitted_after_the_host_went_down_are_refused_at_once(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock, 2, delay=5.0)
    await a.put_many(pages("down.test", 1))
    await crawl([a], clock, down_then)  # tried twice: down (its retry refused)
    b = await frontier(clients[1], clock, 2, delay=5.0)  # another process, no cache of it
    assert await b.put_many([Entry(url="http://down.test/late", key="http://down.test/late")])
    # at once: the host is backed off and within its delay, the refusal waits for neither
    entries, _, queued, leased = await b.claim(3)
    assert [(e.url, e.kind) for e in entries] == [("http://down.test/late", EntryKind.REFUSED)]
    assert (queued, leased) == (0, 1)  # leased until its result is out
    assert b.refusal(entries[0]).startswith("host_down: 2 fetches in a row failed")
    assert a.refusal(entries[0]) == b.refusal(entries[0])
    assert await b.done(entries[0]) and (await b.stats()).in_flight == 0
    assert await b.done(entries[0]) is False  # once


async def test_an_answer_resets_the_count(clients: list[Redis], clock: Clock) -> None:
    def flaky(entry: Entry) -> tuple[Outcome, bool]:  # failures and answers alternating
        if int(entry.url.rsplit("/", 1)[1]) % 2:
            return Outcome(status=200), False
        return Outcome(blame=ConnectError.blame, attempt=entry.retries), False

    f = await frontier(clients[0], clock, 3)
    await f.put_many(pages("flaky.test", 20))
    log = await crawl([f], clock, flaky)
    assert len(log) == 20 and all(e.kind is EntryKind.PAGE for _, _, e in log)


async def test_failures_of_the_urls_own_never_put_a_host_down(
    clients: list[Redis], clock: Clock
) -> None:
    def broken(entry: Entry) -> tuple[Outcome, bool]:
        return Outcome(blame=ProtocolError.blame, attempt=0), False  # the URL's own fault

    f = await frontier(clients[0], clock, 3)
    await f.put_many(pages("broken.test", 20))
    log = await crawl([f], clock, broken)
    assert len(log) == 20 and all(e.kind is EntryKind.PAGE for _, _, e in log)


async def test_suspect_streaks_count_as_failures_of_the_host(
    clients: list[Redis], clock: Clock
) -> None:
    def error_500(entry: Entry) -> tuple[Outcome, bool]:  # SUSPECT: 3 URLs in a row blame the host
        return Outcome(status=500, attempt=entry.retries), False

    f = await frontier(clients[0], clock, 2)
    await f.put_many(pages("flaky.test", 20))
    log = await crawl([f], clock, error_500)
    assert [e.kind for _, _, e in log] == [EntryKind.PAGE] * 6 + [EntryKind.REFUSED] * 14


async def test_zero_never_gives_up(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock, 0)
    await f.put_many(pages("down.test", 6))
    log = await crawl([f], clock, down_then)
    assert all(e.kind is EntryKind.PAGE for _, _, e in log)
    assert len(log) == 18  # every URL tried three times
    assert await clients[0].hget(PREFIX + "h:http://down.test:80", "down") is None


async def test_a_negative_count_is_refused(clients: list[Redis], clock: Clock) -> None:
    with pytest.raises(ValueError, match="max_host_failures"):
        await frontier(clients[0], clock, -1)


async def test_two_processes_put_a_host_down_together_and_share_its_refusals(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock, 4)
    b = await frontier(clients[1], clock, 4)
    await a.put_many(pages("down.test", 30))
    log = await crawl([a, b], clock, lambda e: (Outcome(blame=ConnectError.blame), False))
    tried = [(who, e.url) for _, who, e in log if e.kind is EntryKind.PAGE]
    assert len(tried) == 4  # 4 failures in a row, counted in Redis whoever reported them
    assert {who for who, _ in tried} == {0, 1}
    refused = [(who, e) for _, who, e in log if e.kind is EntryKind.REFUSED]
    assert len(refused) == 26 and {who for who, _ in refused} == {0, 1}  # both handed some out
    every = sorted([u for _, u in tried] + [e.url for _, e in refused])
    assert every == sorted(e.url for e in pages("down.test", 30))  # each URL once, none lost
    for who, entry in refused:
        assert [a, b][who].refusal(entry).startswith("host_down: 4 fetches in a row failed")


async def test_a_lease_reclaimed_from_a_host_that_went_down_is_refused(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock, 2, per_host_concurrency=2, lease_ttl=10.0)
    b = await frontier(clients[1], clock, 2, per_host_concurrency=2, lease_ttl=10.0)
    await a.put_many(pages("down.test", 3))
    (lost,), _, _, _ = await a.claim()  # a dies holding it
    (failed,), _, _, _ = await b.claim()
    assert await b.done(failed, Outcome(blame=ConnectError.blame), retry=True)
    clock.now += 5.0
    (again,), _, _, _ = await b.claim()
    assert again.kind is EntryKind.PAGE
    assert await b.done(again, Outcome(blame=ConnectError.blame))  # the 2nd: down
    clock.now += 5.0
    assert await b.reclaim() == 1
    entries, _, queued, leased = await b.claim(5)
    assert {e.url for e in entries} == {lost.url, "http://down.test/2"} - {again.url}
    assert all(e.kind is EntryKind.REFUSED for e in entries) and (queued, leased) == (0, 2)
    assert await a.done(lost) is False  # too late: it was refused meanwhile


async def test_refusals_of_a_process_that_died_go_to_the_others_and_hold_no_slot(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock, 1, lease_ttl=10.0)
    b = await frontier(clients[1], clock, 1, lease_ttl=10.0)
    await a.put_many(pages("down.test", 4))
    (failed,), _, _, _ = await a.claim()
    assert await a.done(failed, Outcome(blame=ConnectError.blame))  # down at once
    dead, _, _, _ = await a.claim(2)  # a dies before it wrote their results
    assert [e.kind for e in dead] == [EntryKind.REFUSED] * 2
    hk = PREFIX + "h:http://down.test:80"
    assert await clients[0].hget(hk, "in_flight") == b"0"  # refusals take no slot
    (other,), _, _, _ = await b.claim(5)
    assert other.kind is EntryKind.REFUSED and await b.done(other)
    clock.now += 10.0
    assert await b.reclaim() == 2  # their leases expired: refused again, by b
    again, _, queued, leased = await b.claim(5)
    assert sorted(e.url for e in again) == sorted(e.url for e in dead)
    assert all(e.kind is EntryKind.REFUSED for e in again) and (queued, leased) == (0, 2)
    assert all([await b.done(e) for e in again])
    assert await clients[0].hget(hk, "in_flight") == b"0" and await b.get() is None


async def test_refusals_given_back_unfetched_are_refused_again(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock, 1)
    b = await frontier(clients[1], clock, 1)
    await a.put_many(pages("down.test", 3))
    (failed,), _, _, _ = await a.claim()
    assert await a.done(failed, Outcome(blame=ConnectError.blame))
    held, _, _, _ = await a.claim(2)
    assert await a.release(held) == 2  # a stopping: claimed for no worker
    back, _, _, _ = await b.claim(5)
    assert back == held and all(e.kind is EntryKind.REFUSED for e in back)


async def test_a_shared_crawl_records_every_url_of_a_host_that_is_down(
    redis_server: RedisServer, clients: list[Redis]
) -> None:
    config, seeds = down_site(30)
    config = config.override("cluster", redis=redis_server.url, crawl_id="down")
    one, two = Crawler(config), Crawler(config)

    async def run(crawler: Crawler) -> list[Any]:
        async with crawler:
            return [r async for r in crawler.crawl(seeds)]

    results = [r for rs in await asyncio.gather(run(one), run(two)) for r in rs]
    assert sorted(r.url for r in results) == sorted(seeds)  # each URL once, none lost
    kinds = [r.error.split(":", 1)[0] for r in results if r.error]
    assert len(kinds) == 30 and set(kinds) == {"connect", "host_down"}
    assert kinds.count("connect") <= 3  # the failures that put it down (retries included)
    stats = [one.stats_dict(), two.stats_dict()]
    assert sum(s["host_down"] for s in stats) == kinds.count("host_down")
    assert sum(s["robots_refused"] for s in stats) == 0
    status = await read_status(redis_server.url, "down")  # crawl --status
    assert status["finished"] and status["hosts_down"] == 1
    out = io.StringIO()
    format_status(status, out)
    assert "hosts 1 (1 down)" in out.getvalue()
