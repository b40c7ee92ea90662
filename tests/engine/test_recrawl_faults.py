"""Conditional recrawl against servers that get conditional requests wrong or fail during a
recrawl: a 5xx keeps the stored validators, a 304 to a request without validators is not
"unchanged", a 304's new validators are stored, a 412 is fetched again unconditionally."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from multidict import CIMultiDict

from crawler.cli.run import run
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from crawler.state.crawlstate import CrawlState
from tests.support.server import serve

LM = "Sat, 01 Nov 2025 10:00:00 GMT"
Sent = tuple[int, str, str | None, str | None]  # (generation, path, If-None-Match, IMS)
Answer = Callable[[web.Request], web.StreamResponse]


@dataclass
class Server:
    """/ links /a and /b; every page has ETag "<path>" and a Last-Modified. `answers` replaces
    a page's response in one generation: (generation, path) -> handler."""

    generation: int = 0
    answers: dict[tuple[int, str], Answer] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    port: int = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        inm = request.headers.get("If-None-Match")
        ims = request.headers.get("If-Modified-Since")
        self.sent.append((self.generation, request.path, inm, ims))
        answer = self.answers.get((self.generation, request.path))
        if answer is not None:
            return answer(request)
        etag = f'"{request.path}"'
        headers = {"ETag": etag, "Last-Modified": LM}
        if inm == etag:
            return web.Response(status=304, headers=headers)
        links = '<a href="/a">a</a><a href="/b">b</a>' if request.path == "/" else ""
        return web.Response(text=f"<p>{request.path}</p>{links}", content_type="text/html",
                            headers=headers)  # fmt: skip

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def requests(self, generation: int, path: str) -> list[tuple[str | None, str | None]]:
        return [(inm, ims) for g, p, inm, ims in self.sent if (g, p) == (generation, path)]


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    s = Server()
    async with serve(s.handle) as port:
        s.port = port
        yield s


def config(tmp: Path) -> Config:
    c = Config().override(
        "politeness", delay=0.0, ip_delay=0.0, backoff_base=0.01, backoff_max=0.02
    )
    return c.override("fetch", retries=1).override("state", dir=str(tmp / "state"))


async def generation(cfg: Config, server: Server, n: int) -> dict[str, CrawlResult]:
    """Run generation `n` (0: the first crawl, else a recrawl) to its end; results by path."""
    server.generation = n
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    if n:
        state.start_recrawl()
    async with Crawler(cfg, state=state) as crawler:
        results = [r async for r in crawler.crawl([server.url("/")])]
    assert crawler.complete
    return {r.url.removeprefix(server.url("")): r for r in results}


def stored(cfg: Config, server: Server, path: str) -> tuple[str | None, str | None] | None:
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    try:
        return state.validators(server.url(path))
    finally:
        state.abandon()


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_a_server_error_in_a_recrawl_keeps_the_validators(
    server: Server, tmp_path: Path, status: int
) -> None:
    cfg = config(tmp_path)
    await generation(cfg, server, 0)
    server.answers[(1, "/a")] = lambda _: web.Response(status=status, text="down")
    assert (await generation(cfg, server, 1))["/a"].status == status
    assert stored(cfg, server, "/a") == ('"/a"', LM)  # the page did not change: the server failed
    assert (await generation(cfg, server, 2))["/a"].unchanged
    assert server.requests(2, "/a") == [('"/a"', LM)]  # still a conditional request


async def test_a_page_gone_clears_the_validators(server: Server, tmp_path: Path) -> None:
    cfg = config(tmp_path)
    await generation(cfg, server, 0)
    server.answers[(1, "/a")] = lambda _: web.Response(status=410, text="gone")
    assert (await generation(cfg, server, 1))["/a"].status == 410
    assert stored(cfg, server, "/a") is None
    await generation(cfg, server, 2)
    assert server.requests(2, "/a") == [(None, None)]


async def test_a_304_to_a_request_without_validators_is_not_unchanged(
    server: Server, tmp_path: Path
) -> None:
    cfg = config(tmp_path)
    server.answers[(0, "/a")] = lambda _: web.Response(status=304)  # nothing was asked
    first = await generation(cfg, server, 0)
    assert server.requests(0, "/a") == [(None, None)]
    a = first["/a"]
    assert a.status == 304 and not a.unchanged
    assert a.error is not None and "without validators" in a.error
    assert first["/b"].unchanged is False and first["/"].status == 200


async def test_a_304_with_new_validators_updates_the_stored_ones(
    server: Server, tmp_path: Path
) -> None:
    cfg = config(tmp_path)
    await generation(cfg, server, 0)
    new = {"ETag": 'W/"a-2"', "Last-Modified": "Sun, 02 Nov 2025 10:00:00 GMT"}
    server.answers[(1, "/a")] = lambda _: web.Response(status=304, headers=new)
    server.answers[(1, "/b")] = lambda _: web.Response(status=304)  # none: the stored kept
    again = await generation(cfg, server, 1)
    assert again["/a"].unchanged and again["/b"].unchanged
    assert stored(cfg, server, "/a") == (new["ETag"], new["Last-Modified"])  # RFC 9111 4.3.4
    assert stored(cfg, server, "/b") == ('"/b"', LM)
    await generation(cfg, server, 2)
    assert server.requests(2, "/a") == [(new["ETag"], new["Last-Modified"])]


async def test_a_412_to_a_conditional_get_is_fetched_again_unconditionally(
    server: Server, tmp_path: Path
) -> None:
    cfg = config(tmp_path)
    await generation(cfg, server, 0)

    def refuse(request: web.Request) -> web.Response:  # a server that fails If-None-Match
        if "If-None-Match" in request.headers:
            return web.Response(status=412)
        return web.Response(text='<a href="/c">c</a>', content_type="text/html",
                            headers={"ETag": '"a-2"'})  # fmt: skip

    server.answers[(1, "/a")] = refuse
    again = await generation(cfg, server, 1)
    assert server.requests(1, "/a") == [('"/a"', LM), (None, None)]
    a = again["/a"]
    assert (a.status, a.unchanged, a.links, a.new_links) == (200, False, 1, 1)
    assert "/c" in again
    assert stored(cfg, server, "/a") == ('"a-2"', None)


@pytest.mark.parametrize("dedup", [(False, True), (True, False, True)], ids=["off-on", "on-off-on"])
async def test_dedup_turned_on_over_a_run_without_it_says_what_it_misses(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture, dedup: tuple[bool, ...]
) -> None:
    """The pages a run without dedup fetched are not in the index: a later run with it on
    cannot find their duplicates (here /b repeats /a, answered 304), and says so. Before, it
    said nothing."""
    same = '<p>the same words on two pages of this site</p><a href="/">home</a>'
    server.answers[(len(dedup) - 1, "/b")] = lambda _: web.Response(
        text=same, content_type="text/html"
    )
    for n, on in enumerate(dedup):
        if n < len(dedup) - 1:
            server.answers[(n, "/a")] = lambda _: web.Response(
                text=same, content_type="text/html", headers={"ETag": '"/a"'})  # fmt: skip
        caplog.clear()
        results = await generation(config(tmp_path).override("dedup", enabled=on), server, n)
    assert results["/a"].unchanged
    if dedup[0] is False:  # the index never had /a's text (with "on-off-on" it has, from run 0)
        assert results["/b"].duplicate_of is None
    assert "content dedup was off for part of this crawl" in caplog.text
    caplog.clear()  # the finished crawl run again without dedup: nothing to say
    off = config(tmp_path)
    state = CrawlState.open(off.state.dir, settings(off))
    async with Crawler(off, state=state) as crawler:
        assert [r async for r in crawler.crawl([server.url("/")])] == []
    assert "content dedup was off" not in caplog.text


async def test_dedup_on_in_every_run_finds_duplicates_across_a_recrawl(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    same = '<p>the same words on two pages of this site</p><a href="/">home</a>'
    server.answers[(0, "/a")] = lambda _: web.Response(
        text=same, content_type="text/html", headers={"ETag": '"/a"'})  # fmt: skip
    server.answers[(1, "/b")] = lambda _: web.Response(text=same, content_type="text/html")
    cfg = config(tmp_path).override("dedup", enabled=True)
    await generation(cfg, server, 0)
    off = config(tmp_path)  # the finished crawl run again without dedup: nothing fetched
    state = CrawlState.open(off.state.dir, settings(off))
    async with Crawler(off, state=state) as crawler:
        assert [r async for r in crawler.crawl([server.url("/")])] == []
    assert "content dedup was off" not in caplog.text  # (and a run without it says nothing)
    again = await generation(cfg, server, 1)
    assert again["/a"].unchanged and again["/b"].duplicate_of == server.url("/a")
    assert "content dedup was off" not in caplog.text


async def test_a_recrawl_killed_then_resumed_reports_every_url_once_and_counts_it_once(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config(tmp_path).override("crawl", concurrency=1)
    await generation(cfg, server, 0)
    server.generation = 1
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    state.start_recrawl()
    first: list[str] = []
    with monkeypatch.context() as patch:  # the process dies after its 2nd completion
        patch.setattr(CrawlState, "close", lambda self, *_: self._release())
        async with (
            Crawler(cfg, state=state) as crawler,
            contextlib.aclosing(crawler.crawl([server.url("/")])) as results,
        ):
            async for result in results:
                if len(first) == 2:
                    break
                first.append(result.key)
    out = io.StringIO()  # the same command: resumes the recrawl (no third generation)
    assert (await run(cfg, [server.url("/")], out, quiet=True, recrawl=True)).status == 0
    rest = [json.loads(line) for line in out.getvalue().splitlines()]
    everything = sorted(server.url(p) for p in ("/", "/a", "/b"))
    assert sorted(first + [r["url"] for r in rest]) == everything
    assert all(r["unchanged"] for r in rest)
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    try:
        saved = state.stats()
        assert state.generation == 1 and state.previous_status == "finished"
        assert saved is not None and (saved["pages"], saved["unchanged"]) == (3, 3)
    finally:
        state.abandon()


@pytest.mark.parametrize(
    "etags",
    [['W/"weak"'], ['"abc-gzip"'], ["no-quotes"], ['W/"first"', '"second"']],
    ids=["weak", "mod_deflate", "unquoted", "several"],
)
async def test_validators_go_back_as_they_came(
    server: Server, tmp_path: Path, etags: list[str]
) -> None:
    """What real servers send: a weak ETag, Apache mod_deflate's suffixed one, an invalid one
    without quotes, several ETag headers (the first is kept)."""
    headers = CIMultiDict([("ETag", etag) for etag in etags])
    server.answers[(0, "/a")] = lambda _: web.Response(text="a", headers=headers)
    cfg = config(tmp_path)
    await generation(cfg, server, 0)
    assert stored(cfg, server, "/a") == (etags[0], None)
    await generation(cfg, server, 1)
    assert server.requests(1, "/a") == [(etags[0], None)]


@contextlib.asynccontextmanager
async def raw_server(body_after_304: bytes) -> AsyncIterator[tuple[int, list[str | None]]]:
    """An HTTP/1.1 server (no framework to tidy its answers): / links /a; a conditional request
    gets a 304 with `body_after_304` after it (a body a 304 cannot have, RFC 9110 15.4.5)."""
    sent: list[str | None] = []  # the If-None-Match of each request for /a

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                path = head[0].split()[1]
                inm = next((h.split(":", 1)[1].strip() for h in head[1:]
                            if h.lower().startswith("if-none-match:")), None)  # fmt: skip
                sent.extend([inm] if path == "/a" else [])
                body = b'<a href="/a">a</a>' if path in ("/", "/a") else b""
                status = "404 Not Found" if path == "/robots.txt" else "200 OK"
                if inm is not None:
                    writer.write(b'HTTP/1.1 304 Not Modified\r\nETag: "x"\r\n'
                                 b"Content-Length: %d\r\n\r\n" % len(body_after_304)
                                 + body_after_304)  # fmt: skip
                else:
                    head = f'HTTP/1.1 {status}\r\nETag: "x"\r\nContent-Type: text/html\r\n'
                    writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], sent
    finally:
        server.close()
        await server.wait_closed()


async def test_a_304_with_a_body_is_fetched_again_unconditionally(tmp_path: Path) -> None:
    """A body after a 304 breaks the connection's framing: aiohttp reads it as the next
    response's status line (a protocol error). Before, the page failed in every recrawl (its
    validators kept, the same 304 each time); now it is fetched again without them."""
    async with raw_server(b"<html>not modified</html>") as (port, sent):
        cfg = config(tmp_path)
        server = Server(port=port)
        assert (await generation(cfg, server, 0))["/a"].status == 200
        a = (await generation(cfg, server, 1))["/a"]
    assert sent == [None, '"x"', None]
    assert (a.status, a.error, a.links) == (200, None, 1)
