"""A raw TCP server for faults aiohttp.web cannot produce: bytes on the wire, written by hand.

`FaultServer` listens on loopback (127.0.0.1, or ::1) and answers each request with canned bytes:
`PAGES` by path on ``faults.test``; `ROBOTS` by host, the robots.txt of ``<name>.robots.test``
(every other path of those hosts is a page linking ``/private/x`` and ``/public``). With a
`mode` it serves a page linking ``/p0`` ... ``/p9`` and misbehaves at the connection level:
each response without ``Connection: close``, then (``keep-alive``) nothing wrong, (``close``) a
close, (``rst``) a reset, (``half-close``) a body ended by EOF while the server keeps reading.
`requests` counts every request as (host, path).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import struct
import zlib
from collections import Counter
from types import TracebackType
from typing import Any

from crawler.config.load import Config
from crawler.output.results import CrawlResult

__all__ = [
    "HOST", "MODES", "PAGES", "ROBOTS", "FaultServer", "fault_config", "record", "robots_host",
]  # fmt: skip

HOST = "faults.test"
HTML = b"<html><head><title>T</title></head><body><a href='/ok'>ok</a></body></html>"


def _response(
    status: bytes = b"200 OK",
    headers: bytes = b"Content-Type: text/html\r\n",
    body: bytes = HTML,
) -> bytes:
    length = b"Content-Length: %d\r\n" % len(body)
    return b"HTTP/1.1 " + status + b"\r\n" + headers + length + b"Connection: close\r\n\r\n" + body


def _encoded(coding: bytes, body: bytes) -> bytes:
    return _response(headers=b"Content-Type: text/html\r\n" + coding, body=body)


_CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: "
_ZIPPED = gzip.compress(HTML)
PAGES = {
    # the status line
    "/status-999": _response(b"999 Request denied"),  # LinkedIn's answer to crawlers
    "/status-099": _response(b"099 Low"),
    "/status-1000": _response(b"1000 Four digits"),
    "/no-reason": _response(b"200"),
    "/not-http": b"hello, this is not HTTP\r\n\r\n",
    "/http-0.9": HTML,  # a body with no status line, no headers
    "/http-2-line": b"HTTP/2 200\r\nContent-Length: 2\r\n\r\nok",
    "/100-continue": b"HTTP/1.1 100 Continue\r\n\r\n" + _response(),
    "/103-early-hints": b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
    + _response(),
    "/bare-lf": _response().replace(b"\r\n", b"\n"),
    "/http-1.0-until-eof": b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n" + HTML,
    "/204-with-body": b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello",
    # headers and framing
    "/no-colon": b"HTTP/1.1 200 OK\r\nBroken header line\r\nContent-Length: 2\r\n\r\nok",
    "/nul-in-header": b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nok",
    "/length-and-chunked": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: "
    b"chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "/length-too-short": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\n"
    + HTML * 1000,  # 80 KB more than the framing says: aiohttp quotes it all in its error
    "/length-too-short-close": _response(body=HTML)[: -len(HTML)].replace(
        b"Content-Length: %d" % len(HTML), b"Content-Length: 20"
    )
    + HTML,  # a proxy rewrote the body, not its length: browsers show the first 20 bytes
    "/negative-length": b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok",
    "/huge-length": b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nok",
    "/bad-chunk-size": _CHUNKED + b"chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "/chunk-size-overflow": _CHUNKED + b"chunked\r\n\r\nffffffffffffffffff\r\nhello",
    "/chunked-cut-short": _CHUNKED + b"chunked\r\n\r\n5\r\nhello\r\n",
    "/transfer-gzip": _CHUNKED
    + b"gzip, chunked\r\n\r\n%x\r\n" % len(_ZIPPED)
    + _ZIPPED
    + b"\r\n0\r\n\r\n",
    "/latin1-content-type": _response(headers=b"Content-Type: text/html; charset=\xe9t\xe9\r\n"),
    "/latin1-etag": _response(headers=b'Content-Type: text/html\r\nETag: "caf\xe9"\r\n'),
    "/latin1-reason": _response(b"200 Tr\xe8s bien"),
    # content codings
    "/br": _encoded(b"Content-Encoding: br\r\n", HTML),
    "/zstd": _encoded(b"Content-Encoding: zstd\r\n", HTML),
    "/gzip-gzip": _encoded(b"Content-Encoding: gzip, gzip\r\n", gzip.compress(_ZIPPED)),
    "/gzip-twice": _encoded(
        b"Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n", gzip.compress(_ZIPPED)
    ),
    "/gzip-identity": _encoded(b"Content-Encoding: gzip, identity\r\n", _ZIPPED),
    "/gzip-members": _encoded(
        b"Content-Encoding: gzip\r\n", gzip.compress(HTML[:30]) + gzip.compress(HTML[30:])
    ),
    "/gzip-no-trailer": _encoded(b"Content-Encoding: gzip\r\n", _ZIPPED[:-8]),
    "/x-gzip": _encoded(b"Content-Encoding: x-gzip\r\n", _ZIPPED),
    "/upper-gzip": _encoded(b"Content-Encoding: GZIP\r\n", _ZIPPED),
    "/identity": _encoded(b"Content-Encoding: identity\r\n", HTML),
    "/gzip-on-plain": _encoded(b"Content-Encoding: gzip\r\n", HTML),
    "/raw-deflate": _encoded(b"Content-Encoding: deflate\r\n", zlib.compress(HTML)[2:-4]),
    # charsets and content types
    # punycode is a Python text codec, and quadratic: 256 KB took 25 s
    "/punycode-charset": _response(
        headers=b"Content-Type: text/html; charset=punycode\r\n",
        body=HTML + b"-" + b"abcdefghijklmnopqrstuvwxyz" * 20_000,
    ),
    "/bogus-charset": _response(headers=b"Content-Type: text/html; charset=klingon\r\n"),
    "/utf16-charset-no-bom": _response(
        headers=b"Content-Type: text/html; charset=utf-16\r\n",
        body=HTML.decode().encode("utf-16-le"),
    ),
    "/utf16-no-bom-no-charset": _response(body=HTML.decode().encode("utf-16-le")),
    "/bom-contradicts-header": _response(
        headers=b"Content-Type: text/html; charset=latin-1\r\n", body=b"\xef\xbb\xbf" + HTML
    ),
    "/html-as-octet-stream": _response(headers=b"Content-Type: application/octet-stream\r\n"),
    "/xhtml": _response(
        headers=b"Content-Type: application/xhtml+xml\r\n",
        body=b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>T'
        b"</title></head><body><a href='/ok'>ok</a></body></html>",
    ),
    "/one-line": _response(body=b"<html><body>" + b"<b>x</b>" * 400_000 + b"</body></html>"),
    "/pdf-as-html": _response(body=b"%PDF-1.4\n" + bytes(range(256)) * 64),
    # redirects
    "/latin1-location": b"HTTP/1.1 302 Found\r\nLocation: /caf\xe9\r\nContent-Length: 0\r\n\r\n",
    "/space-location": b"HTTP/1.1 302 Found\r\nLocation: /a b\r\nContent-Length: 0\r\n\r\n",
    "/empty-location": b"HTTP/1.1 302 Found\r\nLocation: \r\nContent-Length: 0\r\n\r\n",
    "/no-location": _response(b"302 Found"),
    "/js-location": b"HTTP/1.1 302 Found\r\nLocation: javascript:alert(1)\r\nContent-Length: 0"
    b"\r\n\r\n",
    "/300": b"HTTP/1.1 300 Multiple\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n",
    "/306": b"HTTP/1.1 306 Unused\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n",
    "/308": b"HTTP/1.1 308 Permanent\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n",
    "/unasked-304": b"HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n",
    # Retry-After: "²".isdigit() is true, float("²") raises
    "/503-superscript-retry-after": _response(b"503 Busy", b"Retry-After: \xc2\xb2\r\n"),
    "/503-garbage-retry-after": _response(b"503 Busy", b"Retry-After: soon\r\n"),
}


def _robots(status: bytes, body: bytes = b"", headers: bytes = b"") -> bytes:
    return _response(status, b"Content-Type: text/plain\r\n" + headers, body)


_RULES = b"User-agent: *\nDisallow: /private/\n"
ROBOTS = {
    "s999": _robots(b"999 Request denied", _RULES),
    "s099": _robots(b"099 Low", _RULES),
    "s401": _robots(b"401 Unauthorized"),
    "s403": _robots(b"403 Forbidden"),
    "html": _robots(b"200 OK", b"<html><body><h1>Not found</h1></body></html>"),  # soft 404
    "to-other-host": _robots(
        b"301 Moved", headers=b"Location: http://s401.robots.test:PORT/robots.txt\r\n"
    ),
    "utf16": _robots(b"200 OK", _RULES.decode().encode("utf-16")),  # with its BOM
    "br": _robots(b"200 OK", _RULES, b"Content-Encoding: br\r\n"),
    "latin1": _robots(b"200 OK", _RULES + b"Disallow: /caf\xe9/\n", b"X-Note: caf\xe9\r\n"),
    "retry-after": _robots(b"503 Maintenance", headers=b"Retry-After: 120\r\n"),
    "silent": b"",  # reads the request, never answers
}
MODES = ("keep-alive", "close", "rst", "half-close")


def robots_host(name: str) -> str:
    return f"{name}.robots.test"


class FaultServer:
    """`async with FaultServer() as server:` answers on loopback (see the module docstring)."""

    def __init__(self, *, mode: str = "", address: str = "127.0.0.1") -> None:
        assert mode in ("", *MODES)
        self.mode = mode
        self.address = address
        self.port = 0
        self.requests: Counter[tuple[str, str]] = Counter()
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    def url(self, path: str, host: str = HOST) -> str:
        return f"http://{host}:{self.port}{path}"

    @property
    def resolve(self) -> dict[str, str]:
        return {name: self.address for name in (HOST, *map(robots_host, ROBOTS))}

    async def __aenter__(self) -> FaultServer:
        self._server = await asyncio.start_server(self._serve, self.address, 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:  # each handler then sees its connection end
            writer.close()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        self.connections += 1
        try:
            with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
                while await self._answer(reader, writer):
                    pass
        finally:
            self._handlers.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; True to read another on this connection."""
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        path = head.split(" ", 2)[1]
        host = next(line[5:].strip() for line in head.split("\r\n") if line[:5].lower() == "host:")
        host = host.rsplit(":", 1)[0]
        self.requests[(host, path)] += 1
        if self.mode:
            return await self._misbehave(writer, path)
        if path == "/endless-103":  # 1xx responses forever: the final one never comes
            while not writer.is_closing():
                writer.write(
                    b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" * 64
                )
                await writer.drain()
            return False
        writer.write(self._bytes(host, path).replace(b"PORT", str(self.port).encode()))
        if host.endswith(".robots.test") and host.split(".")[0] == "silent":
            await reader.read()  # until the crawler gives up and hangs up
        await writer.drain()
        return False

    def _bytes(self, host: str, path: str) -> bytes:
        if host.endswith(".robots.test"):
            if path == "/robots.txt":
                return ROBOTS[host.split(".")[0]]
            return _response(body=b"<a href='/private/x'>p</a><a href='/public'>q</a>")
        if path == "/robots.txt":
            return _robots(b"404 Not Found")
        return PAGES.get(path) or _response(body=b"<html>a plain page</html>")

    async def _misbehave(self, writer: asyncio.StreamWriter, path: str) -> bool:
        """A page linking /p0 ... /p9 (robots.txt: 404) without Connection: close, then the
        mode's fault. True to read another request."""
        if path == "/robots.txt":
            status, body = b"404 Not Found", b""
        else:
            status = b"200 OK"
            body = b"".join(b"<a href='/p%d'>x</a>" % i for i in range(10)) if path == "/" else b""
        head = b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html\r\n"
        if self.mode == "half-close":  # no length: EOF ends the body, the server still reads
            writer.write(head + b"\r\n" + body)
            await writer.drain()
            writer.write_eof()
            return True
        writer.write(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        if self.mode == "keep-alive":
            return True
        await asyncio.sleep(0.01)  # the client has pooled the connection by now
        if self.mode == "rst":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        return False


def fault_config(server: FaultServer, **sections: dict[str, Any]) -> Config:
    config = Config().override(
        "fetch", resolve=server.resolve, retries=0, total_timeout=2.0, connect_timeout=2.0
    )
    config = config.override(
        "politeness",
        delay=0.0,
        ip_delay=0.0,
        backoff_base=0.02,
        backoff_max=0.05,
        max_retry_after=0.1,
    )
    config = config.override("crawl", concurrency=4, max_depth=1)
    for section, values in sections.items():
        config = config.override(section, **values)
    return config


def record(result: CrawlResult) -> int | str | None:
    if result.status is None:
        return None if result.error is None else result.error.split(":", 1)[0]
    return result.status
