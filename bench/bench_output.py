"""Cost of getting JSON Lines to the OS promptly (issue 14): the crawl writing its results to a
file through `crawler.output.jsonl.JsonlWriter`, three ways, measured in the same run:

- "timer (0.5 s)": what `crawl -o FILE` does without --state: lines buffered, a timer flushes
  them every FLUSH_INTERVAL; a SIGKILL loses at most the last 0.5 s of results.
- "flush per line": a write(2) per result (what --state does, for its ordering guarantee).
- "at the end only": the old behaviour, the buffer flushed when full and at the end; a SIGKILL
  loses everything still buffered (up to 8 KiB, ~30 results, however old).

1. End to end: python3.11-doc served by nginx on loopback, crawled as in bench_crawl
   (concurrency 32, no delay, robots off), the three modes alternating, RUNS rounds: medians,
   and the median of each round's ratio to that round's "at the end only" crawl.
2. The writer alone: 200,000 results written to a file (no crawl), best of 5: the hot path's
   cost per line in each mode.

BENCH_QUICK=1: 100 pages, 20,000 results.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench.corpus import ensure_docs
from bench.crawl_runs import bench_config
from bench.nginx import Nginx
from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.output.jsonl import FLUSH_INTERVAL, JsonlWriter
from crawler.output.results import CrawlResult

QUICK = os.environ.get("BENCH_QUICK") == "1"
RUNS = 7
WRITES = 20_000 if QUICK else 200_000
MODES = {  # name -> (interval, sync)
    f"timer ({FLUSH_INTERVAL:g} s)": (FLUSH_INTERVAL, False),
    "flush per line": (FLUSH_INTERVAL, True),
    "at the end only": (1e9, False),
}


def crawl_config() -> Config:
    config = bench_config(max_pages=100 if QUICK else 0)  # concurrency 32, no delay
    return config.override("output", progress_interval=0.0)


async def crawl_once(seed: str, path: Path, interval: float, sync: bool) -> tuple[int, float]:
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as out:
        async with (
            Crawler(crawl_config()) as crawler,
            JsonlWriter(out, interval=interval, sync=sync) as writer,
        ):
            async for result in crawler.crawl([seed]):
                writer.write(result)
    return writer.lines, time.perf_counter() - started


def crawl_table() -> None:
    rates: dict[str, list[float]] = {name: [] for name in MODES}
    pages = 0
    with Nginx(ensure_docs()) as server, tempfile.TemporaryDirectory() as tmp:
        seed = server.base_url + "index.html"
        for n in range(RUNS):
            for name, (interval, sync) in MODES.items():
                path = Path(tmp) / f"{n}-{len(rates[name])}.jsonl"
                pages, seconds = asyncio.run(crawl_once(seed, path, interval, sync))
                rates[name].append(pages / seconds)
    base = statistics.median(rates["at the end only"])
    ends = rates["at the end only"]
    print(f"crawl writing JSON Lines to a file ({pages} pages, concurrency 32, {RUNS} rounds)")
    print(f"{'flushing':20} {'pages/s (median)':>17} {'vs at the end':>14} "
          f"{'same round (median)':>20}  rounds")  # fmt: skip
    for name, values in rates.items():
        rate = statistics.median(values)
        paired = statistics.median(v / e for v, e in zip(values, ends, strict=True))
        each = " ".join(f"{v:.0f}" for v in values)
        print(f"{name:20} {rate:17.1f} {rate / base:13.1%} {paired:19.1%}  {each}")
    print()


async def write_many(path: Path, interval: float, sync: bool, results: list[CrawlResult]) -> float:
    with path.open("w", encoding="utf-8") as out:
        started = time.perf_counter()
        async with JsonlWriter(out, interval=interval, sync=sync) as writer:
            for i, result in enumerate(results):
                writer.write(result)
                if i % 64 == 0:
                    await asyncio.sleep(0)  # let the timer run, as in a crawl
        return time.perf_counter() - started


def writer_table() -> None:
    results = [
        CrawlResult(
            url=f"https://docs.example/3/library/mod{i}.html",
            key="",
            status=200,
            depth=3,
            parent="https://docs.example/3/library/index.html",
            fetched_at="2026-11-22T19:30:00.000Z",
            elapsed_ms=1.5,
            size=40_000,
            content_type="text/html",
            title=f"mod{i} - Python 3.11 documentation",
            links=290,
            new_links=2,
        )
        for i in range(WRITES)
    ]
    print(f"the writer alone: {WRITES:,} results to a file, best of 5")
    print(f"{'flushing':20} {'µs/line':>8} {'lines/s':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (interval, sync) in MODES.items():
            best = min(
                asyncio.run(write_many(Path(tmp) / "w.jsonl", interval, sync, results))
                for _ in range(5)
            )
            print(f"{name:20} {best / WRITES * 1e6:8.2f} {WRITES / best:12,.0f}")


def main() -> None:
    crawl_table()
    writer_table()


if __name__ == "__main__":
    main()
