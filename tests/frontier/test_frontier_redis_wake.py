"""A freed slot wakes a waiting process (``crawler.frontier.redis.wake``): two frontiers on one
redis-server share a host of one slot; the waiting one claims again as soon as the other's
completion frees it, not after its poll interval (a long one here, that the watchdog's bound
would catch)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.asyncio import Redis

from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.work import SharedWork
from tests.support.redis_frontier import Clock, claim_one, frontier, page

POLL = 60.0  # the fallback wait: the old poll would sleep this long
WATCHDOG = 20.0  # generous, and still a third of POLL


class Claims:
    """Counts a frontier's claims (Redis round trips of the CLAIM script)."""

    def __init__(self, f: RedisFrontier, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.first = asyncio.Event()  # the first claim came back
        claim = RedisFrontier.claim

        async def counted(frontier: RedisFrontier, want: int = 1) -> Any:
            reply = await claim(frontier, want)
            if frontier is f:
                self.count += 1
                self.first.set()
            return reply

        monkeypatch.setattr(RedisFrontier, "claim", counted)


async def two(clients: list[Redis], clock: Clock) -> tuple[RedisFrontier, RedisFrontier, Entry]:
    """Frontiers a and b on one host of one slot at delay 0; a holds its first page."""
    a = await frontier(clients[0], clock, delay=0.0, poll_interval=POLL)
    b = await frontier(clients[1], clock, delay=0.0, poll_interval=POLL)
    await a.put_many([page("http://a.test/1"), page("http://a.test/2")])
    first = await claim_one(a)
    assert first is not None
    return a, b, first


async def test_done_wakes_a_waiting_get(
    clients: list[Redis], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, first = await two(clients, clock)
    claims = Claims(b, monkeypatch)
    waiting = asyncio.create_task(b.get())
    await claims.first.wait()  # b's first claim found the host's one slot taken
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await a.done(first)
    async with asyncio.timeout(WATCHDOG):
        second = await waiting
    assert second is not None and second.url == "http://a.test/2"
    assert claims.count == 2  # one empty claim, then one after the wake-up: no polling
    assert b.wakes.heard >= 1


async def test_done_wakes_a_waiting_shared_work(
    clients: list[Redis], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, first = await two(clients, clock)
    claims = Claims(b, monkeypatch)
    work = SharedWork(b, poll_interval=POLL)
    waiting = asyncio.create_task(work.get())
    await claims.first.wait()  # b's first claim found the host's one slot taken
    await a.done(first)
    async with asyncio.timeout(WATCHDOG):
        second = await waiting
    assert second is not None and second.url == "http://a.test/2"
    assert claims.count == 2
    work.done(second)
    await work.drain()


async def test_reclaim_wakes_a_waiting_get(
    clients: list[Redis], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, _ = await two(clients, clock)
    claims = Claims(b, monkeypatch)
    waiting = asyncio.create_task(b.get())
    await claims.first.wait()  # b's first claim found the host's one slot taken
    clock.now += a.lease_ttl + 1  # a's lease expired; its reclaim frees the slot
    assert await a.reclaim() == 1
    async with asyncio.timeout(WATCHDOG):
        entry = await waiting
    assert entry is not None and entry.url == "http://a.test/1"
    assert claims.count == 2


async def test_a_wake_up_is_for_the_others_and_a_lost_one_costs_a_fallback_wait(
    clients: list[Redis], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, first = await two(clients, clock)
    await a.wakes.listen()
    await b.wakes.listen()
    assert await b.wakes.wait(0.05) is False  # nothing published: the bounded wait ends
    await a.done(first)
    async with asyncio.timeout(WATCHDOG):
        assert await b.wakes.wait(POLL) is True
    assert await a.wakes.wait(0.05) is False  # its own completion is not news to a
    assert (a.wakes.heard, b.wakes.heard) == (0, 1)
    await a.wakes.close()
    await b.wakes.close()


async def test_wake_ups_resume_after_their_connection_is_lost(
    clients: list[Redis], clock: Clock
) -> None:
    a, b, first = await two(clients, clock)
    await b.wakes.listen()
    for _ in range(int(WATCHDOG / 0.01)):  # its SUBSCRIBE reached the server (on a busy machine
        if await clients[0].client_list(_type="pubsub"):  # it may come a moment later)
            break
        await asyncio.sleep(0.01)
    assert await clients[0].client_kill_filter(_type="pubsub") == 1
    for _ in range(int(WATCHDOG / 0.01)):  # the listener sees its connection closed
        if not b.wakes.listening:
            break
        await asyncio.sleep(0.01)
    assert not b.wakes.listening
    await b.wakes.listen()  # as every claim round does: subscribed again
    await a.done(first)
    async with asyncio.timeout(WATCHDOG):
        assert await b.wakes.wait(POLL) is True
    await b.wakes.close()
