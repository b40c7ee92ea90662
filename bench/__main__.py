"""Run every benchmark: `make bench` (or `python -m bench [NAME ...]`).

Each benchmark prints its own table with this crawler's figures side by side with its peers',
all measured in the same run. BENCH_QUICK=1 runs small versions (a smoke test).
"""

from __future__ import annotations

import platform
import subprocess
import sys
import time

BENCHMARKS = (
    "sieve", "urls", "links", "frontier", "state", "output", "memory", "crawl", "focus", "dedup",
    "recrawl", "cluster", "soak", "family", "text", "render", "pdf", "meta", "observe",
)  # fmt: skip


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
        return 2
    print(f"# {platform.node()} {platform.machine()} Python {platform.python_version()} "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")  # fmt: skip
    for name in names:
        print(f"\n## {name}\n", flush=True)
        # each benchmark in a fresh process: a child's peak RSS starts at its parent's
        subprocess.run([sys.executable, "-m", f"bench.bench_{name}"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
