"""Page metadata and ``[[extract]]`` fields: agreement with extruct, speed, and crawl cost.

    python -m bench meta                  (BENCH_QUICK=1: 100 pages a corpus, 1 crawl round)

Three parts:

1. agreement: on every page of the corpora, our `meta` against extruct 0.18's (`extruct.extract`
   with json-ld, microdata, opengraph; `pip install 'sieve-crawler[bench]'`): JSON-LD items
   equal; microdata items equal (text values whitespace-collapsed on both sides: extruct
   keeps the page's line breaks); each OpenGraph property's first value equal (extruct
   lists every value; it reads ``property=`` only, so ``twitter:*`` in ``name=`` is ours alone);
   `published` / `modified` equal to the first JSON-LD datePublished / dateModified extruct
   found (pages where it has one). A page agrees when all four do; disagreements are listed.
2. speed: ms a page, from the bytes, ours (lexbor: sniff, parse, `read_meta`) against extruct
   (lxml), each page in turn, medians; and ours on a tree already parsed (what ``--meta``
   adds to a crawl that parses the page anyway).
3. crawl: the python3.11-doc site crawled by the real crawler from nginx on loopback with
   nothing asked, ``--meta``, and three ``[[extract]]`` rules, taking turns, ROUNDS of each:
   pages/s and CPU ms a page (medians).

Corpora: the realistic examples in tests/parse/meta_pages (schema.org's and OGP's documented
Article, Product, Event, Recipe, BreadcrumbList, nested microdata, video.movie) and the local
Debian doc sites (python3.11-doc, postgresql-doc-15: few of their pages have metadata, so they
test agreement on absence and speed on real markup). The article benchmark's 181 real news
pages, the corpus the issue named, are not on this machine (bench/data/ is empty here).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from bench.crawl_runs import bench_config
from bench.doc_sites import POSTGRES, PYTHON
from bench.nginx import Nginx
from crawler.config.load import Config
from crawler.config.sections import ExtractRule
from crawler.engine.crawler import Crawler
from crawler.parse.markup import parse_markup
from crawler.parse.yields import Yields
from crawler.parse.yields.meta import read_meta

QUICK = os.environ.get("BENCH_QUICK") == "1"
LIMIT = 100 if QUICK else 100_000
ROUNDS = 1 if QUICK else 5
EXAMPLES = Path(__file__).resolve().parents[1] / "tests" / "parse" / "meta_pages"
BASE = "https://example.com/dir/page.html"
RULES = (
    ExtractRule("headings", "h2, h3", all=True),
    ExtractRule("next", 'a[rel~="next"], link[rel~="next"]', attr="href"),
    ExtractRule("code", "pre", all=True),
)
META = Yields(meta=True)


def corpora() -> list[tuple[str, list[tuple[str, bytes]]]]:
    examples = [(p.name, p.read_bytes()) for p in sorted(EXAMPLES.glob("*.html"))]
    return [("schema.org / OGP examples", examples),
            *((site.name, site.pages()[:LIMIT]) for site in (PYTHON, POSTGRES))]  # fmt: skip


def collapse(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return [collapse(v) for v in value]
    if isinstance(value, dict):
        return {k: collapse(v) for k, v in value.items()}
    return value


def theirs(body: bytes) -> dict[str, Any]:
    import extruct

    syntaxes = ["json-ld", "microdata", "opengraph"]
    return dict(extruct.extract(body, base_url=BASE, syntaxes=syntaxes, uniform=False))


def ours(body: bytes) -> dict[str, Any]:
    meta = parse_markup(body, BASE, "text/html", yields=META).meta
    return meta or {}


def disagreements(mine: dict[str, Any], other: dict[str, Any]) -> list[str]:
    found = []
    if mine.get("jsonld", []) != other["json-ld"]:
        found.append("jsonld")
    if collapse(mine.get("microdata", [])) != collapse(other["microdata"]):
        found.append("microdata")
    og = mine.get("opengraph", {})
    for block in other["opengraph"]:
        for prop, value in block["properties"]:
            first = next(v for p, v in block["properties"] if p == prop)
            if og.get(prop) != first:
                found.append(f"opengraph {prop}: {og.get(prop)!r} != {value!r}")
                break
    for ours_key, key in (("published", "datePublished"), ("modified", "dateModified")):
        stated = [i[key] for i in other["json-ld"] if isinstance(i, dict) and key in i]
        if stated and mine.get(ours_key) != stated[0]:
            found.append(f"{ours_key}: {mine.get(ours_key)!r} != {stated[0]!r}")
    return found


def agreement_and_speed() -> None:
    print("| corpus | pages | with metadata | agree | ours ms/page | on a parsed tree | "
          "extruct ms/page | speed |")  # fmt: skip
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    notes: list[str] = []
    ours(b"<p>warm</p>")
    theirs(b"<p>warm</p>")
    for name, pages in corpora():
        mine_ms, tree_ms, their_ms = [], [], []
        agree = with_meta = 0
        for path, body in pages:
            t0 = time.perf_counter()
            mine = ours(body)
            t1 = time.perf_counter()
            other = theirs(body)
            t2 = time.perf_counter()
            tree = LexborHTMLParser(body)
            t3 = time.perf_counter()
            read_meta(tree, BASE)
            t4 = time.perf_counter()
            mine_ms.append((t1 - t0) * 1e3)
            their_ms.append((t2 - t1) * 1e3)
            tree_ms.append((t4 - t3) * 1e3)
            if mine.get("jsonld") or mine.get("microdata") or mine.get("opengraph"):
                with_meta += 1
            found = disagreements(mine, other)
            agree += not found
            notes.extend(f"{name} {path}: {d}" for d in found[:3])
        a, b, c = (statistics.median(x) for x in (mine_ms, tree_ms, their_ms))
        print(f"| {name} | {len(pages)} | {with_meta} | {agree} | {a:.3f} | {b:.3f} | {c:.3f} "
              f"| {c / a:.1f}x |", flush=True)  # fmt: skip
    for note in notes[:30]:
        print(f"- {note}")


async def _crawl(seed: str, config: Config) -> tuple[int, float, float]:
    pages = 0
    async with Crawler(config) as crawler:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        async for result in crawler.crawl([seed]):
            pages += 1
            result.to_json(meta=True, fields=True)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return pages, cpu, wall


def crawl_costs() -> None:
    print(f"\n### What --meta and three [[extract]] rules cost a crawl ({ROUNDS} rounds)\n")
    print("| site | pages | asked | pages/s median | CPU ms/page median | pages/s vs none |")
    print("|---|--:|---|--:|--:|--:|")
    base = bench_config()
    modes = {
        "nothing": base,
        "--meta": base.override("output", meta=True),
        "3 rules": dataclasses.replace(base, extract=RULES),
    }
    with Nginx(PYTHON.root()) as server:
        seed = server.base_url + "index.html"
        rate: dict[str, list[float]] = {m: [] for m in modes}
        cpu: dict[str, list[float]] = {m: [] for m in modes}
        pages: dict[str, int] = {}
        for _ in range(ROUNDS):
            for mode, config in modes.items():
                n, seconds, wall = asyncio.run(_crawl(seed, config))
                pages[mode] = n
                rate[mode].append(n / wall)
                cpu[mode].append(seconds / max(n, 1) * 1e3)
    none = statistics.median(rate["nothing"])
    for mode in modes:
        r = statistics.median(rate[mode])
        print(f"| {PYTHON.name} | {pages[mode]} | {mode} | {r:.0f} | "
              f"{statistics.median(cpu[mode]):.2f} | {r / none - 1:+.1%} |")  # fmt: skip


def main() -> int:
    try:
        import extruct  # noqa: F401
    except ImportError:
        print("extruct is missing: pip install 'sieve-crawler[bench]'")
        return 1
    print("### Metadata against extruct (agreement, ms a page)\n")
    agreement_and_speed()
    crawl_costs()
    return 0


if __name__ == "__main__":
    sys.exit(main())
