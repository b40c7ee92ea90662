"""Focused crawling: harvest rate and recall of `--focus` vs breadth-first, at a budget of pages.

    python -m bench focus              # real crawls of the local doc sites served by nginx
    python -m bench.bench_focus --simulate   # the offline simulation only (no server)
    python -m bench.bench_focus --simulate --first-link   # simulated, queued priorities kept
    python -m bench.bench_focus --site sqlite3-doc --no-rescore   # one site; re-scoring off
    python -m bench.bench_focus --redis     # each focused crawl also shared by 2 crawlers via Redis

Sites: Debian's python3.11-doc and sqlite3-doc (and postgresql-doc-15, a held-out site), each served
by nginx on loopback; git-doc, python-django-doc and openjdk-17-doc (an independent judge's held-out
sites, bench.focus_sites.UNSEEN_SITES) only when named with --site. For each site, one breadth-first
crawl (no focus; the same for every topic) and one ``--focus TOPIC`` crawl per topic, from the
site's index page, at a budget of BUDGET fetched pages, delay 0, robots off, concurrency 8. A page
counts as relevant by the benchmark's own rule, applied to the file on disk (see
bench/focus_sites.py: every topic word at least 3 times in the visible text), never by the crawler's
scorer. Harvest = relevant pages fetched / pages fetched; recall = relevant pages fetched / relevant
pages on the site; ceiling = the best ratio any crawl could reach at this budget, min(relevant,
budget) / breadth-first's relevant pages. Crawls with concurrency 8 fetch in a slightly different
order each time (breadth-first's harvest moves by a few pages too), so each crawl runs ROUNDS times
and the table shows medians and the range of the per-round ratio. A second table repeats the crawls
with concurrency 1 (one round: the order is then fixed). Held-out topics (marked *) were never
looked at while the scorer was tuned.

``--simulate`` replays the crawls over the files instead (bench/focus_sites.py), one fetch at a
time and 8 in flight (completing in the order they were handed out); ``--first-link`` makes a queued
URL keep the priority of the first link found to it (no re-prioritizing: the crawler before).
``--site NAME`` (repeatable) runs only those sites; ``--no-rescore`` turns off the periodic
re-scoring of queued URLs (``crawler.engine.focus.RESCORE_EVERY``) in the crawls and the simulation.
``--redis`` (concurrency 8 only) crawls each topic a second way beside it: shared through a
throwaway Debian redis-server by two crawlers of concurrency 4 each (as two ``crawl --redis``
processes would, here in one process: the same 8 fetches at a time), and adds their harvest
(relevant pages / page results: the shared budget may run past 150 by the fetches in flight),
its ratio to breadth-first and their page results.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from dataclasses import dataclass
from urllib.parse import unquote

from redis.asyncio import Redis

from bench.crawl_runs import bench_config as loopback_config
from bench.focus_sites import (
    BUDGET,
    SITE,
    SITES,
    UNSEEN_SITES,
    SiteSpec,
    relevant_pages,
    simulate,
    site_pages,
)
from bench.nginx import Nginx
from crawler.config.load import Config
from crawler.engine import focus
from crawler.engine.crawler import Crawler
from crawler.focus.relevance import TopicScorer
from crawler.focus.scoring import Link, PageText
from crawler.testing.redis_server import RedisServer

CONCURRENCY = 8
ROUNDS = 3  # crawls per topic (and breadth-first crawls per site): the table shows medians
QUICK = bool(os.environ.get("BENCH_QUICK"))


@dataclass
class Crawl:
    fetched: list[str]  # site-relative paths, in the order the results came
    wall_s: float


def bench_config(topic: str | None, budget: int, concurrency: int = CONCURRENCY) -> Config:
    config = loopback_config(max_pages=budget, concurrency=concurrency)
    if topic is not None:
        config = config.override("focus", keywords=(topic,))
    return config


def relative(base: str, url: str) -> str:
    rel = unquote(url.split("#", 1)[0].split("?", 1)[0].removeprefix(base))
    return rel + "index.html" if rel == "" or rel.endswith("/") else rel


async def _shared_crawl(base: str, config: Config, redis: str) -> Crawl:
    """Two crawlers sharing one crawl through Redis, half the concurrency each."""
    client = Redis.from_url(redis)
    await client.flushall()
    await client.aclose()
    half = max(1, config.crawl.concurrency // 2)
    config = config.override("crawl", concurrency=half).override("cluster", redis=redis)
    fetched: list[str] = []

    async def one() -> None:
        async with Crawler(config) as crawler:
            async for result in crawler.crawl([base + "index.html"]):
                fetched.append(relative(base, result.url))

    started = time.perf_counter()
    await asyncio.gather(one(), one())
    return Crawl(fetched, time.perf_counter() - started)


async def _crawl(base: str, config: Config) -> Crawl:
    fetched = []
    started = time.perf_counter()
    async with Crawler(config) as crawler:
        async for result in crawler.crawl([base + "index.html"]):
            fetched.append(relative(base, result.url))
    return Crawl(fetched, time.perf_counter() - started)


def crawl(
    base: str, topic: str | None, budget: int, concurrency: int, redis: str | None = None
) -> Crawl:
    config = bench_config(topic, budget, concurrency)
    return asyncio.run(_shared_crawl(base, config, redis) if redis else _crawl(base, config))


def simulated(
    spec: SiteSpec, topic: str | None, budget: int, reprioritize: bool, concurrency: int
) -> Crawl:
    started = time.perf_counter()
    fetched = simulate(spec.name, topic, budget, reprioritize=reprioritize, in_flight=concurrency,
                       rescore_every=focus.RESCORE_EVERY)  # fmt: skip
    return Crawl(fetched, time.perf_counter() - started)


def harvest(crawls: list[Crawl], relevant: frozenset[str]) -> tuple[float, float, float]:
    """(median harvest rate, median recall, median wall time) of some crawls."""
    rates = [len(relevant & set(c.fetched)) / max(1, len(c.fetched)) for c in crawls]
    recalls = [len(relevant & set(c.fetched)) / len(relevant) for c in crawls]
    walls = [c.wall_s for c in crawls]
    return statistics.median(rates), statistics.median(recalls), statistics.median(walls)


def row(
    spec: SiteSpec, topic: str, bfs: list[Crawl], focus: list[Crawl], shared: list[Crawl]
) -> tuple[str, float]:
    relevant = relevant_pages(spec.name, topic)
    harvest_b, recall_b, _ = harvest(bfs, relevant)
    harvest_f, recall_f, wall_f = harvest(focus, relevant)
    ratio = harvest_f / harvest_b if harvest_b else float("inf")
    ratios = [harvest([f], relevant)[0] / max(harvest([b], relevant)[0], 1e-9)
              for b, f in zip(bfs, focus, strict=True)]  # fmt: skip
    ceiling = min(len(relevant), len(focus[0].fetched)) / len(focus[0].fetched) / harvest_b
    mark = "*" if topic in spec.held_out else ""
    extra = ""
    if shared:
        harvest_s = harvest(shared, relevant)[0]
        pages = statistics.median(len(c.fetched) for c in shared)
        extra = f" {harvest_s:.1%} | {harvest_s / max(harvest_b, 1e-9):.2f}x | {pages:g} |"
    print(
        f"| {spec.name} | {topic}{mark} | {len(relevant)} | {harvest_b:.1%} | {harvest_f:.1%} | "
        f"**{ratio:.2f}x** | {min(ratios):.2f}-{max(ratios):.2f}x | {ceiling:.1f}x | "
        f"{recall_b:.0%} | {recall_f:.0%} | {wall_f:.2f} s |{extra}",
        flush=True,
    )
    return mark, ratio


def scorer_speed() -> str:
    """The scorer's own cost: page() on 100 KB of a real page's text, link() on real links."""
    pages = [p for p in site_pages(SITES[0].name).values() if p.text is not None]
    big = max(pages, key=lambda p: len(p.text.body) if p.text else 0).text
    assert big is not None
    text = PageText(big.url, big.title, big.headings, (big.body * 2)[:100_000])
    scorer = TopicScorer([SITES[0].tuned[0]])
    rounds = 50
    started = time.perf_counter()
    for i in range(rounds):
        scorer.page(PageText(f"{text.url}?{i}", text.title, text.headings, text.body))
    page_ms = (time.perf_counter() - started) / rounds * 1e3
    links = [
        Link(SITE + t, SITE + t, a, "", c, 2, p.rel, None, 0.3)
        for p in pages[:200]
        for t, a, c in p.links
    ]
    link_us = []
    for _ in range(2):  # cold, then warm (the stem cache filled, as a crawl's after a while)
        started = time.perf_counter()
        for link in links:
            scorer.link(link)
        link_us.append((time.perf_counter() - started) / len(links) * 1e6)
    started = time.perf_counter()
    for _ in range(rounds):
        scorer.rescore(focus.RESCORE_SIZE)
    rescore_ms = (time.perf_counter() - started) / rounds * 1e3
    return (f"scorer cost: page() {page_ms:.2f} ms on a 100 KB text, link() {link_us[0]:.1f} µs "
            f"cold / {link_us[1]:.1f} µs warm (mean of {len(links)} real links), rescore() of "
            f"{focus.RESCORE_SIZE:,} URLs {rescore_ms:.2f} ms")  # fmt: skip


def table(
    concurrency: int,
    rounds: int,
    budget: int,
    simulate_only: bool,
    reprioritize: bool,
    only: frozenset[str] = frozenset(),
    redis: str | None = None,
) -> None:
    """One table: every site and topic, `rounds` crawls each (with `redis`, shared ones too)."""
    how = "simulated crawls" if simulate_only else "real crawls over nginx on loopback"
    how += "" if reprioritize else ", a queued URL keeps its first link's priority"
    print(f"\nbudget {budget} pages, concurrency {concurrency}, {how}, medians of {rounds} "
          f"round(s)\n")  # fmt: skip
    head = " shared harvest | shared ratio | shared pages |" if redis else ""
    print("| site | topic | relevant pages | BFS harvest | focus harvest | ratio | ratio range "
          f"| ceiling | BFS recall | focus recall | focus wall |{head}")  # fmt: skip
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|" + ("--:|" * 3 if redis else ""))
    ratios: list[tuple[str, float]] = []
    for spec in (*SITES, *UNSEEN_SITES) if only else SITES:  # the unseen sites when named only
        if only and spec.name not in only:
            continue
        root = spec.ensure()
        site_pages(spec.name)  # the ground truth's parse, outside the timings
        topics = spec.tuned + spec.held_out
        bfs: list[Crawl] = []
        focus: dict[str, list[Crawl]] = {t: [] for t in topics}
        shared: dict[str, list[Crawl]] = {t: [] for t in topics}
        if simulate_only:
            bfs.append(simulated(spec, None, budget, False, concurrency))
            for topic in topics:
                focus[topic].append(simulated(spec, topic, budget, reprioritize, concurrency))
        else:
            with Nginx(root) as server:
                for _ in range(rounds):  # rounds take turns: the machine's speed drifts
                    bfs.append(crawl(server.base_url, None, budget, concurrency))
                    for topic in topics:
                        focus[topic].append(crawl(server.base_url, topic, budget, concurrency))
                        if redis:
                            shared[topic].append(
                                crawl(server.base_url, topic, budget, concurrency, redis)
                            )
        for topic in topics:
            ratios.append(row(spec, topic, bfs, focus[topic], shared[topic]))
    for label, group in (("tuned", ""), ("held-out", "*")):
        values = [r for mark, r in ratios if mark == group]
        if values:
            print(f"\n{label} topics: mean ratio {sum(values) / len(values):.2f}x, "
                  f"min {min(values):.2f}x (over {len(values)})", end="")  # fmt: skip
    print()


def main(argv: list[str]) -> int:
    simulate_only = "--simulate" in argv
    reprioritize = "--first-link" not in argv
    if "--no-rescore" in argv:
        focus.RESCORE_EVERY = 0
    only = frozenset(argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--site")
    if unknown := only - {spec.name for spec in (*SITES, *UNSEEN_SITES)}:
        print(f"unknown site(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    budget = 40 if QUICK else BUDGET
    started = time.perf_counter()
    if "--redis" in argv:
        with RedisServer() as server:
            table(CONCURRENCY, 1 if QUICK else ROUNDS, budget, False, True, only, server.url)
    elif simulate_only:
        table(1, 1, budget, True, reprioritize, only)
        table(CONCURRENCY, 1, budget, True, reprioritize, only)
    else:
        table(CONCURRENCY, 1 if QUICK else ROUNDS, budget, False, True, only)
        if not QUICK:  # one crawl at a time: no fetch is chosen before the pages in flight are read
            table(1, 1, budget, False, True, only)
    print(f"\nwall time {time.perf_counter() - started:.0f} s; {scorer_speed()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
