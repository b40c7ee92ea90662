"""What the Redis frontier costs Redis: CPU per admitted key, per claim + done, round trips.

A throwaway redis-server (Debian's, ``tests.redis_server``) on loopback; one RedisFrontier
(Redis ``TIME`` as its clock, no delay so the claims are not held back by politeness).

  admit new/seen = ``put_many`` in batches of 50 keys (one script call per batch), keys new
  (test-and-set + enqueue) then the same keys again (seen: test only);
  claim+done = one claim script + one done script per entry, 200 hosts;
  CPU us = Redis's own figures: ``INFO commandstats`` usec of EVALSHA (the scripts, inner
  commands included) and ``INFO cpu`` (user + sys of the whole server) deltas, per unit;
  round trips = EVALSHA calls per unit (nothing else is sent meanwhile);
  memory = ``used_memory`` delta per queued URL (its chunk, key index, Sieve bits amortized;
  the queue's own figures: ``bench.bench_queue_memory``);
  refused = pages robots.txt disallows (``respect_robots``, every host's robots.txt preloaded
  as ``Disallow: /``): claim (the claim script + the one REFUSE call that gives back the slots
  of its refusals), done (releasing the refusal's lease), one entry per claim, then 10.

A page-equivalent (one claim, one done, one ``put_many`` of its new links) is 2 round trips
plus one per batch of links. Run: .venv/bin/python -m bench.bench_redis_frontier
(BENCH_QUICK=1: a smaller run).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any

from redis.asyncio import Redis

from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.robots import policy_from_response
from crawler.frontier.settings import Politeness
from crawler.sieve.redis import RedisSieve
from crawler.testing.redis_server import RedisServer

QUICK = bool(os.environ.get("BENCH_QUICK"))
KEYS = 4_000 if QUICK else 40_000
HOSTS = 200
BATCH = 50
REFUSED = KEYS // 4  # refused pages per run of claims (one, then ten at a time)
DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"


async def figures(client: Redis) -> tuple[int, int, float, int]:
    """(EVALSHA calls, EVALSHA usec, server CPU seconds, used_memory)."""
    stats: dict[str, Any] = await client.info("commandstats")
    ev = stats.get("cmdstat_evalsha", {"calls": 0, "usec": 0})
    cpu: dict[str, Any] = await client.info("cpu")
    mem: dict[str, Any] = await client.info("memory")
    seconds = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
    return int(ev["calls"]), int(ev["usec"]), seconds, int(mem["used_memory"])


async def run(url: str) -> list[tuple[str, int, float, float, float]]:
    client = Redis.from_url(url)
    sieve = RedisSieve(client, "b:", capacity=1_000_000, error_rate=1e-4)
    frontier = RedisFrontier(client, "b:", sieve)
    await frontier.open()
    rng = random.Random(5)
    urls = [f"http://h{rng.randrange(HOSTS)}.test/p/{rng.getrandbits(48):x}" for _ in range(KEYS)]
    entries = [Entry(url=u, key=u, depth=1, parent="http://h0.test/") for u in urls]
    rows = []

    async def measure(name: str, units: int, work: Any) -> None:
        calls0, usec0, cpu0, _ = await figures(client)
        await work()
        calls1, usec1, cpu1, _ = await figures(client)
        rows.append((name, units, (usec1 - usec0) / units, (cpu1 - cpu0) * 1e6 / units,
                     (calls1 - calls0) / units))  # fmt: skip

    async def admit() -> None:
        for i in range(0, KEYS, BATCH):
            await frontier.put_many(entries[i : i + BATCH])

    _, _, _, mem0 = await figures(client)
    await measure("admit new key", KEYS, admit)
    _, _, _, mem1 = await figures(client)
    await measure("admit seen key", KEYS, admit)

    half = KEYS // 2
    split = [0, 0]  # script usec of claims, of dones: rounds of one claim per host, then dones
    claimed = 0
    while claimed < half:
        _, usec0, _, _ = await figures(client)
        held = [e for _ in range(HOSTS) for e in (await frontier.claim())[0]]
        _, usec1, _, _ = await figures(client)
        for entry in held:
            await frontier.done(entry)
        _, usec2, _, _ = await figures(client)
        split[0] += usec1 - usec0
        split[1] += usec2 - usec1
        claimed += len(held)
    rows.append(("claim", claimed, split[0] / claimed, float("nan"), 1.0))
    rows.append(("done", claimed, split[1] / claimed, float("nan"), 1.0))

    async def claim_done() -> None:
        for _ in range(KEYS - claimed):
            got, _, _, _ = await frontier.claim()
            await frontier.done(got[0])

    await measure("claim + done", KEYS - claimed, claim_done)
    rows += await refusals(client)
    await client.aclose()
    queue = mem1 - mem0 - sieve.size_in_bytes
    print(
        f"Redis memory per queued URL: {queue / KEYS:.0f} bytes (chunk + key index), "
        f"beside the Sieve's {sieve.size_in_bytes / 2**20:.1f} MiB for 1M keys at 1e-4"
    )
    return rows


async def refusals(client: Redis) -> list[tuple[str, int, float, float, float]]:
    """Claim and done of pages robots.txt disallows: script us and round trips per page."""
    agent = "sieve-crawler"
    sieve = RedisSieve(client, "r:", capacity=100_000, error_rate=1e-4)
    frontier = RedisFrontier(
        client,
        "r:",
        sieve,
        politeness=Politeness(respect_robots=True),
        sharing=Sharing(user_agent=agent),
    )
    await frontier.open()
    for h in range(HOSTS):
        policy = policy_from_response(200, DISALLOW_ALL, agent)
        await frontier.set_robots(f"http://h{h}.test/", policy, DISALLOW_ALL)
    rows = []
    for count in (1, 10):
        rng = random.Random(count)
        await frontier.put_many([
            Entry(url=u, key=u) for u in (f"http://h{rng.randrange(HOSTS)}.test/{count}/{i}"
                                          for i in range(REFUSED))])  # fmt: skip
        split, trips, pages = [0, 0], [0, 0], 0
        while pages < REFUSED:
            calls0, usec0, _, _ = await figures(client)
            held, _, _, _ = await frontier.claim(count)
            calls1, usec1, _, _ = await figures(client)
            await frontier.done_many([(entry, None, False) for entry in held])
            calls2, usec2, _, _ = await figures(client)
            split[0] += usec1 - usec0
            split[1] += usec2 - usec1
            trips[0] += calls1 - calls0
            trips[1] += calls2 - calls1
            pages += len(held)
        for i, name in enumerate((f"refused claim({count})", f"refused done({count})")):
            rows.append((name, pages, split[i] / pages, float("nan"), trips[i] / pages))
    return rows


def main() -> None:
    with RedisServer() as server:
        started = time.perf_counter()
        rows = asyncio.run(run(server.url))
        wall = time.perf_counter() - started
    print(f"{KEYS} keys, {HOSTS} hosts, batches of {BATCH}; wall {wall:.1f} s\n")
    print(f"{'operation':<20} {'units':>7} {'script us':>10} {'server CPU us':>14} {'trips':>7}")
    for name, units, script_us, cpu_us, trips in rows:
        print(f"{name:<20} {units:>7} {script_us:>10.1f} {cpu_us:>14.1f} {trips:>7.3f}")


if __name__ == "__main__":
    main()
