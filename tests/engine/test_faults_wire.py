"""The crawler against the fourth audit's faults (tests/faults_wire.py), end to end on loopback:
framing the earlier audits left out (status 000, a 1xx and then nothing, headers cut off,
trailers, obsolete line folding, an unknown Transfer-Encoding), redirects to other schemes, to
ports no URL can have, to the page itself and past the header cap, bodies in stacked or unknown
codings, UTF-16/32, a charset declared after 1 MB, NULs, a PNG, hostile ``<base href>``s, a
stalled body, a request never answered, robots.txt and sitemap faults. Each URL gets one record
with the status or error kind the failure table (docs/politeness.md) gives it, retried as it
says, and the crawl goes on; a crawl stopped around the faults and resumed loses nothing."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from tests.support.faults import fault_config, record
from tests.support.faults_wire import (
    HOST,
    LINKS,
    TIMED,
    WIRE_PAGES,
    WIRE_ROBOTS,
    WireServer,
    robots_host,
)

RETRIES = 1
# Each page's record: its status, or its error kind when no usable response came.
EXPECTED: dict[str, int | str] = {
    "/status-000": 0,  # recorded as sent, like 099 and 999 (tests/test_faults.py)
    "/status-garbage": "protocol",
    "/status-negative": "protocol",
    "/chunked-trailers": 200,
    "/chunked-lf-only": "protocol",  # aiohttp (llhttp) wants CRLF in chunked framing
    "/chunk-over-cap": "truncated",  # 1000 bytes of a 64 MiB chunk, then the end
    "/bare-cr-header": "protocol",
    "/obs-fold": 200,
    "/te-unknown": "decoding",
    "/headers-cut": "reset",
    "/status-line-only": "reset",
    "/empty-response": "reset",
    "/100-then-close": "reset",
    "/101-switching": 101,
    "/102-then-200": 200,
    "/http10-chunked": 200,
    "/200-no-length-http11": 200,
    "/cookie-flood": "protocol",  # 3,000 headers: aiohttp takes 128 (docs/hostile-servers.md)
    "/header-no-value": 200,
    "/header-space-name": 200,
    "/location-mailto": 301,
    "/location-tel": 301,
    "/location-gopher": 301,
    "/location-10k": 301,  # its target is over max_url_length: not followed
    "/location-20k": "protocol",  # over max_header_size
    "/location-self": 301,
    "/location-fragment": 301,
    "/location-blanks": 301,
    "/location-control": 301,
    "/location-utf8": 301,
    "/location-no-host": 301,
    "/location-port-0": 301,
    "/location-bad-port": 301,
    "/location-userinfo-only": 301,
    "/3xx-body-no-location": 301,
    "/303-to-ok": 303,
    "/gzip-cut-mid": 200,  # what inflates is kept, as browsers do
    "/gzip-br": "decoding",
    "/coding-foo": 200,  # not a compression: the body as sent (tests/test_faults_web.py)
    "/deflate-zlib": 200,
    "/gzip-unlabelled": 200,
    "/charset-foo": 200,
    "/charset-empty": 200,
    "/charset-late-meta": 200,
    "/utf16le-bom": 200,
    "/utf16be-bom": 200,
    "/utf32-charset": 200,
    "/nuls": 200,
    "/png-as-html": 200,
    "/base-js": 200,  # its absolute link: /abs
    "/base-other-host": 200,
    "/base-malformed": 200,
    "/base-private": 200,
    "/stall-after-headers": "timeout",
    "/never-answer": "timeout",
    "/line-50mb": "too_large",
}
# Pages read as the HTML they are: title "T", one link.
READ = ["/chunked-trailers", "/obs-fold", "/102-then-200", "/http10-chunked",
        "/200-no-length-http11", "/header-no-value", "/3xx-body-no-location", "/gzip-cut-mid",
        "/coding-foo", "/deflate-zlib", "/charset-foo", "/charset-empty", "/charset-late-meta",
        "/utf16le-bom", "/utf16be-bom", "/utf32-charset", "/status-000"]  # fmt: skip
BAD_LOCATIONS = ["/location-mailto", "/location-tel", "/location-gopher", "/location-no-host",
                 "/location-port-0", "/location-bad-port", "/location-userinfo-only"]  # fmt: skip
# How often each failure was asked: a reset before any response is sent again at once by
# aiohttp, then retried by the crawler (RETRIES); a body cut short is retried; the rest never.
ASKED = {"reset": 2 * (1 + RETRIES), "truncated": 1 + RETRIES, "protocol": 1, "decoding": 1,
         "timeout": 1, "too_large": 1}  # fmt: skip


@pytest.fixture
async def server() -> AsyncIterator[WireServer]:
    async with WireServer() as s:
        yield s


async def crawl(server: WireServer, seeds: list[str], **sections: Any) -> dict[str, CrawlResult]:
    sections.setdefault("crawl", {"concurrency": 8, "max_depth": 1})
    config = fault_config(server, **sections)
    async with asyncio.timeout(30), Crawler(config) as crawler:
        results = [r async for r in crawler.crawl(seeds)]
    by_url = {r.url: r for r in results}
    assert len(by_url) == len(results), "a URL has two records"
    assert not [r.error for r in results if (r.error or "").startswith("internal")]
    return by_url


@pytest.mark.slow
async def test_every_wire_fault_gets_its_record(server: WireServer) -> None:
    paths = [p for p in [*WIRE_PAGES, *TIMED] if p != "/links-100k"]
    assert set(EXPECTED) == set(paths)
    fetch = {"retries": RETRIES, "read_timeout": 1.0, "total_timeout": 10.0}
    results = await crawl(server, [server.url(p) for p in paths], fetch=fetch)
    got = {path: record(results[server.url(path)]) for path in EXPECTED}
    assert got == EXPECTED
    for path, expected in EXPECTED.items():
        asked = ASKED.get(expected, 1) if isinstance(expected, str) else 1
        assert server.requests[(HOST, path)] == asked, path
        assert len(results[server.url(path)].error or "") < 400, path  # one short line
    for path in READ:
        result = results[server.url(path)]
        assert (result.title, result.links) == ("T", 1), (path, result)
    assert record(results[server.url("/ok")]) == 200  # the crawl went on to the links
    # a timeout waiting for the headers and one reading the body say which
    assert "(waiting for the response headers)" in (results[server.url("/never-answer")].error
                                                    or "")  # fmt: skip
    assert "(reading the body)" in (results[server.url("/stall-after-headers")].error or "")


async def test_redirect_faults(server: WireServer) -> None:
    paths = [*BAD_LOCATIONS, "/location-self", "/location-fragment", "/location-blanks",
             "/location-control", "/location-utf8", "/location-10k", "/303-to-ok"]  # fmt: skip
    results = await crawl(server, [server.url(p) for p in paths])
    for path in BAD_LOCATIONS:
        assert (results[server.url(path)].error or "").startswith("redirect: bad Location '"), path
    # the page itself, however it is said: recorded once, not fetched again
    for path in ("/location-self", "/location-fragment", "/location-blanks"):
        assert results[server.url(path)].location == server.url(path)
        assert server.requests[(HOST, path)] == 1
    # control bytes and UTF-8 in a Location are %-escaped, as browsers send them
    assert record(results[server.url("/ctl%01x")]) == 200
    assert record(results[server.url("/caf%C3%A9")]) == 200
    # a 10 KB target is past max_url_length: recorded, not followed
    assert not [u for u in results if "/long/" in u]
    assert not [p for (_, p) in server.requests if p.startswith("/long/")]
    assert server.requests[(HOST, "/ok")] == 1  # a 303's target


async def test_hostile_base_hrefs(server: WireServer) -> None:
    paths = ["/base-js", "/base-other-host", "/base-malformed", "/base-private"]
    results = await crawl(server, [server.url(p) for p in paths])
    # a javascript: base leaves relative links nowhere, absolute ones still count
    assert results[server.url("/base-js")].new_links == 1
    assert record(results[server.url("/abs")]) == 200
    assert not [p for (_, p) in server.requests if p in ("/rel", "/root")]
    # another host's base: its links are that host's, out of scope; a private one too
    assert (results[server.url("/base-other-host")].new_links,
            results[server.url("/base-private")].new_links) == (0, 0)  # fmt: skip
    # an unparsable base is ignored: the page's own URL is the base
    assert server.requests[(HOST, "/ok")] == 1 and results[server.url("/base-malformed")].links


async def test_a_page_of_100000_links_is_read_within_bounds(server: WireServer) -> None:
    # max_pages 1: only the page is fetched, its links counted and refused. The bound is on
    # the work (one result, every link counted once); the timeout only catches a hang.
    async with asyncio.timeout(120):
        results = await crawl(server, [server.url("/links-100k")], crawl={"max_pages": 1})
    page = results[server.url("/links-100k")]
    assert page.status == 200 and page.links >= LINKS - 1 and page.new_links == 0
    assert len(results) == 1


# -- robots.txt and sitemaps --------------------------------------------------------------------


ROBOTS_EXPECTED: dict[str, dict[str, Any]] = {
    # a redirect to a non-HTTP scheme: no usable Location, as a 4xx: all allowed
    "to-ftp": {"/": 200, "/private/x": 200, "/public": 200},
    # a redirect the SSRF guard refuses: unreachable, the host's pages refused
    "to-private": {"/": "robots"},
    # 64 MiB of zeros inflated from 64 KiB: cut at 500 KiB, no rules
    "gzip-bomb": {"/": 200, "/private/x": 200, "/public": 200},
    # 10 MB of rules and comments: the first 500 KiB read
    "ten-mib": {"/": 200, "/private/x": "robots", "/public": 200},
    # a gzipped sitemap bomb: the sitemap's record says so, the pages are crawled
    "sitemap-bomb": {"/": 200, "/private/x": "robots", "/public": 200, "/sm.xml.gz": 200},
    # a sitemap on a private address or past max_url_length: out of scope, never fetched
    "sitemap-private": {"/": 200, "/private/x": "robots", "/public": 200},
    "sitemap-huge-loc": {"/": 200, "/private/x": "robots", "/public": 200},
    "crawl-delay-negative": {"/": 200, "/private/x": "robots", "/public": 200},  # ignored
    "nul-rules": {"/": 200, "/private/x": 200, "/public": 200},  # "*\x00" is no group of ours
}
ATTEMPTS = 2


async def test_robots_txt_and_sitemap_faults(server: WireServer) -> None:
    assert set(ROBOTS_EXPECTED) == set(WIRE_ROBOTS)
    seeds = [server.url("/", robots_host(name)) for name in WIRE_ROBOTS]
    results = await crawl(server, seeds, crawl={"concurrency": 9, "max_depth": 2},
                          scope={"use_sitemaps": True},
                          politeness={"robots_attempts": ATTEMPTS})  # fmt: skip
    got: dict[str, dict[str, Any]] = {}
    for url, result in results.items():
        name, _, path = url.removeprefix("http://").partition(f":{server.port}")
        got.setdefault(name.split(".")[0], {})[path] = record(result)
    assert got == ROBOTS_EXPECTED
    blocked = results[server.url("/", robots_host("to-private"))].error or ""
    assert blocked.startswith("robots: robots.txt unreachable (blocked: 127.0.0.2 is loopback")
    assert server.requests[(robots_host("to-private"), "/robots.txt")] == ATTEMPTS
    bomb = results[server.url("/sm.xml.gz", robots_host("sitemap-bomb"))]
    assert bomb.error == f"sitemap: inflates past the cap of {10 * 1024 * 1024} bytes"
    assert not [host for host, _ in server.requests if host == "127.0.0.2"]


# -- a crawl stopped around the faults, and resumed ----------------------------------------------


STOPPED = ["/never-answer", "/stall-after-headers", "/headers-cut", "/empty-response",
           "/chunk-over-cap", "/ok", "/a", "/b", "/c"]  # fmt: skip


async def _crawl_command(tmp: Path) -> asyncio.subprocess.Process:
    args = [str(tmp / "seeds.txt"), "--config", str(tmp / "c.toml"), "--state",
            str(tmp / "state"), "-o", str(tmp / "out.jsonl"), "-q"]  # fmt: skip
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawler.cli", *args, stderr=asyncio.subprocess.PIPE
    )


@pytest.mark.slow
async def test_a_crawl_interrupted_while_fetches_stall_loses_nothing(tmp_path: Path) -> None:
    async with WireServer() as server:
        resolve = ", ".join(f'"{h}" = "127.0.0.1"' for h in server.resolve)
        (tmp_path / "c.toml").write_text(
            "[crawl]\nconcurrency = 4\nmax_depth = 1\n"
            "[politeness]\ndelay = 0.0\nip_delay = 0.0\nbackoff_base = 0.05\n"
            f"[fetch]\nresolve = {{ {resolve} }}\nread_timeout = 3.0\nretries = 2\n"
        )
        seeds = [server.url(p) for p in STOPPED]
        (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
        proc = await _crawl_command(tmp_path)
        async with asyncio.timeout(30):  # stopped while the stalled fetches are in flight
            await server.stalled.wait()
        proc.send_signal(signal.SIGINT)  # the first asks the fetches in flight to finish,
        await asyncio.sleep(0.2)
        proc.send_signal(signal.SIGINT)  # the second leaves at once
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 130, err.decode()
        first = {
            json.loads(line)["url"] for line in (tmp_path / "out.jsonl").read_text().splitlines()
        }
        assert server.url("/stall-after-headers") not in first
        proc = await _crawl_command(tmp_path)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    times = Counter(r["url"] for r in records)
    assert set(times) == set(seeds), "a URL was lost"
    assert max(times.values()) == 1, "a URL was written twice after a graceful stop"
    got = {r["url"].removeprefix(server.url("")): r["status"] or r["error"].split(":")[0]
           for r in records}  # fmt: skip
    assert got == {"/never-answer": "timeout", "/stall-after-headers": "timeout",
                   "/headers-cut": "reset", "/empty-response": "reset",
                   "/chunk-over-cap": "truncated", "/ok": 200, "/a": 200, "/b": 200,
                   "/c": 200}  # fmt: skip
