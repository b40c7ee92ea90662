"""Politeness by address in the shared frontier, on a real redis-server: two instances (two
"processes", each with its own resolver) share the budget of the address their hosts resolve
to: ``ip_delay`` between starts and ``ip_concurrency`` in flight, across both, on the injected
clock; an expired lease gives its address slot back; a claimed host connects to the address
recorded for it, whichever process resolved it."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

from redis.asyncio import Redis

from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import RedisFrontier
from tests.support.redis_frontier import Clock, frontier, page

ADDRESS = "10.9.9.9"
HOSTS = [f"v{i}.test" for i in range(6)]


@dataclass(frozen=True)
class Found:
    addresses: tuple[str, ...]
    ttl: float | None = None


class Book:
    """One process's resolver (`crawler.frontier.addresses.Names`): every name on `answer`."""

    def __init__(self, answer: str = ADDRESS, ttl: float | None = None) -> None:
        self.answer = answer
        self.ttl = ttl
        self.asked: Counter[str] = Counter()
        self.pins: dict[str, str | None] = {}

    async def lookup(self, name: str) -> Found:
        self.asked[name] += 1
        return Found((self.answer,), self.ttl)

    def pin(self, name: str, address: str | None) -> None:
        self.pins[name] = address


async def claimed(f: RedisFrontier, count: int = 1) -> list[Entry]:
    """Claim, then let the resolutions it asked for be recorded (as they would in a while)."""
    entries = (await f.claim(count))[0]
    assert f.resolution is not None
    await f.resolution.settle()
    return entries


async def test_two_processes_hold_one_address_to_its_delay_and_concurrency(
    clients: list[Redis], clock: Clock
) -> None:
    ip_delay, ip_concurrency, hold, step = 0.25, 2, 0.6, 0.05
    fs = [await frontier(c, clock, delay=1.0, ip_delay=ip_delay, ip_concurrency=ip_concurrency)
          for c in clients]  # fmt: skip
    for f in fs:
        f.resolve_by(Book())
    await fs[0].put_many([page(f"http://{h}/{n}") for h in HOSTS for n in range(3)])
    starts: list[tuple[float, int]] = []  # (time, which process)
    flying: list[tuple[float, RedisFrontier, Entry]] = []  # (ends at, by, entry)
    most = 0
    for tick in range(2000):
        clock.now = 1000.0 + tick * step
        for end, f, entry in [x for x in flying if x[0] <= clock.now + 1e-9]:
            flying.remove((end, f, entry))
            assert await f.done(entry)
        for i, f in enumerate(fs if tick % 2 else fs[::-1]):  # both race, in turns
            for entry in await claimed(f, 2):
                starts.append((clock.now, i))
                flying.append((clock.now + hold, f, entry))
        most = max(most, len(flying))
        assert len(flying) <= ip_concurrency, (clock.now, flying)
        if len(starts) == 18 and not flying:
            break
    assert len(starts) == 18
    gaps = [round(b[0] - a[0], 6) for a, b in itertools.pairwise(starts)]
    assert min(gaps) == ip_delay  # never closer, and exactly that when the address is free
    assert most == ip_concurrency  # the slots bound too (hold > 2 * ip_delay)
    assert {i for _, i in starts} == {0, 1}  # both took part
    stats = await fs[0].stats()
    assert (stats.addresses, stats.ip_delay, stats.ip_concurrency) == (1, ip_delay, 2)


async def test_an_expired_lease_gives_its_address_slot_back(
    clients: list[Redis], clock: Clock
) -> None:
    a, b = [await frontier(c, clock, ip_concurrency=1, lease_ttl=10.0) for c in clients]
    for f in (a, b):
        f.resolve_by(Book())
    await a.put_many([page("http://v0.test/"), page("http://v1.test/")])
    assert await claimed(a, 2) == []  # both hosts asked to be resolved first
    (held,) = await claimed(a, 2)  # one slot on their address
    assert await claimed(b, 2) == []  # the other host waits on the address, in any process
    assert (await b.stats()).address_waiting == 1
    clock.now += 11.0  # process a died: its lease expires
    assert await b.reclaim() == 1
    got = await claimed(b, 2)
    assert len(got) == 1  # the slot is free again: one (not two) goes
    assert not await a.done(held)


async def test_a_host_connects_to_its_recorded_address_and_moves_when_it_changes(
    clients: list[Redis], clock: Clock
) -> None:
    mine, theirs = Book("10.0.0.1", ttl=40.0), Book("10.0.0.7")
    a, b = [await frontier(c, clock, ip_delay=1.0) for c in clients]
    a.resolve_by(mine)
    b.resolve_by(theirs)
    await a.put_many([page(f"http://v0.test/{n}") for n in range(3)])
    assert await claimed(a) == []  # resolved by a, recorded for both
    (first,) = await claimed(a)
    assert mine.pins == {"v0.test": "10.0.0.1"}
    assert await a.done(first)
    clock.now += 1.0
    (second,) = await claimed(b)  # b never looked it up: it connects where a's budget holds
    assert theirs.asked == Counter() and theirs.pins == {"v0.test": "10.0.0.1"}
    assert await b.done(second)
    clock.now += 40.0  # the answer expired: asked again, the host moves to its new address
    mine.answer = "10.0.0.2"
    assert await claimed(a) == []
    assert len(await claimed(a)) == 1
    assert mine.asked["v0.test"] == 2 and mine.pins["v0.test"] == "10.0.0.2"
    assert (await a.stats()).addresses == 2


async def test_an_ip_literal_host_is_its_own_address_without_a_lookup(
    clients: list[Redis], clock: Clock
) -> None:
    book = Book()
    f = await frontier(clients[0], clock, ip_delay=1.0)
    f.resolve_by(book)
    await f.put_many([page("http://127.0.0.5:8080/a"), page("http://127.0.0.5:8081/b")])
    assert await claimed(f, 2) == []
    assert len(await claimed(f, 2)) == 1  # two hosts (ports), one address: one start per second
    assert book.asked == Counter() and book.pins == {"127.0.0.5": "127.0.0.5"}
    clock.now += 1.0
    assert len(await claimed(f, 2)) == 1
