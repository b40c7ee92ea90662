"""Link extraction throughput over the documentation corpus (bench.corpus.html_pages()).

Rows, measured in the same run over the same pages (best of REPEATS passes, each pass timed as a
whole):

- crawler.parse.links.extract: the full Page (charset, robots, base, canonical, title, nofollow,
  cap).
- lexbor floor: LexborHTMLParser(body).css("a[href]") and reading each href, nothing else.
- lexbor floor, str input: the same, but the body decoded to str first (bytes-vs-str check).
- lxml iterlinks: lxml.html.document_fromstring(body).iterlinks(), keeping a/area hrefs
  (only if lxml is installed).

BENCH_QUICK=1 runs a small version (a few dozen pages, one pass) as a smoke test.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Sequence

from selectolax.lexbor import LexborHTMLParser

from bench.corpus import html_pages
from crawler.parse.links import extract

Extractor = Callable[[str, bytes], int]


def run_extract(url: str, body: bytes) -> int:
    return len(extract(body, url, content_type="text/html").links)


def run_lexbor_floor(url: str, body: bytes) -> int:
    n = 0
    for node in LexborHTMLParser(body).css("a[href]"):
        if node.attributes.get("href") is not None:
            n += 1
    return n


def run_lexbor_str(url: str, body: bytes) -> int:
    n = 0
    for node in LexborHTMLParser(body.decode("utf-8", "replace")).css("a[href]"):
        if node.attributes.get("href") is not None:
            n += 1
    return n


def lxml_peer() -> Extractor | None:
    try:
        lxml_html = importlib.import_module("lxml.html")  # optional peer, untyped
    except ImportError:
        return None

    def run_lxml(url: str, body: bytes) -> int:
        doc = lxml_html.document_fromstring(body)
        return sum(
            1
            for element, attribute, _, _ in doc.iterlinks()
            if attribute == "href" and element.tag in ("a", "area")
        )

    return run_lxml


def measure(fn: Extractor, pages: Sequence[tuple[str, bytes]], repeats: int) -> tuple[float, int]:
    best = float("inf")
    links = 0
    for _ in range(repeats):
        start = time.perf_counter()
        links = sum(fn(url, body) for url, body in pages)
        best = min(best, time.perf_counter() - start)
    return best, links


def main() -> None:
    quick = os.environ.get("BENCH_QUICK") == "1"
    pages = html_pages()
    repeats = 3
    if quick:
        pages, repeats = pages[::15], 1
    peers: list[tuple[str, Extractor]] = [
        ("crawler.parse.links.extract", run_extract),
        ("lexbor floor (bytes)", run_lexbor_floor),
        ("lexbor floor (str input)", run_lexbor_str),
    ]
    run_lxml = lxml_peer()
    if run_lxml is not None:
        peers.append(("lxml iterlinks (a/area)", run_lxml))
    size = sum(len(body) for _, body in pages)
    print(f"{len(pages)} pages, {size / 1e6:.1f} MB, best of {repeats}")
    header = ("extractor", "pages/s", "links/s", "us/link", "MB/s", "links")
    print("{:<26} {:>9} {:>10} {:>8} {:>7} {:>8}".format(*header))
    for name, fn in peers:
        seconds, links = measure(fn, pages, repeats)
        print(
            f"{name:<26} {len(pages) / seconds:>9.0f} {links / seconds:>10.0f} "
            f"{seconds / max(links, 1) * 1e6:>8.2f} {size / seconds / 1e6:>7.1f} {links:>8}"
        )
    if run_lxml is None:
        print("(lxml not installed: pip install 'lxml>=5' to add it as a peer)")


if __name__ == "__main__":
    main()
