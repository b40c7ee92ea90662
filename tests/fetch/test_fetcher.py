from __future__ import annotations

import asyncio
import contextlib
import errno
import gzip
import socket
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web

from crawler.errors import (
    Blame,
    BodyTooLarge,
    ConnectError,
    ConnectionReset,
    DecodingError,
    FetchError,
    FetchTimeout,
    ProtocolError,
    TooSlow,
    Truncated,
)
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.resolver import OverrideResolver
from crawler.fetch.settings import FetchLimits, Timeouts, Transport
from crawler.fetch.translate import translate_error
from tests.support.server import serve

UA = "test-crawler/1.0"


async def _handler(request: web.Request) -> web.StreamResponse:
    path = request.path
    if path == "/host":
        return web.Response(text=f"{request.host}|{request.headers.get('User-Agent')}")
    if path == "/big":
        return web.Response(body=b"x" * 5000)
    if path == "/bomb":
        payload = gzip.compress(b"\0" * (20 * 1024 * 1024))
        return web.Response(body=payload, headers={"Content-Encoding": "gzip",
                                                   "Content-Type": "text/html"})  # fmt: skip
    if path == "/gzip":
        return web.Response(body=gzip.compress(b"<p>hello</p>"),
                            headers={"Content-Encoding": "gzip"})  # fmt: skip
    if path == "/deflate-raw":
        z = zlib.compressobj(wbits=-15)
        return web.Response(body=z.compress(b"raw deflate") + z.flush(),
                            headers={"Content-Encoding": "deflate"})  # fmt: skip
    if path == "/corrupt":
        return web.Response(body=b"\x1f\x8b\x08garbage-not-gzip",
                            headers={"Content-Encoding": "gzip"})  # fmt: skip
    if path == "/redirect":
        return web.Response(status=302, headers={"Location": "/host"})
    if path == "/slow":
        await asyncio.sleep(2)
        return web.Response(text="late")
    if path == "/huge-header":
        return web.Response(text="x", headers={"X-Big": "y" * 40_000})
    raise web.HTTPNotFound()


@pytest.fixture
async def server() -> AsyncIterator[int]:
    async with serve(_handler) as port:
        yield port


def fetcher(**kw: object) -> Fetcher:
    args: dict[str, object] = {"user_agent": UA, "resolve": {"virtual.test": "127.0.0.1"}}
    args.update(kw)
    settings = [cls(**{k: args.pop(k) for k in cls.__dataclass_fields__.keys() & set(args)})
                for cls in (Transport, Timeouts, FetchLimits)]  # fmt: skip
    return Fetcher(*settings, **args)  # type: ignore[arg-type]


async def test_resolver_override_and_user_agent(server: int) -> None:
    async with fetcher() as f:
        response = await f.fetch(f"http://virtual.test:{server}/host")
    assert response.status == 200
    assert response.body == f"virtual.test:{server}|{UA}".encode()
    assert response.ip == "127.0.0.1"


async def test_redirects_are_not_followed(server: int) -> None:
    async with fetcher() as f:
        response = await f.fetch(f"http://127.0.0.1:{server}/redirect")
    assert response.status == 302
    assert response.location == "/host"


async def test_body_cap_raises(server: int) -> None:
    async with fetcher(max_body=1000) as f:
        with pytest.raises(BodyTooLarge):
            await f.fetch(f"http://127.0.0.1:{server}/big")


async def test_body_cap_truncates_when_asked(server: int) -> None:
    async with fetcher(max_body=1000) as f:
        response = await f.fetch(f"http://127.0.0.1:{server}/big", truncate=True)
    assert response.body == b"x" * 1000


@pytest.mark.parametrize(("cap", "truncated"), [(1000, True), (4999, True), (5000, False)])
async def test_a_body_cut_at_the_cap_says_so(server: int, cap: int, truncated: bool) -> None:
    # (the WARC marks it WARC-Truncated) the 5,000 bytes arrive in one read: the cut was not
    # told when that read was the body's last
    async with fetcher(max_body=cap) as f:
        response = await f.fetch(f"http://127.0.0.1:{server}/big", truncate=True)
    assert (len(response.body), response.truncated) == (min(cap, 5000), truncated)


async def test_a_decoded_body_cut_at_the_cap_keeps_its_whole_wire_body(server: int) -> None:
    async with fetcher(max_body=5) as f:
        response = await f.fetch(f"http://127.0.0.1:{server}/gzip", truncate=True)
    assert response.body == b"<p>he"
    assert gzip.decompress(response.wire_body) == b"<p>hello</p>" and not response.truncated


async def test_gzip_is_decoded(server: int) -> None:
    async with fetcher() as f:
        response = await f.fetch(f"http://127.0.0.1:{server}/gzip")
    assert response.body == b"<p>hello</p>"
    # the bytes as sent are kept for archiving
    assert gzip.decompress(response.wire_body) == b"<p>hello</p>"
    assert response.header("content-encoding") == "gzip"


async def test_deflate_without_zlib_wrapper_is_decoded(server: int) -> None:
    async with fetcher() as f:
        response = await f.fetch(f"http://127.0.0.1:{server}/deflate-raw")
    assert response.body == b"raw deflate"


async def test_corrupt_gzip_is_a_decoding_error(server: int) -> None:
    async with fetcher() as f:
        with pytest.raises(DecodingError):
            await f.fetch(f"http://127.0.0.1:{server}/corrupt")


async def test_gzip_bomb_hits_the_decompressed_cap(server: int) -> None:
    # ~20 KiB on the wire, 20 MiB decompressed: the cap applies to decompressed bytes.
    async with fetcher(max_body=1024 * 1024) as f:
        with pytest.raises(BodyTooLarge):
            await f.fetch(f"http://127.0.0.1:{server}/bomb")


@pytest.mark.slow
async def test_timeout_is_translated(server: int) -> None:
    async with fetcher(total_timeout=0.3, read_timeout=0.3) as f:
        with pytest.raises(FetchTimeout):
            await f.fetch(f"http://127.0.0.1:{server}/slow")


async def test_oversized_header_is_a_protocol_error(server: int) -> None:
    async with fetcher(max_header_size=8192) as f:
        with pytest.raises(ProtocolError):
            await f.fetch(f"http://127.0.0.1:{server}/huge-header")


async def test_connection_refused_is_translated() -> None:
    with socket.socket() as sock:  # find a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with fetcher() as f:
        with pytest.raises(ConnectError, match="Connection refused"):  # the errno's words
            await f.fetch(f"http://127.0.0.1:{port}/")


async def test_fetch_requires_open_session() -> None:
    with pytest.raises(RuntimeError, match="not open"):
        await fetcher().fetch("http://127.0.0.1:1/")


async def test_override_resolver_maps_names_case_insensitively() -> None:
    resolver = OverrideResolver({"Site.Test.": "127.0.0.2"})
    [answer] = await resolver.resolve("SITE.test", 80)
    assert answer["host"] == "127.0.0.2"
    assert answer["port"] == 80
    await resolver.close()


# -- the rate floor (min_rate over min_rate_window), on a raw loopback server -----------------

Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_server(answer: Writer) -> AsyncIterator[str]:
    """A server that reads one request and lets `answer` write the response; yields its URL."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            await answer(writer)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    finally:
        server.close()
        await server.wait_closed()


async def trickle(writer: asyncio.StreamWriter, data: bytes, size: int, pause: float) -> None:
    for i in range(0, len(data), size):
        writer.write(data[i : i + size])
        await writer.drain()
        await asyncio.sleep(pause)


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"


async def slow_body(writer: asyncio.StreamWriter) -> None:  # 100 B/s for up to 5 s
    writer.write(HEAD % 500)
    await trickle(writer, b"x" * 500, 10, 0.1)


async def slow_headers(writer: asyncio.StreamWriter) -> None:  # 20 B/s
    await trickle(writer, HEAD % 2 + b"ok", 1, 0.05)


async def fast_enough(writer: asyncio.StreamWriter) -> None:  # 4000 B/s for 1 s
    writer.write(HEAD % 4000)
    await trickle(writer, b"y" * 4000, 400, 0.1)


@pytest.mark.parametrize(("answer", "waiting"), [(slow_body, False), (slow_headers, True)])
async def test_a_transfer_under_the_floor_is_too_slow(answer: Writer, waiting: bool) -> None:
    async with raw_server(answer) as url, fetcher(min_rate=1000, min_rate_window=0.5) as f:
        async with asyncio.timeout(4):  # the trickle would last 5 s
            with pytest.raises(TooSlow) as info:
                await f.fetch(url)
    assert info.value.kind == "too_slow" and not info.value.retry
    # before the headers the host may be in trouble; after them it is the URL's
    assert info.value.blame is (Blame.SUSPECT if waiting else Blame.URL)
    phase = "the response headers" if waiting else "the body"
    assert str(info.value) == f"less than 1000 bytes/s over 0.5 s ({phase})"


async def test_a_transfer_over_the_floor_completes() -> None:
    async with raw_server(fast_enough) as url, fetcher(min_rate=1000, min_rate_window=0.5) as f:
        response = await f.fetch(url)
    assert response.body == b"y" * 4000


async def short_slow_body(writer: asyncio.StreamWriter) -> None:  # 100 B/s for 0.3 s
    writer.write(HEAD % 30)
    await trickle(writer, b"x" * 30, 10, 0.1)


async def test_min_rate_zero_turns_the_floor_off() -> None:
    async with raw_server(short_slow_body) as url:
        async with fetcher(min_rate=0, min_rate_window=0.05) as f:
            response = await f.fetch(url)
        assert response.body == b"x" * 30
        async with fetcher(min_rate=1000, min_rate_window=0.05) as f:
            with pytest.raises(TooSlow):
                await f.fetch(url)


@pytest.mark.slow
async def test_a_timeout_waiting_for_headers_is_suspect_one_reading_the_body_is_the_urls(
    server: int,
) -> None:
    async with fetcher(total_timeout=0.3, read_timeout=0.3) as f:
        with pytest.raises(FetchTimeout) as waiting:
            await f.fetch(f"http://127.0.0.1:{server}/slow")
    assert waiting.value.blame is Blame.SUSPECT and not waiting.value.retry
    async with raw_server(slow_body) as url, fetcher(total_timeout=0.3, min_rate=0) as f:
        with pytest.raises(FetchTimeout) as reading:
            await f.fetch(url)
    assert reading.value.blame is Blame.URL


@pytest.mark.parametrize(
    ("exc", "waiting", "expected"),
    [
        (aiohttp.ServerDisconnectedError(), True, ConnectionReset),
        (aiohttp.ServerDisconnectedError(), False, Truncated),
        (aiohttp.ClientOSError(errno.ECONNRESET, "reset"), True, ConnectionReset),
        (ConnectionResetError(errno.ECONNRESET, "reset"), False, Truncated),
        (aiohttp.ClientOSError(errno.ENETUNREACH, "unreachable"), True, ConnectError),
        (aiohttp.ConnectionTimeoutError("connect"), True, ConnectError),
        (aiohttp.SocketTimeoutError("read"), True, FetchTimeout),
        (aiohttp.ClientPayloadError("Response payload is not completed: x"), False, Truncated),
        (aiohttp.ClientPayloadError("bad chunk"), False, ProtocolError),
    ],
)
def test_translate_error(exc: BaseException, waiting: bool, expected: type[FetchError]) -> None:
    assert type(translate_error(exc, waiting=waiting)) is expected


@contextlib.asynccontextmanager
async def one_request_per_connection() -> AsyncIterator[tuple[str, list[int]]]:
    """A server that keeps each connection open after its first answer (no Connection: close)
    and closes it, unanswered, when a second request comes on it: a keep-alive timeout that
    struck while the client reused the connection. Yields its URL and each request's number on
    its connection."""
    seen: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            seen.append(1)
            writer.write(HEAD % 2 + b"ok")
            await writer.drain()
            await reader.readuntil(b"\r\n\r\n")
            seen.append(2)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", seen
    finally:
        server.close()
        await server.wait_closed()


async def test_a_request_on_pooled_connections_the_server_closed_is_sent_again() -> None:
    # two pooled connections, both closed by the server as the next request came: aiohttp
    # sent it again once, on the other dead one, and the fetch failed ("reset")
    async with one_request_per_connection() as (url, seen), fetcher() as f:
        first = await asyncio.gather(f.fetch(url + "a"), f.fetch(url + "b"))
        assert [r.body for r in first] == [b"ok", b"ok"] and seen == [1, 1]
        response = await f.fetch(url + "c")
    assert response.body == b"ok"
    assert sorted(seen) == [1, 1, 1, 2, 2]  # both dead connections tried, then a new one
