"""Helpers shared by several test modules (moved from test_content.py)."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from crawler.state.crawlstate import CrawlState
from tests.support.server import serve

# a vocabulary (letters only: words with digits are not features); Zipf draws: realistic text
WORDS = ["".join(chr(97 + (i // 26**p) % 26) for p in range(3)) for i in range(3000)]


WEIGHTS = [1 / (i + 1) for i in range(len(WORDS))]


NAV = "<nav><a href='.'>Home</a> <a href='a'>Alpha</a> <a href='b'>Beta</a></nav>"


def article(rng: random.Random, n_words: int) -> str:
    """Paragraphs of Zipf-distributed words (a documentation page's shape)."""
    words = rng.choices(WORDS, WEIGHTS, k=n_words)
    paras = [" ".join(words[i : i + 60]) for i in range(0, n_words, 60)]
    return "".join(f"<p>{p}</p>\n" for p in paras)


def page(body: str, *, banner: str = "", head: str = "", main: bool = True) -> bytes:
    """A page of a site: header, navigation, `body` (in <main>, or not), footer; `banner` is
    put above everything, as a mirror would."""
    content = f"<main>{body}</main>" if main else f"<div class='content'>{body}</div>"
    return (
        f"<!doctype html><html><head><title>T</title>{head}</head><body>{banner}"
        f"<header><h1>Site</h1></header>{NAV}{content}"
        f"<footer>Copyright 2026 Example</footer></body></html>"
    ).encode()


def banner(rng: random.Random, i: int) -> str:
    return (
        f"<div class='banner'>You are reading a mirror hosted by mirror{i}.example, synchronized "
        f"2026-11-{rng.randint(1, 28)} {rng.randint(0, 23)}:{rng.randint(0, 59):02d} UTC, "
        f"session {rng.getrandbits(64):016x}</div>"
    )


def flip(value: int, bits: list[int]) -> int:
    for b in bits:
        value ^= 1 << b
    return value


ORIG = {
    "": "<a href='a'>a</a> <a href='b'>b</a> <a href='c'>c</a>",
    "a": "<a href='b'>b</a>",
    "b": "<a href='c'>c</a> <a href='/static/x.txt'>x</a>",
    "c": "<a href='a'>a</a>",
}


def site_page(name: str, mirror: bool, serial: int) -> bytes:
    """A page of the original, or of its mirror: a banner above the main content (not text) on
    every page, and a timestamp line in the content of every page but the entry page (words
    with digits: the simhash stays, the content hash changes)."""
    rng = random.Random(name)  # the same text for the original and the mirror
    body = article(rng, 600) + ORIG[name]
    if mirror and name:
        body = f"<p>2026-11-22 10:{serial:02d}:00 s{serial * 7919:x}</p>" + body
    return page(body, banner=banner(rng, serial) if mirror else "")


def site_handler() -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """/orig/ and its mirror /mirror/ (same paths), and one plain-text file."""
    served = {"n": 0}

    async def handler(request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.endswith(".txt"):
            return web.Response(text="plain text", content_type="text/plain")
        for prefix, mirror in (("/orig/", False), ("/mirror/", True)):
            name = path.removeprefix(prefix)
            if path.startswith(prefix) and name in ORIG:
                served["n"] += 1
                return web.Response(body=site_page(name, mirror, served["n"]),
                                    content_type="text/html")  # fmt: skip
        return web.Response(status=404, text="no")

    return handler


async def crawl_site(
    port: int | None = None,
    tmp: Path | None = None,
    *,
    follow: bool,
    stop_after: int | None = None,
) -> tuple[Crawler, dict[str, CrawlResult]]:
    """Crawl the site from /orig/ and /mirror/ (on `port`, else on a server of its own) with
    concurrency 1; results by path. `tmp`: keep the state there; `stop_after` results."""
    if port is None:
        async with serve(site_handler()) as own:
            return await crawl_site(own, tmp, follow=follow, stop_after=stop_after)
    config = Config().override("fetch", resolve={"site.test": "127.0.0.1"})
    config = config.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    config = config.override("crawl", concurrency=1)
    config = config.override("dedup", enabled=True, follow_duplicates=follow)
    state = None if tmp is None else CrawlState.open(tmp / "state", {"test": 1})
    base = f"http://site.test:{port}"
    results: dict[str, CrawlResult] = {}
    async with (
        Crawler(config, state=state) as crawler,
        contextlib.aclosing(crawler.crawl([f"{base}/orig/", f"{base}/mirror/"])) as crawl,
    ):
        async for r in crawl:
            results[r.url.removeprefix(base)] = r
            if stop_after is not None and len(results) == stop_after:
                break  # closes the crawl: the state is left "interrupted"
    return crawler, results
