"""Conditional recrawl of real sites on loopback: a first crawl, then `--recrawl` of its state.

nginx (bench.nginx) serves each documentation site of bench.doc_sites (Debian's python3.11-doc,
then sqlite3-doc) on 127.0.0.1 (nginx answers If-None-Match / If-Modified-Since for static
files with 304). In one run per site, with a state in a temporary directory: a first crawl
(every 2xx's ETag and Last-Modified kept), then a recrawl of that state (every known URL again,
with its validators). Printed side by side in one table: URLs reported, the share of 304 Not
Modified (of all URLs, and of the URLs the first crawl got a 2xx for: a 404 has no validators
to send, and sqlite3-doc links ~420 pages its package does not ship), the body bytes
transferred (the recrawl's against the first crawl's) and the wall time of each. Crawl settings
as bench.bench_state's: concurrency 32, delay 0, robots off, no depth limit. BENCH_QUICK=1:
100 pages per site.

    python -m bench.bench_recrawl
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.crawl_runs import bench_config
from bench.doc_sites import SITES
from bench.nginx import Nginx
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.state.crawlstate import CrawlState

QUICK = os.environ.get("BENCH_QUICK") == "1"


@dataclass(slots=True)
class Run:
    """What one crawl of the site reported."""

    keys: set[str] = field(default_factory=set)
    status_of: dict[str, str] = field(default_factory=dict)  # by key
    statuses: Counter[str] = field(default_factory=Counter)
    unchanged: int = 0
    body_bytes: int = 0
    wall_s: float = 0.0

    @property
    def urls(self) -> int:
        return len(self.keys)


def crawl_config(state_dir: str) -> Config:
    config = bench_config(max_pages=100 if QUICK else 0)  # concurrency 32, no delay
    config = config.override("output", progress_interval=0.0)
    return config.override("state", dir=state_dir)


async def crawl(seed: str, state_dir: str, *, recrawl: bool) -> Run:
    config = crawl_config(state_dir)
    state = CrawlState.open(state_dir, settings(config))
    if recrawl:
        state.start_recrawl()
    run = Run()
    started = time.perf_counter()
    async with Crawler(config, state=state) as crawler:
        async for result in crawler.crawl([seed]):
            run.keys.add(result.key)
            run.status_of[result.key] = str(result.status or "error")
            run.statuses[run.status_of[result.key]] += 1
            run.unchanged += result.unchanged
            run.body_bytes += result.size
    run.wall_s = time.perf_counter() - started
    if not crawler.complete:
        raise SystemExit("the crawl did not finish")
    return run


def main() -> None:
    runs = []
    for site in SITES:
        with Nginx(site.root()) as server, tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            seed = server.base_url + "index.html"
            state_dir = str(Path(tmp) / "state")
            first = asyncio.run(crawl(seed, state_dir, recrawl=False))
            again = asyncio.run(crawl(seed, state_dir, recrawl=True))
        runs.append((site.name, first, again))
    print("conditional recrawl on nginx, concurrency 32: a first crawl with --state, then")
    print("--recrawl (304 of 2xx: the recrawl's 304s among the URLs the first crawl got a 2xx for)")
    print(f"{'site':15} {'run':8} {'URLs':>7} {'304 share':>10} {'304 of 2xx':>11} "
          f"{'body bytes':>13} {'vs first':>9} {'wall s':>7} {'vs first':>9}")  # fmt: skip
    for name, first, again in runs:
        ok = [k for k, status in first.status_of.items() if status.startswith("2")]
        for label, run in (("first", first), ("recrawl", again)):
            share = run.unchanged / run.urls if run.urls else 0.0
            of_ok = sum(run.status_of.get(k) == "304" for k in ok) / max(len(ok), 1)
            print(f"{name:15} {label:8} {run.urls:7,} {share:10.2%} {of_ok:11.2%} "
                  f"{run.body_bytes:13,} {run.body_bytes / max(first.body_bytes, 1):9.2%} "
                  f"{run.wall_s:7.2f} {run.wall_s / first.wall_s:9.1%}")  # fmt: skip
    for name, first, again in runs:
        same = again.keys == first.keys
        others = {s: n for s, n in sorted(again.statuses.items()) if s != "304"}
        firsts = dict(sorted(first.statuses.items()))
        print(
            f"{name}: every URL reported again: {'yes' if same else 'NO'}; first crawl statuses "
            f"{firsts}; recrawl statuses other than 304: {others or 'none'}"
        )
    print("(targets: >= 99% 304, body bytes <= 5% of the first crawl)")


if __name__ == "__main__":
    main()
