"""A raw server for the fourth fault audit (tests/test_faults_wire.py): what tests/faults.py's
server does (canned bytes by path on ``faults.test``, robots.txt 404), plus faults that need
time or a second step on the connection: a 1xx then a close, headers cut off, a body that
stalls, a request never answered.

`WIRE_PAGES` are written at once and the connection closed; `TIMED` paths misbehave over time.
"""

from __future__ import annotations

import asyncio
import gzip
import struct
import zlib

from tests.support.faults import HOST, FaultServer, robots_host

__all__ = ["HOST", "LINKS", "TIMED", "WIRE_PAGES", "WIRE_ROBOTS", "WireServer", "robots_host"]

HTML = b"<html><head><title>T</title></head><body><a href='/ok'>ok</a></body></html>"
MiB = 1024 * 1024


def response(
    status: bytes = b"200 OK", headers: bytes = b"Content-Type: text/html\r\n", body: bytes = HTML
) -> bytes:
    length = b"Content-Length: %d\r\n" % len(body)
    return b"HTTP/1.1 " + status + b"\r\n" + headers + length + b"Connection: close\r\n\r\n" + body


def redirect(location: bytes, status: bytes = b"301 Moved") -> bytes:
    return response(status, b"Location: " + location + b"\r\n", b"")


def page(body: bytes, content_type: bytes = b"text/html") -> bytes:
    return response(headers=b"Content-Type: " + content_type + b"\r\n", body=body)


def coded(coding: bytes, body: bytes = HTML) -> bytes:
    return response(
        headers=b"Content-Type: text/html\r\nContent-Encoding: " + coding + b"\r\n", body=body
    )


def text(body: bytes) -> bytes:
    return page(body, b"text/plain")


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + bytes(range(64)) * 3 for _ in range(64))
    header = struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


_CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
_BIG = HTML + b"<p>" + b"filler " * 20_000 + b"</p>"
_ZIPPED_BIG = gzip.compress(_BIG)
LATE_CHARSET = (
    b"<html><head><title>T</title></head><body><a href='/ok'>ok</a>"
    + b"<!-- "
    + b"x" * MiB
    + b" -->"
    + b"<meta charset=windows-1251></body></html>"
)
LINKS = 100_000
BASE_JS = (
    b"<html><head><base href='javascript:alert(1)'><title>T</title></head><body>"
    b"<a href='rel'>r</a><a href='/root'>r</a><a href='http://faults.test:PORT/abs'>a</a>"
    b"</body></html>"
)
WIRE_PAGES = {
    # the status line and framing
    "/status-000": response(b"000 Zero"),
    "/status-garbage": response(b"OK 200"),
    "/status-negative": response(b"-200 OK"),
    "/chunked-trailers": _CHUNKED + b"%x\r\n" % len(HTML) + HTML + b"\r\n0\r\nX-Trailer: v\r\n"
    b"Expires: 0\r\n\r\n",
    "/chunked-lf-only": _CHUNKED.replace(b"\r\n", b"\n") + b"%x\n" % len(HTML) + HTML + b"\n0\n\n",
    "/chunk-over-cap": _CHUNKED + b"%x\r\n" % (64 * MiB) + b"x" * 1000,
    "/bare-cr-header": b"HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok",
    "/obs-fold": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-A: a\r\n  b\r\n"
    b"Content-Length: %d\r\n\r\n" % len(HTML) + HTML,
    "/te-unknown": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: foo\r\n\r\n" + HTML,
    "/headers-cut": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Le",
    "/status-line-only": b"HTTP/1.1 200 OK\r\n",
    "/empty-response": b"",
    "/100-then-close": b"HTTP/1.1 100 Continue\r\n\r\n",
    "/101-switching": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\n\r\n\x81\x05hello",
    "/102-then-200": b"HTTP/1.1 102 Processing\r\n\r\n" * 3 + response(),
    "/http10-chunked": b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked"
    b"\r\n\r\n%x\r\n" % len(HTML) + HTML + b"\r\n0\r\n\r\n",
    "/200-no-length-http11": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + HTML,
    "/cookie-flood": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
    + b"".join(b"Set-Cookie: c%d=%s; Path=/\r\n" % (i, b"v" * 100) for i in range(3000))
    + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(HTML)
    + HTML,
    "/header-no-value": b"HTTP/1.1 200 OK\r\nContent-Type:\r\nX-Empty:\r\nContent-Length: %d"
    b"\r\n\r\n" % len(HTML) + HTML,
    "/header-space-name": b"HTTP/1.1 200 OK\r\n Content-Type: text/html\r\nContent-Length: 2"
    b"\r\n\r\nok",
    # redirects
    "/location-mailto": redirect(b"mailto:someone@example.com"),
    "/location-tel": redirect(b"tel:+15551234"),
    "/location-gopher": redirect(b"gopher://faults.test/1"),
    "/location-10k": redirect(b"/long/" + b"a" * 10_000),
    "/location-20k": redirect(b"/long/" + b"b" * 20_000),
    "/location-self": redirect(b"http://faults.test:PORT/location-self"),
    "/location-fragment": redirect(b"#top"),
    "/location-blanks": redirect(b"   "),
    "/location-control": redirect(b"/ctl\x01x"),
    "/location-utf8": redirect("/caf\u00e9".encode()),
    "/location-no-host": redirect(b"http:///"),
    "/location-port-0": redirect(b"http://faults.test:0/"),
    "/location-bad-port": redirect(b"http://faults.test:99999/"),
    "/location-userinfo-only": redirect(b"http://@/"),
    "/3xx-body-no-location": response(b"301 Moved", body=HTML),
    "/303-to-ok": redirect(b"/ok", b"303 See Other"),
    # bodies
    "/gzip-cut-mid": coded(b"gzip", _ZIPPED_BIG[: len(_ZIPPED_BIG) // 2]),
    "/gzip-br": coded(b"gzip, br", _ZIPPED_BIG),
    "/coding-foo": coded(b"foo"),
    "/deflate-zlib": coded(b"deflate", zlib.compress(HTML)),
    "/gzip-unlabelled": page(gzip.compress(HTML)),
    "/charset-foo": page(HTML, b"text/html; charset=foo"),
    "/charset-empty": page(HTML, b"text/html; charset="),
    "/charset-late-meta": page(LATE_CHARSET),
    "/utf16le-bom": page(b"\xff\xfe" + HTML.decode().encode("utf-16-le")),
    "/utf16be-bom": page(b"\xfe\xff" + HTML.decode().encode("utf-16-be")),
    "/utf32-charset": page(HTML.decode().encode("utf-32"), b"text/html; charset=utf-32"),
    "/nuls": page(bytes(MiB)),
    "/png-as-html": page(_png()),
    "/links-100k": page(
        b"<html><body>"
        + b"".join(b"<a href='/l/%d'>x</a>" % i for i in range(LINKS))
        + b"</body></html>"
    ),
    "/base-js": b"",  # BASE_JS with its port (WireServer._wire_bytes)
    "/base-other-host": page(
        b"<html><head><base href='http://elsewhere.test/'>"
        b"<title>T</title></head><body><a href='rel'>r</a></body></html>"
    ),
    "/base-malformed": page(
        b"<html><head><base href='http://[::1'><title>T</title></head>"
        b"<body><a href='ok'>r</a></body></html>"
    ),
    "/base-private": page(
        b"<html><head><base href='http://127.0.0.2/'><title>T</title></head>"
        b"<body><a href='secret'>r</a></body></html>"
    ),
}
TIMED = {
    "/stall-after-headers": "headers and 10 bytes of a 1000-byte body, then nothing",
    "/never-answer": "reads the request, never answers",
    "/line-50mb": "50 MB of text/html with no tag and no newline",
}


def _gzip_zeros(mib: int) -> bytes:
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(z.compress(bytes(MiB)) for _ in range(mib)) + z.flush()


_RULES = b"User-agent: *\nDisallow: /private/\n"
_BOMB = _gzip_zeros(64)
WIRE_ROBOTS = {
    "to-private": redirect(b"http://127.0.0.2:9/robots.txt"),
    "to-ftp": redirect(b"ftp://faults.test/robots.txt"),
    "gzip-bomb": response(
        headers=b"Content-Type: text/plain\r\nContent-Encoding: gzip\r\n", body=_BOMB
    ),
    "ten-mib": text(_RULES + (b"# " + b"c" * 1000 + b"\n") * 10_000),
    "sitemap-bomb": text(_RULES + b"Sitemap: /sm.xml.gz\n"),
    "sitemap-private": text(_RULES + b"Sitemap: http://127.0.0.2:9/sm.xml\n"),
    "sitemap-huge-loc": text(_RULES + b"Sitemap: /" + b"s" * 20_000 + b"\n"),
    "crawl-delay-negative": text(_RULES + b"Crawl-delay: -5\n"),
    "nul-rules": text(b"User-agent: *\x00\nDisallow: /private/\x00\n"),
}
SITEMAP_BOMB = page(_BOMB, b"application/gzip")


class WireServer(FaultServer):
    """tests/faults.py's raw server with `WIRE_PAGES` and `TIMED` on faults.test and the
    `WIRE_ROBOTS` hosts (``<name>.robots.test``: that robots.txt, ``/sm.xml.gz`` a gzipped
    sitemap bomb, any other path a page linking ``/private/x`` and ``/public``)."""

    def __init__(self) -> None:
        super().__init__()
        self.stalled = asyncio.Event()  # set once a response stalls (/stall-after-headers)

    @property
    def resolve(self) -> dict[str, str]:
        return {name: self.address for name in (HOST, *map(robots_host, WIRE_ROBOTS))}

    async def __aenter__(self) -> WireServer:
        await super().__aenter__()
        return self

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        path = head.split(" ", 2)[1]
        host = next(line[5:].strip() for line in head.split("\r\n") if line[:5].lower() == "host:")
        host = host.rsplit(":", 1)[0]
        self.requests[(host, path)] += 1
        if host == HOST and path in TIMED:
            await self._timed(reader, writer, path)
        else:
            writer.write(self._wire_bytes(host, path).replace(b"PORT", str(self.port).encode()))
            await writer.drain()
        return False

    async def _timed(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str
    ) -> None:
        if path == "/line-50mb":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                b"Content-Length: %d\r\n\r\n" % (50 * MiB)
            )
            for _ in range(50):
                if writer.is_closing():
                    return
                writer.write(b"a" * MiB)
                await writer.drain()
            return
        if path == "/stall-after-headers":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000"
                b"\r\n\r\n<html><bo"
            )
            await writer.drain()
            self.stalled.set()
        await reader.read()  # until the crawler hangs up

    def _wire_bytes(self, host: str, path: str) -> bytes:
        if host == HOST:
            if path == "/base-js":
                return page(BASE_JS.replace(b"PORT", str(self.port).encode()))
            return WIRE_PAGES[path] if path in WIRE_PAGES else self._bytes(host, path)
        name = host.split(".")[0]
        if not host.endswith(".robots.test") or name not in WIRE_ROBOTS:
            return self._bytes(host, path)
        if path == "/robots.txt":
            return WIRE_ROBOTS[name]
        if path == "/sm.xml.gz":
            return SITEMAP_BOMB
        return page(b"<a href='/private/x'>p</a><a href='/public'>q</a>")
