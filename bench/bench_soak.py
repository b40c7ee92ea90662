"""A long crawl: does the crawler's memory or rate drift as the pages add up?

The other benchmarks crawl a thousand pages; a user's crawl runs for hours. This one crawls a
generated site (bench.soak_site, an aiohttp server in its own process on 127.0.0.1) of HOSTS
virtual hosts x PAGES pages, ~4 KB and 23 links each (a session-id copy of the page among
them; a tenth of the pages link to a 404), all reachable from the hosts' first pages, which
are the seeds. The crawler runs in a child process through the library API with the defaults
a user starts from, except: concurrency 64, 2 per host, no delay, no depth limit, scope = the
site's domain, its virtual hosts resolved to loopback by `[fetch] resolve` (robots.txt is
fetched per host, and is a 404). SAMPLES times over the crawl the child records the process's
RSS, the results/s since the last sample, the frontier's queued URLs, the Sieve's count and
(every other time) the objects the garbage collector tracks. Then: the RSS growth per result
over the second half (the frontier drains there: what grows is what the crawl keeps per page)
and the rate of the last tenth against the first.

What is expected to grow, by design: the Sieve (bits, ~2-3 bytes a URL at these sizes), the
frontier until it drains (~160 bytes a queued URL), the per-host records (hosts, not pages).
Nothing else should: a steady growth in the second half is something the crawl keeps per page.

    python -m bench.bench_soak                 # 100 hosts x 500 pages (50,000 pages, ~1 min)
    python -m bench.bench_soak --hosts 200 --pages 1000   # 200,000 pages
    python -m bench.bench_soak --with state,dedup,focus   # what those keep per page too
    BENCH_QUICK=1 python -m bench.bench_soak   # 10 x 100 pages

No peer runs here: Scrapy cannot resolve virtual hosts to loopback without /etc/hosts (its
DNS cache takes names from the system resolver), and this benchmark is about the crawler
against itself over time; bench.bench_crawl compares it with Scrapy.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.nginx import free_port
from bench.soak_site import host_name

if TYPE_CHECKING:
    from crawler.config.load import Config
    from crawler.state.crawlstate import CrawlState

SAMPLES = 20
CHILD_TIMEOUT = 120.0  # seconds the crawl may take, plus one per MIN_RATE pages
MIN_RATE = 50.0


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def soak_config(hosts: int, features: Sequence[str]) -> Config:
    """The crawl's settings (see the module docstring), with `features` turned on: "dedup"
    (content dedup), "focus" (a focused crawl); "state" is passed to the Crawler."""
    from crawler.config.load import Config

    config = (
        Config()
        .override("crawl", concurrency=64, max_depth=0)
        .override("politeness", delay=0.0, ip_delay=0.0, ip_concurrency=0, per_host_concurrency=2)
        .override("fetch", resolve={host_name(h): "127.0.0.1" for h in range(hosts)})
        .override("scope", allowed_domains=["soak.test"])
    )
    if "dedup" in features:
        config = config.override("dedup", enabled=True)
    if "focus" in features:
        config = config.override("focus", keywords=["politeness", "frontier"])
    return config


async def _crawl(
    config: Config, seeds: list[str], expected: int, state: CrawlState | None
) -> dict[str, Any]:
    from crawler.engine.crawler import Crawler

    every = max(1, expected // SAMPLES)
    samples: list[dict[str, Any]] = []
    results = ok = 0
    async with Crawler(config, state=state) as crawler:
        started = last_t = time.perf_counter()
        last_n = 0
        async for result in crawler.crawl(seeds):
            results += 1
            ok += result.status == 200
            if results % every == 0:
                now = time.perf_counter()
                stats = crawler.stats_dict()
                samples.append({
                    "results": results,
                    "elapsed_s": now - started,
                    "rate": (results - last_n) / (now - last_t),
                    "rss_mb": rss_mb(),
                    "queued": stats["frontier"]["queued"],
                    "sieve": stats["sieve"]["count"],
                    "objects": len(gc.get_objects()) if len(samples) % 2 else None,
                })  # fmt: skip
                last_t, last_n = time.perf_counter(), results  # gc.get_objects not counted
        wall = time.perf_counter() - started
        stats = crawler.stats_dict()
    gc.collect()
    return {
        "results": results,
        "ok": ok,
        "wall_s": wall,
        "samples": samples,
        "rss_after_mb": rss_mb(),
        "sieve_bytes": stats["sieve"]["size_in_bytes"],
        "hosts_known": stats["frontier"]["hosts"],
        "content_index": stats.get("content_index"),
    }


def run_child(port: int, hosts: int, pages: int, features: Sequence[str]) -> dict[str, Any]:
    import numpy  # noqa: F401  (the crawl imports it at its first Sieve batch: not a leak)

    baseline = rss_mb()
    seeds = [f"http://{host_name(h)}:{port}/p/0" for h in range(hosts)]
    config = soak_config(hosts, features)
    with tempfile.TemporaryDirectory(prefix="soak-state-") as directory:
        from crawler.engine.components import settings
        from crawler.state.crawlstate import CrawlState

        state = CrawlState.open(directory, settings(config)) if "state" in features else None
        out = asyncio.run(_crawl(config, seeds, hosts * pages * 11 // 10, state))  # and 404s
        out["state_mb"] = sum(f.stat().st_size for f in Path(directory).iterdir()) / 2**20
    out["baseline_mb"] = baseline
    return out


def _wait_for(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the soak site exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the soak site did not start")


def measure(hosts: int, pages: int, features: Sequence[str]) -> dict[str, Any]:
    port = free_port()
    site = subprocess.Popen(
        [sys.executable, "-m", "bench.soak_site", str(port), str(hosts), str(pages)]
    )
    try:
        _wait_for(port, site)
        args = [str(port), str(hosts), str(pages), "--with", ",".join(features)]
        child = subprocess.run(
            [sys.executable, "-m", "bench.bench_soak", "--child", *args],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT + hosts * pages / MIN_RATE,
        )
    finally:
        site.terminate()
        site.wait(10)
    if child.returncode != 0 or not child.stdout.strip():
        sys.stderr.write(child.stderr)
        raise SystemExit(f"the soak crawl failed (exit status {child.returncode})")
    data: dict[str, Any] = json.loads(child.stdout.splitlines()[-1])
    return data


def report(data: dict[str, Any], hosts: int, pages: int, features: Sequence[str]) -> None:
    expected = hosts * pages
    print(f"site: {hosts} hosts x {pages} pages = {expected:,} pages (plus 404 and robots.txt)")
    print(
        "settings: concurrency 64, 2 per host, no delay, robots on, defaults otherwise; "
        f"turned on: {', '.join(features) or 'nothing'}"
    )
    print(
        f"results {data['results']:,} ({data['ok']:,} pages 200) in {data['wall_s']:.1f} s; "
        f"RSS after imports {data['baseline_mb']:.0f} MB, after the crawl "
        f"{data['rss_after_mb']:.0f} MB; Sieve {data['sieve_bytes'] / 2**20:.1f} MiB; "
        f"hosts known {data['hosts_known']}"
    )
    if data["state_mb"]:
        print(f"state directory: {data['state_mb']:.1f} MiB")
    if data["content_index"]:
        index = data["content_index"]
        print(f"content index: {index['pages']:,} pages, {index['bytes'] / 2**20:.1f} MiB")
    print(
        "\n{:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10}".format(
            "results", "elapsed", "pages/s", "RSS MB", "queued", "Sieve", "gc objects"
        )
    )
    for s in data["samples"]:
        objects = f"{s['objects']:,}" if s["objects"] is not None else ""
        print(
            f"{s['results']:>9,} {s['elapsed_s']:>8.1f}s {s['rate']:>9,.0f} {s['rss_mb']:>9.1f} "
            f"{s['queued']:>10,} {s['sieve']:>10,} {objects:>10}"
        )
    samples = data["samples"]
    if len(samples) < 4:
        return
    half = samples[len(samples) // 2 :]
    first, last = half[0], half[-1]
    growth = (last["rss_mb"] - first["rss_mb"]) * 2**20 / (last["results"] - first["results"])
    tenth = max(1, len(samples) // 10)
    early = sum(s["rate"] for s in samples[:tenth]) / tenth
    late = sum(s["rate"] for s in samples[-tenth:]) / tenth
    print(
        f"\nsecond half: RSS {first['rss_mb']:.1f} -> {last['rss_mb']:.1f} MB over "
        f"{last['results'] - first['results']:,} results = {growth:,.0f} bytes a result; "
        f"queued {first['queued']:,} -> {last['queued']:,}"
    )
    print(f"rate: first tenth {early:,.0f} pages/s, last tenth {late:,.0f} ({late / early:.2f}x)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=0)
    parser.add_argument("--pages", type=int, default=0)
    parser.add_argument(
        "--with", dest="features", default="",
        help="comma-separated: state, dedup, focus (turned on in the crawl)",
    )  # fmt: skip
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    features = [f for f in args.features.split(",") if f]
    unknown = set(features) - {"state", "dedup", "focus"}
    if unknown:
        parser.error(f"--with: unknown feature(s) {', '.join(sorted(unknown))}")
    if args.child:
        print(json.dumps(run_child(*args.child, features)))
        return 0
    quick = bool(os.environ.get("BENCH_QUICK"))
    hosts = args.hosts or (10 if quick else 100)
    pages = args.pages or (100 if quick else 500)
    report(measure(hosts, pages, features), hosts, pages, features)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
