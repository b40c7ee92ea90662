"""Memory: RSS with 1M URLs queued in the frontier, and with 10M keys in the Sieve.

Each row is measured in a fresh process (`python -m bench.bench_memory --run NAME --n N`): its
RSS after imports (baseline), then after building the structure and a gc (RSS), and the peak
(VmHWM). bytes/item = (RSS - baseline) / items. Rows:

- frontier: crawler.frontier.Frontier (respect_robots=False, max_queued large) with N Entries
  from bench.corpus.realistic_urls (2,000 hosts), each with its fetch URL and canonical key from
  crawler.urls.canonical.UrlNormalizer, depth 3 and a parent URL shared by 50 entries (the page they
  were found on), as the engine builds them. Target: <= 250 MB RSS for 1M.
- frontier, key is url: the same, but an Entry's key is the fetch URL object itself when the two
  are equal (they are for most URLs), i.e. one string per URL instead of two.
- frontier, random priorities: the same, each URL with a random priority (seeded; a best-first
  crawl's scores), so each host's queue is a heap.
- URL strings alone: the same N (url, key) string pairs in a list, for scale.
- sieve: crawler.sieve.Sieve with the config defaults (capacity 1M, growing) after N adds;
  and the same with capacity 1.1 x N (one stage).

BENCH_QUICK=1: 100k URLs and 1M Sieve keys.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from crawler.frontier.settings import Politeness, QueueLimits

TARGET_MB = 250
PARENT_EVERY = 50


def rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def url_lines(path: str) -> Iterator[str]:
    with open(path) as fh:
        for line in fh:
            yield line.rstrip("\n")


def build_frontier(path: str, share_key: bool, scored: bool = False) -> tuple[Any, int]:
    import random

    from crawler.frontier import Entry, Frontier
    from crawler.urls.canonical import UrlNormalizer

    rng = random.Random(15)

    urls = UrlNormalizer(memo_size=0)  # no memo: it would hold URLs of its own
    frontier = Frontier(
        Politeness(respect_robots=False),
        QueueLimits(max_queued=1 << 40, max_queued_per_host=1 << 40),
    )
    parent = ""
    n = 0
    for n, line in enumerate(url_lines(path)):
        resolved = urls.resolve(line, line)
        if resolved is None:
            continue
        fetch, key = resolved
        if share_key and key == fetch:
            key = fetch
        if n % PARENT_EVERY == 0:
            parent = fetch
        priority = round(rng.random(), 3) if scored else 0.0
        if not frontier.put(Entry(url=fetch, key=key, depth=3, parent=parent, priority=priority)):
            raise RuntimeError("frontier refused an entry")
    return frontier, len(frontier)


def build_strings(path: str) -> tuple[Any, int]:
    from crawler.urls.canonical import UrlNormalizer

    urls = UrlNormalizer(memo_size=0)
    pairs = [p for line in url_lines(path) if (p := urls.resolve(line, line)) is not None]
    return pairs, len(pairs)


def sieve_keys(n: int) -> Iterator[str]:
    """`n` distinct URL-shaped keys (host, path and a counter), generated lazily."""
    for i in range(n):
        yield f"https://host-{i % 20011}.example/section/{i // 7}/page-{i}.html"


def build_sieve(n: int, capacity: int) -> tuple[Any, int]:
    from crawler.config.sections import SieveConfig
    from crawler.sieve import Sieve

    c = SieveConfig()
    sieve = Sieve(
        capacity=capacity or c.capacity, error_rate=c.error_rate, ratio=c.ratio, growth=c.growth
    )
    sieve.update(sieve_keys(n))
    return sieve, n


def child(run: str, n: int, path: str) -> dict[str, Any]:
    import crawler.frontier
    import crawler.sieve
    import crawler.urls.canonical  # noqa: F401 (imports count in the baseline, not in the structure)

    gc.collect()
    base, _ = rss_mb()
    started = time.perf_counter()
    if run == "frontier":
        obj, items = build_frontier(path, share_key=False)
    elif run == "frontier_shared":
        obj, items = build_frontier(path, share_key=True)
    elif run == "frontier_scored":
        obj, items = build_frontier(path, share_key=False, scored=True)
    elif run == "strings":
        obj, items = build_strings(path)
    elif run == "sieve":
        obj, items = build_sieve(n, 0)
    else:
        obj, items = build_sieve(n, n + n // 10)
    seconds = time.perf_counter() - started
    gc.collect()
    rss, peak = rss_mb()
    out = {"items": items, "baseline_mb": base, "rss_mb": rss, "peak_mb": peak, "seconds": seconds}
    if run.startswith("sieve"):
        out["size_mb"] = obj.size_in_bytes / 2**20
        out["stages"] = len(obj.stages)
    del obj
    return out


def measure(run: str, n: int, path: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.bench_memory", "--run", run, "--n", str(n)]
    if path:
        cmd += ["--urls", path]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parent.parent
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


def main() -> None:
    from bench.corpus import realistic_urls

    quick = os.environ.get("BENCH_QUICK") == "1"
    n_urls, n_keys = (100_000, 1_000_000) if quick else (1_000_000, 10_000_000)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        path = str(Path(tmp) / "urls.txt")
        urls = realistic_urls(n_urls)
        avg = sum(map(len, urls)) / len(urls)
        Path(path).write_text("\n".join(urls) + "\n")
        del urls
        rows = [
            ("Frontier, queued URLs", measure("frontier", n_urls, path)),
            ("Frontier, key is url when equal", measure("frontier_shared", n_urls, path)),
            ("Frontier, random priorities", measure("frontier_scored", n_urls, path)),
            ("(url, key) strings in a list", measure("strings", n_urls, path)),
            ("Sieve, default capacity (grows)", measure("sieve", n_keys, "")),
            ("Sieve, capacity 1.1 x keys", measure("sieve_sized", n_keys, "")),
        ]
    print(
        f"{n_urls:,} realistic URLs ({avg:.0f} chars on average), {n_keys:,} Sieve keys; "
        "each row a fresh process"
    )
    header = ("structure", "items", "base MB", "RSS MB", "peak MB", "delta MB", "B/item", "build s")
    print("{:<34} {:>11} {:>8} {:>8} {:>8} {:>9} {:>7} {:>8}".format(*header))
    for name, r in rows:
        delta = r["rss_mb"] - r["baseline_mb"]
        print(
            f"{name:<34} {r['items']:>11,} {r['baseline_mb']:>8.1f} {r['rss_mb']:>8.1f} "
            f"{r['peak_mb']:>8.1f} {delta:>9.1f} {delta * 2**20 / r['items']:>7.0f} "
            f"{r['seconds']:>8.1f}"
        )
    for name, r in rows[4:]:
        print(f"{name}: {r['stages']} stage(s), bit arrays {r['size_mb']:.1f} MB")
    for name, r in rows[:2]:
        # RSS for 1M queued URLs: measured, or (quick) baseline + the per-URL cost x 1M
        mb = r["baseline_mb"] + (r["rss_mb"] - r["baseline_mb"]) * 1_000_000 / r["items"]
        verdict = "meets" if mb <= TARGET_MB else "misses"
        how = "" if r["items"] == 1_000_000 else " (extrapolated)"
        print(f"{name}: {mb:.0f} MB with 1M queued{how}: {verdict} the <= {TARGET_MB} MB target")
    plain, scored = rows[0][1], rows[2][1]
    extra = (scored["rss_mb"] - plain["rss_mb"]) * 2**20 / scored["items"]
    print(f"Best-first (random priorities): {extra:.0f} B more per queued URL (no target)")


def cli(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_memory")
    parser.add_argument(
        "--run",
        choices=(
            "frontier",
            "frontier_shared",
            "frontier_scored",
            "strings",
            "sieve",
            "sieve_sized",
        ),
    )
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--urls", default="")
    args = parser.parse_args(argv)
    if args.run:
        print(json.dumps(child(args.run, args.n, args.urls)), flush=True)
    else:
        main()


if __name__ == "__main__":
    cli(sys.argv[1:])
