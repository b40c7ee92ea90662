"""Page metadata and ``[[extract]]`` fields: agreement with extruct, speed, and crawl cost.

    python -m bench meta                  (BENCH_QUICK=1: 100 pages a corpus, 1 crawl round)
    python -m bench.bench_meta agreement  (or crawl: one part)

Three parts:

1. agreement: on every page of the corpora, our `meta` against extruct 0.18's (`extruct.extract`
   with json-ld, microdata, opengraph; `pip install 'sieve-crawler[bench]'`): JSON-LD items
   equal; microdata items equal (text values whitespace-collapsed on both sides: extruct
   keeps the page's line breaks); each OpenGraph property's first value equal (extruct
   lists every value; it reads ``property=`` only, so ``twitter:*`` in ``name=`` is ours alone);
   `published` / `modified` equal to the first JSON-LD datePublished / dateModified extruct
   found (pages where it has one); the JSON-LD items' @types apart. A page agrees when all
   do; disagreements are counted by aspect and listed, each marked with the documented
   difference (docs/yields.md) it is, if it is only one.
2. speed: ms a page, from the bytes, ours (lexbor: sniff, parse, `read_meta`) against extruct
   (lxml), each page in turn, medians; and ours on a tree already parsed (what ``--meta``
   adds to a crawl that parses the page anyway).
3. crawl: the python3.11-doc site crawled by the real crawler from nginx on loopback with
   nothing asked, ``--meta``, and three ``[[extract]]`` rules, taking turns, ROUNDS of each:
   pages/s and CPU ms a page (medians).

Corpora: the realistic examples in tests/parse/meta_pages (schema.org's and OGP's documented
Article, Product, Event, Recipe, BreadcrumbList, nested microdata, video.movie) and the local
Debian doc sites (python3.11-doc, postgresql-doc-15: few of their pages have metadata, so they
test agreement on absence and speed on real markup), and the article-extraction benchmark's 181
real news pages, where metadata is rich (bench/data/, as `python -m bench text` reads them;
left out with a word on how to get them when missing), each read against its own URL.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from bench.crawl_runs import bench_config
from bench.doc_sites import POSTGRES, PYTHON
from bench.nginx import Nginx
from bench.text_corpora import ARTICLES
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


Page = tuple[str, bytes, str]  # name, bytes, the URL relative ones resolve against


def corpora() -> list[tuple[str, list[Page]]]:
    examples = [(p.name, p.read_bytes(), BASE) for p in sorted(EXAMPLES.glob("*.html"))]
    found: list[tuple[str, list[Page]]] = [("schema.org / OGP examples", examples)]
    articles = article_pages()
    if articles:
        found.append((ARTICLES.name, articles))
    for site in (PYTHON, POSTGRES):
        found.append((site.name, [(rel, body, BASE) for rel, body in site.pages()[:LIMIT]]))
    return found


def article_pages() -> list[Page]:
    """The article-extraction benchmark's pages, each with its own URL (none when the data
    set is missing: `ARTICLES.missing` says how to get it)."""
    directory = ARTICLES.directory(None)
    truth_file = directory / "ground-truth.json"
    if not truth_file.is_file():
        print(ARTICLES.missing(directory), flush=True)
        return []
    truth: dict[str, dict[str, Any]] = json.loads(truth_file.read_text())
    pages = []
    for key in sorted(truth)[:LIMIT]:
        body = gzip.decompress((directory / "html" / f"{key}.html.gz").read_bytes())
        pages.append((key[:8], body, truth[key].get("url") or BASE))
    return pages


def collapse(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return [collapse(v) for v in value]
    if isinstance(value, dict):
        return {k: collapse(v) for k, v in value.items()}
    return value


def theirs(body: bytes, base: str = BASE) -> dict[str, Any]:
    import extruct

    syntaxes = ["json-ld", "microdata", "opengraph"]
    try:
        return dict(extruct.extract(body, base_url=base, syntaxes=syntaxes, uniform=False))
    except ValueError:  # a JSON-LD block that is not JSON fails the page: each syntax alone
        found: dict[str, Any] = {}
        for syntax in syntaxes:
            try:
                found.update(extruct.extract(body, base_url=base, syntaxes=[syntax]))
            except ValueError:
                found[syntax] = None  # extruct reads none of the page's JSON-LD
        return found


def ours(body: bytes, base: str = BASE) -> dict[str, Any]:
    meta = parse_markup(body, base, "text/html", yields=META).meta
    return meta or {}


ASPECTS = ("jsonld", "types", "microdata", "opengraph", "dates")


def ld_types(items: list[Any]) -> list[Any]:
    """The @type of each JSON-LD item and of the items of its @graph, in order."""
    found = []
    for item in items:
        if isinstance(item, dict):
            found.append(item.get("@type"))
            graph = item.get("@graph")
            found += [g.get("@type") for g in graph if isinstance(g, dict)] if isinstance(
                graph, list) else []  # fmt: skip
    return found


Found = tuple[str, str, str]  # aspect, what differs, "" or the documented difference it is


def disagreements(mine: dict[str, Any], other: dict[str, Any]) -> list[Found]:
    """Where ours and extruct's differ, by aspect of ASPECTS, each with the documented
    difference (docs/yields.md) it is, if it is one."""
    found: list[Found] = []
    if other["json-ld"] is None:
        found.append(("jsonld", "extruct failed on the page", "a block that is not JSON"))
        other = {**other, "json-ld": mine.get("jsonld", [])}  # the rest compared as ours
    elif mine.get("jsonld", []) != other["json-ld"]:
        lenient = "extruct reads // comments and trailing commas"
        found.append(("jsonld", "items", lenient if mine.get("skipped") else ""))
    mine_types, their_types = ld_types(mine.get("jsonld", [])), ld_types(other["json-ld"])
    if mine_types != their_types:
        lenient = "extruct reads // comments and trailing commas"
        found.append(
            ("types", f"{mine_types} != {their_types}", lenient if mine.get("skipped") else "")
        )
    mine_md, their_md = collapse(mine.get("microdata", [])), collapse(other["microdata"])
    if mine_md != their_md:
        found.append(("microdata", "items", _microdata_design(mine_md, their_md)))
    og = mine.get("opengraph", {})
    for block in other["opengraph"]:
        for prop, _ in block["properties"]:
            first = next(v for p, v in block["properties"] if p == prop)
            if og.get(prop) != first:
                trimmed = og.get(prop) == first.strip()
                found.append(("opengraph", f"{prop}: {og.get(prop)!r} != {first!r}",
                              "ours trimmed" if trimmed else ""))  # fmt: skip
                break
    for ours_key, key in (("published", "datePublished"), ("modified", "dateModified")):
        stated = [i[key] for i in other["json-ld"] if isinstance(i, dict) and key in i]
        if stated and mine.get(ours_key) != stated[0]:
            iso = isinstance(stated[0], str) and ISO_DATE.match(stated[0])
            design = "not ISO 8601: passed over" if not iso else ""
            if iso and mine.get("skipped", {}).get("jsonld_broken"):
                design = "extruct reads // comments and trailing commas"
            found.append(("dates", f"{ours_key}: {mine.get(ours_key)!r} != {stated[0]!r}",
                          design))  # fmt: skip
    return found


def _microdata_design(mine: Any, theirs: Any) -> str:
    """The documented differences that make `mine` and `theirs` differ, "" if not only they."""
    said = []
    bare = _bare_items(theirs)
    if bare != theirs:
        said.append("extruct's value of an item without properties")
    if mine != bare and _no_spaces(mine) == _no_spaces(bare):
        said.append("extruct spaces elements' texts")
    return ", ".join(said) if _no_spaces(mine) == _no_spaces(bare) else ""


def _bare_items(value: Any) -> Any:
    """extruct's items as ours: one without properties has `properties: {}`, not its text as
    a `value` (extruct's own addition)."""
    if isinstance(value, list):
        return [_bare_items(v) for v in value]
    if isinstance(value, dict):
        if "value" in value and "properties" not in value and "type" in value:
            return {k: v for k, v in value.items() if k != "value"} | {"properties": {}}
        return {k: _bare_items(v) for k, v in value.items()}
    return value


ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _no_spaces(value: Any) -> Any:
    if isinstance(value, str):
        return "".join(value.split())
    if isinstance(value, list):
        return [_no_spaces(v) for v in value]
    if isinstance(value, dict):
        return {k: _no_spaces(v) for k, v in value.items()}
    return value


def agreement_and_speed() -> None:
    print("| corpus | pages | with metadata | agree | ours ms/page | on a parsed tree | "
          "extruct ms/page | speed |")  # fmt: skip
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    notes: list[str] = []
    by_aspect: dict[str, Counter[str]] = {}
    by_design: dict[str, Counter[str]] = {}
    ours(b"<p>warm</p>")
    theirs(b"<p>warm</p>")
    for name, pages in corpora():
        mine_ms, tree_ms, their_ms = [], [], []
        agree = with_meta = 0
        differ = by_aspect[name] = Counter()
        designed = by_design[name] = Counter()
        for i, (path, body, base) in enumerate(pages):
            mine, other, mine_s, their_s = _both(body, base, ours_first=i % 2 == 0)
            t0 = time.perf_counter()
            read_meta(LexborHTMLParser(body), base)  # the parse timed apart, below
            t1 = time.perf_counter()
            LexborHTMLParser(body)
            t2 = time.perf_counter()
            mine_ms.append(mine_s * 1e3)
            their_ms.append(their_s * 1e3)
            tree_ms.append(max(0.0, (t1 - t0) - (t2 - t1)) * 1e3)
            if mine.get("jsonld") or mine.get("microdata") or mine.get("opengraph"):
                with_meta += 1
            found = disagreements(mine, other)
            agree += not found
            differ.update({aspect for aspect, _, design in found if not design})
            designed.update({aspect for aspect, _, design in found if design})
            notes.extend(f"{name} {path}: {aspect} {what}" + (f" ({design})" if design else "")
                         for aspect, what, design in found[:3])  # fmt: skip
        a, b, c = (statistics.median(x) for x in (mine_ms, tree_ms, their_ms))
        print(f"| {name} | {len(pages)} | {with_meta} | {agree} | {a:.3f} | {b:.3f} | {c:.3f} "
              f"| {c / a:.1f}x |", flush=True)  # fmt: skip
    print("\npages disagreeing, by aspect (+ by a documented difference only): " + "; ".join(
        f"{name}: " + ", ".join(f"{aspect} {differ[aspect]} + {by_design[name][aspect]}"
                                for aspect in ASPECTS)
        for name, differ in by_aspect.items() if differ or by_design[name]))  # fmt: skip
    for note in sorted(notes, key=lambda note: note.endswith(")"))[:60]:  # unexplained first
        print(f"- {note}")


def _both(
    body: bytes, base: str, *, ours_first: bool
) -> tuple[dict[str, Any], dict[str, Any], float, float]:
    """Ours and extruct's on one page, and the seconds of each (the first of the two in
    turn: the one run second finds the bytes in the cache)."""
    runs: dict[str, tuple[dict[str, Any], float]] = {}
    for side in ("ours", "theirs") if ours_first else ("theirs", "ours"):
        started = time.perf_counter()
        got = ours(body, base) if side == "ours" else theirs(body, base)
        runs[side] = (got, time.perf_counter() - started)
    return runs["ours"][0], runs["theirs"][0], runs["ours"][1], runs["theirs"][1]


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


def main(argv: list[str] | None = None) -> int:
    parts = argv if argv else ["agreement", "crawl"]
    if not set(parts) <= {"agreement", "crawl"}:
        print(f"unknown part(s) {' '.join(parts)}: agreement, crawl")
        return 2
    try:
        import extruct  # noqa: F401
    except ImportError:
        print("extruct is missing: pip install 'sieve-crawler[bench]'")
        return 1
    if "agreement" in parts:
        print("### Metadata against extruct (agreement, ms a page)\n")
        agreement_and_speed()
    if "crawl" in parts:
        crawl_costs()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
