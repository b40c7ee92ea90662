"""The Redis frontier's queues as chunks (`crawler.frontier.redis.lua_keys.QUEUED`): order across
chunk boundaries, entries taken out of a chunk's middle, retries among chunks, every field
back as it went in, and the memory a queued URL costs."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.hosts import host_key
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.members import entry_of, member_tail
from tests.support.redis_frontier import PREFIX, Clock, claim_one, frontier

SITE = "https://www.example-store.com"


def links(n: int, parent: str = f"{SITE}/catalog/index.html", start: int = 0) -> list[Entry]:
    """`n` links of one page (about 65 characters each: ~60 to a 4 KiB chunk)."""
    return [Entry(url=u, key=u, depth=1, parent=parent)
            for u in (f"{SITE}/p/garden-teak-folding-chair-{i:06d}.html"
                      for i in range(start, start + n))]  # fmt: skip


async def drain(f: RedisFrontier) -> list[Entry]:
    """Claim and finish every entry the host hands out now, in hand-out order."""
    out = []
    while (entry := await claim_one(f)) is not None:
        out.append(entry)
        assert await f.done(entry)
    return out


async def test_fifo_across_chunks_and_contexts(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock)
    first, other, second = (
        links(300),
        links(5, parent=f"{SITE}/other", start=300),
        links(200, start=305),
    )
    for batch in (first, other, second):  # three pages: contexts change, chunks fill up
        assert all(await f.put_many(batch))
    chunks = await clients[0].hlen(PREFIX + f"ql:{SITE}:443")
    assert chunks >= 5  # 300 and 200 links do not fit one chunk each
    want = first + other + second
    assert await f.pending() == want
    assert [e.url for e in await drain(f)] == [e.url for e in want]
    assert await clients[0].exists(PREFIX + f"ql:{SITE}:443", PREFIX + f"qk:{SITE}:443") == 0


async def test_taken_from_a_chunks_middle_and_its_last(clients: list[Redis], clock: Clock) -> None:
    f = await frontier(clients[0], clock)
    batch = links(150)
    assert all(await f.put_many(batch))
    moved = [batch[75], batch[0], batch[149]]  # middle, head and tail of chunks
    for entry in moved:
        assert await f.set_priority(entry.url, entry.key, 2.0) == 0.0
    assert await f.queued_priority(batch[75].url, batch[75].key) == 2.0
    assert await f.queued_priority(batch[74].url, batch[74].key) == 0.0
    rest = [e for e in batch if e not in moved]
    want = [Entry(url=e.url, key=e.key, depth=1, parent=e.parent, priority=2.0) for e in moved]
    assert await f.pending() == want + rest
    for entry in moved:  # back to 0: after the entries queued there (the chunk at 2 is gone)
        assert await f.reprioritize(entry.url, entry.key, 0.0, lower=True)
    assert [e.url for e in await f.pending()] == [e.url for e in rest + moved]
    assert await f.peek([(batch[0].url, batch[0].key)]) == [0.0]
    assert [e.url for e in await drain(f)] == [e.url for e in rest + moved]
    assert (await f.stats()).queued == 0
    assert await clients[0].zcard(PREFIX + f"q:{SITE}:443") == 0


async def test_retries_come_back_in_the_order_they_went_out(
    clients: list[Redis], clock: Clock
) -> None:
    f = await frontier(clients[0], clock, delay=0.0, per_host_concurrency=3)
    batch = links(4)
    assert all(await f.put_many(batch))
    taken = [await claim_one(f) for _ in range(3)]
    assert [e.url for e in taken if e] == [e.url for e in batch[:3]]
    for entry in reversed(taken):  # given back last first
        assert entry is not None and await f.done(entry, Outcome(status=500), retry=True)
    clock.now += 3600  # past the backoff
    again = await drain(f)
    assert [(e.url, e.retries) for e in again] == [(e.url, 1) for e in batch[:3]] + [
        (batch[3].url, 0)
    ]


@pytest.mark.parametrize(
    "entry",
    [
        Entry(url="http://a.test/x?q=1", key="http://a.test/x", parent="http://b.test/", depth=2),
        Entry(
            url="https://a.test:8443/p", key="https://a.test:8443/p", parent="https://a.test:8443/"
        ),
        Entry(url="http://a.test:8080/p", key="http://a.test/p", retries=2, redirects=1),
        Entry(url="http://a.test/!x", key="!odd-key", sitemap=True, parent=""),
        Entry(url="http://a.test/", key="/also-odd", priority=1.5),
        Entry(url="http://é.test/ü", key="http://é.test/ü", parent="http://é.test/"),
    ],
)
def test_an_entry_comes_back_as_it_went_in(entry: Entry) -> None:
    record = "1000001" + member_tail(entry)
    assert entry_of(host_key(entry.url), record, entry.priority) == entry


async def test_a_queued_url_costs_under_150_bytes(clients: list[Redis], clock: Clock) -> None:
    # 2,000 links of ~65 characters waiting on one host: the queue's keys (with the exact tier:
    # 8 more bytes a URL in intsets, ~90 a bucket key, not counted here) as MEMORY USAGE says
    f = await frontier(clients[0], clock)
    batch = links(2000)
    for i in range(0, len(batch), 100):
        assert all(await f.put_many(batch[i : i + 100]))
    host = f"{SITE}:443"
    sizes = [await clients[0].memory_usage(PREFIX + f"{kind}:{host}", samples=0)
             for kind in ("q", "qk", "ql")]  # fmt: skip
    per_url = sum(int(s or 0) for s in sizes) / len(batch)
    assert per_url < 150  # 110 (518 as one member per URL in q:, again in qk:)
