"""The cookie jar against a hostile server, observed server-side on loopback virtual hosts:
no cookie for a public suffix (``test``, ``co.uk``) reaches another host, and the jar is bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from crawler.fetch.cookies import is_public_suffix
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.settings import Transport
from tests.support.server import serve

HOSTS = {
    name: "127.0.0.1"
    for name in ("a.test", "b.test", "x.a.test", "test", "a.example.co.uk", "b.other.co.uk")
}
SEEN: list[tuple[str, str, str | None]] = []


async def handler(request: web.Request) -> web.StreamResponse:
    host = request.host.rpartition(":")[0]
    SEEN.append((host, request.path, request.headers.get("Cookie")))
    response = web.Response(text="ok")
    if request.path == "/suffix":  # every spelling of a Domain naming a public suffix
        for i, domain in enumerate(("test", ".test", "TEST", "co.uk", ".co.uk", "uk")):
            response.headers.add("Set-Cookie", f"s{i}=1; Path=/; Domain={domain}")
        response.headers.add("Set-Cookie", "own=1; Path=/; Domain=a.test")  # allowed
        response.headers.add("Set-Cookie", "here=1; Path=/")  # host-only: allowed
    if request.path == "/self":  # a public-suffix host naming itself
        response.headers.add("Set-Cookie", "mine=1; Path=/; Domain=test")
    if request.path == "/many":
        n = int(request.query["n"])
        for i in range(100):
            response.headers.add("Set-Cookie", f"c{n}x{i}=v; Path=/")
    return response


@pytest.fixture
async def port() -> AsyncIterator[int]:
    SEEN.clear()
    async with serve(handler) as p:
        yield p


def cookies(host: str) -> list[set[str]]:
    return [set((c or "").replace(" ", "").split(";")) - {""} for h, _, c in SEEN if h == host]


async def test_no_cookie_for_a_public_suffix(port: int) -> None:
    async with Fetcher(Transport(user_agent="t/1", cookies=True, resolve=HOSTS)) as f:
        await f.fetch(f"http://a.test:{port}/suffix")
        await f.fetch(f"http://a.example.co.uk:{port}/suffix")
        for host in ("b.test", "x.a.test", "a.test", "b.other.co.uk", "test"):
            await f.fetch(f"http://{host}:{port}/check")
    assert cookies("b.test") == [set()]  # nothing of a.test's reaches b.test
    assert cookies("b.other.co.uk") == [set()]
    assert cookies("test") == [set()]
    assert cookies("x.a.test") == [{"own=1"}]  # a.test's own domain cookie: sent to subdomains
    assert cookies("a.test")[-1] == {"own=1", "here=1"}


def test_public_suffixes() -> None:
    assert all(map(is_public_suffix, ("com", "co.uk", "test", "github.io", "localhost")))
    assert not any(map(is_public_suffix, ("example.com", "a.test", "a.github.io")))


async def test_a_hostile_server_cannot_grow_the_jar_without_end(port: int) -> None:
    async with Fetcher(Transport(user_agent="t/1", cookies=True, resolve=HOSTS)) as f:
        for n in range(40):  # 4,000 distinct cookies for one host
            await f.fetch(f"http://a.test:{port}/many?n={n}")
        await f.fetch(f"http://a.test:{port}/check")
    sent = cookies("a.test")[-1]
    assert 100 <= len(sent) <= 180  # aiohttp's bounds: 180 per domain, 150 per request


async def test_a_public_suffix_host_naming_itself_keeps_a_host_only_cookie(port: int) -> None:
    """RFC 6265 5.3 step 5: a Domain attribute that is a public suffix *and* the request's host
    makes a host-only cookie (the attribute is dropped), it is not refused: ``localhost``,
    ``test``, an intranet's one-label host keep their ``Domain=`` cookies for themselves."""
    async with Fetcher(Transport(user_agent="t/1", cookies=True, resolve=HOSTS)) as f:
        await f.fetch(f"http://test:{port}/self")
        await f.fetch(f"http://test:{port}/check")
        await f.fetch(f"http://a.test:{port}/check")
    assert cookies("test")[-1] == {"mine=1"}
    assert cookies("a.test") == [set()]  # host-only: not sent to the suffix's other hosts
