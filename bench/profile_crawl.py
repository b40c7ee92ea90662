"""Where the end-to-end crawl's time goes, and what candidate patches would save.

Same sites, server and settings as bench.bench_crawl (nginx on loopback, python3.11-doc or
``--corpus sqlite3-doc``, concurrency 32, no delay, robots off), our crawler in a child process:

    python -m bench.profile_crawl              # py-spy (sampling; if installed) else cProfile
    python -m bench.profile_crawl --cprofile   # deterministic; inflates many-small-call code
    python -m bench.profile_crawl --compare    # bench.patches x event loops, median of --repeat

py-spy tables give each function's share of the crawl's samples, and that share of an unprofiled
run's CPU time per page (``py-spy record`` pauses the process to sample it, so its own timings
run high). The `--compare` table is the one to quote for a patch's gain. BENCH_QUICK=1: 100 pages.
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bench_crawl import (
    CORPORA,
    QUICK_PAGES,
    Measured,
    child_cmd,
    has,
    measure,
    warm_page_cache,
)
from bench.nginx import Nginx

RATE = 1000  # py-spy samples per second
_LINE = re.compile(r":\d+\)$")


def print_cprofile(path: str, pages: int, top: int = 25) -> None:
    """The top functions by own and by cumulative time, in microseconds per page."""
    stats: dict[Any, Any] = pstats.Stats(path).stats  # type: ignore[attr-defined]
    rows = []
    for (file, line, func), (_, ncalls, tottime, cumtime, _) in stats.items():
        where = f"{Path(file).name}:{line}({func})" if line else func
        rows.append((tottime, cumtime, ncalls, where))
    total = sum(r[0] for r in rows)
    for title, key in (("own time", 0), ("cumulative time", 1)):
        per_page = total / pages * 1e6
        print(f"\ncProfile: top {top} by {title} ({pages} pages, {per_page:.0f} us/page)")
        print("{:>9} {:>9} {:>9}  {}".format("own us/p", "cum us/p", "calls/p", "function"))
        for row in sorted(rows, key=lambda r: r[key], reverse=True)[:top]:
            print(
                f"{row[0] / pages * 1e6:>9.1f} {row[1] / pages * 1e6:>9.1f} "
                f"{row[2] / pages:>9.2f}  {row[3]}"
            )


_GENERIC = re.compile(
    r"^(_run_module_as_main|_run_code|<module> \(bench|cli |child |run_ours|run_async|Runner\.run"
    r"|BaseEventLoop\.|Handle\._run|Thread\.|Parser\._work|Context\.run)"
)


def print_pyspy(path: str, pages: int, cpu_ms: float, top: int = 25) -> None:
    """Own and inclusive samples per function (line numbers folded) during the crawl, as shares
    of the crawl's samples and as an estimate of us/page (share x the reference CPU ms/page)."""
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    where: Counter[str] = Counter()
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = [_LINE.sub(")", f) for f in stack.split(";")]
        if any(f.startswith("Parser._work") for f in frames):
            part = "parse threads (crawler.parse.thread)"
        elif any(f.startswith("Runner.run") for f in frames):  # asyncio's loop or uvloop's
            part = "event loop thread"
        else:
            continue  # start-up, or thread-pool threads waiting for work
        where[part] += n
        own[frames[-1]] += n
        for frame in set(frames):
            if not _GENERIC.match(frame):
                incl[frame] += n
    total = sum(where.values())
    print(f"\npy-spy: {total} crawl samples; est. us/page = share x {cpu_ms:.2f} ms CPU/page")
    for part, n in where.most_common():
        print(f"  {part:<40} {n / total:>6.1%} {n / total * cpu_ms * 1e3:>8.0f} us/page")
    for title, counter in (("own", own), ("inclusive", incl)):
        print(f"\npy-spy: top {top} by {title} samples")
        print("{:>7} {:>9}  {}".format("share", "us/page", "function"))
        for name, n in counter.most_common(top):
            print(f"{n / total:>7.1%} {n / total * cpu_ms * 1e3:>9.0f}  {name}")


def profile(mode: str, extra: Sequence[str], corpus: str = "python3.11-doc") -> None:
    root = CORPORA[corpus]()
    warm_page_cache(root)
    with Nginx(root) as server, tempfile.TemporaryDirectory(prefix="bench-prof-") as tmp:
        out = str(Path(tmp) / "profile.out")
        cmd = child_cmd("ours", server.port, *extra)
        if mode == "cprofile":
            m = measure([*cmd, "--profile-out", out])
        else:
            spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
            record = [spy, "record", "--nonblocking", "-r", str(RATE), "-f", "raw", "-o", out]
            subprocess.run([*record, "--", *cmd], check=True, capture_output=True)
            m = measure(cmd)  # an unprofiled run, for the reference figures
        d = m.data
        print(
            f"reference run: {d['pages']} pages in {d['wall_s']:.2f} s, "
            f"{d['pages'] / d['wall_s']:.0f} pages/s, CPU {d['cpu_s'] / d['pages'] * 1e3:.2f} "
            f"ms/page, {d['links_seen'] / d['pages']:.0f} links/page"
        )
        if mode == "cprofile":
            print_cprofile(out, d["pages"])
        else:
            print_pyspy(out, d["pages"], d["cpu_s"] / d["pages"] * 1e3)


DEFAULT_VARIANTS = ("", "threadparse", "inline", "switch")


def compare(
    repeat: int,
    extra: Sequence[str],
    variants: Sequence[str] = DEFAULT_VARIANTS,
    corpus: str = "python3.11-doc",
) -> None:
    root = CORPORA[corpus]()
    warm_page_cache(root)
    loops = ["asyncio", "uvloop"] if has("uvloop") else ["asyncio"]
    runs: dict[tuple[str, str], list[Measured]] = {}
    with Nginx(root) as server:
        for _ in range(repeat):  # interleaved, so that load changes hit every variant alike
            for loop in loops:
                for variant in variants:
                    flags = [*extra, *(["--uvloop"] if loop == "uvloop" else [])]
                    if variant:
                        flags += ["--patch", variant]
                    runs.setdefault((loop, variant), []).append(
                        measure(child_cmd("ours", server.port, *flags))
                    )
    print(f"median of {repeat} runs each, same site and settings as bench.bench_crawl")
    print(
        "{:<8} {:<20} {:>6} {:>9} {:>9} {:>6} {:>8}".format(
            "loop", "patches", "pages", "pages/s", "CPU ms/p", "CPU%", "vs base"
        )
    )
    for loop in loops:
        base = 0.0
        for variant in variants:
            ms = runs[(loop, variant)]
            rate = statistics.median(m.data["pages"] / m.data["wall_s"] for m in ms)
            cpu = statistics.median(m.data["cpu_s"] / m.data["pages"] * 1e3 for m in ms)
            busy = statistics.median(m.data["cpu_s"] / m.data["wall_s"] for m in ms)
            base = base or rate
            print(
                f"{loop:<8} {variant or '(none)':<20} {ms[0].data['pages']:>6} {rate:>9.0f} "
                f"{cpu:>9.2f} {busy:>6.0%} {rate / base:>7.2f}x"
            )


def main() -> None:
    quick = os.environ.get("BENCH_QUICK") == "1"
    compare(1 if quick else 3, ["--max-pages", str(QUICK_PAGES)] if quick else [])


def cli(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile_crawl",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cprofile", action="store_true")
    mode.add_argument("--py-spy", action="store_true")
    mode.add_argument("--compare", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", choices=tuple(CORPORA), default="python3.11-doc")
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--patch", default="", help="bench.patches to apply (comma-separated)")
    parser.add_argument(
        "--variants",
        default=";".join(DEFAULT_VARIANTS),
        help="--compare: patch sets separated by ';' (empty: none)",
    )
    args = parser.parse_args(argv)
    extra = ["--max-pages", str(QUICK_PAGES)] if os.environ.get("BENCH_QUICK") == "1" else []
    extra += ["--uvloop"] * args.uvloop + (["--patch", args.patch] if args.patch else [])
    if args.compare:
        compare(args.repeat, extra, args.variants.split(";"), args.corpus)
    elif args.cprofile or not (args.py_spy or has_py_spy()):
        profile("cprofile", extra, args.corpus)
    else:
        profile("py-spy", extra, args.corpus)


def has_py_spy() -> bool:
    return shutil.which("py-spy") is not None or Path(sys.executable).with_name("py-spy").exists()


if __name__ == "__main__":
    cli(sys.argv[1:])
