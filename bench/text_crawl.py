"""What `--text` and `--markdown` add to a crawl: each local doc site crawled by the real
crawler with page text off, `text` and `markdown`, taking turns (the machine's speed drifts),
ROUNDS of each; CPU ms a page (whole process, parse thread included), medians, and what the
JSON Lines weigh a page with each."""

from __future__ import annotations

import asyncio
import os
import statistics
import time

from bench.crawl_runs import bench_config
from bench.doc_sites import SITES
from bench.nginx import Nginx
from crawler.config.load import Config
from crawler.engine.crawler import Crawler

__all__ = ["crawl_costs"]

ROUNDS = 1 if os.environ.get("BENCH_QUICK") == "1" else 5
MODES = {"off": {}, "text": {"text": True}, "markdown": {"markdown": True}}


async def _crawl(seed: str, config: Config, text: bool, markdown: bool) -> tuple[int, float, int]:
    """(pages, CPU seconds, JSON Lines bytes) of one crawl from `seed`."""
    pages = size = 0
    async with Crawler(config) as crawler:
        cpu0 = time.process_time()
        async for result in crawler.crawl([seed]):
            pages += 1
            size += len(result.to_json(text=text, markdown=markdown)) + 1
        cpu = time.process_time() - cpu0
    return pages, cpu, size


def crawl_costs() -> None:
    """The table: per site, ms a page with page text off, text and markdown."""
    print(f"\n### What --text and --markdown add to a crawl ({ROUNDS} rounds each, taking turns)\n")
    print("| site | pages | mode | CPU ms/page median | added | JSON Lines bytes/page |")
    print("|---|--:|---|--:|--:|--:|")
    for site in SITES:
        root = site.root()
        with Nginx(root) as server:
            seed = server.base_url + "index.html"
            cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
            pages: dict[str, int] = {}
            sizes: dict[str, int] = {}
            for _ in range(ROUNDS):
                for mode, output in MODES.items():
                    config = (
                        bench_config().override("output", **output) if output else bench_config()
                    )
                    n, seconds, size = asyncio.run(
                        _crawl(seed, config, "text" in output, "markdown" in output)
                    )
                    cpu[mode].append(seconds / max(n, 1) * 1e3)
                    pages[mode], sizes[mode] = n, size
        base = statistics.median(cpu["off"])
        for mode in MODES:
            median = statistics.median(cpu[mode])
            added = "" if mode == "off" else f"+{median - base:.2f} ms ({median / base - 1:+.0%})"
            print(f"| {site.name} | {pages[mode]} | {mode} | {median:.2f} | {added} | "
                  f"{sizes[mode] / max(pages[mode], 1):,.0f} |", flush=True)  # fmt: skip
    print(f"\nCPU ms/page: the process's CPU time over the pages, the median of {ROUNDS} rounds.")
