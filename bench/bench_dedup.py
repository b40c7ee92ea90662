"""Content dedup on real sites and their mirrors: accuracy, cost per page, index memory.

Two documentation sites (bench.doc_sites): Debian's python3.11-doc and sqlite3-doc. nginx
(bench.nginx) serves each site three times on 127.0.0.1: /orig/ as is; /mirror/ with a banner
(random mirror name, timestamp, session id) injected right after <body>, as mirrors do;
/inside/ with the same banner injected inside the page's main content (python: first thing in
the role=main element; sqlite: after the first h1/h2 heading), which the text extraction keeps:
there only the simhash can match. sqlite's pages have no main element, so their text is the
whole body: the /mirror/ banner is in the text too. Nothing else is changed or reordered. Each
mirror is crawled with its original by the real crawler (crawler.engine.crawler.Crawler, concurrency
32, robots off, follow_duplicates on so that every mirror page is fetched), one crawl per
mirror; then /orig/ + /mirror/ again with follow_duplicates = false, and with dedup off. The
cost of dedup: /orig/ + /mirror/ crawled with dedup on and off taking turns, ROUNDS (5) of
each, CPU ms/page (whole process, parse thread included) per round and their medians.

- matched: mirror pages whose result names their original (or whose original names them, when
  the mirror's copy was fetched first), exact or near.
- false pairs: pairs of distinct original pages flagged (by the crawl, and by a scan of every
  pair within 3 bits) whose word 3-shingle Jaccard similarity (of the same main-content text) is
  below 0.8: those are not near duplicates.
- cost per page, in process over every /orig/ and /inside/ page of a site (best of 3 passes
  each):
  text extraction (what `read_tree(..., content=True)` costs more than `read_tree` without it),
  fingerprint (normalize, content hash, simhash) and index lookup+insert, against the crawl's
  CPU per page (whole process, parse thread included) with dedup on and off, measured in the
  same run.
- offline, every page: the same banners named as in the crawls (class "mirror-banner", which
  the main-content reader removes by name, as any element named "banner") and with no class,
  which only the structure of the page can leave out.
- index memory: tracemalloc over a crawl-sized index, and over 1M synthetic pages (URLs of the
  python site's shape, random simhashes) with the time and candidates per query there.

    python -m bench dedup        (BENCH_QUICK=1: a quarter of the pages, 100k synthetic ones)
    python -m bench.bench_dedup --held-out    (and postgresql-doc-15, never tuned on)
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from bench.crawl_runs import bench_config
from bench.doc_sites import HELD_OUT, SITES, DocSite
from bench.nginx import Nginx
from crawler.config.load import Config
from crawler.content import ContentIndex, Fingerprint, fingerprint, hamming, normalize
from crawler.engine.crawler import Crawler
from crawler.parse.markup import parse_markup, read_tree

QUICK = os.environ.get("BENCH_QUICK") == "1"
ROUNDS = 1 if QUICK else 5
NAMES = ("ftp.example.edu", "mirror.example.net", "docs-mirror.example.org", "pymirror.example")
JACCARD_NEAR = 0.8
BODY_RE = re.compile(rb"<body[^>]*>")
CRAWLS = ("mirror", "inside", "nofollow", "off")

Results = dict[str, Any]


@dataclass(slots=True)
class SiteRun:
    """What one site's part of the benchmark measured."""

    site: DocSite
    rels: list[str]
    texts: dict[str, str]
    bodies: list[bytes]  # every /orig/ and /inside/ page, for the in-process costs
    base: str = ""
    runs: dict[str, tuple[Results, float, float]] = field(default_factory=dict)
    cost: dict[str, list[float]] = field(default_factory=dict)


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


def inject(body: bytes, rng: random.Random, *where: re.Pattern[bytes]) -> bytes:
    """`body` with a banner after the first match of the first pattern that matches."""
    text = banner(rng)
    for pattern in where:
        out, n = pattern.subn(lambda m: m.group(0) + text, body, count=1)
        if n:
            return out
    return text + body


def build_site(root: Path, site: DocSite, pages: list[tuple[str, bytes]]) -> list[bytes]:
    """Write /orig/, /mirror/ and /inside/ under `root`; returns the /orig/ and /inside/ bodies."""
    rng = random.Random(2026)
    origs, insides = [], []
    for rel, body in pages:
        inside = inject(body, rng, site.inside, BODY_RE)
        for tree, data in (
            ("orig", body),
            ("mirror", inject(body, rng, BODY_RE)),
            ("inside", inside),
        ):
            path = root / tree / rel
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            path.write_bytes(data)
        origs.append(body)
        insides.append(inside)
    return origs + insides


async def crawl(base: str, mirror: str, config: Config) -> tuple[Results, float, float]:
    """Results by URL, CPU seconds and wall seconds of one crawl from both index pages."""
    results: Results = {}
    seeds = [f"{base}orig/index.html", f"{base}{mirror}/index.html"]
    async with Crawler(config) as crawler:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        async for r in crawler.crawl(seeds):
            results[r.url] = r
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return results, cpu, wall


def config(*, enabled: bool = True, follow: bool = True) -> Config:
    return bench_config().override("dedup", enabled=enabled, follow_duplicates=follow)


def shingles(text: str) -> set[bytes]:
    words = normalize(text).split()
    return {b" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))}


def jaccard(a: set[bytes], b: set[bytes]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def accuracy(
    results: Results, base: str, mirror: str, rels: list[str], texts: dict[str, str]
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


def timed(fn: Callable[[], object], n: int, repeat: int = 1) -> float:
    """CPU microseconds per item of `fn` over `n` items, best of `repeat` (CPU time: a busy
    machine's other jobs inflate wall time more)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best / n * 1e6


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


def run_site(site: DocSite) -> SiteRun:
    """Build the three copies of `site`, serve them, crawl them."""
    pages = site.pages()
    if QUICK:  # the entry page and a quarter of the others
        pages = [p for i, p in enumerate(pages) if i % 4 == 0 or p[0] == "index.html"]
    tmp = Path(tempfile.mkdtemp(prefix="bench-dedup-"))
    tmp.chmod(0o755)  # nginx's worker may run as another user
    try:
        bodies = build_site(tmp, site, pages)
        texts = {rel: content_text(body) for rel, body in pages}
        out = SiteRun(site, [rel for rel, _ in pages], texts, bodies)
        with Nginx(tmp) as server:
            out.base = base = server.base_url
            out.runs = {
                "mirror": asyncio.run(crawl(base, "mirror", config())),
                "inside": asyncio.run(crawl(base, "inside", config())),
                "nofollow": asyncio.run(crawl(base, "mirror", config(follow=False))),
                "off": asyncio.run(crawl(base, "mirror", config(enabled=False))),
            }
            out.cost = cost_rounds(base)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    # --held-out: a third site, never looked at while the fingerprint was tuned
    held_out = HELD_OUT if "--held-out" in sys.argv[1:] else ()
    runs = [run_site(site) for site in (*SITES, *held_out)]
    report_crawls(runs)
    report_unnamed(runs)
    report_rounds(runs)
    report_costs(runs)
    report_memory(runs[0])


def cost_rounds(base: str) -> dict[str, list[float]]:
    """CPU ms/page of /orig/ + /mirror/ crawls with dedup on and off, taking turns (the
    machine's speed drifts), ROUNDS of each."""
    out: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(ROUNDS):
        for name, enabled in (("on", True), ("off", False)):
            results, cpu, _ = asyncio.run(crawl(base, "mirror", config(enabled=enabled)))
            out[name].append(cpu / len(results) * 1e3)
    return out


def report_rounds(runs: list[SiteRun]) -> None:
    print(f"\ncrawl CPU ms/page, /orig/ + /mirror/, {ROUNDS} rounds taking turns:")
    for run in runs:
        on, off = statistics.median(run.cost["on"]), statistics.median(run.cost["off"])
        for name in ("on", "off"):
            rounds = " ".join(f"{x:.2f}" for x in run.cost[name])
            median = statistics.median(run.cost[name])
            print(f"  {run.site.name:<17} dedup {name:<3}  median {median:.2f}   rounds {rounds}")
        print(f"  {run.site.name:<17} dedup costs {on - off:.2f} ms/page more: +{on / off - 1:.1%}")


LABELS = {
    "mirror": "banner after <body>, follow on",
    "inside": "banner in the main content, follow on",
    "nofollow": "banner after <body>, follow off",
    "off": "dedup off (the cost baseline)",
}


def report_unnamed(runs: list[SiteRun]) -> None:
    """Offline, the banner named as the crawls' ("mirror-banner", which the main-content
    reader removes by its name, as it removes any element named "banner") against the same
    banner with no class: each mirror page matched when its text is within 3 bits of its
    original's or hashes the same."""
    print("\noffline, every page: the mirror banner named (class mirror-banner) or not")
    print(f"{'site':<17} {'banner':<36} {'named':>16} {'no class':>16}")
    for run in runs:
        pages = dict(zip(run.rels, run.bodies[: len(run.rels)], strict=True))
        inside = (run.site.inside, BODY_RE)
        for label, where in (("after <body>", (BODY_RE,)), (run.site.inside_label, inside)):
            rng = random.Random(2026)
            matched = {"named": 0, "plain": 0}
            for body in pages.values():
                original = fingerprint(content_text(body))
                named = banner(rng)
                for kind, text in (("named", named), ("plain", named.replace(_CLASS, b""))):
                    copy = _inject_text(body, text, where)
                    fp = fingerprint(content_text(copy))
                    matched[kind] += fp.content_hash == original.content_hash or (
                        hamming(fp.simhash, original.simhash) <= 3
                    )
            n = len(pages)
            print(f"{run.site.name:<17} {label[:36]:<36} "
                  f"{matched['named']:>5}/{n} {matched['named'] / n:>6.1%} "
                  f"{matched['plain']:>5}/{n} {matched['plain'] / n:>6.1%}")  # fmt: skip


_CLASS = b' class="mirror-banner"'


def _inject_text(body: bytes, text: bytes, where: tuple[re.Pattern[bytes], ...]) -> bytes:
    for pattern in where:
        out, n = pattern.subn(lambda m: m.group(0) + text, body, count=1)
        if n:
            return out
    return text + body


def report_crawls(runs: list[SiteRun]) -> None:
    print("each site served as /orig/, /mirror/, /inside/; near_distance 3; concurrency 32;")
    print("a row per crawl of /orig/ + one mirror")
    for run in runs:
        print(f"  {run.site.name}: {len(run.rels)} pages; /inside/: {run.site.inside_label}")
    header = (
        f"\n{'site':<17} {'crawl':<38} {'pages':>6} {'mirror':>6} {'matched':>13} {'exact':>6} "
        f"{'near':>5} {'flagged':>7} {'false':>5} {'false %':>7} {'CPU ms/p':>8}"
    )
    print(header)
    print("-" * (len(header) - 1))
    for run in runs:
        report_site_crawls(run)
    for run in runs:
        report_scan(run)


def report_site_crawls(run: SiteRun) -> None:
    cache: dict[str, set[bytes]] = {}

    def sh(rel: str) -> set[bytes]:
        if rel not in cache:
            cache[rel] = shingles(run.texts[rel])
        return cache[rel]

    for name, (results, cpu, _) in run.runs.items():
        mirror = "inside" if name == "inside" else "mirror"
        matched, pairs, flagged = accuracy(results, run.base, mirror, run.rels, run.texts)
        pairs_set = {tuple(sorted(p)) for p in flagged}
        false = sum(jaccard(sh(a), sh(b)) < JACCARD_NEAR for a, b in pairs_set)
        exact = sum(r.duplicate_of is not None for r in results.values())
        near = sum(r.near_duplicate_of is not None for r in results.values())
        share = f"{matched}/{pairs} {matched / pairs:.1%}" if pairs else "-"
        if name == "nofollow":
            share = "-"
        mirror_pages = "-"
        if name != "off":
            mirror_pages = str(sum(f"{run.base}{mirror}/" in url for url in results))
        print(
            f"{run.site.name:<17} {LABELS[name]:<38} {len(results):>6} {mirror_pages:>6} "
            f"{share:>13} {exact:>6} {near:>5} {len(pairs_set):>7} {false:>5} "
            f"{false / len(run.rels):>7.2%} {cpu / len(results) * 1e3:>8.2f}"
        )


def report_scan(run: SiteRun) -> None:
    """Every pair of distinct originals within 3 bits, not only the first match of each page."""
    rels, texts = run.rels, run.texts
    sims = {rel: fingerprint(texts[rel]) for rel in rels}
    shingled = {rel: shingles(texts[rel]) for rel in rels}
    close = [
        (a, b)
        for a, b in itertools.combinations(rels, 2)
        if hamming(sims[a].simhash, sims[b].simhash) <= 3
        and sims[a].content_hash != sims[b].content_hash
    ]
    scores = sorted((jaccard(shingled[a], shingled[b]), a, b) for a, b in close)
    false = [s for s in scores if s[0] < JACCARD_NEAR]
    print(
        f"\n{run.site.name}: scan of all {len(rels) * (len(rels) - 1) // 2:,} pairs of originals: "
        f"{len(close)} within 3 bits (not exact), {len(false)} of them with Jaccard < "
        f"{JACCARD_NEAR} ({len(false) / len(rels):.2%} of pages)"
    )
    for j, a, b in scores[:6]:
        print(f"  J={j:.2f} d={hamming(sims[a].simhash, sims[b].simhash)}  {a}  ~  {b}")
    near_ref = sum(
        1
        for a, b in itertools.combinations(rels, 2)
        if len(shingled[a]) > 50
        and 0.5 < len(shingled[a]) / max(1, len(shingled[b])) < 2
        and jaccard(shingled[a], shingled[b]) >= JACCARD_NEAR
    )
    print(
        f"  pairs of originals with Jaccard >= {JACCARD_NEAR} (reference near duplicates, "
        f"> 50 shingles): {near_ref}"
    )


def step_costs(run: SiteRun) -> dict[str, float]:
    """us/page of each step, in process over the site's /orig/ and /inside/ pages."""
    bodies = run.bodies
    n = len(bodies)
    # the text's cost: read_tree with `content` less read_tree without (the links' pass); on
    # fresh trees each time (reading the content removes its hidden elements from the tree)
    links, text, markups = [], [], []
    for _ in range(3):
        trees = [LexborHTMLParser(b) for b in bodies]
        started = time.process_time()
        for tree in trees:
            read_tree(tree, "utf-8")
        links.append(time.process_time() - started)
        trees = [LexborHTMLParser(b) for b in bodies]
        started = time.process_time()
        markups = [read_tree(tree, "utf-8", content=True) for tree in trees]
        text.append(time.process_time() - started)
    us_links, us_text = min(links) / n * 1e6, min(text) / n * 1e6
    texts = [m.content or "" for m in markups]
    us_fp = timed(lambda: [fingerprint(t) for t in texts], n, repeat=3)
    fps = [fingerprint(t) for t in texts]
    urls = [f"http://docs.test/{i}/{rel}" for i in range(2) for rel in run.rels]
    pairs = list(zip(urls, fps, strict=True))

    def check_all() -> None:  # a fresh index each time, made before the clock starts
        index = ContentIndex(3)
        started = time.process_time()
        for url, fp in pairs:
            index.check(url, fp)
        spent.append(time.process_time() - started)

    spent: list[float] = []
    for _ in range(3):
        check_all()
    us_check = min(spent) / n * 1e6
    return {
        "words": sum(len(t.split()) for t in texts) / n,
        "text": us_text - us_links,
        "fingerprint": us_fp,
        "check": us_check,
        "on": statistics.median(run.cost["on"]) * 1e3,
        "off": statistics.median(run.cost["off"]) * 1e3,
    }


def report_costs(runs: list[SiteRun]) -> None:
    costs = [step_costs(run) for run in runs]
    print("\ncost per page, in process over each site's /orig/ and /inside/ pages (best of 3")
    print("passes each), against the crawl's CPU/page with dedup on and off (medians above):")
    for run, c in zip(runs, costs, strict=True):
        print(f"  {run.site.name}: {len(run.bodies)} pages, {c['words']:,.0f} words of text each")
    header = f"\n{'step':<44}"
    for run in runs:
        header += f" {run.site.name:>15} {'% on':>6} {'% off':>6}"
    print(header)
    print("-" * (len(header) - 1))
    rows = (
        ("text extraction (Markup.content, extra)", "text"),
        ("fingerprint (normalize, BLAKE2b, simhash)", "fingerprint"),
        ("index lookup + insert (ContentIndex.check)", "check"),
        ("hashing + lookup (the two above)", "hashing"),
        ("crawl CPU/page, dedup on (median)", "on"),
        ("crawl CPU/page, dedup off (median)", "off"),
    )
    for label, key in rows:
        line = f"{label:<44}"
        for c in costs:
            us = c["fingerprint"] + c["check"] if key == "hashing" else c[key]
            line += f" {us:>12.1f} us {us / c['on']:>6.1%} {us / c['off']:>6.1%}"
        print(line)


def report_memory(run: SiteRun) -> None:
    rels = run.rels
    urls = [f"http://docs.test/{i}/{rel}" for i in range(2) for rel in rels]
    rng = random.Random(3)
    fps = [Fingerprint(rng.randbytes(16), rng.getrandbits(64)) for _ in urls]
    index = ContentIndex(3)  # its fixed bucket heads (1.25 MiB) not traced: they do not grow
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for url, fp in zip(urls, fps, strict=True):
        index.check(url, fp)
    traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(
        f"\nindex memory: {len(index)} pages ({run.site.name}'s URLs, twice), tracemalloc "
        f"{traced / len(index):.0f} B/page (arrays {index.nbytes / len(index):.0f} B/page incl. "
        "the fixed 1.25 MiB of bucket heads)"
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
