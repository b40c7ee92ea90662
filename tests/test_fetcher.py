from __future__ import annotations

import asyncio
import gzip
import socket
import zlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from crawler.errors import (
    BodyTooLarge,
    ConnectError,
    DecodingError,
    FetchTimeout,
    ProtocolError,
)
from crawler.fetcher import Fetcher, OverrideResolver
from tests.conftest import serve

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
    return Fetcher(**args)  # type: ignore[arg-type]


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
        with pytest.raises(ConnectError):
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
