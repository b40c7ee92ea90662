"""Content dedup on a real site and its mirror: accuracy, cost per page, index memory.

nginx (bench.nginx) serves Debian's python3.11-doc HTML three times on 127.0.0.1: /orig/ as is;
/mirror/ with a banner (random mirror name, timestamp, session id) injected right after <body>,
as mirrors do; /inside/ with the same banner injected as the first thing inside the page's main
content (role=main), which the text extraction keeps: there only the simhash can match. Nothing
else is changed or reordered. Each mirror is crawled with its original by the real crawler
(crawler.engine.Crawler, concurrency 32, robots off, follow_duplicates on so that every mirror
page is fetched), one crawl per mirror; then /orig/ + /mirror/ again with follow_duplicates =
false, and with dedup off. The cost of dedup: /orig/ + /mirror/ crawled with dedup on and off
taking turns, ROUNDS (5) of each, CPU ms/page (whole process, parse thread included) per round
and their medians.

- matched: mirror pages whose result names their original (or whose original names them, when
  the mirror's copy was fetched first), exact or near.
- false pairs: pairs of distinct original pages flagged (by the crawl, and by a scan of every
  pair within 3 bits) whose word 3-shingle Jaccard similarity (of the same main-content text) is
  below 0.8: those are not near duplicates.
- cost per page, in process over every page: text extraction (what `read_tree(..., content=True)`
  costs more than `read_tree` without it: the longer selector, removing hidden elements, lexbor's
  text of the main content, whitespace collapsed), fingerprint
  (normalize, content hash, simhash) and index lookup+insert, against the crawl's CPU per page
  (whole process, parse thread included) measured in the same run.
- index memory: tracemalloc over the crawl-sized index, and over 1M synthetic pages (URLs of
  the site's shape, random simhashes) with the time and candidates per query there.

    python -m bench dedup        (BENCH_QUICK=1: a quarter of the pages, 100k synthetic ones)
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
import shutil
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from bench.corpus import SITE, html_pages
from bench.nginx import Nginx
from crawler.config import Config
from crawler.content import ContentIndex, Fingerprint, fingerprint, hamming, normalize
from crawler.engine import Crawler
from crawler.markup import parse_markup, read_tree

QUICK = os.environ.get("BENCH_QUICK") == "1"
ROUNDS = 1 if QUICK else 5
NAMES = ("ftp.example.edu", "mirror.example.net", "docs-mirror.example.org", "pymirror.example")
JACCARD_NEAR = 0.8
BODY_RE = re.compile(rb"<body[^>]*>")
MAIN_RE = re.compile(rb"<[a-z]+ [^>]*role=\"main\"[^>]*>")


def banner(rng: random.Random) -> bytes:
    stamp = (
        f"{rng.randint(2020, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} UTC"
    )
    return (
        f'<div class="mirror-banner">You are reading a mirror of docs.python.org hosted by '
        f"{rng.choice(NAMES)}. Last synchronized {stamp} (session {rng.getrandbits(64):016x})."
        "</div>"
    ).encode()


def content_text(body: bytes) -> str:
    """The text content dedup fingerprints (`Markup.content`)."""
    return parse_markup(body, "http://docs.test/", "text/html", content=True).content or ""


def inject(body: bytes, where: re.Pattern[bytes], rng: random.Random) -> bytes:
    text = banner(rng)
    out, n = where.subn(lambda m: m.group(0) + text, body, count=1)
    return out if n else text + body


def build_site(root: Path, pages: list[tuple[str, bytes]]) -> None:
    rng = random.Random(2026)
    for rel, body in pages:
        for tree, data in (
            ("orig", body),
            ("mirror", inject(body, BODY_RE, rng)),
            ("inside", inject(body, MAIN_RE, rng)),
        ):
            path = root / tree / rel
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            path.write_bytes(data)


async def crawl(base: str, mirror: str, config: Config) -> tuple[dict[str, Any], float, float]:
    """Results by URL, CPU seconds and wall seconds of one crawl from both index pages."""
    results: dict[str, Any] = {}
    seeds = [f"{base}orig/index.html", f"{base}{mirror}/index.html"]
    async with Crawler(config) as crawler:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        async for r in crawler.crawl(seeds):
            results[r.url] = r
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return results, cpu, wall


def config(*, enabled: bool = True, follow: bool = True) -> Config:
    return (
        Config()
        .override("politeness", delay=0.0, respect_robots=False, per_host_concurrency=32)
        .override("crawl", concurrency=32, max_depth=0)
        .override("dedup", enabled=enabled, follow_duplicates=follow)
    )


def shingles(text: str) -> set[bytes]:
    words = normalize(text).split()
    return {b" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))}


def jaccard(a: set[bytes], b: set[bytes]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def accuracy(
    results: dict[str, Any], base: str, mirror: str, rels: list[str], texts: dict[str, str]
) -> tuple[int, int, list[tuple[str, str]]]:
    """(mirror pages matched to their original, pairs, flagged pairs of distinct originals)."""
    matched = pairs = 0
    flagged: list[tuple[str, str]] = []
    for rel in rels:
        o, m = results.get(f"{base}orig/{rel}"), results.get(f"{base}{mirror}/{rel}")
        if o is None or m is None or o.content_hash is None:
            continue
        pairs += 1
        if o.url in (m.duplicate_of, m.near_duplicate_of) or m.url in (
            o.duplicate_of,
            o.near_duplicate_of,
        ):
            matched += 1
        for r in (o, m):
            other = r.duplicate_of or r.near_duplicate_of
            if other is not None:
                a = r.url.split("/", 4)[4]
                b = other.split("/", 4)[4]
                if a != b and a in texts and b in texts:
                    flagged.append((a, b))
    return matched, pairs, flagged


def timed(fn: Callable[[], object], n: int) -> float:
    """CPU microseconds per item of `fn` over `n` items (CPU time: a busy machine's other jobs
    inflate wall time more)."""
    started = time.process_time()
    fn()
    return (time.process_time() - started) / n * 1e6


def synthetic(n: int, urls: list[str]) -> tuple[float, float, float, float]:
    """(bytes/page by tracemalloc, bytes/page by the arrays, us/query, candidates/query)."""
    rng = random.Random(1)
    fps = [Fingerprint(rng.randbytes(16), rng.getrandbits(64)) for _ in range(n)]
    names = [f"{urls[i % len(urls)]}?copy={i}" for i in range(n)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index = ContentIndex(3)
    empty = index.nbytes
    for url, fp in zip(names, fps, strict=True):
        index.check(url, fp)
    traced = (tracemalloc.get_traced_memory()[0] - before - empty) / n
    tracemalloc.stop()
    arrays = (index.nbytes - empty) / n
    probes = [flip(fp.simhash, rng) for fp in fps[: min(n, 20_000)]]
    cand0 = index.near.candidates
    started = time.perf_counter()
    for p in probes:
        index.near.query(p)
    per_query = (time.perf_counter() - started) / len(probes) * 1e6
    cands = (index.near.candidates - cand0) / len(probes)
    return traced, arrays, per_query, cands


def flip(value: int, rng: random.Random) -> int:
    for b in rng.sample(range(64), 3):
        value ^= 1 << b
    return value


def main() -> None:
    pages = [(url[len(SITE) :], body) for url, body in html_pages()]
    if QUICK:  # the entry page and a quarter of the others
        pages = [p for i, p in enumerate(pages) if i % 4 == 0 or p[0] == "index.html"]
    rels = [rel for rel, _ in pages]
    texts = {rel: content_text(body) for rel, body in pages}
    tmp = Path(tempfile.mkdtemp(prefix="bench-dedup-"))
    tmp.chmod(0o755)  # nginx's worker may run as another user
    try:
        build_site(tmp, pages)
        with Nginx(tmp) as server:
            base = server.base_url
            runs = {
                "mirror": asyncio.run(crawl(base, "mirror", config())),
                "inside": asyncio.run(crawl(base, "inside", config())),
                "nofollow": asyncio.run(crawl(base, "mirror", config(follow=False))),
                "off": asyncio.run(crawl(base, "mirror", config(enabled=False))),
            }
            cost = cost_rounds(base)
        mirror_pages = {
            name: sum(f"{base}{m}/" in url for url in runs[name][0])
            for name, m in (("mirror", "mirror"), ("inside", "inside"), ("nofollow", "mirror"))
        }
        report_crawls(runs, base, rels, texts, mirror_pages)
        report_rounds(cost)
        report_costs(tmp, rels, cost)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cost_rounds(base: str) -> dict[str, list[float]]:
    """CPU ms/page of /orig/ + /mirror/ crawls with dedup on and off, taking turns (the
    machine's speed drifts), ROUNDS of each."""
    out: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(ROUNDS):
        for name, enabled in (("on", True), ("off", False)):
            results, cpu, _ = asyncio.run(crawl(base, "mirror", config(enabled=enabled)))
            out[name].append(cpu / len(results) * 1e3)
    return out


def report_rounds(cost: dict[str, list[float]]) -> None:
    on, off = statistics.median(cost["on"]), statistics.median(cost["off"])
    print(f"\ncrawl CPU ms/page, /orig/ + /mirror/, {ROUNDS} rounds taking turns:")
    for name in ("on", "off"):
        rounds = " ".join(f"{x:.2f}" for x in cost[name])
        print(f"  dedup {name:<3}  median {statistics.median(cost[name]):.2f}   rounds {rounds}")
    print(f"  dedup costs {on - off:.2f} ms/page more: +{on / off - 1:.1%}")


def report_crawls(
    runs: dict[str, tuple[dict[str, Any], float, float]],
    base: str,
    rels: list[str],
    texts: dict[str, str],
    mirror_pages: dict[str, int],
) -> None:
    print(f"site: {len(rels)} pages of python3.11-doc, each served as /orig/, /mirror/, /inside/")
    print("near_distance 3; crawler concurrency 32; a row per crawl of /orig/ + one mirror\n")
    cache: dict[str, set[bytes]] = {}

    def sh(rel: str) -> set[bytes]:
        if rel not in cache:
            cache[rel] = shingles(texts[rel])
        return cache[rel]

    header = (
        f"{'crawl':<38} {'pages':>6} {'mirror':>6} {'matched':>9} {'exact':>6} {'near':>5} "
        f"{'flagged':>7} {'false':>5} {'false %':>7} {'CPU ms/p':>8}"
    )
    print(header)
    print("-" * len(header))
    labels = {
        "mirror": "banner after <body>, follow on",
        "inside": "banner in the main content, follow on",
        "nofollow": "banner after <body>, follow off",
        "off": "dedup off (the cost baseline)",
    }
    for name, (results, cpu, _) in runs.items():
        mirror = "inside" if name == "inside" else "mirror"
        matched, pairs, flagged = accuracy(results, base, mirror, rels, texts)
        pairs_set = {tuple(sorted(p)) for p in flagged}
        false = sum(jaccard(sh(a), sh(b)) < JACCARD_NEAR for a, b in pairs_set)
        exact = sum(r.duplicate_of is not None for r in results.values())
        near = sum(r.near_duplicate_of is not None for r in results.values())
        share = f"{matched}/{pairs} {matched / pairs:.1%}" if pairs else "-"
        if name == "nofollow":
            share = "-"
        print(
            f"{labels[name]:<38} {len(results):>6} {mirror_pages.get(name, '-'):>6} "
            f"{share:>9} {exact:>6} {near:>5} {len(pairs_set):>7} {false:>5} "
            f"{false / len(rels):>7.2%} {cpu / len(results) * 1e3:>8.2f}"
        )
    print()
    # every pair of distinct originals within 3 bits, not only the first match of each page
    sims = {rel: fingerprint(texts[rel]) for rel in rels}
    close = [
        (a, b)
        for a, b in itertools.combinations(rels, 2)
        if hamming(sims[a].simhash, sims[b].simhash) <= 3
        and sims[a].content_hash != sims[b].content_hash
    ]
    scores = sorted((jaccard(sh(a), sh(b)), a, b) for a, b in close)
    false = [s for s in scores if s[0] < JACCARD_NEAR]
    print(
        f"scan of all {len(rels) * (len(rels) - 1) // 2:,} pairs of originals: {len(close)} within "
        f"3 bits (not exact), {len(false)} of them with Jaccard < {JACCARD_NEAR} "
        f"({len(false) / len(rels):.2%} of pages)"
    )
    for j, a, b in scores[:8]:
        print(f"  J={j:.2f} d={hamming(sims[a].simhash, sims[b].simhash)}  {a}  ~  {b}")
    near_ref = sum(
        1
        for a, b in itertools.combinations(rels, 2)
        if len(sh(a)) > 50
        and 0.5 < len(sh(a)) / max(1, len(sh(b))) < 2
        and jaccard(sh(a), sh(b)) >= JACCARD_NEAR
    )
    print(
        f"pairs of originals with Jaccard >= {JACCARD_NEAR} (reference near duplicates): {near_ref}"
    )


def report_costs(root: Path, rels: list[str], cost: dict[str, list[float]]) -> None:
    bodies = [(root / tree / rel).read_bytes() for tree in ("orig", "inside") for rel in rels]
    n = len(bodies)
    # the text's cost: read_tree with `content` less read_tree without (the links' pass)
    plain = [LexborHTMLParser(b) for b in bodies]
    us_links = timed(lambda: [read_tree(t, "utf-8") for t in plain], n)
    trees = [LexborHTMLParser(b) for b in bodies]
    t_text: list[str] = []
    us_text = timed(
        lambda: t_text.extend(read_tree(t, "utf-8", content=True).content or "" for t in trees), n
    )
    us_text -= us_links
    fps: list[Fingerprint] = []
    us_fp = timed(lambda: fps.extend(fingerprint(t) for t in t_text), n)
    index = ContentIndex(3)
    urls = [f"http://docs.test/{i}/{rel}" for i in range(2) for rel in rels]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    us_check = timed(lambda: [index.check(u, f) for u, f in zip(urls, fps, strict=True)], n)
    traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    with_cpu = statistics.median(cost["on"]) * 1e3
    off_cpu = statistics.median(cost["off"]) * 1e3
    words = sum(len(t.split()) for t in t_text) / n
    print(f"\ncost per page (in process, {n} pages, {words:,.0f} words of text on average):\n")
    header = f"{'step':<44} {'us/page':>9} {'% of crawl CPU/page':>20}"
    print(header)
    print("-" * len(header))
    for name, us in (
        ("text extraction (Markup.content, extra)", us_text),
        ("fingerprint (normalize, BLAKE2b, simhash)", us_fp),
        ("index lookup + insert (ContentIndex.check)", us_check),
        ("hashing + lookup (the two above)", us_fp + us_check),
        ("crawl CPU/page, dedup on (median)", with_cpu),
        ("crawl CPU/page, dedup off (median)", off_cpu),
    ):
        print(f"{name:<44} {us:>9.1f} {us / with_cpu:>20.1%}")
    print(
        f"\nindex memory: {len(index)} pages, tracemalloc {traced / len(index):.0f} B/page "
        f"(arrays {index.nbytes / len(index):.0f} B/page incl. the fixed 1.25 MiB of bucket "
        "heads)"
    )
    sizes = [100_000] if QUICK else [100_000, 1_000_000]
    base = [f"http://docs.test/{rel}" for rel in rels]
    header = f"{'synthetic pages':>15} {'B/page traced':>14} {'B/page arrays':>14} "
    header += f"{'us/query':>9} {'candidates/query':>17}"
    print("\n" + header)
    print("-" * len(header))
    for size in sizes:
        traced_pp, arrays_pp, us_q, cands = synthetic(size, base)
        print(f"{size:>15,} {traced_pp:>14.0f} {arrays_pp:>14.0f} {us_q:>9.1f} {cands:>17.1f}")


if __name__ == "__main__":
    main()
