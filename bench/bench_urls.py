"""Benchmark: link canonicalization throughput on a real site's links, against the usual peers.

Workload 1 is every (page, href) pair of the python3.11-doc HTML site in crawl (page) order: the
crawler resolves each href against its page and canonicalizes it. The peers cannot resolve, so they
get `urllib.parse.urljoin(page, href)` first (what Scrapy's `response.urljoin` does). Workload 2 is
absolute URLs spread over 2000 hosts (`realistic_urls`), where per-host caches help less.

The crawl itself resolves a page's links with one `resolve_all` call (the row "per page").

Run: `.venv/bin/python -m bench.bench_urls` (BENCH_QUICK=1 for a few-second smoke run).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from itertools import groupby
from operator import itemgetter
from urllib.parse import urljoin

from url_normalize import url_normalize
from w3lib.url import canonicalize_url
from yarl import URL

from bench.corpus import page_links, realistic_urls
from crawler.urls.canonical import UrlNormalizer

Pairs = Sequence[tuple[str, str]]


def _ours(memo_size: int) -> Callable[[Pairs], tuple[list[str | None], float]]:
    def run(pairs: Pairs) -> tuple[list[str | None], float]:
        norm = UrlNormalizer(memo_size=memo_size)  # fresh: the memo starts empty every run
        out: list[str | None] = []
        for page, href in pairs:
            result = norm.resolve(href, page)
            out.append(None if result is None else result[1])
        return out, norm.memo_hit_rate if memo_size else float("nan")

    return run


def _ours_per_page(memo_size: int) -> Callable[[Pairs], tuple[list[str | None], float]]:
    """What the engine does: one `resolve_all` per page (consecutive pairs of one page)."""

    def run(pairs: Pairs) -> tuple[list[str | None], float]:
        norm = UrlNormalizer(memo_size=memo_size)
        out: list[str | None] = []
        for page, group in groupby(pairs, key=itemgetter(0)):
            for result in norm.resolve_all([href for _, href in group], page or None):
                out.append(None if result is None else result[1])
        return out, norm.memo_hit_rate if memo_size else float("nan")

    return run


def _peer(func: Callable[[str], str | None]) -> Callable[[Pairs], tuple[list[str | None], float]]:
    def run(pairs: Pairs) -> tuple[list[str | None], float]:
        out: list[str | None] = []
        for page, href in pairs:
            try:
                out.append(func(urljoin(page, href)) if page else func(href))
            except Exception:  # peers raise on some real-world hrefs; count them as rejected
                out.append(None)
        return out, float("nan")

    return run


def _yarl(pairs: Pairs) -> tuple[list[str | None], float]:
    out: list[str | None] = []
    for page, href in pairs:
        try:
            out.append(str(URL(page).join(URL(href)).with_fragment(None)))
        except ValueError:
            out.append(None)
    return out, float("nan")


def _measure(
    name: str, run: Callable[[Pairs], tuple[list[str | None], float]], pairs: Pairs, repeat: int
) -> tuple[str, float, set[str | None], float]:
    best = float("inf")
    keys: list[str | None] = []
    hit_rate = float("nan")
    for _ in range(repeat):
        start = time.perf_counter()
        keys, hit_rate = run(pairs)
        best = min(best, time.perf_counter() - start)
    return name, best, set(keys), hit_rate


def _table(title: str, pairs: Pairs, rows: list[tuple[str, float, set[str | None], float]]) -> None:
    ref = next(t for name, t, _, _ in rows if name.startswith("w3lib"))
    print(f"\n{title}: {len(pairs):,} links")
    print(f"{'implementation':<40} {'us/link':>8} {'URLs/s':>11} {'vs w3lib':>9} "
          f"{'distinct keys':>14} {'memo hits':>10}")  # fmt: skip
    for name, seconds, keys, hit_rate in rows:
        hits = "-" if hit_rate != hit_rate else f"{hit_rate:.1%}"
        print(
            f"{name:<40} {seconds / len(pairs) * 1e6:>8.2f} {len(pairs) / seconds:>11,.0f} "
            f"{ref / seconds:>8.1f}x {len(keys - {None}):>14,} {hits:>10}"
        )


def main() -> None:
    quick = os.environ.get("BENCH_QUICK") == "1"
    links = page_links()[:6000] if quick else page_links()
    absolute = [("", url) for url in realistic_urls(2000 if quick else 20000, seed=1)]
    repeat = 1 if quick else 3
    peer_repeat = 1 if quick else 2
    contenders = [
        ("crawler.urls.canonical resolve, cold (memo off)", _ours(0), repeat),
        ("crawler.urls.canonical resolve, memo (crawl order)", _ours(100_000), repeat),
        ("crawler.urls.canonical resolve_all per page, memo", _ours_per_page(100_000), repeat),
        ("yarl join (no canonicalization)", _yarl, peer_repeat),
        ("w3lib canonicalize_url + urljoin", _peer(canonicalize_url), peer_repeat),
        ("url_normalize + urljoin", _peer(url_normalize), peer_repeat),
    ]
    print(f"URL canonicalization benchmark{' (BENCH_QUICK)' if quick else ''}; best of runs")
    rows = [_measure(name, run, links, n) for name, run, n in contenders]
    _table("python3.11-doc site, (page, href) pairs in crawl order", links, rows)
    rows = [_measure(name, run, absolute, n) for name, run, n in contenders if "yarl" not in name]
    _table("absolute URLs over 2000 hosts (realistic_urls)", absolute, rows)


if __name__ == "__main__":
    main()
