"""Through a loopback CONNECT proxy (asyncio streams, tunnels to 127.0.0.1): HTTPS with a host's
credentials inside the tunnel, a proxy that refuses, a proxy that is down, and the SSRF guard."""

from __future__ import annotations

import asyncio
import base64
import ssl
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import trustme
from aiohttp import web

from crawler.config.sections import HostConfig
from crawler.errors import BlockedAddress, ConnectError, FetchError, ProxyError
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.guard import AddressGuard
from crawler.fetch.settings import Transport
from crawler.fetch.steering import REDACTED, HostRules

PASSWORD = "proxy-pw-7"
TOKEN = base64.b64encode(f"pu:{PASSWORD}".encode()).decode()


@dataclass
class Proxy:
    """A CONNECT proxy: tunnels to 127.0.0.1:port, or answers `refuse` (a status) instead."""

    port: int = 0
    refuse: int | None = None
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await reader.readline()).decode()
            headers: dict[str, str] = {}
            while (raw := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = raw.decode().partition(":")
                headers[name.strip()] = value.strip()
            self.seen.append((line.strip(), headers))
            method, target, _ = line.split(" ", 2)
            if method != "CONNECT" or self.refuse is not None:
                status = self.refuse or 405
                writer.write(f"HTTP/1.1 {status} No\r\nContent-Length: 0\r\n\r\n".encode())
                return
            up_reader, up_writer = await asyncio.open_connection(
                "127.0.0.1", target.rpartition(":")[2]
            )
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    p = Proxy()
    server = await asyncio.start_server(p.handle, "127.0.0.1", 0)
    p.port = server.sockets[0].getsockname()[1]
    async with server:
        yield p


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def https_port(ca: trustme.CA) -> AsyncIterator[tuple[int, list[dict[str, str]]]]:
    """An HTTPS server on 127.0.0.1 for secure.test, recording each request's headers."""
    seen: list[dict[str, str]] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("secure.test").configure_cert(context)

    async def handler(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.Response(text="secret page")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    try:
        yield int(runner.addresses[0][1]), seen
    finally:
        await runner.cleanup()


async def test_https_through_connect_with_credentials_inside_the_tunnel(
    proxy: Proxy,
    https_port: tuple[int, list[dict[str, str]]],
    ca: trustme.CA,
    tmp_path: object,
) -> None:
    port, seen = https_port
    ca_file = f"{tmp_path}/ca.pem"
    ca.cert_pem.write_to_path(ca_file)
    rules = HostRules([HostConfig(match="secure.test", auth=("alice", "pw"))])
    url = f"http://pu:{PASSWORD}@127.0.0.1:{proxy.port}"
    async with Fetcher(Transport(user_agent="t/1", proxy=url, ca_file=ca_file), rules=rules) as f:
        response = await f.fetch(f"https://secure.test:{port}/")
    assert response.body == b"secret page"
    ((line, headers),) = proxy.seen
    assert line == f"CONNECT secure.test:{port} HTTP/1.1"
    assert headers["Proxy-Authorization"] == f"Basic {TOKEN}"
    assert "Authorization" not in headers  # the host's credentials go inside the tunnel only
    (sent,) = seen
    assert sent["Authorization"].startswith("Basic ") and "Proxy-Authorization" not in sent
    assert dict(response.request_headers)["Authorization"] == REDACTED


@pytest.mark.parametrize("status", [407, 403, 502])
async def test_a_proxy_refusing_connect_is_a_clear_error_without_its_password(
    proxy: Proxy, status: int
) -> None:
    proxy.refuse = status
    async with Fetcher(
        Transport(user_agent="t/1", proxy=f"http://pu:{PASSWORD}@127.0.0.1:{proxy.port}")
    ) as f:
        with pytest.raises(FetchError) as caught:
            await f.fetch("https://far.test/")
    if status == 407:  # the proxy's own failure: the crawl ends with it (crawler.fetch.outage)
        assert isinstance(caught.value, ProxyError) and caught.value.status == 407
        assert str(caught.value) == (
            f"the proxy 127.0.0.1:{proxy.port} refused the credentials of [fetch] proxy: "
            "it answered 407 No to CONNECT far.test:443"
        )
    else:  # the proxy answering about the target (its policy, the target down): the host's
        assert type(caught.value) is ConnectError
        assert str(caught.value) == f"the proxy answered {status} No to CONNECT far.test:443"
    text = "".join(traceback.format_exception(caught.value))  # what a logged traceback shows
    assert PASSWORD not in text and TOKEN not in text


async def test_a_proxy_that_is_down_is_named_in_the_error() -> None:
    async with Fetcher(Transport(user_agent="t/1", proxy=f"http://pu:{PASSWORD}@127.0.0.1:1")) as f:
        for url in ("http://a.test/", "https://a.test/"):
            with pytest.raises(ConnectError) as caught:
                await f.fetch(url)
            assert str(caught.value).startswith("cannot connect to the proxy 127.0.0.1:1: ")
            text = "".join(traceback.format_exception(caught.value))
            assert PASSWORD not in text and TOKEN not in text


async def test_the_ssrf_guard_checks_ip_literal_targets_before_the_proxy(proxy: Proxy) -> None:
    url = f"http://127.0.0.1:{proxy.port}"
    async with Fetcher(Transport(user_agent="t/1", proxy=url), guard=AddressGuard()) as f:
        for target in ("http://10.0.0.1/", "https://169.254.169.254/", "http://[::1]:8080/"):
            with pytest.raises(BlockedAddress):
                await f.fetch(target)
    assert proxy.seen == []  # refused before any packet went to the proxy


async def test_a_proxy_password_beyond_latin1_is_sent_as_utf8(proxy: Proxy) -> None:
    # aiohttp encodes a proxy URL's credentials in Latin-1: a "€" failed every URL with a
    # UnicodeEncodeError whose text (the result's error) told the character and its position
    proxy.refuse = 407
    async with Fetcher(
        Transport(user_agent="t/1", proxy=f"http://pu:p€ss@127.0.0.1:{proxy.port}")
    ) as f:
        with pytest.raises(ConnectError) as caught:
            await f.fetch("https://far.test/")
    assert "position" not in str(caught.value) and "€" not in str(caught.value)
    ((_, headers),) = proxy.seen
    token = base64.b64encode("pu:p€ss".encode()).decode()
    assert headers["Proxy-Authorization"] == f"Basic {token}"
