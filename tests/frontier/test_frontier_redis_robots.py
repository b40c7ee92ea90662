"""Pages robots.txt disallows, in the Redis frontier on a real redis-server: found at claim time,
handed out as REFUSED holding no slot and spending no delay, and leased until ``done()`` (as a
down host's refusals are), so a process killed before it wrote the refusal's result loses no
page: the reclaim hands it out, and it is refused, again."""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio import Redis

from crawler.frontier.entries import Entry, EntryKind
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.robots import RobotsPolicy, policy_from_response
from tests.support.redis_frontier import PREFIX, ROBOTS_BODY, Clock, claim_one, frontier, page

HOST = "http://a.test:80"
KW: dict[str, Any] = dict(respect_robots=True, user_agent="sieve", lease_ttl=10.0)


async def robots_known(f: RedisFrontier, host: str = HOST) -> None:
    """Preload the host's robots.txt (``Disallow: /private``), as a ROBOTS entry's answer would."""
    await f.set_robots(host, policy_from_response(200, ROBOTS_BODY, "sieve"), ROBOTS_BODY)


async def test_a_refusal_of_a_process_killed_before_its_result_is_handed_out_again(
    clients: list[Redis], clock: Clock
) -> None:
    dead = await frontier(clients[0], clock, **KW)
    alive = await frontier(clients[1], clock, **KW)
    await robots_known(dead)
    await dead.put_many([page("http://a.test/private/x")])
    lost = await claim_one(dead)
    assert lost is not None and lost.kind is EntryKind.REFUSED
    assert dead.refusal(lost) == "robots: disallowed by robots.txt"
    del dead  # killed before the refusal's result was written: no done()
    entries, _, queued, leased = await alive.claim()
    assert (entries, queued, leased) == ([], 0, 1)  # not over: the refusal is still leased
    clock.now += 9.0
    assert await alive.reclaim() == 0
    clock.now += 1.0
    assert await alive.reclaim() == 1  # its lease expired: back in its host's queue
    again = await claim_one(alive)
    assert again is not None and again.kind is EntryKind.REFUSED
    assert (again.url, again.key, again.depth) == (lost.url, lost.key, lost.depth)
    assert alive.refusal(again) == "robots: disallowed by robots.txt"
    assert await alive.done(again)  # releases its lease
    assert await alive.done(again) is False  # once
    assert await alive.get() is None  # nothing queued, nothing leased
    stats = await alive.stats()
    assert (stats.queued, stats.in_flight, stats.handed_out) == (0, 0, 0)
    assert stats.refused_robots == 2  # handed out as REFUSED twice
    assert await alive.reclaimed() == 1


async def test_a_refusal_holds_no_slot_and_spends_no_delay_until_its_done(
    clients: list[Redis], clock: Clock
) -> None:
    f = await frontier(clients[0], clock, delay=1.0, per_host_concurrency=1, **KW)
    other = await frontier(clients[1], clock, delay=1.0, per_host_concurrency=1, **KW)
    await robots_known(f)
    await f.put_many([page("http://a.test/private/x"), page("http://a.test/1"),
                      page("http://a.test/2")])  # fmt: skip
    hk = PREFIX + "h:" + HOST
    refused = await claim_one(f)
    assert refused is not None and refused.kind is EntryKind.REFUSED
    assert await clients[0].hget(hk, "in_flight") == b"0"
    assert float(await clients[0].hget(hk, "next")) == 0.0  # its start not spent
    stats = await f.stats()
    assert (stats.in_flight, stats.refused_robots, stats.handed_out) == (1, 1, 0)
    first = await claim_one(other)  # at once, by any process, before the refusal's done()
    assert first is not None and (first.url, first.kind) == ("http://a.test/1", EntryKind.PAGE)
    assert await claim_one(f) is None  # the one slot is the page's now, not the refusal's
    assert await f.done(refused)
    assert await claim_one(f) is None  # its done() freed no slot: it held none
    assert await clients[0].hget(hk, "in_flight") == b"1"
    assert await other.done(first)
    clock.now += 1.0
    second = await claim_one(f)
    assert second is not None and second.url == "http://a.test/2"
    assert await f.done(second)
    stats = await f.stats()
    assert (stats.in_flight, stats.refused_robots, stats.handed_out, stats.queued) == (0, 1, 2, 0)
    assert await f.get() is None


async def test_refusals_of_one_claim_are_given_back_in_one_round_trip(
    clients: list[Redis], clock: Clock
) -> None:
    f = await frontier(clients[0], clock, delay=1.0, **KW)
    hosts = [f"http://h{i}.test:80" for i in range(3)]
    for host in hosts:
        await robots_known(f, host)
    await f.put_many([page(f"http://h{i}.test/private/{i}") for i in range(3)])
    calls = (await clients[0].info("commandstats"))["cmdstat_evalsha"]["calls"]
    held, _, queued, leased = await f.claim(3)
    assert (await clients[0].info("commandstats"))["cmdstat_evalsha"]["calls"] == calls + 2
    assert [e.kind for e in held] == [EntryKind.REFUSED] * 3 and (queued, leased) == (0, 3)
    for host in hosts:  # no slot held, no start spent
        busy, start = await clients[0].hmget(PREFIX + "h:" + host, ["in_flight", "next"])
        assert (int(busy), float(start)) == (0, 0.0)
    assert await f.release(held[:1]) == 1  # a process stopping: given back unfetched
    assert await f.done_many([(e, None, False) for e in held[1:]]) == [True, True]
    back = await claim_one(f)
    assert back is not None and (back.url, back.kind) == (held[0].url, EntryKind.REFUSED)
    assert await f.done(back) and await f.get() is None


async def test_a_late_refusal_does_not_undo_a_later_claims_delay(
    clients: list[Redis], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # two slots, one start a second: the refusal comes back after the delay (a slow robots.txt
    # read), when another process has claimed the host: the start it restores would let a third
    # request through at once
    slow = await frontier(clients[0], clock, delay=1.0, per_host_concurrency=2, **KW)
    other = await frontier(clients[1], clock, delay=1.0, per_host_concurrency=2, **KW)
    await robots_known(slow)
    await slow.put_many([page("http://a.test/private/x"), page("http://a.test/1"),
                         page("http://a.test/2")])  # fmt: skip
    policy = RedisFrontier._policy
    taken: list[Entry | None] = []

    async def late(self: RedisFrontier, host: str, version: str) -> RobotsPolicy:
        if self is slow and not taken:
            clock.now += 1.0
            taken.append(await claim_one(other))  # the host's next start is now + 1 s
        return await policy(self, host, version)

    monkeypatch.setattr(RedisFrontier, "_policy", late)
    refused = await claim_one(slow)
    assert refused is not None and refused.kind is EntryKind.REFUSED
    assert taken[0] is not None and taken[0].url == "http://a.test/1"
    hk = PREFIX + "h:" + HOST
    assert float(await clients[0].hget(hk, "next")) == clock.now + 1.0  # that claim's delay
    assert await claim_one(other) is None  # so /2 waits for it
    clock.now += 1.0
    last = await claim_one(other)
    assert last is not None and last.url == "http://a.test/2"
