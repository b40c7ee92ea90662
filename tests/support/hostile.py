"""A hostile web server for the tests: every way a server can try to break a crawler.

Two listeners, both on loopback:

- an aiohttp app on 127.0.0.1 serving the virtual hosts ``hostile.test`` (every case below, so
  the whole suite is one host to a crawler) and the ``robots-*.test`` hosts (each with a broken
  robots.txt). `RAW_CASES` are what aiohttp.web cannot do wrong enough (connection resets, bad
  Content-Length, slowloris, oversized headers): their handler takes the connection over and
  writes bytes on the socket itself;
- a "private" server on 127.0.0.2 that only counts connections: the forbidden target of the
  SSRF cases (reached as the literal IP and as ``private.test``, which resolves there).

The crawler reaches the names through its resolver override (`resolve`), never /etc/hosts.
`WEB_CASES` and `RAW_CASES` map each case's path to what it does; ``/`` links them all. Every
request is counted in `requests` as (host, path and query).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import html
import itertools
import random
import resource
import socket
import struct
import zlib
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Any

import pytest
from aiohttp import web

from crawler.config.load import Config

__all__ = [
    "HOST",
    "PRIVATE_NAME",
    "RAW_CASES",
    "ROBOTS_HOSTS",
    "UNLINKED_CASES",
    "WEB_CASES",
    "HostileServer",
    "MiB",
    "hostile_config",
    "peak_rss_growth",
    "server",
]

HOST = "hostile.test"
PRIVATE_NAME = "private.test"
PRIVATE_IP = "127.0.0.2"
ROBOTS_HOSTS = {
    "huge": "robots-huge.test",  # endless robots.txt (cut at 500 KiB by the crawler)
    "binary": "robots-binary.test",  # 64 KiB of random bytes
    "5xx": "robots-5xx.test",  # 503: RFC 9309 says disallow everything for now
    "gzip-tail": "robots-gzip-tail.test",  # small gzip robots.txt, then endless junk
}
MiB = 1024 * 1024
BOMB_MIB = 1024  # the gzip bomb inflates to 1 GiB
LINKS = 10_000
NESTING = 100_000

WEB_CASES = {
    "/redirect-chain/0": "302 to /redirect-chain/1, and so on forever",
    "/loop/a": "302 to /loop/b, which 302s back to /loop/a",
    "/to-private-ip": "302 to http://127.0.0.2:PORT/secret (SSRF)",
    "/to-private-name": "302 to http://private.test:PORT/secret, a name for 127.0.0.2 (SSRF)",
    "/gzip-bomb": "1 GiB of zeros as ~1 MiB of gzip",
    "/endless": "an HTML body streamed forever",
    "/many-links": f"{LINKS} distinct links",
    "/deep-nesting": f"{NESTING} nested <div>s around a link",
    "/bad-hrefs": "invalid and enormous hrefs",
    "/calendar/2026/01": "an endless calendar: next month and next year, forever",
    "/trap/": "relative links a/ and b/ on every page: /trap/a/b/a/...",
    "/grow/": "each page links to a deeper path with a new segment",
    "/long/": "each page links to a path 200 characters longer",
    "/params": "each page links to its own URL with one more query parameter",
    "/status/404": "404 Not Found",
    "/status/500": "500 Internal Server Error",
}
STRAY_PAIRS = 20_000
# Not linked from the index (the whole-site test): a pinned bug, see test_tag_flood; markup
# that keeps lexbor busy (~0.5 s), and plain pages to parse meanwhile.
UNLINKED_CASES = {
    "/tag-flood": "10 MB of <a href=x>: a million elements, just under max_body",
    "/stray-end-tags": f"{STRAY_PAIRS} x <div></b>: nesting the guard does not see",
    "/filler/N": "36 KB of paragraphs, no links",
}
RAW_CASES = {
    "/reset": "the connection is reset before any response",
    "/reset-mid-body": "reset after part of the body",
    "/bad-length": "Content-Length: abc",
    "/two-lengths": "two different Content-Length headers",
    "/short-body": "Content-Length: 100000, then 10 bytes and close",
    "/slowloris": "the status line, one byte per second",
    "/slow-body": "headers at once, then the body one byte per second",
    "/huge-header": "one 1 MiB header line",
    "/many-headers": "10,000 small headers",
    "/endless-headers": "1 KiB header lines, forever",
}


def _gzip_bomb(mib: int) -> Iterator[bytes]:
    """A valid gzip stream of `mib` MiB of zeros, made without ever holding them inflated: the
    deflate stream of one MiB of zeros after a full flush is the same bytes every time."""
    zeros = bytes(MiB)
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    yield z.compress(zeros) + z.flush(zlib.Z_FULL_FLUSH)
    block = z.compress(zeros) + z.flush(zlib.Z_FULL_FLUSH)
    for _ in range(mib - 1):
        yield block
    crc = 0
    for _ in range(mib):  # reached only by a client that inflated the whole bomb
        crc = zlib.crc32(zeros, crc)
    yield zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush()  # final empty block
    yield struct.pack("<II", crc, (mib * MiB) & 0xFFFFFFFF)


def _page(title: str, hrefs: list[str], extra: str = "") -> web.Response:
    items = "".join(f'<a href="{html.escape(h, quote=True)}">x</a>\n' for h in hrefs)
    body = f"<!DOCTYPE html><html><head><title>{title}</title></head><body>{items}{extra}</body>"
    return web.Response(text=body + "</html>", content_type="text/html")


async def _stream(
    request: web.Request, chunks: Iterator[bytes], headers: dict[str, str], *, pause: float = 0
) -> web.StreamResponse:
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    with contextlib.suppress(ConnectionError):  # the crawler hangs up: that is the point
        for chunk in chunks:
            await response.write(chunk)
            if pause:
                await asyncio.sleep(pause)
    return response


def _forever(chunk: bytes) -> Iterator[bytes]:
    while True:
        yield chunk


class HostileServer:
    """`async with HostileServer() as server:` serves every case on loopback."""

    def __init__(self) -> None:
        self.port = self.private_port = 0
        self.requests: list[tuple[str, str]] = []  # (host, path and query) of every request
        self.private_connections = 0
        self._runner: web.AppRunner | None = None
        self._servers: list[asyncio.Server] = []

    # -- addresses -------------------------------------------------------------------------

    def url(self, path: str, host: str = HOST) -> str:
        return f"http://{host}:{self.port}{path}"

    @property
    def resolve(self) -> dict[str, str]:
        names = {name: "127.0.0.1" for name in (HOST, *ROBOTS_HOSTS.values())}
        return {**names, PRIVATE_NAME: PRIVATE_IP}

    @property
    def seeds(self) -> list[str]:
        return [self.url("/"), *(self.url("/", h) for h in ROBOTS_HOSTS.values())]

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        assert isinstance(site._server, asyncio.Server)
        self.port = site._server.sockets[0].getsockname()[1]
        private = await asyncio.start_server(self._private, PRIVATE_IP, 0)
        self._servers = [private]
        self.private_port = private.sockets[0].getsockname()[1]

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            await server.wait_closed()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> HostileServer:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- the aiohttp app -------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        host = request.host.rsplit(":", 1)[0].lower()
        self.requests.append((host, request.path_qs))
        if host != HOST:
            return await self._robots_host(request, host)
        path = request.path
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private/\n")
        if path == "/":
            return _page("Hostile", [*WEB_CASES, *RAW_CASES])
        if path in RAW_CASES:
            return await self._raw(request, path)
        if path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            return web.Response(status=status, text=f"status {status}", content_type="text/html")
        if path.startswith("/redirect-chain/"):
            n = int(path.rsplit("/", 1)[1])
            return web.Response(status=302, headers={"Location": f"/redirect-chain/{n + 1}"})
        redirects = {
            "/loop/a": "/loop/b",
            "/loop/b": "/loop/a",
            "/to-private-ip": f"http://{PRIVATE_IP}:{self.private_port}/secret",
            "/to-private-name": f"http://{PRIVATE_NAME}:{self.private_port}/secret",
        }
        if path in redirects:
            return web.Response(status=302, headers={"Location": redirects[path]})
        if path == "/gzip-bomb":
            headers = {"Content-Type": "text/html", "Content-Encoding": "gzip"}
            return await _stream(request, _gzip_bomb(BOMB_MIB), headers)
        if path == "/endless":
            chunk = b"<p>" + b"endless " * 8190 + b"</p>\n"
            return await _stream(request, _forever(chunk), {"Content-Type": "text/html"})
        return self._pages(path, request.query_string)

    def _pages(self, path: str, query: str) -> web.Response:
        if path == "/many-links":
            return _page("Many links", [f"/many/{i}" for i in range(LINKS)])
        if path == "/deep-nesting":
            inner = '<a href="/deep-target">deep</a>'
            return _page("Deep", [], extra="<div>" * NESTING + inner + "</div>" * NESTING)
        if path == "/tag-flood":
            return web.Response(body=b"<a href=x>" * 1_000_000, content_type="text/html")
        if path == "/stray-end-tags":
            return web.Response(body=b"<div></b>" * STRAY_PAIRS, content_type="text/html")
        if path.startswith("/filler/"):
            return web.Response(body=b"<p>filler text</p>" * 2000, content_type="text/html")
        if path == "/bad-hrefs":
            return _page("Bad hrefs", _bad_hrefs())
        if path.startswith("/calendar/"):
            year, month = (int(p) for p in path.split("/")[2:4])
            nxt = (year, month + 1) if month < 12 else (year + 1, 1)
            return _page("Calendar", [f"/calendar/{nxt[0]}/{nxt[1]:02d}",
                                      f"/calendar/{year + 1}/{month:02d}"])  # fmt: skip
        if path.startswith("/trap/"):
            return _page("Trap", ["a/", "b/"])
        if path.startswith("/grow/"):
            return _page("Grow", [f"s{path.count('/')}/"])
        if path.startswith("/long/"):
            return _page("Long", [f"{path.count('/'):03d}{'x' * 196}/"])
        if path == "/params":
            n = query.count("&") + 1 if query else 0
            return _page("Params", [f"/params?{query}&p{n}=1" if query else "/params?p0=1"])
        return _page("Plain", [])

    async def _robots_host(self, request: web.Request, host: str) -> web.StreamResponse:
        if request.path != "/robots.txt":
            return _page(f"Page of {host}", ["/private/x", "/public"])
        if host == ROBOTS_HOSTS["huge"]:
            first = b"User-agent: *\nDisallow: /private/\n"
            filler = b"# " + b"filler " * 1000 + b"\n"
            return await _stream(request, itertools.chain([first], _forever(filler)), {})
        if host == ROBOTS_HOSTS["binary"]:
            junk = random.Random(8).randbytes(64 * 1024)
            return web.Response(body=junk, content_type="text/plain")
        if host == ROBOTS_HOSTS["gzip-tail"]:
            robots = zlib.compress(b"User-agent: *\nDisallow: /private/\n", wbits=31)
            headers = {"Content-Encoding": "gzip", "Content-Type": "text/plain"}
            return await _stream(
                request, itertools.chain([robots], _forever(b"junk" * 16384)), headers
            )
        return web.Response(status=503, text="down")

    # -- the raw cases ---------------------------------------------------------------------

    async def _raw(self, request: web.Request, path: str) -> web.StreamResponse:
        """Take the connection over from aiohttp, misbehave on it, close it, and wait for aiohttp
        to cancel this handler (``handler_cancellation``: the connection is gone)."""
        transport = request.transport
        assert transport is not None
        with contextlib.suppress(ConnectionError):
            await self._raw_case(path, transport)
        if not transport.is_closing():
            transport.close()
        await asyncio.Event().wait()  # cancelled once aiohttp sees the connection lost
        raise AssertionError("unreachable")

    async def _raw_case(self, path: str, transport: asyncio.Transport) -> None:
        if path in ("/reset", "/reset-mid-body"):
            if path == "/reset-mid-body":
                transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
                transport.write(b"Content-Length: 100000\r\n\r\n<html><body>" + b"x" * 5000)
                await asyncio.sleep(0.05)
            sock = transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()  # SO_LINGER 0: the kernel sends RST
            return
        fixed = {
            "/bad-length": b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nhello",
            "/two-lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n"
            b"hello!!",
            "/short-body": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
            b"Content-Length: 100000\r\n\r\n<html>0123",
            "/many-headers": b"HTTP/1.1 200 OK\r\n"
            + b"".join(b"X-H%d: v\r\n" % i for i in range(10_000))
            + b"Content-Length: 0\r\n\r\n",
        }
        if path in fixed:
            transport.write(fixed[path])
            return
        if path == "/huge-header":
            lines = itertools.chain([b"HTTP/1.1 200 OK\r\nX-Big: "], [b"y" * 1024] * 1024)
            await _write_all(transport, itertools.chain(lines, [b"\r\n\r\n"]))
            return
        if path == "/endless-headers":
            lines = (b"X-E%d: %s\r\n" % (i, b"e" * 1000) for i in range(1_000_000))
            await _write_all(transport, itertools.chain([b"HTTP/1.1 200 OK\r\n"], lines))
            return
        if path == "/slowloris":
            await _write_all(
                transport, _bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), 1.0
            )
            return
        assert path == "/slow-body"
        transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n"
        )
        await _write_all(transport, _bytes(b"x" * 1000), 1.0)

    async def _private(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The SSRF target: count the connection, answer 200 so a leak is visible."""
        self.private_connections += 1
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecret")
            await writer.drain()
        writer.close()


def _bytes(data: bytes) -> Iterator[bytes]:
    return (data[i : i + 1] for i in range(len(data)))


async def _write_all(
    transport: asyncio.Transport, chunks: Iterator[bytes], pause: float = 0
) -> None:
    """Write `chunks`, `pause` seconds apart, never buffering more than 256 KiB: stop when the
    client hangs up."""
    for chunk in chunks:
        while True:
            if transport.is_closing():
                return
            if transport.get_write_buffer_size() <= 256 * 1024:
                break
            await asyncio.sleep(0.01)
        transport.write(chunk)
        if pause:
            await asyncio.sleep(pause)


def _bad_hrefs() -> list[str]:
    enormous = "/" + "e" * (1024 * 1024)  # 1 MiB: refused by the URL length limit
    return [
        "http://[::1",
        "http://a b.test/",
        "http://%zz/",
        "http://" + "a" * 300 + ".test/",
        f"http://{HOST}:99999/",
        f"http://{HOST}:-1/",
        "http://user:pass@/",
        "javascript:alert(1)",
        "data:text/html,<a href=x>",
        "\x00\x01\x02",
        "http://\u0000.test/",
        "/ok-after-bad",
        "/" + "l" * 3000,  # over 2048 characters
        enormous,
        "?" + "&".join(f"q{i}=1" for i in range(100)),  # too many query parameters
    ]


MiB = 1024 * 1024


MAX_BODY = 10 * MiB


TOTAL_TIMEOUT = 2.0  # the per-fetch time limit: slowloris cases end here


@pytest.fixture
async def server() -> AsyncIterator[HostileServer]:
    async with HostileServer() as s:
        yield s


def hostile_config(server: HostileServer, **sections: dict[str, Any]) -> Config:
    """Fast, no retries, no politeness delay; `sections` override keys per config section."""
    config = Config().override(
        "fetch",
        resolve=server.resolve,
        retries=0,
        connect_timeout=2.0,
        read_timeout=5.0,
        total_timeout=TOTAL_TIMEOUT,
        max_body=MAX_BODY,
    )
    config = config.override(
        "politeness", delay=0.0, ip_delay=0.0, backoff_base=0.05, backoff_max=0.2
    )
    config = config.override("crawl", concurrency=4, max_depth=2, max_pages=500)
    for section, values in sections.items():
        config = config.override(section, **values)
    return config


def _proc_kib(field: str) -> int | None:
    with contextlib.suppress(OSError), open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


@contextlib.contextmanager
def peak_rss_growth() -> Iterator[list[int]]:
    """Yields a list that receives, at exit, how many bytes peak RSS rose above the RSS at entry.

    Linux: the kernel's high-water mark (VmHWM) is reset first (clear_refs 5), so the peak is
    this block's own. Elsewhere ru_maxrss is used, which can only under-report.
    """
    gc.collect()
    reset = False
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
        reset = True
    before = _proc_kib("VmRSS") if reset else None
    if before is None:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out: list[int] = []
    yield out
    peak = _proc_kib("VmHWM") if reset else None
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out.append(max(0, peak - before) * 1024)
