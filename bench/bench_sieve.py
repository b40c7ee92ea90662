"""Benchmark: the Sieve against pybloom-live, rbloom and a Python set, on realistic URL strings.

N distinct URLs (`realistic_urls`) are inserted into each structure built for N/overshoot items at
P = 1% (overshoot 1x, 10x, 100x), then M other URLs are looked up: every hit is a false positive.
"add/s" and "miss/s" are one item per call; "batch/s" feeds pages of 110 keys (what the engine
does per fetched page) through `Sieve.add_many` (also without numpy, to show what numpy buys) and
`rbloom.Bloom.update`. Bytes per item count filter bits only (a set: table plus the strings).

Run: `.venv/bin/python -m bench.bench_sieve` (BENCH_QUICK=1 for a few-second smoke run).
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from pybloom_live import ScalableBloomFilter  # type: ignore[import-untyped]
from rbloom import Bloom

import crawler.sieve.batch as sieve_mod
from bench.corpus import realistic_urls
from crawler.sieve import Sieve

P = 0.01
PAGE = 110  # canonical links per page on a documentation site
OVERSHOOTS = (1, 10, 100)


def _rate(n: int, run: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    run()
    return n / (time.perf_counter() - start)


def _add_one(add: Callable[[str], object], items: Sequence[str]) -> Callable[[], None]:
    def run() -> None:
        for x in items:
            add(x)

    return run


def _add_pages(add_many: Callable[[list[str]], object], items: list[str]) -> Callable[[], None]:
    pages = [items[i : i + PAGE] for i in range(0, len(items), PAGE)]

    def run() -> None:
        for page in pages:
            add_many(page)

    return run


def _misses(container: Any, probes: Sequence[str], out: list[int]) -> Callable[[], None]:
    def run() -> None:
        hits = 0
        for x in probes:
            if x in container:
                hits += 1
        out.append(hits)

    return run


def _sieve_batch_without_numpy(cap: int, items: list[str]) -> tuple[Sieve, float]:
    saved = sieve_mod.__dict__["np"]
    setattr(sieve_mod, "np", None)  # noqa: B010 - the module's numpy switch
    try:
        s = Sieve(cap, P)
        return s, _rate(len(items), _add_pages(s.add_many, items))
    finally:
        setattr(sieve_mod, "np", saved)  # noqa: B010


def measure(items: list[str], probes: list[str], overshoot: int) -> list[tuple[str, ...]]:
    n, cap = len(items), max(1, len(items) // overshoot)
    rows: list[tuple[str, ...]] = []

    def row(name: str, add: float, batch: float, miss: float, size: float, hits: int) -> None:
        def fmt(x: float) -> str:
            return f"{x / 1e6:.2f}M" if x == x else "-"

        fpr = f"{hits / len(probes):.4%}"
        rows.append((name, f"{overshoot}x", fmt(add), fmt(batch), fmt(miss), f"{size:.2f}", fpr))

    nan = float("nan")
    one = Sieve(cap, P)
    add = _rate(n, _add_one(one.add, items))
    batched = Sieve(cap, P)
    batch = _rate(n, _add_pages(batched.add_many, items))
    if batched.to_bytes() != one.to_bytes():
        raise SystemExit("Sieve: add_many built different bits than add")
    plain, plain_batch = _sieve_batch_without_numpy(cap, items)
    if plain.to_bytes() != one.to_bytes():
        raise SystemExit("Sieve: add_many without numpy built different bits than add")
    hits: list[int] = []
    miss = _rate(len(probes), _misses(one, probes, hits))
    row(f"Sieve ({len(one.stages)} stages)", add, batch, miss, one.size_in_bytes / n, hits[-1])
    row("Sieve, no numpy", nan, plain_batch, nan, plain.size_in_bytes / n, hits[-1])

    sbf = ScalableBloomFilter(cap, P, ScalableBloomFilter.SMALL_SET_GROWTH)
    add = _rate(n, _add_one(sbf.add, items))
    miss = _rate(len(probes), _misses(sbf, probes, hits))
    size = sum(f.num_bits for f in sbf.filters) / 8
    row(f"pybloom-live ({len(sbf.filters)} stages)", add, nan, miss, size / n, hits[-1])

    rb = Bloom(cap, P)
    add = _rate(n, _add_one(rb.add, items))
    rb_batch = Bloom(cap, P)
    batch = _rate(n, _add_pages(rb_batch.update, items))
    miss = _rate(len(probes), _misses(rb, probes, hits))
    row("rbloom (fixed size)", add, batch, miss, rb.size_in_bits / 8 / n, hits[-1])

    if overshoot == 1:
        seen: set[str] = set()
        add = _rate(n, _add_one(seen.add, items))
        miss = _rate(len(probes), _misses(seen, probes, hits))
        size = sys.getsizeof(seen) + sum(sys.getsizeof(x) for x in items)
        row("Python set (exact)", add, nan, miss, size / n, hits[-1])
    return rows


def main() -> None:
    logging.getLogger("crawler.sieve").setLevel(logging.ERROR)  # growth warnings are expected
    quick = os.environ.get("BENCH_QUICK") == "1"
    n, m = (20_000, 20_000) if quick else (1_000_000, 200_000)
    urls = realistic_urls(n + m, seed=7)
    items, probes = urls[:n], urls[n:]
    print(f"{n:,} URLs inserted, {m:,} other URLs looked up; P = {P:.0%}; pages of {PAGE} keys")
    header = ("structure", "over", "add/s", "batch/s", "miss/s", "bytes/item", "FPR")
    rows = [r for o in OVERSHOOTS for r in measure(items, probes, o)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        print("  ".join(cells))
    stage0 = Sieve(n, P).stages[0]
    print(
        f"Sieve stage 0 alone (built for {n:,} at p={stage0.error_rate:.3g}, k={stage0.k}): "
        f"{stage0.m / 8 / n:.2f} bytes/item; at exactly 1x the estimate can pass the capacity "
        "in the last few items and open stage 1 (2x capacity), counted above."
    )


if __name__ == "__main__":
    main()
