"""The frontier over host groups (`ShardedFrontier`, `Keyspace`) on one redis-server: the groups
under their own hash tags, claims that take turns over the groups, exact crawl-wide figures."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.crc import key_slot

from crawler.frontier.entries import Entry
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.redis.sharded import ShardedFrontier
from crawler.frontier.redis.shards import Keyspace
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.sieve.redis import RedisSieve
from tests.support.redis_frontier import Clock, page


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    r = Redis.from_url(redis_url)
    yield r
    await r.aclose()


def sharded(client: Redis, groups: int = 4, **politeness: Any) -> ShardedFrontier:
    keyspace = Keyspace("t", groups)
    sieves = [RedisSieve(client, p, capacity=1000, error_rate=1e-3) for p in keyspace.prefixes]
    politeness.setdefault("delay", 0.0)
    return ShardedFrontier(client, keyspace, sieves, Politeness(respect_robots=False, **politeness),
                           QueueLimits(), Sharing(), clock=Clock())  # fmt: skip


def test_each_group_has_a_tag_of_its_own_in_its_slice_of_the_slots() -> None:
    keyspace = Keyspace("crawl-7", 12, cluster=True)
    slots = [key_slot(p.encode()) for p in keyspace.prefixes]
    assert [slot * 12 // 16384 for slot in slots] == list(range(12))
    assert keyspace.prefix == "crawl:{crawl-7}:"  # the crawl-wide keys: a tag of their own
    assert all(p.startswith("crawl:{crawl-7.g") for p in keyspace.prefixes)
    assert Keyspace("crawl-7").prefixes == ("crawl:crawl-7:",)  # one node: as it always was


def test_a_sites_hosts_share_a_group_and_sites_spread() -> None:
    keyspace = Keyspace("c", 12, cluster=True)
    group = keyspace.group_of
    assert group("https://docs.python.org:443") == group("http://www.python.org:80")
    assert group("http://a.github.io:80") == group("http://a.github.io:8080")
    spread = Counter(group(f"http://site{i}.example:80") for i in range(1200))
    assert len(spread) == 12 and max(spread.values()) < 2 * 100  # ~100 a group
    assert 0 <= group("http://127.0.0.1:80") < 12 and 0 <= group("http://[::1]:80") < 12


async def test_claims_take_turns_over_the_groups(client: Redis) -> None:
    f = sharded(client)
    await f.open()
    hosts = [f"http://site{i}.test" for i in range(40)]
    await f.admit([page(f"{h}/{j}") for h in hosts for j in range(3)])
    groups = Counter(f.keyspace.group_of(h + ":80") for h in hosts)
    assert len(groups) == 4
    taken: list[int] = []
    for _ in range(8):
        entries, _, queued, leased = await f.claim()
        taken.append(f.keyspace.group_of(entries[0].url))
    assert sorted(Counter(taken).values()) == [2, 2, 2, 2]  # each group in turn
    assert queued == 120 - 8 and leased == 8
    assert (await f.stats()).in_flight == 8


async def test_one_claim_gathers_work_from_several_groups(client: Redis) -> None:
    f = sharded(client)
    await f.open()
    urls = [f"http://site{i}.test/" for i in range(16)]
    await f.admit([page(u) for u in urls])
    entries, _, queued, leased = await f.claim(16)
    assert sorted(e.url for e in entries) == sorted(urls) and (queued, leased) == (0, 16)
    assert await f.done_many([(e, None, False) for e in entries]) == [True] * 16
    assert await f.claim(4) == ([], None, 0, 0)  # every group asked afresh: the crawl is over


async def test_a_group_not_due_is_asked_again_when_woken(client: Redis) -> None:
    a, b = sharded(client, per_host_concurrency=1), sharded(client, per_host_concurrency=1)
    await a.open()
    await b.open()
    await a.admit([page("http://one.test/1"), page("http://one.test/2")])
    (first,), _, _, _ = await a.claim()
    assert (await b.claim())[0] == []  # its slot is taken: the group is not due for b now
    assert await a.done(first)
    b.wake()  # as a wake-up from Redis does
    (second,), _, _, _ = await b.claim()
    assert second.url == "http://one.test/2"


async def test_max_admitted_holds_over_groups_and_processes(client: Redis) -> None:
    frontiers = [sharded(client), sharded(client)]
    for f in frontiers:
        await f.open()
    batches = [[page(f"http://s{n}x{i}.test/") for i in range(30)] for n in range(8)]
    answers = await asyncio.gather(*(frontiers[n % 2].admit(batch, 100)
                                     for n, batch in enumerate(batches)))  # fmt: skip
    flags = Counter(flag for batch in answers for flag in batch)
    assert flags == {AdmitFlag.ADMITTED: 100, AdmitFlag.OVER_LIMIT: 140}
    assert int(await client.get("crawl:t:admitted") or 0) == 100  # the room given back
    assert (await frontiers[0].stats()).queued == 100
    again = await frontiers[1].admit([page("http://late.test/")], 100)
    assert again == [AdmitFlag.OVER_LIMIT]


async def test_a_batch_near_the_cap_takes_what_is_left(client: Redis) -> None:
    f = sharded(client)
    await f.open()
    await f.admit([page(f"http://a{i}.test/") for i in range(7)], 10)
    seen = page("http://a0.test/")
    batch = [seen] + [page(f"http://b{i}.test/") for i in range(6)]
    flags = await f.admit(batch, 10)
    assert Counter(flags)[AdmitFlag.ADMITTED] == 3  # 10 - 7: the seen one took no room
    assert int(await client.get("crawl:t:admitted")) == 10


async def test_the_figures_are_every_groups_summed(client: Redis) -> None:
    f = sharded(client)
    await f.open()
    await f.admit([page(f"http://site{i}.test/{j}") for i in range(20) for j in range(2)])
    stats = await f.stats()
    assert (stats.hosts, stats.queued) == (20, 40)
    assert sum(s.count for s in f.sieves) == 40
    assert len(await f.pending()) == 40
    entry: Entry = (await f.claim())[0][0]
    assert await f.queued_priority(entry.url, entry.key) is None  # in flight, not queued


async def test_a_wake_up_makes_only_its_group_worth_asking(client: Redis) -> None:
    a, b = sharded(client, per_host_concurrency=1), sharded(client, per_host_concurrency=1)
    await a.open()
    await b.open()
    await b.wakes.listen()
    await a.admit([page("http://one.test/1"), page("http://one.test/2")])
    (first,), _, _, _ = await a.claim()
    b._due = [float("inf")] * 4  # as if every group had been asked and found idle
    b.wakes.clear()
    assert await a.done(first)  # frees one.test's slot: its group's channel speaks
    assert await b.wakes.wait(10.0)  # (a generous watchdog)
    g = b.keyspace.group_of("http://one.test:80")
    assert [due == 0.0 for due in b._due] == [i == g for i in range(4)]
    await b.wakes.close()
