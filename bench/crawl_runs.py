"""The child-process side of bench.bench_crawl: one measured run per process.

Each run returns a JSON-ready dict. `wall_s` and `cpu_s` cover the work only (imports, config
and process start-up excluded: numpy too, which the crawler imports at its first Sieve batch or
big page; the parent's start-up runs of the `crawl` command count every import); the parent adds
the whole process's CPU time and peak RSS from ``os.wait4``. Runs:

- `run_ours`: crawler.engine.crawler.Crawler through the library API (results consumed and dropped).
- `run_fetch`: fetch-only limit: aiohttp, N concurrent workers, every URL of a list, bodies read
  (the fastest of FETCH_ROUNDS passes).
- `run_parse`: parse-only limits over the same pages' bodies (read from the document root):
  the selectolax floor, crawler.parse.links.extract, and extract + the per-link canonicalize/scope
  path.
"""

from __future__ import annotations

import asyncio
import cProfile
import resource
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import aiohttp
from selectolax.lexbor import LexborHTMLParser

from crawler.admission.scope import Scope
from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.parse.links import extract
from crawler.urls.canonical import UrlNormalizer
from crawler.urls.host import split_host

T = TypeVar("T")
CONCURRENCY = 32
PARSE_REPEATS = 5
FETCH_ROUNDS = 5


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_async(main: Coroutine[Any, Any, T], use_uvloop: bool) -> T:
    """Run `main` on asyncio's default loop, or on uvloop's."""
    if not use_uvloop:
        with asyncio.Runner() as runner:
            return runner.run(main)
    import uvloop  # optional extra: pip install 'uvloop>=0.19'

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def bench_config(max_pages: int = 0, concurrency: int = CONCURRENCY) -> Config:
    """Concurrency 32 (also per host: the site is one host), no delay, robots off, no depth
    limit; scope: the seed's host (the default)."""
    return (
        Config()
        .override(
            "politeness",
            delay=0.0,
            ip_delay=0.0,
            ip_concurrency=0,
            respect_robots=False,
            per_host_concurrency=concurrency,
        )
        .override("crawl", concurrency=concurrency, max_depth=0, max_pages=max_pages)
    )


def strip_fragment(url: str) -> str:
    return url.split("#", 1)[0]


async def _crawl(seed: str, config: Config, profile: cProfile.Profile | None) -> dict[str, Any]:
    urls: list[str] = []
    statuses: Counter[str] = Counter()
    async with Crawler(config) as crawler:
        started, cpu0, loop0 = time.perf_counter(), cpu_seconds(), time.thread_time()
        if profile is not None:
            profile.enable()
        async for result in crawler.crawl([seed]):
            urls.append(result.url)
            statuses[f"{result.status // 100}xx" if result.status else "error"] += 1
        if profile is not None:
            profile.disable()
        wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu0
        loop_cpu = time.thread_time() - loop0  # the event loop's thread alone
        stats = crawler.stats_dict()
    return {
        "pages": len(urls),
        "distinct": len({strip_fragment(u) for u in urls}),
        "wall_s": wall,
        "cpu_s": cpu,
        "loop_cpu_s": loop_cpu,
        "statuses": dict(sorted(statuses.items())),
        "links_seen": stats["links_seen"],
        "memo_hit_rate": stats["memo_hit_rate"],
        "urls": urls,
    }


def run_ours(
    base: str,
    *,
    max_pages: int = 0,
    use_uvloop: bool = False,
    profile_path: str = "",
    start: str = "index.html",
) -> dict[str, Any]:
    import numpy  # noqa: F401  (imported lazily by the crawl: an import, not per-page work)

    profile = cProfile.Profile() if profile_path else None
    out = run_async(_crawl(base + start, bench_config(max_pages), profile), use_uvloop)
    if profile is not None:
        profile.dump_stats(profile_path)
    return out


async def _fetch_pass(
    session: aiohttp.ClientSession, urls: Sequence[str], concurrency: int
) -> tuple[int, int]:
    """GET every URL, `concurrency` at a time; (responses, body bytes)."""
    queue = iter(urls)
    count = size = 0

    async def worker() -> None:
        nonlocal count, size
        for url in queue:  # a shared iterator: each URL is taken by one worker
            async with session.get(url, allow_redirects=False) as resp:
                size += len(await resp.read())
                count += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count, size


async def _fetch_all(
    urls: Sequence[str], concurrency: int, rounds: int
) -> tuple[int, int, float, float]:
    """(responses, bytes, wall, cpu) of the fastest of `rounds` passes over every URL, on one
    session (the first pass also opens the connections)."""
    connector = aiohttp.TCPConnector(limit=concurrency * 2)
    best = (0, 0, float("inf"), 0.0)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
        for _ in range(rounds):
            started, cpu0 = time.perf_counter(), cpu_seconds()
            count, size = await _fetch_pass(session, urls, concurrency)
            wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu0
            if wall < best[2]:
                best = (count, size, wall, cpu)
    return best


def run_fetch(urls: Sequence[str], *, use_uvloop: bool = False) -> dict[str, Any]:
    count, size, wall, cpu = run_async(_fetch_all(urls, CONCURRENCY, FETCH_ROUNDS), use_uvloop)
    return {"pages": count, "bytes": size, "wall_s": wall, "cpu_s": cpu}


def html_bodies(urls: Sequence[str], root: Path) -> list[tuple[str, bytes]]:
    """(URL, body) of every URL in `urls` that maps to an HTML file under `root`."""
    out = []
    for url in urls:
        path = unquote(urlsplit(url).path).lstrip("/")
        if path == "" or path.endswith("/"):
            path += "index.html"
        file = root / path
        if file.suffix in (".html", ".htm") and file.is_file():
            out.append((url, file.read_bytes()))
    return out


def _floor(pages: Sequence[tuple[str, bytes]]) -> int:
    n = 0
    for _, body in pages:
        for node in LexborHTMLParser(body).css("a[href]"):
            if node.attributes.get("href") is not None:
                n += 1
    return n


def _extract(pages: Sequence[tuple[str, bytes]]) -> int:
    return sum(len(extract(body, url, content_type="text/html").links) for url, body in pages)


def _per_link(pages: Sequence[tuple[str, bytes]]) -> int:
    """extract, then resolve + scope check for every link: the engine's CPU per page, minus the
    Sieve, the frontier and fetching."""
    config = bench_config()
    u, sc = config.urls, config.scope
    urls = UrlNormalizer(
        session_params=u.session_params,
        tracking_params=u.tracking_params,
        sort_query=u.sort_query,
        strip_www=u.strip_www,
        memo_size=u.memo_size,
    )
    scope = Scope(skip_extensions=sc.skip_extensions, hosts=[split_host(pages[0][0])])
    resolve, check = urls.resolve, scope.check
    n = 0
    for url, body in pages:
        page = extract(body, url, content_type="text/html")
        for href in page.links:
            resolved = resolve(href, page.base)
            if resolved is not None and check(resolved[1], 1) is None:
                n += 1
    return n


PARSERS: dict[str, Callable[[Sequence[tuple[str, bytes]]], int]] = {
    "floor": _floor,
    "extract": _extract,
    "per_link": _per_link,
}


def run_parse(urls: Sequence[str], root: Path) -> dict[str, Any]:
    """Best-of-PARSE_REPEATS seconds for each parser over the HTML bodies of `urls` (the parsers
    take turns, so that a burst of load elsewhere does not hit one parser's passes only)."""
    pages = html_bodies(urls, root)
    best = dict.fromkeys(PARSERS, float("inf"))
    links = dict.fromkeys(PARSERS, 0)
    for _ in range(PARSE_REPEATS):
        for name, fn in PARSERS.items():
            started = time.perf_counter()
            links[name] = fn(pages)
            best[name] = min(best[name], time.perf_counter() - started)
    out: dict[str, Any] = {"pages": len(urls), "html_pages": len(pages)}
    for name in PARSERS:
        out[name] = {"wall_s": best[name], "links": links[name]}
    return out
