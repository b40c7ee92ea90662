"""One crawl shared by 1, 2 and 4 `crawl --redis` processes, beside the in-memory crawler.

The sites: Debian's python3.11-doc (big pages, parsed in a thread: one process already keeps
more than one core busy) and sqlite3-doc (small pages, parsed on the event loop), each served by
nginx on loopback (`make bench` installs them); on loopback a crawl is bound by CPU, and the
2 cores are shared by the crawl processes, nginx and Redis. Then the regime of a crawl of the
web, bound by latency: sqlite3-doc served with 100 ms per response (`bench.slow_site`), where
a process's 32 workers are the limit and processes add requests in flight (per-host
concurrency 128 there, shared by all processes: politeness is global);
Redis: a throwaway Debian redis-server (``tests.redis_server``). Every crawl is the real
`crawl` command in its own process (startup included), concurrency 32 (per host too: the site
is one host), no delay, robots off, no depth limit, results to a file per process. Per run:

  pages/s = results of all processes / wall time from the first start to the last exit;
  steady/s = results / the time from the first result to the last (of any process: startup and
  exit left out; the site is small, so startup weighs on the wall-clock rate);
  CPU ms/page = the crawl processes' CPU (user + sys, ``os.wait4``) per page;
  Redis CPU us/page = ``INFO cpu`` (user + sys) delta of the server per page;
  trips/page = round trips to Redis per page: script calls (``INFO commandstats`` EVALSHA; the
  hot path is all scripts: claim, done, admit, reclaim) per page, heartbeats not counted (two
  round trips per process every 5 s);
  memory/queued URL = ``used_memory`` delta per URL of 20,000 queued on 50 hosts (apart from
  the crawls), the Sieve's preallocated stage excluded.

On loopback, one more row: 2 processes with content dedup on (``[dedup] enabled``: one shared
content index, `crawler.content.redis`, one more script call per HTML page), and the index's
Redis memory per distinct page (``MEMORY USAGE`` of its keys).

Last, one host of one slot (per-host concurrency 1, the default; delay 0): the PostgreSQL docs
crawled by 1 and 2 processes, whose slot passes from one process to the other (a completion's
wake-up, `crawler.frontier.redis.wake`): two should take no more than 1.5x one's time.

Run: `python -m bench cluster` (BENCH_QUICK=1: a smaller site subset).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from bench.doc_sites import SITES, DocSite
from bench.nginx import Nginx, free_port
from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.settings import Sharing
from crawler.sieve.redis import RedisSieve
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
DEDUP = "[dedup]\nenabled = true\n"


def redis_figures(url: str) -> dict[str, float]:
    async def read() -> dict[str, float]:
        client = Redis.from_url(url)
        cpu: dict[str, Any] = await client.info("cpu")
        stats: dict[str, Any] = await client.info("commandstats")
        mem: dict[str, Any] = await client.info("memory")
        await client.aclose()
        return {
            "cpu": float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
            "commands": float(stats.get("cmdstat_evalsha", {"calls": 0})["calls"]),
            "memory": float(mem["used_memory"]),
        }

    return asyncio.run(read())


def run(
    n: int, seed: str, config: Path, tmp: Path, redis: str | None, crawl_id: str
) -> dict[str, float]:
    """`n` crawl processes (n = 1 and no `redis`: the in-memory crawler); figures of the run."""
    outs = [tmp / f"{crawl_id}-{i}.jsonl" for i in range(n)]
    shared = ["--redis", redis, "--crawl-id", crawl_id] if redis else []
    before = redis_figures(redis) if redis else {}
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "crawler.cli",
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
    row = {"procs": n, "pages": pages, "distinct": distinct, "wall": wall, "cpu": cpu,
           "rate": pages / wall, "steady": pages / max(times[-1] - times[0], 1e-3)}  # fmt: skip
    if redis:
        after = redis_figures(redis)
        row["redis_cpu"] = after["cpu"] - before["cpu"]
        row["commands"] = after["commands"] - before["commands"]
    return row


async def memory_per_queued_url(url: str, exact: bool, count: int = 20_000) -> tuple[float, int]:
    client = Redis.from_url(url)
    prefix = f"mem{int(exact)}:"
    sieve = RedisSieve(client, prefix, capacity=1_000_000, error_rate=1e-4)
    frontier = RedisFrontier(client, prefix, sieve, sharing=Sharing(exact=exact))
    await frontier.open()
    await frontier.put_many([Entry(url="http://h0.test/", key="http://h0.test/", depth=0)])
    before = int((await client.info("memory"))["used_memory"])
    rng = random.Random(7)
    urls = [f"http://h{rng.randrange(50)}.test/doc/{rng.getrandbits(40):x}.html"
            for _ in range(count)]  # fmt: skip
    for i in range(0, count, 100):
        await frontier.put_many([Entry(url=u, key=u, depth=1, parent="http://h0.test/")
                                 for u in urls[i : i + 100]])  # fmt: skip
    after = int((await client.info("memory"))["used_memory"])
    await client.aclose()
    return (after - before) / count, sieve.size_in_bytes


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
def slow_site(root: Path) -> Iterator[str]:
    """bench.slow_site serving `root` with LATENCY per response; its base URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "bench.slow_site", str(root), str(port), str(LATENCY)]
    proc = subprocess.Popen(cmd)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("bench.slow_site did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait()


def site_table(
    site: DocSite, server: RedisServer, tmp: Path, max_pages: int, *, slow: bool = False
) -> dict[str, float]:
    """Crawl one site in memory and with 1, 2, 4 processes through Redis; print the table."""
    config = tmp / "config.toml"
    config.write_text(CONFIG.format(max_pages=max_pages, per_host=128 if slow else 32))
    name = f"{site.name}-slow" if slow else site.name
    with slow_site(site.root()) if slow else Nginx(site.root()) as base:
        base_url = base if isinstance(base, str) else base.base_url
        seed = f"{base_url}index.html"
        memory = run(1, seed, config, tmp, None, f"{name}-memory")
        rows = [run(n, seed, config, tmp, server.url, f"{name}-{n}") for n in PROCESSES]
        if not slow:  # content dedup shared by 2 processes
            dedup = tmp / "dedup.toml"
            dedup.write_text(config.read_text() + DEDUP)
            rows.append(run(2, seed, dedup, tmp, server.url, f"{name}-dedup") | {"dedup": 1})
            index = content_index_bytes(server.url, f"{name}-dedup")
    how = f"with {LATENCY * 1000:.0f} ms per response" if slow else "via nginx on loopback"
    print(f"\n{site.name} ({site.root()}) {how}")
    print(f"{'crawl':<22} {'pages':>6} {'distinct':>8} {'wall s':>7} {'pages/s':>8} "
          f"{'vs 1 proc':>9} {'steady/s':>8} {'vs 1 proc':>9} {'CPU ms/page':>11} "
          f"{'Redis CPU us/page':>17} {'trips/page':>10}")  # fmt: skip
    one, one_steady = rows[0]["rate"], rows[0]["steady"]
    for name, r in [("in memory (1 process)", memory)] + [
        (f"Redis, {r['procs']} process{'es' if r['procs'] > 1 else ''}"
         f"{', dedup' if 'dedup' in r else ''}", r) for r in rows
    ]:  # fmt: skip
        redis_cpu = f"{r['redis_cpu'] / r['pages'] * 1e6:>17.0f}" if "redis_cpu" in r else "-"
        trips = f"{r['commands'] / r['pages']:>10.2f}" if "commands" in r else "-"
        print(f"{name:<22} {r['pages']:>6.0f} {r['distinct']:>8.0f} {r['wall']:>7.2f} "
              f"{r['rate']:>8.0f} {r['rate'] / one:>8.2f}x {r['steady']:>8.0f} "
              f"{r['steady'] / one_steady:>8.2f}x {r['cpu'] / r['pages'] * 1e3:>11.2f} "
              f"{redis_cpu:>17} {trips:>10}")  # fmt: skip
    if not slow:
        pages, size = index
        print(f"shared content index: {pages:,} distinct pages, {size:,} bytes in Redis "
              f"({size / max(pages, 1):.0f} bytes a page)")  # fmt: skip
    return max((r for r in rows if "dedup" not in r), key=lambda r: r["steady"])


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
    print("settings: concurrency 32 per process (per host too), delay 0, robots off, "
          f"{'max 300 pages' if QUICK else 'whole site'}; every process started by the run; "
          "2 cores shared by the crawls, nginx and Redis")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp_name, RedisServer() as server:
        tmp = Path(tmp_name)
        busiest = [site_table(site, server, tmp, max_pages) for site in SITES]
        site_table(SITES[1], server, tmp, max_pages, slow=True)
        one_slot_table(server, tmp, max_pages)
        per_url, sieve_bytes = asyncio.run(memory_per_queued_url(server.url, False))
        per_url_exact, _ = asyncio.run(memory_per_queued_url(server.url, True))
    mib = sieve_bytes / 2**20
    print(f"\nRedis memory per queued URL: {per_url:.0f} bytes (20,000 URLs on 50 hosts), beside"
          f" the Sieve's first stage: {mib:.1f} MiB for 1M URLs at 1e-4; with the exact tier"
          f" (the default): {per_url_exact:.0f} bytes")  # fmt: skip
    for site, row in zip(SITES, busiest, strict=True):
        us = row["redis_cpu"] / row["pages"] * 1e6
        print(f"saturation ({site.name}): {us:.0f} us of Redis CPU per page -> one Redis core "
              f"serves about {1e6 / us:,.0f} pages/s in all (machines x pages/s each)")  # fmt: skip


if __name__ == "__main__":
    main()
