"""The crawler against faults a hand-written server puts on the wire (tests/faults.py): each URL
gets one record with a clear status or error kind, the crawl never crashes nor hangs, and every
record can be written as JSON Lines and WARC."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import random
import socket
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.errors import ConnectError
from crawler.fetch.bodies import Decoder
from crawler.frontier import Frontier
from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.hosts import Host, PolitenessRules
from crawler.frontier.queues import HostQueue
from crawler.frontier.robots import DEFAULT_MAX_BYTES, RobotsPolicy, policy_from_response
from crawler.frontier.settings import Politeness
from crawler.output.jsonl import JsonlWriter, open_output
from crawler.output.results import CrawlResult
from crawler.output.warc import WarcOutput
from crawler.state.crawlstate import CrawlState
from tests.support.faults import (
    HOST,
    MODES,
    PAGES,
    ROBOTS,
    FaultServer,
    fault_config,
    record,
    robots_host,
)
from tests.support.frontier_sim import crawl as simulated_crawl
from tests.support.frontier_sim import simulate

# Each page's record: its status, or its error kind when no usable response came.
EXPECTED: dict[str, int | str] = {
    "/endless-103": "timeout",  # total_timeout (2 s here); by default too_slow after 20 s
    "/status-999": 999,
    "/status-099": 99,
    "/status-1000": "protocol",
    "/no-reason": 200,
    "/not-http": "protocol",
    "/http-0.9": "protocol",
    "/http-2-line": "protocol",
    "/100-continue": 200,
    "/103-early-hints": 200,
    "/bare-lf": 200,
    "/http-1.0-until-eof": 200,
    "/no-colon": "protocol",
    "/nul-in-header": "protocol",
    "/length-and-chunked": "protocol",
    "/length-too-short": "protocol",
    "/length-too-short-close": "protocol",  # aiohttp: "Data after `Connection: close`"
    "/negative-length": "protocol",
    "/huge-length": "protocol",
    "/bad-chunk-size": "protocol",
    "/chunk-size-overflow": "protocol",
    "/chunked-cut-short": "truncated",  # was "decoding" (and so never retried)
    "/transfer-gzip": "decoding",  # was a 200 whose body was still gzip
    "/latin1-content-type": 200,  # was a crash of the JSONL writer
    "/latin1-etag": 200,  # was a crash of the crawl state (sqlite)
    "/latin1-reason": 200,
    "/br": "decoding",
    "/zstd": "decoding",
    "/gzip-gzip": "decoding",
    "/gzip-twice": "decoding",  # was a 200 whose body was still gzip
    "/gzip-identity": 200,  # was "decoding"
    "/gzip-members": 200,  # was the first member only: the page cut after 30 bytes
    "/gzip-no-trailer": 200,  # what inflates is kept, as Scrapy and browsers do
    "/x-gzip": 200,
    "/upper-gzip": 200,
    "/identity": 200,
    "/gzip-on-plain": "decoding",
    "/raw-deflate": 200,
    "/punycode-charset": 200,  # was a parse thread stuck for hours (quadratic decoding)
    "/bogus-charset": 200,
    "/utf16-charset-no-bom": 200,
    "/utf16-no-bom-no-charset": 200,  # read as UTF-8, as browsers would: no title, no links
    "/bom-contradicts-header": 200,
    "/html-as-octet-stream": 200,
    "/xhtml": 200,
    "/one-line": 200,  # 3.2 MB, no newline
    "/pdf-as-html": 200,
    "/latin1-location": 302,
    "/space-location": 302,
    "/empty-location": 302,
    "/no-location": 302,
    "/js-location": 302,
    "/300": 300,
    "/306": 306,
    "/308": 308,
    "/unasked-304": 304,
    "/503-superscript-retry-after": 503,  # was the whole crawl ended by a worker's ValueError
    "/503-garbage-retry-after": 503,
}
# Pages read as the HTML they are: title "T", one link.
READ = ["/status-999", "/100-continue", "/103-early-hints", "/bare-lf", "/http-1.0-until-eof",
        "/latin1-content-type", "/gzip-identity", "/gzip-members", "/gzip-no-trailer",
        "/x-gzip", "/upper-gzip", "/identity", "/raw-deflate", "/punycode-charset",
        "/bogus-charset", "/utf16-charset-no-bom", "/bom-contradicts-header",
        "/html-as-octet-stream", "/xhtml", "/no-location"]  # fmt: skip


async def crawl(
    server: FaultServer, seeds: list[str], *, warc: WarcOutput | None = None, **sections: Any
) -> tuple[Crawler, dict[str, CrawlResult]]:
    recorder = None if warc is None else warc.write
    async with (
        asyncio.timeout(20),
        Crawler(fault_config(server, **sections), recorder=recorder) as c,
    ):
        results = [r async for r in c.crawl(seeds)]
    by_url = {r.url: r for r in results}
    assert len(by_url) == len(results), "a URL has two records"
    assert not [r.error for r in results if (r.error or "").startswith("internal")]
    return c, by_url


@pytest.fixture
async def server() -> AsyncIterator[FaultServer]:
    async with FaultServer() as s:
        yield s


@pytest.mark.slow
async def test_every_fault_gets_its_record(server: FaultServer, tmp_path: Path) -> None:
    assert set(EXPECTED) - {"/endless-103"} | {"/204-with-body"} == set(PAGES)
    warc = WarcOutput(tmp_path / "faults.warc.gz")
    try:
        seeds = [server.url(p) for p in [*PAGES, "/endless-103"]]
        _, results = await crawl(server, seeds, warc=warc)
    finally:
        warc.close()
    got = {path: record(results[server.url(path)]) for path in EXPECTED}
    assert got == EXPECTED
    # its body is framed as empty: "hello" is the start of a next response, which is garbage
    assert record(results[server.url("/204-with-body")]) in (204, "protocol")
    for path in READ:
        result = results[server.url(path)]
        assert (result.title, result.links) == ("T", 1), (path, result)
    # an error is one short line: the 80 KB of garbage quoted by aiohttp are cut
    error = results[server.url("/length-too-short")].error or ""
    assert error.startswith("protocol: Bad status line") and len(error) < 400, len(error)
    # every record, bad header bytes and all, can be written as UTF-8 JSON Lines and WARC
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    writer = JsonlWriter(out, sync=True)
    for result in results.values():
        writer.write(result)
    assert writer.lines == len(results)
    with (tmp_path / "faults.warc.gz").open("rb") as fh:
        uris = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh)]
    assert server.url("/latin1-content-type") in uris and server.url("/latin1-reason") in uris


async def test_bad_header_bytes_become_text(server: FaultServer) -> None:
    _, results = await crawl(server, [server.url(p) for p in ("/latin1-content-type",
                                                             "/latin1-location")])  # fmt: skip
    page = results[server.url("/latin1-content-type")]
    assert page.content_type == "text/html; charset=\ufffdt\ufffd"
    # a Location byte that is not UTF-8 is %-escaped, as browsers send it
    redirect = results[server.url("/latin1-location")]
    assert redirect.location == server.url("/caf%E9")
    assert server.requests[(HOST, "/caf%E9")] == 1


async def test_bad_header_bytes_in_the_crawl_state(server: FaultServer, tmp_path: Path) -> None:
    config = fault_config(server).override("state", dir=str(tmp_path / "state"))
    url = server.url("/latin1-etag")
    for recrawl in (False, True):
        state = CrawlState.open(config.state.dir, settings(config))
        if recrawl:
            state.start_recrawl()
        async with asyncio.timeout(20), Crawler(config, state=state) as crawler:
            results = [r async for r in crawler.crawl([url])]
        assert crawler.complete and [r.status for r in results if r.url == url] == [200]
    assert server.requests[(HOST, "/latin1-etag")] == 2  # the recrawl sent If-None-Match


async def test_redirect_oddities(server: FaultServer) -> None:
    paths = ["/space-location", "/empty-location", "/no-location", "/js-location", "/308"]
    _, results = await crawl(server, [server.url(p) for p in paths])
    assert results[server.url("/space-location")].location == server.url("/a%20b")
    # an empty Location is the page itself: recorded once, not fetched again
    assert server.requests[(HOST, "/empty-location")] == 1
    assert results[server.url("/no-location")].location is None  # a 3xx without one: a page
    assert (
        results[server.url("/js-location")].error == "redirect: bad Location 'javascript:alert(1)'"
    )
    assert record(results[server.url("/ok")]) == 200  # /308's target, /no-location's link


async def test_a_truncated_chunked_body_is_retried(server: FaultServer) -> None:
    crawler, results = await crawl(server, [server.url("/chunked-cut-short")],
                                   fetch={"retries": 2})  # fmt: skip
    assert record(results[server.url("/chunked-cut-short")]) == "truncated"
    assert server.requests[(HOST, "/chunked-cut-short")] == 3
    assert crawler.stats.retries == 2


# -- robots.txt ---------------------------------------------------------------------------------


def _host_results(
    server: FaultServer, name: str, results: dict[str, CrawlResult]
) -> dict[str, Any]:
    prefix = server.url("", robots_host(name))
    return {url[len(prefix) :]: record(r) for url, r in results.items() if url.startswith(prefix)}


ROBOTS_EXPECTED: dict[str, dict[str, Any]] = {
    # RFC 9309: 4xx is "unavailable": allow everything
    "s401": {"/": 200, "/private/x": 200, "/public": 200},
    "s403": {"/": 200, "/private/x": 200, "/public": 200},
    "html": {"/": 200, "/private/x": 200, "/public": 200},  # a soft 404: no rules
    "to-other-host": {"/": 200, "/private/x": 200, "/public": 200},  # the other host's 401
    "latin1": {"/": 200, "/private/x": "robots", "/public": 200},
    "utf16": {"/": 200, "/private/x": "robots", "/public": 200},  # was: allowed everything
    # no usable answer: nothing fetched for now, the pages refused after ATTEMPTS tries
    "s999": {"/": "robots"},  # was 3 "internal" records of robots.txt and an unclear refusal
    "s099": {"/": "robots"},
    "br": {"/": "robots"},
    "retry-after": {"/": "robots"},
    "silent": {"/": "robots"},
}
ROBOTS_REASONS = {
    "s999": "protocol: HTTP status 999 is not 100-599",
    "s099": "protocol: HTTP status 99 is not 100-599",
    "br": "decoding: unsupported Content-Encoding 'br'",
    "retry-after": "HTTP 503",
    "silent": "timeout: ",
}


ATTEMPTS = 3  # tries of a robots.txt that does not answer (the default's window: test_frontier)


@pytest.mark.slow
async def test_robots_txt_faults(
    server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert set(ROBOTS_EXPECTED) == set(ROBOTS)
    waits: dict[str, list[float | None]] = {}
    apply = PolitenessRules.robots

    def spy(rules: PolitenessRules, host: Host, policy: RobotsPolicy, now: float) -> bool:
        waits.setdefault(host.key, []).append(policy.retry_after)
        return apply(rules, host, policy, now)

    monkeypatch.setattr(PolitenessRules, "robots", spy)
    seeds = [server.url("/", robots_host(name)) for name in ROBOTS]
    warc = WarcOutput(tmp_path / "robots.warc.gz")
    try:
        _, results = await crawl(server, seeds, warc=warc, fetch={"total_timeout": 1.0},
                                 crawl={"concurrency": 9},
                                 politeness={"robots_attempts": ATTEMPTS})  # fmt: skip
    finally:
        warc.close()
    got = {name: _host_results(server, name, results) for name in ROBOTS}
    assert got == ROBOTS_EXPECTED
    for name, reason in ROBOTS_REASONS.items():
        error = results[server.url("/", robots_host(name))].error or ""
        assert error.startswith(f"robots: robots.txt unreachable ({reason}"), error
        assert server.requests[(robots_host(name), "/robots.txt")] == ATTEMPTS
    # a 503's Retry-After goes with its policy (PolitenessRules.robots waits for it, capped)
    assert waits[f"http://{robots_host('retry-after')}:{server.port}"] == [120.0] * ATTEMPTS
    assert waits[f"http://{robots_host('s999')}:{server.port}"] == [None] * ATTEMPTS


# -- connection faults -------------------------------------------------------------------------


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    ("mode", "address"),
    [*((m, "127.0.0.1") for m in MODES), ("keep-alive", "::1")],
    ids=[*MODES, "ipv6"],
)
async def test_connection_faults_lose_no_url(mode: str, address: str) -> None:
    if address == "::1" and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback")
    async with FaultServer(mode=mode, address=address) as server:
        # stale pooled connections: a request may meet closed ones; the fetcher sends it
        # again until a connection answers, costing no retry (it cost one, or with retries 0
        # the URL, "reset: server disconnected")
        config = {"fetch": {"retries": 0}, "politeness": {"per_host_concurrency": 2}}
        crawler, results = await crawl(server, [server.url("/")], **config)
    expected = {server.url("/"), *(server.url(f"/p{i}") for i in range(10))}
    assert set(results) == expected
    assert {record(r) for r in results.values()} == {200}
    assert crawler.stats.retries == 0


# -- what a server asks of our politeness --------------------------------------------------------


def _politeness() -> PolitenessRules:
    return PolitenessRules(
        Politeness(
            delay=0.0,
            per_host_concurrency=1,
            max_delay=30.0,
            adaptive=False,
            backoff_base=1.0,
            backoff_max=60.0,
            max_retry_after=600.0,
            robots_ttl=86400.0,
            robots_attempts=3,
            max_host_failures=0,
        ),
        rng=random.Random(3),
    )


@pytest.mark.parametrize(
    ("value", "wait"),
    [
        ("120", 120.0),
        ("99999999999", 600.0),  # capped at max_retry_after
        ("Fri, 31 Dec 9999 23:59:59 GMT", 600.0),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),
        # unusable: the host's own backoff (backoff_base 1 s, first failure: 0.5-1 s)
        ("\u00b2", None),  # "²".isdigit() is true: it ended the crawl
        ("-5", None),
        ("1e309", None),
        ("nan", None),
        ("soon", None),
        ("Fri, 31 Dec 99999 23:59:59 GMT", None),
    ],
)
def test_retry_after_values_are_bounded(value: str, wait: float | None) -> None:
    rules = _politeness()
    host = Host("http://a.test:80", HostQueue(), 0.0)
    rules.response(host, Outcome(status=503, retry_after=value), now=1000.0)
    waited = host.backoff_until - 1000.0
    if wait is None:
        assert 0.5 <= waited <= 1.0
    else:
        assert waited == pytest.approx(wait)


@pytest.mark.parametrize(
    ("line", "delay"),
    [("86400", 30.0), ("-5", 0.0), ("abc", 0.0), ("1e309", 0.0), ("nan", 0.0), ("2.5", 2.5)],
)
def test_absurd_crawl_delays_are_bounded_or_ignored(line: str, delay: float) -> None:
    body = f"User-agent: *\nCrawl-delay: {line}\nDisallow: /private/\n".encode()
    policy = policy_from_response(200, body, "sieve-crawler/0.1")
    host = Host("http://a.test:80", HostQueue(), 0.0)
    _politeness().robots(host, policy, now=0.0)
    assert host.delay == delay  # max_delay caps it; what is not a number >= 0 is ignored
    assert not policy.allowed("http://a.test/private/x")  # the rest of the file still counts


@pytest.mark.parametrize(
    ("status", "retry_after", "wait"),
    [(503, 120.0, 120.0), (429, 86400.0, 600.0), (503, None, None), (500, 120.0, None)],
)
def test_robots_txt_retry_after_is_honoured_and_capped(
    status: int, retry_after: float | None, wait: float | None
) -> None:
    policy = policy_from_response(status, None, "sieve-crawler/0.1", retry_after=retry_after)
    host = Host("http://a.test:80", HostQueue(), 0.0)
    _politeness().robots(host, policy, now=1000.0)  # the first failure: backoff 0.5-1 s
    waited = host.backoff_until - 1000.0
    if wait is None:
        assert 0.5 <= waited <= 1.0
    else:
        assert waited == pytest.approx(wait)


def test_a_robots_txt_cut_at_500_kib_loses_its_partial_last_line() -> None:
    # the cut falls right after "Disallow: /": parsed, that line would disallow everything
    rule = b"Disallow: /private/\n"
    head = b"User-agent: *\n" + rule * ((DEFAULT_MAX_BYTES - 100) // len(rule))
    body = head + b"#" * (DEFAULT_MAX_BYTES - len(head) - len(b"\nDisallow: /")) + b"\n"
    body += b"Disallow: /old-archive/\n"
    assert body[:DEFAULT_MAX_BYTES].endswith(b"\nDisallow: /")
    policy = policy_from_response(200, body, "sieve-crawler/0.1")
    assert policy.allowed("http://a.test/public") and not policy.allowed("http://a.test/private/")


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
def test_encoded_bodies_decode_however_the_reads_split_them(coding: str) -> None:
    first, second = b"<html>first member " * 20, b"second member</html>" * 20
    if coding == "gzip":  # two members, then junk
        data, junk = gzip.compress(first) + gzip.compress(second), b"junk"
    else:
        data = zlib.compress(first + second)
        data, junk = (data[2:-4] if coding == "raw-deflate" else data), b""
    for cut in range(1, len(data) + len(junk)):
        for cut2 in sorted({cut, cut + 1, cut + 17}):
            decoder = Decoder.make("gzip" if coding == "gzip" else "deflate")
            assert decoder is not None
            whole = data + junk
            out = b"".join(decoder.feed(part, 1 << 20)
                           for part in (whole[:cut], whole[cut:cut2], whole[cut2:]))  # fmt: skip
            assert out == first + second, (cut, cut2)


def test_jsonl_output_writes_a_lone_surrogate_as_its_json_escape(tmp_path: Path) -> None:
    # Defence in depth: the fetcher no longer lets one through (test_bad_header_bytes_...)
    result = CrawlResult(url="http://a.test/", key="http://a.test/", status=200, depth=0,
                         parent=None, fetched_at="now", title="caf\udce9")  # fmt: skip
    path = tmp_path / "out.jsonl"
    with open_output(str(path)) as out:
        JsonlWriter(out, sync=True).write(result)
    assert json.loads(path.read_text(encoding="utf-8"))["title"] == "caf\udce9"


def test_a_host_that_went_down_does_not_hold_the_crawl_for_hours() -> None:
    # robots.txt was fetched, then the host stopped answering: every URL fails to connect
    # (blame HOST, retried), each attempt after the host's backoff (capped at 300 s)
    frontier = Frontier(
        Politeness(respect_robots=False, backoff_base=1.0, backoff_max=300.0), rng=random.Random(2)
    )
    for i in range(100):
        frontier.put(Entry(url=f"http://down.test/{i}", key=f"http://down.test/{i}"))

    def respond(entry: Entry, start: float) -> tuple[Outcome | None, bool]:
        return Outcome(blame=ConnectError.blame, attempt=entry.retries), entry.retries < 2

    log = simulate(lambda: simulated_crawl(frontier, workers=4, fetch=0.01, respond=respond))
    assert {entry.url for _, _, entry in log} == {f"http://down.test/{i}" for i in range(100)}
    # 300 attempts ~220 s apart: 18 simulated hours before the crawl can end
    assert max(start for start, _, _ in log) < 3600.0
