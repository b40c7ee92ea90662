"""Cost of crash safety: crawl throughput with and without `--state`, and resume time.

1. The python3.11-doc site served by nginx on loopback, crawled by this crawler in memory and
   with a state directory (journal + exact tier + checkpoints), alternating, median of 5 each.
2. A state holding 1M pending URLs (and a Sieve snapshot taken before the last 10% of them):
   time to open it, restore the Sieve and refill the frontier, in a fresh subprocess.

Targets (issue 7): overhead <= 15% of throughput; resume time reported.
BENCH_QUICK=1: 100 pages and 50,000 pending URLs.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.corpus import ensure_docs, realistic_urls
from bench.crawl_runs import bench_config
from bench.nginx import Nginx
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.frontier import Entry, Frontier
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.sieve import Sieve
from crawler.state.crawlstate import CrawlState

QUICK = os.environ.get("BENCH_QUICK") == "1"


RUNS = 5


def crawl_config(state_dir: str = "") -> Config:
    config = bench_config(max_pages=100 if QUICK else 0)  # concurrency 32, no delay
    config = config.override("output", progress_interval=0.0)
    return config.override("state", dir=state_dir)


async def crawl_once(seed: str, state_dir: str | None) -> tuple[int, float]:
    config = crawl_config(state_dir or "")
    state = CrawlState.open(state_dir, settings(config)) if state_dir else None
    started = time.perf_counter()
    async with Crawler(config, state=state) as crawler:
        pages = 0
        async for _ in crawler.crawl([seed]):
            pages += 1
    # the crawl closes its state (last snapshot, status "finished")
    return pages, time.perf_counter() - started


def overhead_table() -> None:
    root = ensure_docs()
    rates: dict[str, list[float]] = {"in memory": [], "--state (exact tier)": []}
    pages_seen = 0
    with Nginx(root) as server:
        seed = server.base_url + "index.html"
        for _ in range(RUNS):
            for name in rates:
                with tempfile.TemporaryDirectory() as tmp:
                    state_dir = str(Path(tmp) / "state") if name.startswith("--state") else None
                    pages, seconds = asyncio.run(crawl_once(seed, state_dir))
                pages_seen = pages
                rates[name].append(pages / seconds)
    base = statistics.median(rates["in memory"])
    print(f"crawl throughput with and without state ({pages_seen} pages, concurrency 32)")
    print(f"{'mode':24} {f'pages/s (median of {RUNS})':>20} {'vs in memory':>14}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:24} {rate:20.1f} {rate / base:13.1%}")
    overhead = 1 - statistics.median(rates["--state (exact tier)"]) / base
    print(f"overhead of --state: {overhead:.1%} (target <= 15%)\n")


def build_state(directory: Path, n: int) -> None:
    config = crawl_config(str(directory))
    state = CrawlState.open(directory, settings(config))
    sieve = Sieve(capacity=config.sieve.capacity, error_rate=config.sieve.error_rate)
    snapshot_at = int(n * 0.9)
    for i, url in enumerate(realistic_urls(n, seed=7)):
        state.admitted(Entry(url=url, key=url, depth=1, parent="http://seed.example/"))
        sieve.add(url)
        state.seen.add(i)
        if i == snapshot_at:
            state.checkpoint(sieve, {"pages": 0})
    state.commit()
    state.abandon()


def resume_child(directory: str) -> None:
    config = crawl_config(directory)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    state = CrawlState.open(directory, settings(config))
    opened = time.perf_counter()
    sieve = state.restore_sieve(Sieve(capacity=config.sieve.capacity))
    restored = time.perf_counter()
    frontier = Frontier(
        Politeness(respect_robots=False),
        QueueLimits(max_queued=10_000_000, max_queued_per_host=10_000_000),
    )
    queued = sum(frontier.put(entry) for entry in state.pending())
    done = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "open_s": opened - started, "sieve_s": restored - opened, "refill_s": done - restored,
        "total_s": done - started, "queued": queued, "sieve_count": sieve.count,
        "rss_mb": rss / 1024, "rss_growth_mb": (rss - rss0) / 1024,
    }))  # fmt: skip


def resume_table() -> None:
    n = 50_000 if QUICK else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "state"
        started = time.perf_counter()
        build_state(directory, n)
        built = time.perf_counter() - started
        size = sum(p.stat().st_size for p in directory.iterdir())
        out = subprocess.run(
            [sys.executable, "-m", "bench.bench_state", "--resume-child", str(directory)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    r = json.loads(out.stdout.splitlines()[-1])
    print(f"resume of a state with {n:,} pending URLs (Sieve snapshot before the last 10%)")
    print(f"{'step':34} {'seconds':>9}")
    print(f"{'build the state (journal n URLs)':34} {built:9.2f}")
    steps = (
        ("open_s", "open + check settings"),
        ("sieve_s", "load Sieve + replay 10%"),
        ("refill_s", "refill the frontier"),
        ("total_s", "total resume"),
    )
    for key, label in steps:
        print(f"{label:34} {r[key]:9.2f}")
    print(f"state size on disk: {size / 2**20:.0f} MiB; frontier refilled with {r['queued']:,} "
          f"URLs; resume process peak RSS {r['rss_mb']:.0f} MiB")  # fmt: skip


def main() -> None:
    overhead_table()
    resume_table()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--resume-child":
        resume_child(sys.argv[2])
    else:
        main()
