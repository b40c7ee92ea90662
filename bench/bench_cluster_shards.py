"""The cluster column of `python -m bench cluster`: a Redis Cluster beside one Redis node.

The cluster: `crawler.testing.redis_cluster.RedisClusterServer`, 3 masters with a replica each
(Debian's redis-server, all six on this machine's 2 cores, beside the crawl processes and the
site). A crawl joins it by the URL of any node, as on one node; its hosts are in 12 groups (4
per master, `crawler.frontier.redis.shards`). Per crawl row (`bench.bench_cluster.site_table`
runs them with the one-node rows):

  Redis CPU us/page per master = each master's ``INFO cpu`` (user + sys) delta / pages (the
  sum is the table's column; the replicas' CPU is said beside);
  trips/page per master = script calls (EVALSHA) + WAITs (a completion's wait for a replica: one
  INCR + WAIT round trip per master admitted to since the last batch of completions) / pages;
  durable off = the same crawl with completions not waiting (`bench.crawl_durable_off`), runs
  alternating with durable on, medians of `REPEATS`.

Memory (`url_memory`): ``used_memory`` deltas summed over the masters (one node: its own), per
URL of `MEMORY_URLS` admitted on `MEMORY_HOSTS` hosts through `ShardedFrontier.admit`, as a
crawl admits: queued = waiting behind a 60 s host delay; seen = after every one of them was
claimed and completed (what stays: the exact tier's fingerprints, the hosts' records); the
Sieve's preallocated first stages excluded (their size is said beside).

The admission stream (`stream`): `STREAM_URLS` distinct URLs (``BENCH_STREAM_URLS``; default
10,000,000, 20,000 with BENCH_QUICK) over `STREAM_HOSTS` hosts, in batches of 50-200 links a
page (80% on the page's host), `STREAM_TASKS` batches in flight, straight through
`ShardedFrontier.admit` (exact tier on; the Sieve's first stages sized for 1.5x the stream,
so that no group's grows): time, and each
master's used_memory and CPU at the end, per URL. Run alone: ``python -m bench.bench_cluster_shards
[memory] [buckets] [stream]``.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from redis.asyncio import Redis

from crawler.cluster.connect import connect, discover
from crawler.config.load import Config
from crawler.frontier.entries import Entry
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.redis.sharded import ShardedFrontier, group_sieves
from crawler.frontier.redis.shards import GROUPS_PER_MASTER, Keyspace
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.sieve.bloom import stage_params, stage_shape
from crawler.testing.redis_cluster import RedisClusterServer
from crawler.testing.redis_server import RedisServer

QUICK = bool(os.environ.get("BENCH_QUICK"))
REPEATS = 1 if QUICK else 3
MEMORY_URLS = 10_000 if QUICK else 100_000
MEMORY_HOSTS = 1_000
STREAM_URLS = int(os.environ.get("BENCH_STREAM_URLS") or (20_000 if QUICK else 10_000_000))
STREAM_HOSTS = 1_000
STREAM_TASKS = 8
QUEUE_LIMITS = QueueLimits(max_queued=10**10, max_queued_per_host=10**9)
Runner = Callable[[int, str, str], dict[str, Any]]  # (processes, crawl id, module) -> row


def node_urls(ports: Sequence[int]) -> list[str]:
    return [f"redis://127.0.0.1:{port}/0" for port in ports]


def masters_only(row: dict[str, Any], masters: Sequence[str]) -> dict[str, Any]:
    """`row` (`bench.bench_cluster.run` over every node) with its sums over the masters only,
    the replicas' CPU in ``replica_cpu``."""
    by_node = row["by_node"]
    for name, key in (("redis_cpu", "cpu"), ("commands", "commands"), ("waits", "waits")):
        row[name] = sum(by_node[url][key] for url in masters)
    row["replica_cpu"] = sum(d["cpu"] for url, d in by_node.items() if url not in masters)
    row["masters"] = list(masters)
    return row


def cluster_rows(runner: Runner, name: str) -> tuple[list[dict[str, Any]], dict[str, list[Any]]]:
    """1, 2 and 4 processes on the cluster, then 2 processes with completions waiting for
    replicas (durable, the default) and not, alternating `REPEATS` times."""
    rows = [runner(n, f"{name}-c{n}", "crawler.cli") for n in (1, 2, 4)]
    durable: dict[str, list[Any]] = {"on": [], "off": []}
    for i in range(REPEATS):
        durable["off"].append(runner(2, f"{name}-off{i}", "bench.crawl_durable_off"))
        durable["on"].append(runner(2, f"{name}-on{i}", "crawler.cli"))
    return rows, durable


def _per_master(row: dict[str, Any], key: str, scale: float) -> str:
    return " / ".join(f"{row['by_node'][url][key] / row['pages'] * scale:.0f}"
                      for url in row["masters"])  # fmt: skip


def print_cluster(one_node: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]],
                  durable: dict[str, list[Any]]) -> None:  # fmt: skip
    """The cluster rows' figures per master, against one node with as many processes."""
    for node, row in zip(one_node, rows, strict=True):
        trips = " / ".join(
            f"{(row['by_node'][u]['commands'] + row['by_node'][u]['waits']) / row['pages']:.2f}"
            for u in row["masters"]
        )
        replicas = row["replica_cpu"] / row["pages"] * 1e6
        print(f"  cluster, {row['procs']} process(es): {row['steady'] / node['steady']:.2f}x one"
              f" node's steady/s ({row['rate'] / node['rate']:.2f}x wall); Redis CPU us/page per"
              f" master {_per_master(row, 'cpu', 1e6)} (replicas {replicas:.0f} in all); "
              f"trips/page per master {trips}, of which WAITs "
              f"{row['waits'] / row['pages']:.2f}/page in all")  # fmt: skip
    med = {k: {f: statistics.median(r[f] / (r["pages"] if f not in ("rate", "steady") else 1)
                                    for r in rs)
               for f in ("rate", "steady", "commands", "waits", "redis_cpu", "cpu")}
           for k, rs in durable.items()}  # fmt: skip
    for k in ("on", "off"):
        m = med[k]
        print(f"  2 processes, durable {k:<3} (median of {len(durable[k])}): {m['rate']:.0f} "
              f"pages/s, steady {m['steady']:.0f}/s, trips/page {m['commands'] + m['waits']:.2f} "
              f"(WAITs {m['waits']:.2f}), Redis CPU {m['redis_cpu'] * 1e6:.0f} us/page, crawl "
              f"CPU {m['cpu'] * 1e3:.2f} ms/page")  # fmt: skip
    print(f"  waiting for replicas: {med['on']['steady'] / med['off']['steady']:.2f}x the steady "
          f"rate, {med['on']['rate'] / med['off']['rate']:.2f}x wall-clock, "
          f"{med['on']['commands'] + med['on']['waits'] - med['off']['commands']:+.2f} "
          "trips/page")  # fmt: skip


def saturation_line(site: str, row: dict[str, Any]) -> str:
    """What one master's core serves, from a cluster row's Redis CPU per page (masters' sum)."""
    us = row["redis_cpu"] / row["pages"] * 1e6
    n = len(row["masters"])
    return (
        f"saturation on the cluster ({site}, {row['procs']} processes): {us:.0f} us of "
        f"masters' CPU per page, {us / n:.0f} per master -> each master at 100% of one core "
        f"adds about {1e6 / us:,.0f} pages/s ({n} masters: {n * 1e6 / us:,.0f} pages/s)"
    )


# -- memory ---------------------------------------------------------------------------------------
def page_batches(count: int, hosts: int, seed: int = 7, sizes: tuple[int, int] = (50, 200)
                 ) -> Iterator[list[Entry]]:  # fmt: skip
    """`count` distinct URLs over `hosts` hosts, as a crawl admits them: batches of 50-200
    links found on a page, 80% on the page's own host (URLs of ~60-70 characters)."""
    rng = random.Random(seed)
    names = [f"{'www.' if i % 3 == 0 else ''}site{i}.example" for i in range(hosts)]
    sections = ["docs", "news", "blog", "products", "wiki/en", "forum/t", "a", "static/pages"]
    made = 0
    while made < count:
        home = rng.randrange(hosts)
        page = f"https://{names[home]}/{rng.choice(sections)}/index-{made:x}.html"
        batch = []
        for _ in range(min(rng.randint(*sizes), count - made)):
            host = names[home if rng.random() < 0.8 else rng.randrange(hosts)]
            url = (f"https://{host}/{rng.choice(sections)}/{rng.getrandbits(24):06x}-"
                   f"item-{made:x}.html")  # fmt: skip
            batch.append(Entry(url=url, key=url, depth=2, parent=page))
            made += 1
        yield batch


async def _frontier(url: str, crawl_id: str, politeness: Politeness, exact: bool, capacity: int
                    ) -> tuple[ShardedFrontier, int]:  # fmt: skip
    """A crawl's frontier on the node or cluster at `url`, laid out as `crawl` lays it (12
    groups on 3 masters, one on one node); (it, masters: 0 for one node)."""
    client, masters = await discover(connect(url), url)
    groups = GROUPS_PER_MASTER * masters or 1
    keyspace = Keyspace(crawl_id, groups, cluster=masters > 0)
    s = Config().sieve
    sieves = group_sieves(client, keyspace, capacity, error_rate=s.error_rate, ratio=s.ratio,
                          growth=s.growth)  # fmt: skip
    frontier = ShardedFrontier(client, keyspace, sieves, politeness, QUEUE_LIMITS,
                               Sharing(exact=exact, owner="bench"))  # fmt: skip
    await frontier.open()
    return frontier, masters


async def used_memory(nodes: Sequence[str]) -> list[int]:
    async def one(url: str) -> int:
        client = Redis.from_url(url)
        memory: dict[str, Any] = await client.info("memory")
        await client.aclose()
        return int(memory["used_memory"])

    return list(await asyncio.gather(*(one(u) for u in nodes)))


async def url_memory(url: str, nodes: Sequence[str], *, exact: bool, seen: bool) -> float:
    """Bytes per URL of `MEMORY_URLS` admitted (module docstring): queued behind a 60 s delay,
    or (`seen`) claimed and completed since."""
    polite = Politeness(delay=0.0 if seen else 60.0, per_host_concurrency=10**6 if seen else 1,
                        respect_robots=False)  # fmt: skip
    crawl_id = f"mem-{int(exact)}{int(seen)}"
    frontier, _ = await _frontier(url, crawl_id, polite, exact, Config().sieve.capacity)
    warm = [Entry(url=f"https://warm{g}.example/", key=f"https://warm{g}.example/")
            for g in range(4 * len(frontier.groups))]  # fmt: skip
    await frontier.admit(warm)  # every group's scripts and first keys in place
    if seen:
        await _drain(frontier)
    before = sum(await used_memory(nodes))
    for batch in page_batches(MEMORY_URLS, MEMORY_HOSTS):
        await frontier.admit(batch)
    if seen:
        await _drain(frontier)
    after = sum(await used_memory(nodes))
    await frontier.client.aclose()
    return (after - before) / MEMORY_URLS


async def _drain(frontier: ShardedFrontier) -> None:
    """Claim and complete every queued URL."""
    while True:
        entries, ready_in, queued, leased = await frontier.claim(500)
        if entries:
            await frontier.done_many([(entry, None, False) for entry in entries])
        elif queued == 0 and leased == 0:
            return
        else:
            await asyncio.sleep(min(ready_in or 0.01, 0.1))


def memory_table(server: RedisServer, cluster: RedisClusterServer) -> dict[str, float]:
    """Bytes per queued and per seen URL on one node and on the cluster, exact tier on and off;
    printed, and returned by row name."""
    out: dict[str, float] = {}
    masters = node_urls(cluster.masters())
    print(f"\nRedis memory per URL ({MEMORY_URLS:,} URLs on {MEMORY_HOSTS:,} hosts, used_memory;"
          " the cluster: summed over its 3 masters)")  # fmt: skip
    print(f"{'':<24} {'queued':>8} {'seen':>8}")
    for where, url, nodes in (("one node", server.url, [server.url]),
                              ("cluster", cluster.url, masters)):  # fmt: skip
        for exact in (False, True):
            figures = [asyncio.run(url_memory(url, nodes, exact=exact, seen=seen))
                       for seen in (False, True)]  # fmt: skip
            name = f"{where}, exact {'on' if exact else 'off'}"
            out[f"{name}, queued"], out[f"{name}, seen"] = figures
            print(f"{name:<24} {figures[0]:>8.0f} {figures[1]:>8.0f}")
    s = Config().sieve
    m, _ = stage_shape(*stage_params(s.capacity, s.error_rate, s.ratio, s.growth, 0))
    print(f"beside the Sieve's first stage: {m / 8 / 2**20:.1f} MiB for {s.capacity:,} URLs at "
          f"{s.error_rate:g} ({m / s.capacity:.1f} bits a URL)")  # fmt: skip
    return out


# -- the admission stream -------------------------------------------------------------------------
async def _stream(url: str, masters: Sequence[str], count: int) -> dict[str, Any]:
    polite = Politeness(delay=1.0, respect_robots=False)
    frontier, _ = await _frontier(url, "stream", polite, True, count * 3 // 2)
    batches = page_batches(count, STREAM_HOSTS, seed=11)
    flags = {flag: 0 for flag in AdmitFlag}
    done = 0
    next_said = 1_000_000

    async def worker() -> None:
        nonlocal done, next_said
        for batch in batches:  # one generator shared: each batch taken by one worker
            for flag in await frontier.admit(batch):
                flags[flag] += 1
            done += len(batch)
            if done >= next_said:
                next_said += 1_000_000
                print(f"  ... {done:,} URLs in {time.perf_counter() - started:.0f} s",
                      file=sys.stderr, flush=True)  # fmt: skip

    before_mem, before_cpu = await used_memory(masters), await _cpu(masters)
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(STREAM_TASKS)))
    wall = time.perf_counter() - started
    after_mem, after_cpu = await used_memory(masters), await _cpu(masters)
    await frontier.client.aclose()
    return {"wall": wall, "flags": flags,
            "memory": [a - b for a, b in zip(after_mem, before_mem, strict=True)],
            "cpu": [a - b for a, b in zip(after_cpu, before_cpu, strict=True)]}  # fmt: skip


async def _cpu(nodes: Sequence[str]) -> list[float]:
    async def one(url: str) -> float:
        client = Redis.from_url(url)
        cpu: dict[str, Any] = await client.info("cpu")
        await client.aclose()
        return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])

    return list(await asyncio.gather(*(one(u) for u in nodes)))


def stream(cluster: RedisClusterServer, count: int = STREAM_URLS) -> dict[str, Any]:
    """The admission stream (module docstring) into `cluster`; printed and returned."""
    masters = node_urls(cluster.masters())
    replicas = node_urls(sorted(cluster.replicas()))
    replica_cpu = asyncio.run(_cpu(replicas))
    r = asyncio.run(_stream(cluster.url, masters, count))
    r["replica_cpu"] = sum(asyncio.run(_cpu(replicas))) - sum(replica_cpu)
    admitted = r["flags"][AdmitFlag.ADMITTED]
    print(
        f"\nadmission stream: {count:,} distinct URLs on {STREAM_HOSTS:,} hosts into the cluster"
        f" (batches of 50-200, {STREAM_TASKS} in flight, exact tier on): {admitted:,} admitted "
        f"in {r['wall']:.0f} s ({count / r['wall']:,.0f} URLs/s, this one client process)"
    )
    for i, url in enumerate(masters):
        mem, cpu = r["memory"][i], r["cpu"][i]
        print(f"  master {i} ({url}): used_memory +{mem / 2**20:,.0f} MiB, CPU {cpu:.1f} s "
              f"({cpu / r['wall'] * 100:.0f}% of a core)")  # fmt: skip
    mem, cpu = sum(r["memory"]), sum(r["cpu"])
    print(
        f"  per URL: {mem / count:.0f} bytes (masters' used_memory, Sieve included), "
        f"{cpu / count * 1e6:.1f} us of masters' CPU ({cpu / count * 1e6 / len(masters):.1f} "
        f"per master); replicas' CPU {r['replica_cpu'] / count * 1e6:.1f} us/URL in all"
    )
    return r


# -- the exact tier at scale, and a crawl of 1B URLs --------------------------------------------
BUCKETS = 65_536  # the exact tier's sets per group (crawler.frontier.redis.lua_admit)


async def _bucket_bytes(url: str, members: int, intset_entries: int) -> float:
    """Bytes per fingerprint of one exact-tier set of `members` (``MEMORY USAGE``), with Redis's
    set-max-intset-entries at `intset_entries` (512 by default: a larger set is a hash table)."""
    client = Redis.from_url(url)
    old = str((await client.config_get("set-max-intset-entries"))["set-max-intset-entries"])
    await client.config_set("set-max-intset-entries", intset_entries)
    rng = random.Random(members)
    key = f"bench:exact:{members}:{intset_entries}"
    fingerprints = [rng.getrandbits(64) - 2**63 for _ in range(members)]
    for i in range(0, members, 1000):
        await client.sadd(key, *fingerprints[i : i + 1000])
    size = int(await client.memory_usage(key, samples=0) or 0)
    await client.delete(key)
    await client.config_set("set-max-intset-entries", old)
    await client.aclose()
    return size / members


def bucket_table(server: RedisServer) -> dict[int, tuple[float, float]]:
    """Bytes per fingerprint of an exact-tier set as a crawl of 10M and of 1B URLs fills them
    (3 masters: 12 groups of 65,536 sets), as intsets (set-max-intset-entries raised) and with
    the default 512 (a hash table past it); printed, and by members a set."""
    out = {}
    for urls in (10**7, 10**9):
        members = -(-urls // (GROUPS_PER_MASTER * 3 * BUCKETS))
        out[members] = (asyncio.run(_bucket_bytes(server.url, members, max(512, members))),
                        asyncio.run(_bucket_bytes(server.url, members, 512)))  # fmt: skip
        print(f"exact tier at {urls:,} URLs on 3 masters: {members:,} fingerprints a set, "
              f"{out[members][0]:.1f} bytes each as an intset, {out[members][1]:.1f} with "
              "set-max-intset-entries 512 (the default)")  # fmt: skip
    return out


def sieve_bytes(urls: int, capacity: int) -> int:
    """Bytes of the configured Sieve's stages that hold `urls` URLs, its first stage holding
    `capacity` (the error rate, ratio and growth of config.toml)."""
    s, total, held, i = Config().sieve, 0, 0, 0
    while held < urls:
        cap, rate = stage_params(capacity, s.error_rate, s.ratio, s.growth, i)
        total += stage_shape(cap, rate)[0] // 8
        held, i = held + cap, i + 1
    return total


def extrapolate(
    row: dict[str, Any], memory: dict[str, float], buckets: dict[int, tuple[float, float]],
    streamed: dict[str, Any],
) -> None:  # fmt: skip
    """A crawl of 1B URLs at 10,000 pages/s: masters by CPU (from a cluster crawl `row`), memory
    (from the memory table and the exact tier's sets at 1B); the arithmetic, printed."""
    rate, urls, queue = 10_000, 10**9, 10**8
    us = row["redis_cpu"] / row["pages"] * 1e6
    per_url = sum(streamed["cpu"]) / sum(streamed["flags"].values()) * 1e6
    cores = rate * us / 1e6
    print(f"\n1B URLs at {rate:,} pages/s: {rate:,} x {us:.0f} us of masters' CPU a page "
          f"(cluster, {row['procs']} processes, 1 URL admitted a page) = {cores:.2f} cores; "
          f"each further new URL a page +{per_url:.0f} us (the stream): {rate:,} x "
          f"{per_url:.0f} us = {rate * per_url / 1e6:.2f} cores more")  # fmt: skip
    sieve = sieve_bytes(urls, urls)
    exact = buckets[max(buckets)]
    measured = memory["cluster, exact off, seen"]
    host = max(measured, 0.0)  # the hosts' records a URL: about 0 (noise may make it negative)
    queued = memory["cluster, exact off, queued"] - host
    total = sieve + urls * (exact[0] + host) + queue * queued
    print(f"memory: Sieve {sieve / 2**30:.1f} GiB (capacity 1B) + 1B x ({exact[0]:.1f} bytes "
          f"exact tier as intsets [{exact[1]:.1f} as hash tables] + {host:.0f} bytes left per "
          f"seen URL [measured {measured:.0f}]) + {queue:,} queued x {queued:.0f} bytes = "
          f"{total / 2**30:.0f} GiB over the masters (as much again on the replicas)")  # fmt: skip


def main(parts: Sequence[str]) -> None:
    with RedisServer() as server, RedisClusterServer(masters=3, replicas=1) as cluster:
        if "memory" in parts:
            memory_table(server, cluster)
        if "buckets" in parts:
            bucket_table(server)
        if "stream" in parts:
            stream(cluster)


if __name__ == "__main__":
    main(sys.argv[1:] or ["memory", "buckets", "stream"])
