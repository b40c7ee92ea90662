"""Page text (issue 33): main-content extraction against human ground truth, and its speed.

    python -m bench text                      (BENCH_QUICK=1: 20 pages a corpus and a site)
    python -m bench.bench_text --dataset DIR --trafilatura-eval DIR
    python -m bench.bench_text --part articles --extractors ours,trafilatura

Five parts (`--part`, repeatable: articles, trafilatura-eval, doc-sites, docs, crawl; all by
default):

1. articles: the Zyte (Scrapinghub) article-extraction benchmark, 181 real news and blog pages
   with a human-made article body each, scored by the benchmark's own evaluate.py (imported
   from the checkout): 4-gram shingle precision and recall per page, their means over pages, F1
   of the means, bootstrap std, and accuracy (the page's words exactly the ground truth's).
   F1 is also given on two fixed halves (page key's first hex digit even / odd), so that what
   is tuned on one half can be checked on the other.
2. trafilatura-eval: trafilatura's own evaluation set (~1,000 pages, many languages; its home
   ground), scored by its own tests/eval_common.py: snippets that must / must not be in the
   text, counted over pages.
3. doc-sites: the local Debian doc sites (bench.doc_sites), every HTML page read from disk: the
   share of its visible body text (the body's text without script, style, noscript and
   template, read by lexbor here) that our text keeps (words in common / visible words, as
   multisets of lowercased \\w+ words), median and 10th percentile over pages, trafilatura's
   beside it; and ten pages a site (seeded) written to bench/out/text-samples/ (text and
   markdown) for a look by hand.

4. docs: one site per documentation generator (Sphinx, DocBook, texinfo, Doxygen, MkDocs), our
   text's word recall and precision against each page's body without its navigation, defined
   by structure the same for every site (bench/text_docs.py says how).

Every extractor of a corpus runs on the same bytes, one page at a time in turn (the order
rotated page by page; each first run untimed on a tiny page and the corpus's first page, so
that one-time costs stay out), each call timed with time.perf_counter from the bytes to the text,
decoding and parsing included (how each peer is run: bench/text_corpora.py). "speed" is
trafilatura's total time over the extractor's. The data sets are not in this repository: they
are read from bench/data/ (gitignored); a missing one prints how to get it. Each extractor's
texts of the article benchmark are written to bench/out/article-extraction/NAME.json, in the
benchmark's output format (its evaluate.py can score them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser

from bench.doc_sites import SITES
from bench.text_corpora import (
    ARTICLES,
    REPO,
    SEED,
    TRAFILATURA,
    TREE,
    Corpus,
    Extractor,
    Page,
    Scores,
    extractors,
    half,
    load_articles,
    load_trafilatura_eval,
    stoplist,
)
from crawler.parse.extract import page_text

QUICK = os.environ.get("BENCH_QUICK") == "1"
QUICK_PAGES = 20
SAMPLES = 10
OUT = REPO / "bench" / "out"
PARTS = ("articles", "trafilatura-eval", "doc-sites", "docs", "crawl")
WORD = re.compile(r"\w+")
INVISIBLE = ["script", "style", "noscript", "template"]


@dataclass(slots=True)
class Run:
    """One extractor over one corpus: its texts and seconds by page key, its failures."""

    extractor: Extractor
    texts: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    errors: int = 0
    first_error: str = ""

    def ms(self) -> tuple[float, float]:
        """(median, mean) ms a page."""
        values = list(self.seconds.values())
        return statistics.median(values) * 1e3, statistics.fmean(values) * 1e3


def run_all(pages: list[Page], extract: list[Extractor]) -> list[Run]:
    """Every extractor on every page, in turn page by page."""
    runs = [Run(e) for e in extract]
    warm = Page("warm-up", "http://warm.test/", b"<html><body><p>Warm up.</p></body></html>")
    for run in runs:  # one-time costs (imports, first-call set-up) stay out of the timings
        for page in [warm, *pages[:1]]:
            with contextlib.suppress(Exception):  # a failure shows (and counts) on real pages
                run.extractor.run(page)
    for i, page in enumerate(pages):
        for run in runs[i % len(runs) :] + runs[: i % len(runs)]:
            started = time.perf_counter()
            try:
                got = run.extractor.run(page)
            except Exception as exc:  # a crash is a miss, as in both harnesses
                got = ""
                run.errors += 1
                run.first_error = run.first_error or f"{page.key}: {type(exc).__name__}: {exc}"
            elapsed = time.perf_counter() - started
            text, run.seconds[page.key] = got if isinstance(got, tuple) else (got, elapsed)
            run.texts[page.key] = text
    return runs


def corpus_table(corpus: Corpus, runs: list[Run]) -> dict[str, Scores]:
    print(f"\n### {corpus.label}\n\ncommit {corpus.commit}; metric: {corpus.metric}\n")
    scores = {run.extractor.name: corpus.score(run.texts) for run in runs}
    reference = next((r for r in runs if r.extractor.name == "trafilatura"), None)
    ref_total = sum(reference.seconds.values()) if reference else math.nan
    print("| extractor | version | precision | recall | F1 | accuracy | ms/page median | "
          "ms/page mean | total s | speed vs trafilatura | errors | empty |")  # fmt: skip
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for run in runs:
        s = scores[run.extractor.name]
        median, mean = run.ms()
        total = sum(run.seconds.values())
        empty = sum(1 for t in run.texts.values() if not t.strip())
        name = run.extractor.name
        name = f"**{name}**" if name.startswith("ours") else name
        print(f"| {name} | {run.extractor.version} | {s.precision:.3f} | {s.recall:.3f} | "
              f"**{s.f1:.3f}** ± {s.f1_std:.3f} | {s.accuracy:.3f} | {median:.2f} | {mean:.2f} | "
              f"{total:.2f} | {ref_total / total:.2f}x | {run.errors} | {empty} |")  # fmt: skip
    print("\nslowest page: " + "; ".join(
        f"{r.extractor.name} {max(r.seconds.values()) * 1e3:.0f} ms "
        f"({max(r.seconds, key=r.seconds.__getitem__)[:40]})" for r in runs))  # fmt: skip
    for run in runs:
        if run.first_error:
            print(f"\n{run.extractor.name}: {run.errors} page(s) failed, first {run.first_error}")
    if all(s.halves for s in scores.values()):
        n_even = sum(1 for p in corpus.pages if half(p.key) == 0)
        print(f"\nF1 on the fixed halves (key's first hex digit even: {n_even} pages / odd: "
              f"{len(corpus.pages) - n_even} pages): " + "; ".join(
                  f"{name} {s.halves[0]:.3f} / {s.halves[1]:.3f}"
                  for name, s in scores.items() if s.halves))  # fmt: skip
    return scores


def hardest(corpus: Corpus, scores: dict[str, Scores], n: int = 5) -> None:
    """The pages no extractor does well on (odd ground truth shows there), and ours' worst
    against the best (per page: F1 of the page's shingle counts)."""
    per_page = {name: s.per_page for name, s in scores.items() if s.per_page}
    if not per_page:
        return
    urls = {p.key: p.url for p in corpus.pages}
    best = {k: max(per_page, key=lambda name: per_page[name][k]) for k in urls}
    top = {k: per_page[best[k]][k] for k in urls}
    print("\npages where the best extractor does worst:")
    for k in sorted(top, key=top.__getitem__)[:n]:
        print(f"- {k[:8]} {urls[k]}: {best[k]} {top[k]:.2f}")
    ours = per_page.get("ours")
    if ours:
        print("ours' pages furthest behind the best:")
        for k in sorted(ours, key=lambda k: ours[k] - top[k])[:n]:
            print(f"- {k[:8]} {urls[k]}: ours {ours[k]:.2f}, {best[k]} {top[k]:.2f}")


def write_outputs(corpus: Corpus, runs: list[Run]) -> None:
    """Each extractor's texts in the article benchmark's output format."""
    directory = OUT / "article-extraction"
    directory.mkdir(parents=True, exist_ok=True)
    for run in runs:
        out = {"version": run.extractor.version,
               "output": {k: {"articleBody": t} for k, t in run.texts.items()}}  # fmt: skip
        name = run.extractor.name.replace(" ", "_")
        (directory / f"{name}.json").write_text(json.dumps(out, ensure_ascii=False, indent=1))
    print(f"\ntexts by extractor: {directory.relative_to(REPO)}/*.json")


# --- the local doc sites -----------------------------------------------------------------------


def words(text: str) -> Counter[str]:
    return Counter(WORD.findall(text.lower()))


def visible(body: bytes) -> str:
    """The body's text without script, style, noscript and template (read by lexbor)."""
    tree = LexborHTMLParser(body.decode("utf-8", "replace"))
    tree.strip_tags(INVISIBLE)
    node = tree.body
    return node.text(deep=True, separator=" ") if node is not None else ""


def share(text: str, seen: Counter[str]) -> float:
    return sum((words(text) & seen).values()) / sum(seen.values())


def doc_sites(extract: list[Extractor]) -> None:
    print("\n### Local doc sites: share of each page's visible body text kept\n")
    print(
        "visible = the body's text without script/style/noscript/template (lexbor); kept = "
        "words in common with the extractor's text / visible words (multisets of lowercased "
        "words), over the pages with a visible word; empty = such pages given no word\n"
    )
    print("| site | extractor | pages | kept median | kept p10 | pages under 50% | empty | "
          "ms/page median | ms/page mean |")  # fmt: skip
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    lows = []
    for site in SITES:
        all_pages = site.pages()
        chosen = sorted(random.Random(SEED).sample(range(len(all_pages)), QUICK_PAGES)) if QUICK \
            else range(len(all_pages))  # fmt: skip
        pages = [Page(all_pages[i][0], f"http://{site.name}.test/{all_pages[i][0]}",
                      all_pages[i][1]) for i in chosen]  # fmt: skip
        runs = run_all(pages, extract)
        seen = {p.key: w for p in pages if (w := words(visible(p.body)))}
        for run in runs:
            shares = {k: share(run.texts[k], w) for k, w in seen.items()}
            ordered = sorted(shares.values())
            p10 = statistics.quantiles(ordered, n=10)[0] if len(ordered) > 1 else ordered[0]
            under = sum(1 for v in ordered if v < 0.5)
            empty = sum(1 for v in ordered if v == 0)
            median, mean = run.ms()
            name = run.extractor.name
            shown = f"**{name}**" if name.startswith("ours") else name
            print(f"| {site.name} | {shown} | {len(seen)} | "
                  f"{statistics.median(ordered):.1%} | {p10:.1%} | {under} | {empty} | "
                  f"{median:.2f} | {mean:.2f} |", flush=True)  # fmt: skip
            if run.extractor.name == "ours":
                low = sorted(shares, key=shares.__getitem__)[:5]
                lows.append(f"{site.name}: " + ", ".join(f"{k} {shares[k]:.0%}" for k in low))
        write_samples(site.name, all_pages)
    if lows:
        print("\nours' lowest shares: " + "; ".join(lows))
    print(
        f"\nsamples (ours, {SAMPLES} pages a site, seed {SEED}): "
        f"{(OUT / 'text-samples').relative_to(REPO)}/SITE/"
    )


def write_samples(site: str, pages: list[tuple[str, bytes]]) -> None:
    """Our text and markdown of a fixed sample of pages, each named by the page's path."""
    directory = OUT / "text-samples" / site
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    for rel, body in sorted(random.Random(SEED).sample(pages, min(SAMPLES, len(pages)))):
        result = page_text(body, f"http://{site}.test/{rel}", "text/html", markdown=True)
        stem = rel.removesuffix(".html").replace("/", "__")
        (directory / f"{stem}.txt").write_text(result.text if result else "")
        (directory / f"{stem}.md").write_text(result.markdown or "" if result else "")


def _ours_text(body: bytes, url: str) -> str:
    result = page_text(body, url, "text/html")
    return result.text if result is not None else ""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_text",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        ARTICLES.option,
        metavar="DIR",
        help=f"article-extraction-benchmark checkout (or ${ARTICLES.env})",
    )
    parser.add_argument(
        TRAFILATURA.option, metavar="DIR", help=f"trafilatura checkout (or ${TRAFILATURA.env})"
    )
    parser.add_argument(
        "--part", action="append", choices=PARTS, help="run only this part (repeatable)"
    )
    parser.add_argument("--extractors", metavar="A,B",
                        help="only these (ours, trafilatura, 'trafilatura fast', "
                             "readability-lxml, jusText)")  # fmt: skip
    args = parser.parse_args(argv)
    parts = args.part or list(PARTS)
    names = args.extractors.split(",") if args.extractors else None
    limit = QUICK_PAGES if QUICK else None
    started = time.perf_counter()
    if QUICK:
        print(f"BENCH_QUICK=1: {QUICK_PAGES} pages a corpus and a site")
    if "articles" in parts:
        corpus = load_articles(ARTICLES.directory(args.dataset), limit)
        if corpus is not None:
            runs = run_all(corpus.pages, extractors(corpus.stoplist, names))
            scores = corpus_table(corpus, runs)
            hardest(corpus, scores)
            write_outputs(corpus, runs)
    if "trafilatura-eval" in parts:
        corpus = load_trafilatura_eval(TRAFILATURA.directory(args.trafilatura_eval), limit)
        if corpus is not None:
            corpus_table(corpus, run_all(corpus.pages, extractors(corpus.stoplist, names)))
    if "doc-sites" in parts:
        doc_sites(extractors(stoplist("English"), names or ("ours", TREE, "trafilatura")))
    if "docs" in parts:
        from bench.text_docs import docs_part

        docs_part(_ours_text, QUICK)
    if "crawl" in parts:
        from bench.text_crawl import crawl_costs  # starts nginx: only when asked

        crawl_costs()
    print(f"\nwall time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
