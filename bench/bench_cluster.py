"""One crawl shared by 1, 2 and 4 `crawl --redis` processes, beside the in-memory crawler, on
one Redis node and on a Redis Cluster (the cluster column).

The sites: Debian's python3.11-doc (big pages, parsed in a thread: one process already keeps
more than one core busy) and sqlite3-doc (small pages, parsed on the event loop), each served by
nginx on loopback (`make bench` installs them); on loopback a crawl is bound by CPU, and the
2 cores are shared by the crawl processes, nginx and Redis. Then the regime of a crawl of the
web, bound by latency: sqlite3-doc served with 100 ms per response (`bench.slow_site`), where
a process's 32 workers are the limit and processes add requests in flight (per-host
concurrency 128 there, shared by all processes: politeness is global); and the same on
`HOSTS` hosts (127.0.0.1 up, one copy of the site each, every host's index page a seed): a
crawl of many sites, whose hosts a cluster spreads over its groups (a doc site is one host,
so one group, so one master does its work). Redis: a throwaway Debian redis-server
(`crawler.testing.redis_server`), and a Redis Cluster of 3 masters with a replica each
(`crawler.testing.redis_cluster`; the crawl processes get the URL of one of its nodes, nothing
else). Every crawl is the real `crawl` command in its own process (startup included),
concurrency 32 (per host too: the site is one host), no delay, robots off, no depth limit,
results to a file per process. Per run:

  pages/s = results of all processes / wall time from the first start to the last exit;
  steady/s = results / the time from the first result to the last (of any process: startup and
  exit left out; the site is small, so startup weighs on the wall-clock rate);
  CPU ms/page = the crawl processes' CPU (user + sys, ``os.wait4``) per page;
  Redis CPU us/page = ``INFO cpu`` (user + sys) delta of the server (the cluster: of its
  masters, summed; each master's and the replicas' beside the table) per page;
  trips/page = round trips to Redis per page: script calls (``INFO commandstats`` EVALSHA; the
  hot path is all scripts: claim, done, admit, reclaim) and, on the cluster, WAITs (a batch of
  completions waits for a replica of each master it admitted to: INCR + WAIT, one round trip)
  per page, heartbeats not counted (two round trips per process every 5 s).

On the cluster, 2 processes also run with completions not waiting for replicas
(`bench.crawl_durable_off`), alternating with the default, to measure what the wait costs.
On loopback, one more row: 2 processes with content dedup on (``[dedup] enabled``: one shared
content index, `crawler.content.redis`, one more script call per HTML page), and the index's
Redis memory per distinct page (``MEMORY USAGE`` of its keys).

Then one host of one slot (per-host concurrency 1, the default; delay 0): the PostgreSQL docs
crawled by 1 and 2 processes, whose slot passes from one process to the other (a completion's
wake-up, `crawler.frontier.redis.wake`): two should take no more than 1.5x one's time.

Last (`bench.bench_cluster_shards`): Redis memory per queued and per seen URL on one node and
on the cluster, exact tier off and on; the exact tier's sets as a crawl of 10M and 1B URLs
fills them; a synthetic admission stream of ``BENCH_STREAM_URLS`` URLs (default 10,000,000)
into the cluster; the saturation of one node and of the cluster's masters; and the arithmetic
of a crawl of 1B URLs at 10,000 pages/s.

Run: `python -m bench cluster` (BENCH_QUICK=1: a smaller site subset and stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from bench import bench_cluster_shards as shards
from bench.doc_sites import SITES, DocSite
from bench.nginx import Nginx, free_port
from crawler.testing.redis_cluster import RedisClusterServer
from crawler.testing.redis_server import RedisServer

QUICK = bool(os.environ.get("BENCH_QUICK"))
PROCESSES = (1, 2, 4)
CONFIG = """[crawl]
concurrency = 32
max_depth = 0
max_pages = {max_pages}
[politeness]
delay = 0.0
ip_delay = 0.0
ip_concurrency = 0
per_host_concurrency = {per_host}
respect_robots = false
"""
LATENCY = 0.1
HOSTS = 16  # the latency-bound site on this many hosts: a crawl of many sites
DEDUP = "[dedup]\nenabled = true\n"


def node_figures(urls: Sequence[str]) -> dict[str, dict[str, float]]:
    """Each node's counters: CPU seconds (``INFO cpu`` user + sys), script calls (EVALSHA),
    WAITs and ``used_memory``."""

    async def read(url: str) -> dict[str, float]:
        client = Redis.from_url(url)
        cpu: dict[str, Any] = await client.info("cpu")
        stats: dict[str, Any] = await client.info("commandstats")
        mem: dict[str, Any] = await client.info("memory")
        await client.aclose()
        return {
            "cpu": float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
            "commands": float(stats.get("cmdstat_evalsha", {"calls": 0})["calls"]),
            "waits": float(stats.get("cmdstat_wait", {"calls": 0})["calls"]),
            "memory": float(mem["used_memory"]),
        }

    async def read_all() -> dict[str, dict[str, float]]:
        return dict(zip(urls, await asyncio.gather(*(read(u) for u in urls)), strict=True))

    return asyncio.run(read_all())


def run(
    n: int, seed: str, config: Path, tmp: Path, redis: str | None, crawl_id: str,
    nodes: Sequence[str] = (), module: str = "crawler.cli",
) -> dict[str, Any]:  # fmt: skip
    """`n` crawl processes (n = 1 and no `redis`: the in-memory crawler); figures of the run.
    `nodes`: the Redis nodes whose counters are read (default: `redis`), summed in the row's
    ``redis_cpu``, ``commands`` (script calls) and ``waits``, each node's in ``by_node``;
    `module`: the crawl command's (a bench wrapper, `bench.crawl_durable_off`)."""
    outs = [tmp / f"{crawl_id}-{i}.jsonl" for i in range(n)]
    shared = ["--redis", redis, "--crawl-id", crawl_id] if redis else []
    nodes = list(nodes or ([redis] if redis else []))
    before = node_figures(nodes) if nodes else {}
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                module,
                seed,
                "--config",
                str(config),
                "-q",
                "-o",
                str(out),
                *shared,
            ]
        )
        for out in outs
    ]
    cpu = 0.0
    for proc in procs:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise SystemExit(f"a crawl process failed with exit status {proc.returncode}")
        cpu += usage.ru_utime + usage.ru_stime
    wall = time.perf_counter() - started
    records = [json.loads(line) for out in outs for line in out.read_text().splitlines()]
    pages = len(records)
    distinct = len({r["url"] for r in records})
    times = sorted(datetime.fromisoformat(r["fetched_at"]).timestamp() for r in records)
    row: dict[str, Any] = {"procs": n, "pages": pages, "distinct": distinct, "wall": wall,
                           "cpu": cpu, "rate": pages / wall,
                           "steady": pages / max(times[-1] - times[0], 1e-3)}  # fmt: skip
    if nodes:
        after = node_figures(nodes)
        row["by_node"] = by_node = {
            url: {k: after[url][k] - before[url][k] for k in ("cpu", "commands", "waits")}
            for url in nodes
        }
        for name, key in (("redis_cpu", "cpu"), ("commands", "commands"), ("waits", "waits")):
            row[name] = sum(d[key] for d in by_node.values())
    return row


def content_index_bytes(url: str, crawl_id: str) -> tuple[int, int]:
    """(distinct pages, bytes) of a shared crawl's content index in Redis."""

    async def read() -> tuple[int, int]:
        client = Redis.from_url(url)
        prefix = f"crawl:{crawl_id}:content:"
        keys = [key async for key in client.scan_iter(match=prefix + "*")]
        sizes = [int(await client.memory_usage(key, samples=0) or 0) for key in keys]
        pages = int(await client.hlen(prefix + "urls"))
        await client.aclose()
        return pages, sum(sizes)

    return asyncio.run(read())


@contextlib.contextmanager
def slow_site(root: Path, hosts: int = 1) -> Iterator[list[str]]:
    """bench.slow_site serving `root` with LATENCY per response on `hosts` loopback addresses
    (127.0.0.1 up); their base URLs."""
    port = free_port()
    cmd = [sys.executable, "-m", "bench.slow_site", str(root), str(port), str(LATENCY), str(hosts)]
    proc = subprocess.Popen(cmd)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((f"127.0.0.{hosts}", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("bench.slow_site did not start") from None
                time.sleep(0.05)
        yield [f"http://127.0.0.{i + 1}:{port}/" for i in range(hosts)]
    finally:
        proc.terminate()
        proc.wait()


def site_table(
    site: DocSite, server: RedisServer, cluster: RedisClusterServer, tmp: Path, max_pages: int,
    *, slow: bool = False, hosts: int = 1,
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """Crawl one site in memory and with 1, 2, 4 processes through Redis, one node and the
    cluster (`bench.bench_cluster_shards`); print the table; the busiest row of each."""
    config = tmp / "config.toml"
    config.write_text(CONFIG.format(max_pages=max_pages, per_host=128 if slow else 32))
    name = f"{site.name}-slow{hosts}" if slow else site.name
    with slow_site(site.root(), hosts) if slow else Nginx(site.root()) as base:
        bases = base if isinstance(base, list) else [base.base_url]
        seed = f"{bases[0]}index.html"
        if hosts > 1:  # a seeds file: every host's index page (the scope: the seeds' hosts)
            (tmp / "seeds.txt").write_text("".join(f"{b}index.html\n" for b in bases))
            seed = str(tmp / "seeds.txt")
        memory = run(1, seed, config, tmp, None, f"{name}-memory")
        rows = [run(n, seed, config, tmp, server.url, f"{name}-{n}") for n in PROCESSES]
        if not slow:  # content dedup shared by 2 processes
            dedup = tmp / "dedup.toml"
            dedup.write_text(config.read_text() + DEDUP)
            rows.append(run(2, seed, dedup, tmp, server.url, f"{name}-dedup") | {"dedup": 1})
            index = content_index_bytes(server.url, f"{name}-dedup")
        masters = shards.node_urls(cluster.masters())
        nodes = masters + shards.node_urls(sorted(cluster.replicas()))

        def on_cluster(n: int, crawl_id: str, module: str) -> dict[str, Any]:
            row = run(n, seed, config, tmp, cluster.url, crawl_id, nodes, module)
            return shards.masters_only(row, masters)

        clustered, durable = shards.cluster_rows(on_cluster, name)
    how = f"with {LATENCY * 1000:.0f} ms per response" if slow else "via nginx on loopback"
    how += f", {hosts} hosts (127.0.0.1-{hosts})" if hosts > 1 else ""
    print(f"\n{site.name} ({site.root()}) {how}")
    print(f"{'crawl':<22} {'pages':>6} {'distinct':>8} {'wall s':>7} {'pages/s':>8} "
          f"{'vs 1 proc':>9} {'steady/s':>8} {'vs 1 proc':>9} {'CPU ms/page':>11} "
          f"{'Redis CPU us/page':>17} {'trips/page':>10}")  # fmt: skip
    one, one_steady = rows[0]["rate"], rows[0]["steady"]
    for name, r in [("in memory (1 process)", memory)] + [
        (f"{'Cluster' if 'masters' in r else 'Redis'}, {r['procs']} "
         f"process{'es' if r['procs'] > 1 else ''}{', dedup' if 'dedup' in r else ''}", r)
        for r in rows + clustered
    ]:  # fmt: skip
        redis_cpu = f"{r['redis_cpu'] / r['pages'] * 1e6:>17.0f}" if "redis_cpu" in r else "-"
        trips = f"{(r['commands'] + r['waits']) / r['pages']:>10.2f}" if "commands" in r else "-"
        print(f"{name:<22} {r['pages']:>6.0f} {r['distinct']:>8.0f} {r['wall']:>7.2f} "
              f"{r['rate']:>8.0f} {r['rate'] / one:>8.2f}x {r['steady']:>8.0f} "
              f"{r['steady'] / one_steady:>8.2f}x {r['cpu'] / r['pages'] * 1e3:>11.2f} "
              f"{redis_cpu:>17} {trips:>10}")  # fmt: skip
    shards.print_cluster(rows[:3], clustered, durable)
    if not slow:
        pages, size = index
        print(f"shared content index: {pages:,} distinct pages, {size:,} bytes in Redis "
              f"({size / max(pages, 1):.0f} bytes a page)")  # fmt: skip
    busiest = max(rows[:3], key=lambda r: r["steady"])
    return busiest, max(clustered, key=lambda r: r["steady"])


ONE_SLOT_SITE = Path("/usr/share/doc/postgresql-doc-15/html")


def one_slot_table(server: RedisServer, tmp: Path, max_pages: int) -> None:
    """1 and 2 processes on one host of one slot at delay 0 (the PostgreSQL docs); print them."""
    if not ONE_SLOT_SITE.is_dir():
        print(f"\none host, one slot: skipped ({ONE_SLOT_SITE} missing: postgresql-doc-15)")
        return
    config = tmp / "one-slot.toml"
    config.write_text(CONFIG.format(max_pages=max_pages, per_host=1))
    with Nginx(ONE_SLOT_SITE) as site:
        seed = f"{site.base_url}index.html"
        rows = [run(n, seed, config, tmp, server.url, f"one-slot-{n}") for n in (1, 2)]
    print(f"\none host of one slot, delay 0 ({ONE_SLOT_SITE}) via nginx on loopback")
    for r in rows:
        print(f"Redis, {r['procs']:.0f} process(es): {r['pages']:.0f} pages "
              f"({r['distinct']:.0f} distinct) in {r['wall']:.2f} s, {r['rate']:.0f} pages/s, "
              f"{r['wall'] / rows[0]['wall']:.2f}x one process's time; steady "
              f"{r['steady']:.0f} pages/s, {rows[0]['steady'] / r['steady']:.2f}x; "
              f"{r['commands'] / r['pages']:.2f} trips/page")  # fmt: skip


def main() -> None:
    max_pages = 300 if QUICK else 0
    print(
        "settings: concurrency 32 per process (per host too), delay 0, robots off, "
        f"{'max 300 pages' if QUICK else 'whole site'}; every process started by the run; "
        "2 cores shared by the crawls, nginx and Redis (one node, or the cluster's 6 nodes)"
    )
    with (
        tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp_name,
        RedisServer() as server,
        RedisClusterServer(masters=3, replicas=1) as cluster,
    ):
        tmp = Path(tmp_name)
        busiest = [site_table(site, server, cluster, tmp, max_pages) for site in SITES]
        busiest.append(site_table(SITES[1], server, cluster, tmp, max_pages, slow=True))
        busiest.append(site_table(SITES[1], server, cluster, tmp, max_pages * HOSTS, slow=True,
                                  hosts=HOSTS))  # fmt: skip
        one_slot_table(server, tmp, max_pages)
        memory = shards.memory_table(server, cluster)
        buckets = shards.bucket_table(server)
        streamed = shards.stream(cluster)
    slow = f"{SITES[1].name}, {LATENCY * 1000:.0f} ms"
    names = [site.name for site in SITES] + [slow, f"{slow}, {HOSTS} hosts"]
    for name, (one, clustered) in zip(names, busiest, strict=True):
        us = one["redis_cpu"] / one["pages"] * 1e6
        print(f"saturation ({name}): one node {us:.0f} us of Redis CPU per page -> one Redis core "
              f"serves about {1e6 / us:,.0f} pages/s in all (machines x pages/s each)")  # fmt: skip
        print(shards.saturation_line(name, clustered))
    shards.extrapolate(busiest[-1][1], memory, buckets, streamed)


if __name__ == "__main__":
    main()
