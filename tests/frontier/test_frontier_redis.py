"""The Redis frontier on a real redis-server: order, politeness and leases across two instances
("processes" on separate connections), atomic admission against the RedisSieve's bits."""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any

import pytest
from redis.asyncio import Redis

from crawler.fetch.steering import HostRule
from crawler.frontier.entries import Entry, EntryKind, Outcome
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.robots import policy_from_response
from crawler.sieve.redis import RedisSieve, SharedStateError
from crawler.testing.redis_server import RedisServer
from tests.support.redis_frontier import PREFIX, ROBOTS_BODY, Clock, claim_one, frontier, page


async def test_priority_order_and_fifo_ties_within_a_host(
    clients: list[Redis], clock: Clock
) -> None:
    f = await frontier(clients[0], clock)
    urls = [f"http://a.test/{i}" for i in range(8)]
    prios = [0, 2, 0, 5, 2, 0, 5, 1]
    assert await f.put_many([page(u, p) for u, p in zip(urls, prios, strict=True)]) == [True] * 8
    got = []
    while (entry := await claim_one(f)) is not None:
        got.append((entry.url, entry.priority))
        assert await f.done(entry)
    want = sorted(zip(urls, prios, strict=True), key=lambda up: -up[1])  # stable: FIFO on ties
    assert got == [(u, float(p)) for u, p in want]
    assert await f.get() is None  # nothing queued, nothing leased


async def test_entries_come_back_equal(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock)
    entry = Entry(url="http://a.test/x?q=1", key="http://a.test/x", depth=3, parent="http://a.test/",
                  retries=1, redirects=2, sitemap=True, priority=1.5)  # fmt: skip
    assert await f.put_many([entry]) == [True]
    assert await f.pending() == [entry]
    assert await claim_one(f) == entry
    with pytest.raises(ValueError, match="newline"):  # before anything is sent
        await f.put_many([page("http://a.test/ok"), page("http://a.test/x\ny")])
    assert await f.pending() == []


async def test_best_ready_host_first(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock, delay=1.0)
    await f.put_many([page("http://a.test/1", 1), page("http://b.test/1", 3),
                      page("http://c.test/1", 2), page("http://c.test/2", 9)])  # fmt: skip
    first = await claim_one(f)
    assert first is not None and first.url == "http://c.test/2"  # the best entry of any host
    second = await claim_one(f)
    assert second is not None and second.url == "http://b.test/1"  # c is busy (and delayed)
    await f.done(first)
    await f.done(second)
    third = await claim_one(f)
    assert third is not None and third.url == "http://a.test/1"  # c and b wait out their delay
    assert await claim_one(f) is None
    clock.now += 1.0
    fourth = await claim_one(f)
    assert fourth is not None and fourth.url == "http://c.test/1"


async def test_delay_held_across_two_instances_taking_turns(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock, delay=2.0)
    b = await frontier(clients[1], clock, delay=2.0)
    await a.put_many([page(f"http://one.test/{i}") for i in range(6)])
    starts: list[tuple[float, str]] = []
    turn = [a, b]
    for i in range(6):
        me, other = turn[i % 2], turn[(i + 1) % 2]
        entry = await claim_one(me)
        assert entry is not None, i
        starts.append((clock.now, entry.url))
        assert await claim_one(other) is None  # one request in flight on the host
        clock.now += 0.5
        assert await me.done(entry)
        assert await claim_one(other) is None  # delay not over (2 s between starts)
        assert await claim_one(me) is None
        clock.now += 1.5
    assert [u for _, u in starts] == [f"http://one.test/{i}" for i in range(6)]
    gaps = [t2 - t1 for (t1, _), (t2, _) in itertools.pairwise(starts)]
    assert gaps == [2.0] * 5  # exactly the delay: the injected clock


async def test_per_host_concurrency_across_instances(clients: list[Redis], clock: Clock) -> None:
    rule = {"http://wide.test:80": HostRule(per_host_concurrency=3)}
    a = await frontier(clients[0], clock, per_host_concurrency=2, host_rule=rule.get)
    b = await frontier(clients[1], clock, per_host_concurrency=2, host_rule=rule.get)
    await a.put_many([page(f"http://h.test/{i}") for i in range(5)])
    await a.put_many([page(f"http://wide.test/{i}") for i in range(5)])
    held = [e for f in (a, b, a, b, a, b, a) if (e := await claim_one(f)) is not None]
    hosts = [e.url.split("/")[2] for e in held]
    assert hosts.count("h.test") == 2 and hosts.count("wide.test") == 3
    assert (await a.stats()).in_flight == 5
    done_by = {id(e): f for f in (a, b) for e, _ in f._flying.values()}
    first_h = next(e for e in held if e.url.startswith("http://h.test"))
    assert await done_by[id(first_h)].done(first_h)
    again = await claim_one(b)
    assert again is not None and again.url.startswith("http://h.test")


async def test_dead_instance_lease_reclaimed_and_handed_to_the_other(
    clients: list[Redis], clock: Clock
) -> None:
    dead = await frontier(clients[0], clock, lease_ttl=90.0)
    alive = await frontier(clients[1], clock, lease_ttl=90.0)
    await dead.put_many([page("http://a.test/1", 1), page("http://a.test/2", 1)])
    lost = await claim_one(dead)
    assert lost is not None and lost.url == "http://a.test/1"
    clock.now += 89.0
    assert await alive.reclaim() == 0
    assert await claim_one(alive) is None  # the host's one slot is leased
    clock.now += 1.0
    assert await alive.reclaim() == 1
    back = await claim_one(alive)
    assert back == lost  # at the head of its host again, before the entry put after it
    assert await alive.done(back)
    assert await dead.done(lost) is False  # the late finisher changes nothing
    rest = await claim_one(alive)
    assert rest is not None and rest.url == "http://a.test/2"
    assert await alive.done(rest)
    assert await alive.get() is None
    assert await alive.reclaimed() == 1
    assert (await alive.stats()).queued == 0


async def test_a_renewed_lease_outlives_its_ttl_and_a_reclaimed_one_stays_gone(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock, lease_ttl=10.0)
    b = await frontier(clients[1], clock, lease_ttl=10.0)
    await a.put_many([page("http://a.test/1"), page("http://b.test/1")])
    slow = await claim_one(a)  # a slow fetch: its process renews the lease while it lasts
    assert slow is not None
    for _ in range(5):
        clock.now += 8.0
        assert await a.renew() == 1
        assert await b.reclaim() == 0
    assert await a.done(slow)  # 40 s later, still its own
    other = await claim_one(a)
    assert other is not None
    clock.now += 10.0  # not renewed: the process died, or stalled
    assert await b.reclaim() == 1
    assert await a.renew() == 0  # too late: the reclaimed lease is not brought back
    assert await claim_one(b) == other
    assert (await b.stats()).in_flight == 1


async def test_stale_finisher_cannot_clobber_a_reassigned_lease(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock, lease_ttl=10.0, delay=0.0)
    b = await frontier(clients[1], clock, lease_ttl=10.0)
    await a.put_many([page("http://a.test/1")])
    late = await claim_one(a)
    assert late is not None
    clock.now += 11.0
    assert await b.reclaim() == 1
    now_b = await claim_one(b)
    assert now_b == late
    before = await clients[0].hgetall(PREFIX + "h:http://a.test:80")
    # a's late done() with retry and a host failure: a no-op on the host, the queue and b's lease
    assert await a.done(late, Outcome(status=503, retry_after="60"), retry=True) is False
    assert await clients[0].hgetall(PREFIX + "h:http://a.test:80") == before
    assert await a.pending() == []
    assert (await a.stats()).in_flight == 1
    assert await b.done(now_b)


async def test_retry_goes_first_and_host_backs_off(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock, rng=random.Random(1))
    await f.put_many([page("http://a.test/1"), page("http://a.test/2")])
    entry = await claim_one(f)
    assert entry is not None
    assert await f.done(entry, Outcome(status=503, retry_after="30"), retry=True)
    assert await claim_one(f) is None  # backed off 30 s
    clock.now += 29.9
    assert await claim_one(f) is None
    clock.now += 0.1
    again = await claim_one(f)
    assert again is not None and again.url == entry.url and again.retries == 1
    assert (await f.stats()).backoffs == 1


async def test_reprioritize_raises_a_queued_entry(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock)
    await f.put_many([page("http://a.test/1", 1), page("http://a.test/2", 2)])
    assert await f.queued_priority("http://a.test/1", "http://a.test/1") == 1.0
    assert await f.reprioritize("http://a.test/1", "http://a.test/1", 0.5) is False
    assert await f.reprioritize("http://a.test/1", "http://a.test/1", 2.0) is True
    assert [(e.url, e.priority) for e in await f.pending()] == [
        ("http://a.test/2", 2.0), ("http://a.test/1", 2.0),
    ]  # fmt: skip
    first = await claim_one(f)
    assert first is not None
    assert await f.queued_priority(first.url, first.key) is None  # in flight: not queued


async def test_reprioritize_lower_sets_either_way_and_counts_raises_only(
    clients: list[Redis], clock: Clock
) -> None:
    f = await frontier(clients[0], clock)
    urls = [f"http://a.test/{i}" for i in range(3)]
    await f.put_many([page(urls[0], 3), page(urls[1], 2), page(urls[2], 1)])
    assert await f.reprioritize(urls[0], urls[0], 1.0, lower=True) is True  # lowered
    assert await f.reprioritize(urls[2], urls[2], 1.0, lower=True) is False  # equal: no change
    assert await f.reprioritize(urls[2], urls[2], 2.0, lower=True) is True  # raised
    # a changed entry goes after the entries of its new priority queued before it
    assert [(e.url, e.priority) for e in await f.pending()] == [
        (urls[1], 2.0), (urls[2], 2.0), (urls[0], 1.0),
    ]  # fmt: skip
    assert (await f.stats()).raised == 1  # the lowering is not a raise


async def test_set_priority_returns_the_priority_it_had(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock)
    urls = [f"http://a.test/{i}" for i in range(2)]
    await f.put_many([page(urls[0], 3), page(urls[1], 2)])
    assert await f.set_priority(urls[0], urls[0], 1.0) == 3.0  # lowered
    assert await f.set_priority("http://a.test/none", "http://a.test/none", 1.0) is None
    assert [(e.url, e.priority) for e in await f.pending()] == [(urls[1], 2.0), (urls[0], 1.0)]


async def test_set_priority_reads_and_sets_in_one_step(
    clients: list[Redis], clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another node claims the entry just before the change: it is no longer queued, so
    # set_priority says None (it said 3.0, the priority read in a step of its own before)
    f, other = await frontier(clients[0], clock), await frontier(clients[1], clock)
    url = "http://a.test/0"
    await f.put_many([page(url, 3)])
    run = RedisFrontier._run

    async def claimed_first(self: RedisFrontier, name: str, args: list[Any]) -> Any:
        if self is f and name == "raise":
            assert await claim_one(other) is not None
        return await run(self, name, args)

    monkeypatch.setattr(RedisFrontier, "_run", claimed_first)
    assert await f.set_priority(url, url, 1.0) is None
    assert await f.pending() == []


async def test_racing_put_many_queues_each_key_once_with_the_sieves_bits(
    clients: list[Redis], clock: Clock, redis_server: RedisServer
) -> None:
    a = await frontier(clients[0], clock)
    b = await frontier(clients[1], clock)
    rng = random.Random(7)
    urls = [f"http://h{rng.randrange(20)}.test/{rng.getrandbits(40):x}" for _ in range(600)]
    batches_a = [urls[i : i + 50] for i in range(0, 600, 50)]
    batches_b = [list(reversed(batch)) for batch in reversed(batches_a)]

    async def feed(f: RedisFrontier, batches: list[list[str]]) -> list[str]:
        won = []
        for batch in batches:
            flags = await f.put_many([page(u) for u in batch])
            won += [u for u, new in zip(batch, flags, strict=True) if new]
        return won

    won_a, won_b = await asyncio.gather(feed(a, batches_a), feed(b, batches_b))
    assert sorted(won_a + won_b) == sorted(urls)  # each key queued by exactly one of them
    assert sorted(e.url for e in await a.pending()) == sorted(urls)
    # the same keys through a plain RedisSieve under another prefix: the very same bits
    other = Redis.from_url(redis_server.url)
    try:
        plain = RedisSieve(other, "plain:", capacity=10_000, error_rate=1e-3)
        await plain.open()
        assert await plain.add_many(urls) == [True] * len(urls)
        assert await plain.stage_bytes(0) == await a.sieve.stage_bytes(0)
        await a.sieve.refresh()
        await plain.refresh()
        assert a.sieve.count == plain.count == len(urls)
    finally:
        await other.aclose()


async def test_bounds_refuse_and_count(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock, max_queued=3, max_queued_per_host=2)
    flags = await f.put_many([page(f"http://a.test/{i}") for i in range(3)])
    assert flags == [True, True, False]
    assert await f.put_many([page("http://b.test/1"), page("http://b.test/2")]) == [True, False]
    stats = await f.stats()
    assert (stats.queued, stats.dropped_host_full, stats.dropped_full) == (3, 1, 1)
    assert await claim_one(f) is not None  # room for one more, on a.test too
    assert await f.put_many([page("http://a.test/2")]) == [True]  # a refused key stays unseen
    f.close()
    assert await f.put_many([page("http://c.test/1")]) == [False]
    assert await f.get() is None


async def test_get_waits_for_the_delay_then_returns(clients: list[Redis], clock: Clock) -> None:
    naps: list[float] = []

    async def sleep(seconds: float) -> None:
        naps.append(seconds)
        clock.now += seconds

    f = await frontier(clients[0], clock, delay=1.0, poll_interval=0.4, sleep=sleep)
    await f.put_many([page("http://a.test/1"), page("http://a.test/2")])
    first = await f.get()
    assert first is not None
    await f.done(first)
    second = await f.get()
    assert second is not None and second.url == "http://a.test/2"
    assert naps == pytest.approx([0.4, 0.4, 0.2])  # poll interval, then to the ready time


async def test_robots_answer_shared_with_crawl_delay(clients: list[Redis], clock: Clock) -> None:
    a = await frontier(clients[0], clock, delay=0.5)
    b = await frontier(clients[1], clock, delay=0.5)
    await a.put_many([page("http://a.test/1"), page("http://a.test/2")])
    body = b"User-agent: *\nCrawl-delay: 3\nDisallow: /private\n"
    await a.set_robots("http://a.test/", policy_from_response(200, body, "sieve"), body)
    stored = await b.robots("http://a.test/x")
    assert stored == (200, body)
    policy = policy_from_response(*stored, "sieve")
    assert policy.crawl_delay == 3.0 and not policy.allowed("http://a.test/private/x")
    first = await claim_one(b)
    assert first is not None
    await b.done(first)
    clock.now += 2.9
    assert await claim_one(a) is None
    clock.now += 0.1
    assert await claim_one(a) is not None


async def test_redis_down_is_a_shared_state_error(clock: Clock) -> None:
    server = RedisServer()
    with server:
        client = Redis.from_url(server.url)
        f = await frontier(client, clock)
        await f.put_many([page("http://a.test/1")])
        server.stop()
        with pytest.raises(SharedStateError, match="Redis"):
            await f.put_many([page("http://a.test/2")])
        with pytest.raises(SharedStateError, match="Redis"):
            await f.get()
        await client.aclose()


async def test_admission_follows_sieve_growth_opened_by_the_other_instance(
    clients: list[Redis], clock: Clock
) -> None:
    def small(client: Redis) -> RedisFrontier:
        sieve = RedisSieve(client, PREFIX, capacity=100, error_rate=0.01, ratio=0.5)
        return RedisFrontier(client, PREFIX, sieve, clock=clock)

    a, b = small(clients[0]), small(clients[1])
    await a.open()
    await b.open()
    rng = random.Random(3)
    urls = [f"http://h{rng.randrange(9)}.test/{rng.getrandbits(40):x}" for _ in range(1000)]
    new = 0
    for i in range(0, len(urls), 25):
        batch = [page(u) for u in urls[i : i + 25]]
        f, other = (a, b) if i % 50 else (b, a)
        new += sum(await f.put_many(batch))
        assert await other.put_many(batch) == [False] * len(batch)  # seen, whoever opened stages
    await a.sieve.refresh()
    assert a.sieve.stages >= 3  # grew several times, each instance following the other
    assert new >= 0.98 * len(urls)  # at most the Sieve's false positives are lost
    assert len(await a.pending()) == new == a.sieve.count
    assert a.sieve.false_positive_bound < 0.01


async def test_leases_expire_by_redis_time_without_a_clock(clients: list[Redis]) -> None:
    sieve = RedisSieve(clients[0], PREFIX, capacity=1000, error_rate=1e-3)
    f = RedisFrontier(
        clients[0], PREFIX, sieve, sharing=Sharing(lease_ttl=90.0)
    )  # production: Redis TIME
    await f.open()
    await f.put_many([page("http://a.test/1")])
    secs, micros = await clients[0].time()
    before = secs + micros / 1e6
    entry = await f.get()
    assert entry is not None
    (expiry,) = [score for _, score in await clients[0].zrange(PREFIX + "leases", 0, -1,
                                                                withscores=True)]  # fmt: skip
    secs, micros = await clients[0].time()
    assert before + 90.0 <= expiry <= secs + micros / 1e6 + 90.0
    assert await f.reclaim() == 0  # not expired by Redis's clock
    assert await f.done(entry)


async def test_robots_first_pages_held_then_refused_without_a_delay(
    clients: list[Redis], clock: Clock
) -> None:
    kw: dict[str, Any] = dict(delay=1.0, respect_robots=True, user_agent="sieve")
    a, b = await frontier(clients[0], clock, **kw), await frontier(clients[1], clock, **kw)
    await a.put_many([page("http://a.test/1"), page("http://a.test/private/x"),
                      page("http://a.test/2")])  # fmt: skip
    robots = await claim_one(a)
    assert robots is not None and robots.kind is EntryKind.ROBOTS
    assert robots.url == "http://a.test/robots.txt"
    clock.now += 5.0
    assert await claim_one(b) is None  # pages held until the policy is known
    await a.set_robots(robots.url, policy_from_response(200, ROBOTS_BODY, "sieve"), ROBOTS_BODY)
    assert await a.done(robots)
    first = await claim_one(b)
    assert first is not None and first.url == "http://a.test/1"
    assert await b.done(first)
    clock.now += 1.0
    refused = await claim_one(b)
    assert refused is not None and refused.kind is EntryKind.REFUSED
    assert refused.url == "http://a.test/private/x"
    assert b.refusal(refused) == "robots: disallowed by robots.txt"
    last = await claim_one(b)  # at once: the refusal spent no slot and no delay
    assert last is not None and last.url == "http://a.test/2"
    assert await b.done(refused)  # its lease, held until its result is out
    stats = await b.stats()
    assert (stats.robots_fetches, stats.refused_robots, stats.handed_out) == (1, 1, 2)


async def test_robots_unreachable_backs_off_then_refuses_pages(
    clients: list[Redis], clock: Clock
) -> None:
    f = await frontier(clients[0], clock, respect_robots=True, robots_max_attempts=2,
                       backoff_base=1.0, rng=random.Random(2))  # fmt: skip
    await f.put_many([page("http://a.test/1")])
    robots = await claim_one(f)
    assert robots is not None and robots.kind is EntryKind.ROBOTS
    assert await f.done(robots)  # no set_robots(): unreachable, backed off (< 1 s)
    assert await claim_one(f) is None
    clock.now += 1.0
    again = await claim_one(f)
    assert again is not None and again.kind is EntryKind.ROBOTS
    await f.set_robots(again.url, policy_from_response(503, None, "sieve"))
    assert await f.done(again)
    clock.now += 2.0
    refused = await claim_one(f)  # gave up after 2 attempts: every page refused
    assert refused is not None and refused.kind is EntryKind.REFUSED
    assert f.refusal(refused).startswith("robots: robots.txt unreachable")
    assert await f.done(refused)
    assert await f.get() is None


async def test_robots_lease_reclaimed_and_policy_refetched_after_ttl(
    clients: list[Redis], clock: Clock
) -> None:
    kw: dict[str, Any] = dict(respect_robots=True, robots_ttl=100.0, lease_ttl=10.0)
    dead, alive = await frontier(clients[0], clock, **kw), await frontier(clients[1], clock, **kw)
    await dead.put_many([page(f"http://a.test/{i}") for i in range(3)])
    lost = await claim_one(dead)
    assert lost is not None and lost.kind is EntryKind.ROBOTS
    clock.now += 10.0
    assert await alive.reclaim() == 1
    robots = await claim_one(alive)
    assert robots is not None and robots.kind is EntryKind.ROBOTS  # asked again, not lost
    await alive.set_robots(robots.url, policy_from_response(404, None, "sieve"))
    assert await alive.done(robots)
    hk = PREFIX + "h:http://a.test:80"
    before = await clients[0].hgetall(hk)
    assert await dead.done(lost) is False  # late, and it never answered: no "unreachable"
    late = policy_from_response(503, None, "sieve")
    dead._robots_asked["http://a.test:80"] = "1"  # as if it answered its reclaimed lease late
    await dead.set_robots("http://a.test/", late)
    assert await clients[0].hgetall(hk) == before
    one = await claim_one(alive)
    assert one is not None and one.kind is EntryKind.PAGE
    await alive.done(one)
    clock.now += 100.0  # the policy expired: robots.txt again before the next page
    refetch = await claim_one(alive)
    assert refetch is not None and refetch.kind is EntryKind.ROBOTS
    assert (await alive.stats()).robots_fetches == 3


async def test_done_many_in_one_round_trip(clients: list[Redis], clock: Clock) -> None:
    a = await frontier(clients[0], clock, lease_ttl=10.0)
    b = await frontier(clients[1], clock, lease_ttl=10.0)
    await a.put_many([page(f"http://h{i}.test/1") for i in range(3)])
    stale = await claim_one(a)
    clock.now += 10.0
    assert await b.reclaim() == 1  # a's first lease expired
    held, _, _, _ = await a.claim(3)
    assert stale is not None and len(held) == 3
    calls = (await clients[0].info("commandstats"))["cmdstat_evalsha"]["calls"]
    flags = await a.done_many([(stale, None, False), (held[0], None, True),
                               (held[1], Outcome(status=503, retry_after="5"), False),
                               (held[2], Outcome(status=200), False)])  # fmt: skip
    assert (await clients[0].info("commandstats"))["cmdstat_evalsha"]["calls"] == calls + 1
    assert flags == [False, True, True, True]
    retried = await a.pending()
    assert [(e.url, e.retries) for e in retried] == [(held[0].url, 1)]
    assert (await a.stats()).backoffs == 1


async def test_entries_given_back_unfetched_go_back_as_they_were(
    clients: list[Redis], clock: Clock
) -> None:
    a = await frontier(clients[0], clock)
    b = await frontier(clients[1], clock)
    await a.put_many([page("http://a.test/1"), page("http://a.test/2")])
    taken = await claim_one(a)
    assert taken is not None
    assert await a.release([taken]) == 1
    back = await claim_one(b)  # the slot is free again, the entry at the head, not a retry
    assert back == taken and back.retries == 0
    stats = await b.stats()
    assert stats.retries == 0 and stats.in_flight == 1
    assert await a.release([taken]) == 0  # no longer held here


async def test_admission_and_peek_read_the_sieves_segments(
    clients: list[Redis], clock: Clock, redis_server: RedisServer
) -> None:
    # a Sieve of 512-bit segments: the scripts set and read the very bits RedisSieve does
    sieve = RedisSieve(clients[0], PREFIX, capacity=1000, error_rate=1e-3, segment_bits=512)
    f = RedisFrontier(clients[0], PREFIX, sieve, clock=clock)
    await f.open()
    urls = [f"http://h{i % 7}.test/{i}" for i in range(300)]
    assert await f.put_many([page(u) for u in urls]) == [True] * 300
    assert await f.put_many([page(u) for u in urls[:50]]) == [False] * 50
    assert sieve.segment_layout()[0][0] > 30
    other = Redis.from_url(redis_server.url)
    try:
        plain = RedisSieve(other, "plain:", capacity=1000, error_rate=1e-3, segment_bits=512)
        await plain.open()
        assert await plain.add_many(urls) == [True] * 300
        assert await plain.stage_bytes(0) == await sieve.stage_bytes(0)
    finally:
        await other.aclose()
    done = [f"http://d.test/{i}" for i in range(100)]  # in the Sieve, not queued
    await sieve.add_many(done)
    fresh = [f"http://n.test/{i}" for i in range(100)]
    answers = await f.peek([(u, u) for u in done + fresh])
    assert answers[:100] == [True] * 100
    assert answers[100:].count(False) >= 95
