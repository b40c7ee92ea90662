"""Redis memory per queued URL of the shared frontier, and where it goes (issue 38 point 4).

The measurement: one page's links (100,000 URLs of 60-80 characters on one host, each with the
page as parent, depth 1) admitted in batches of 100 behind a 60 s delay (the host's first page
claimed, so nothing else is handed out), the exact tier on and off; the figure is the slope of
``used_memory`` from 20,000 to 100,000 URLs waiting (what a queued URL costs once the fixed
costs: the Sieve's bits, the first hash tables, are paid). Beside it, the same slope of
``MEMORY USAGE`` (every sample: exact) summed per kind of key (``q:``, ``qk:``, ``exact:``,
``sieve:``, ``h:`` ... the name up to its first ``:`` after the prefix); ``other`` is what no key
accounts for (the keyspace's own table, allocator slack). A third run gives each link a priority
of its own (a focused crawl's scores): the queue's worst case.

Run: .venv/bin/python -m bench.bench_queue_memory (BENCH_QUICK=1: 2,000 to 10,000 URLs).
"""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
from typing import Any, NamedTuple

from redis.asyncio import Redis

from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.settings import Politeness
from crawler.sieve.redis import RedisSieve, exact_buckets
from crawler.testing.redis_server import RedisServer

QUICK = bool(os.environ.get("BENCH_QUICK"))
LOW, HIGH = (2_000, 10_000) if QUICK else (20_000, 100_000)
BATCH = 100
SITE = "https://www.example-store.com"
PARENT = f"{SITE}/catalog/garden-furniture/index.html?page=3"
WORDS = ("garden", "chair", "table", "outdoor", "teak", "folding", "cushion", "parasol",
         "bench", "lounger", "set", "grey", "natural", "wood", "steel", "round")  # fmt: skip


class Run(NamedTuple):
    name: str
    per_url: float  # used_memory slope, bytes per queued URL
    kinds: dict[str, float]  # MEMORY USAGE slope per kind of key, bytes per queued URL
    url_chars: float  # mean length of the URLs queued


def links(count: int, rng: random.Random) -> list[str]:
    """`count` distinct product URLs of 60-80 characters on `SITE`."""
    out: list[str] = []
    while len(out) < count:
        slug = "-".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4)))
        url = f"{SITE}/p/{slug}-{len(out):06d}.html"
        if 60 <= len(url) <= 80:
            out.append(url)
    return out


async def usage(client: Redis, prefix: str) -> Counter[str]:
    """MEMORY USAGE (exact) of every key under `prefix`, summed by kind."""
    kinds: Counter[str] = Counter()
    async for raw in client.scan_iter(match=prefix + "*", count=1000):
        key = raw.decode()
        kind = key[len(prefix) :].split(":", 1)[0]
        kinds[kind] += int(await client.memory_usage(raw, samples=0) or 0)
    return kinds


async def used_memory(client: Redis) -> int:
    info: dict[str, Any] = await client.info("memory")
    return int(info["used_memory"])


async def measure(url: str, name: str, *, exact: bool, scored: bool) -> Run:
    client = Redis.from_url(url)
    await client.flushall()
    prefix = "crawl:bench:"
    sieve = RedisSieve(client, prefix, capacity=1_000_000, error_rate=1e-4)
    sieve.exact_buckets = exact_buckets(1_000_000)  # as a crawl of that capacity lays them out
    frontier = RedisFrontier(client, prefix, sieve, Politeness(delay=60.0, respect_robots=False),
                             sharing=Sharing(exact=exact))  # fmt: skip
    await frontier.open()
    await frontier.put(Entry(url=PARENT, key=PARENT, depth=0))
    claimed, _, _, _ = await frontier.claim()  # the parent: the host's next start is 60 s away
    assert [e.url for e in claimed] == [PARENT]
    rng = random.Random(38)
    urls = links(HIGH, rng)
    marks: dict[int, tuple[int, Counter[str]]] = {}
    for i in range(0, HIGH, BATCH):
        priority = rng.random if scored else float
        batch = [Entry(url=u, key=u, depth=1, parent=PARENT, priority=priority())
                 for u in urls[i : i + BATCH]]  # fmt: skip
        assert all(await frontier.put_many(batch))
        if i + BATCH in (LOW, HIGH):
            marks[i + BATCH] = (await used_memory(client), await usage(client, prefix))
    (m0, k0), (m1, k1) = marks[LOW], marks[HIGH]
    n = HIGH - LOW
    kinds = {kind: (k1[kind] - k0[kind]) / n for kind in sorted(k1.keys() | k0.keys())}
    kinds["other"] = ((m1 - m0) - sum(k1.values()) + sum(k0.values())) / n
    await client.aclose()
    return Run(name, (m1 - m0) / n, kinds, sum(map(len, urls)) / len(urls))


async def runs(url: str) -> list[Run]:
    return [
        await measure(url, "exact tier off", exact=False, scored=False),
        await measure(url, "exact tier on", exact=True, scored=False),
        await measure(url, "exact on, priorities", exact=True, scored=True),
    ]


def main() -> None:
    with RedisServer() as server:
        results = asyncio.run(runs(server.url))
    shown = {k for r in results for k, v in r.kinds.items() if k != "other" and abs(v) >= 0.05}
    kinds = [*sorted(shown), "other"]  # the kinds that grow with the queue
    print(f"Redis memory per queued URL: used_memory slope from {LOW:,} to {HIGH:,} URLs waiting "
          f"on one host (delay 60 s), URLs of {results[0].url_chars:.0f} chars on average, one "
          f"parent; by kind of key: MEMORY USAGE slope\n")  # fmt: skip
    print(f"{'run':<22} {'bytes/URL':>9} " + " ".join(f"{k:>7}" for k in kinds))
    for r in results:
        cells = " ".join(f"{r.kinds.get(k, 0.0):>7.1f}" for k in kinds)
        print(f"{r.name:<22} {r.per_url:>9.1f} {cells}")


if __name__ == "__main__":
    main()
