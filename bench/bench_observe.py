"""What watching a crawl costs (`crawler.observe`):

1. ``--metrics`` scraped three times a second: python3.11-doc served by nginx on loopback,
   crawled as in bench_output (concurrency 32, no delay, robots off), without metrics and with
   them (the server on the crawl's loop, a scraper in another process reading /metrics every
   1/3 s), alternating, RUNS rounds: medians, and the median of each round's ratio. Goal: within
   noise, <= 2% fewer pages/s.
   The cost alone, free of the crawl's noise: one scrape (the exposition of a finished crawl's
   metrics, best of 200) and one result counted (`CrawlMetrics.observe`, best of 5 x 100,000),
   as a share of one core at 3 scrapes/s and at the crawl's pages/s.
2. The report of 100,000 synthetic results (`crawl report OUT.jsonl -o FILE`, streamed): its
   time (best of 3) and size. Goal: <= 5 s, <= 2 MB.

BENCH_QUICK=1: 100 pages, 3 rounds, 10,000 results.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.corpus import ensure_docs
from bench.crawl_runs import bench_config
from bench.nginx import Nginx
from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.observe import CrawlMetrics, MetricsServer, report_from_jsonl

QUICK = os.environ.get("BENCH_QUICK") == "1"
RUNS = 3 if QUICK else 15
RESULTS = 10_000 if QUICK else 100_000
SCRAPER = """
import sys, time, urllib.request
url, n = sys.argv[1], 0
while True:
    try:
        urllib.request.urlopen(url, timeout=5).read()
        n += 1
    except OSError:
        pass
    time.sleep(1 / 3)
"""


def crawl_config() -> Config:
    config = bench_config(max_pages=100 if QUICK else 0)  # concurrency 32, no delay
    return config.override("output", progress_interval=0.0)


async def cost_alone(seed: str) -> tuple[float, float, int]:
    """(seconds a scrape takes, seconds a result's count takes, the metrics' bytes)."""
    metrics = CrawlMetrics()
    results = []
    async with Crawler(crawl_config()) as crawler:
        metrics.attach(crawler)
        async for result in crawler.crawl([seed]):
            results.append(result)
        scrape = min(_timed(metrics.exposition) for _ in range(200))
        size = len(metrics.exposition())
    batch = (results * (100_000 // len(results) + 1))[:100_000]
    count = min(_timed(lambda: [metrics.observe(r) for r in batch]) for _ in range(5))
    return scrape, count / len(batch), size


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


async def crawl_once(seed: str, port: int | None) -> tuple[int, float, float, int]:
    """(pages, seconds, CPU seconds, scrapes) of one crawl, with metrics on `port` or none."""
    server = None
    if port is not None:
        server = await MetricsServer.start(CrawlMetrics(), f"127.0.0.1:{port}")
    pages = 0
    try:
        started, cpu = time.perf_counter(), time.process_time()
        async with Crawler(crawl_config()) as crawler:
            if server is not None:
                server.metrics.attach(crawler)
            async for _ in crawler.crawl([seed]):
                pages += 1
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        if server is not None:
            await server.close()
    return pages, seconds, cpu, server.scrapes if server is not None else 0


def metrics_table() -> None:
    """The scraper runs all along, in a process of its own started once (its start-up would
    weigh on the crawl's 2 s): it finds the port closed during the crawls without metrics."""
    rates: dict[str, list[float]] = {"without": [], "with --metrics": []}
    cpu: dict[str, list[float]] = {name: [] for name in rates}
    pages = scrapes = 0
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scraper = subprocess.Popen([sys.executable, "-c", SCRAPER, f"http://127.0.0.1:{port}/metrics"])
    try:
        with Nginx(ensure_docs()) as server:
            seed = server.base_url + "index.html"
            asyncio.run(crawl_once(seed, None))  # warm-up: page cache, nginx
            for _ in range(RUNS):
                for name in rates:
                    given = port if name != "without" else None
                    pages, seconds, used, n = asyncio.run(crawl_once(seed, given))
                    rates[name].append(pages / seconds)
                    cpu[name].append(used / pages * 1e3)
                    scrapes = max(scrapes, n)
            scrape, count, size = asyncio.run(cost_alone(seed))
    finally:
        scraper.kill()
        scraper.wait()
    base = rates["without"]
    print(f"crawl with --metrics scraped 3/s ({pages} pages, concurrency 32, {RUNS} rounds, "
          f"up to {scrapes} scrapes a crawl)")  # fmt: skip
    print(f"{'metrics':16} {'pages/s (median)':>17} {'vs without':>11} "
          f"{'same round (median)':>20} {'CPU ms/page':>12}  rounds (pages/s)")  # fmt: skip
    for name, values in rates.items():
        rate = statistics.median(values)
        paired = statistics.median(v / b for v, b in zip(values, base, strict=True))
        each = " ".join(f"{v:.0f}" for v in values)
        print(f"{name:16} {rate:17.1f} {rate / statistics.median(base):10.1%} "
              f"{paired:19.1%} {statistics.median(cpu[name]):12.2f}  {each}")  # fmt: skip
    rate = statistics.median(base)
    print(f"the cost alone: a scrape {scrape * 1e3:.2f} ms ({size:,} bytes): "
          f"{3 * scrape:.2%} of a core at 3/s; a result counted {count * 1e6:.2f} µs: "
          f"{count * rate:.3%} of a core at {rate:.0f} pages/s")  # fmt: skip
    print()


def synthetic(path: Path, n: int) -> None:
    """`n` results as a crawl writes them: 500 hosts, some errors, duplicates, relevance."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    kinds = ("timeout", "connect", "robots", "host_down", "too_large")
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            failed = i % 23 == 0
            record = {
                "url": f"https://host{i % 500}.example/section/{i % 97}/page-{i}.html",
                "status": None if failed else (200, 200, 200, 404, 301)[i % 5],
                "depth": i % 9, "parent": None, "content_type": "text/html; charset=utf-8",
                "size": 2_000 + (i * 7919) % 200_000, "elapsed_ms": float((i * 31) % 3_000),
                "fetched_at": (start + timedelta(seconds=i / 40)).isoformat(),
                "title": f"Page {i}", "links": 40, "new_links": 3, "rendered": False,
                "location": None, "canonical": None,
                "error": f"{kinds[i % 5]}: synthetic" if failed else None,
                "content_hash": None, "simhash": None, "near_duplicate_of": None,
                "duplicate_of": f"https://host0.example/page-{i % 50}.html" if i % 31 == 0
                else None,
                "relevance": (i % 100) / 100, "unchanged": False,
            }  # fmt: skip
            out.write(json.dumps(record) + "\n")


def report_table() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source, html = Path(tmp) / "out.jsonl", Path(tmp) / "report.html"
        synthetic(source, RESULTS)
        times = []
        for _ in range(3):
            started = time.perf_counter()
            _, _, size = report_from_jsonl(str(source), str(html))
            times.append(time.perf_counter() - started)
        mb = source.stat().st_size / 1e6
    print(f"crawl report of {RESULTS:,} synthetic results ({mb:.0f} MB of JSON Lines, 500 hosts)")
    print(f"{'best of 3':>10} {'median':>8} {'report size':>12}")
    print(f"{min(times):9.2f}s {statistics.median(times):7.2f}s {size / 1e3:9.0f} kB")
    print()


def main() -> None:
    metrics_table()
    report_table()


if __name__ == "__main__":
    main()
