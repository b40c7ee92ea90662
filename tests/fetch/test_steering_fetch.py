"""Steering observed server-side on loopback: headers, basic auth per host, cookies, proxy."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from crawler.config.sections import HostConfig
from crawler.errors import BlockedAddress, ConnectError
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.guard import AddressGuard
from crawler.fetch.settings import FetchLimits, Timeouts, Transport
from crawler.fetch.steering import REDACTED, HostRules
from tests.support.server import serve

HOSTS = {"a.test": "127.0.0.1", "b.test": "127.0.0.1", "direct.test": "127.0.0.1"}


@dataclass
class Seen:
    """What a loopback server saw: (host, path, headers) per request."""

    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def headers(self, host: str) -> list[dict[str, str]]:
        return [h for name, _, h in self.requests if name == host]


@pytest.fixture
async def origin() -> AsyncIterator[tuple[int, Seen]]:
    seen = Seen()

    async def handler(request: web.Request) -> web.StreamResponse:
        host = request.host.partition(":")[0]
        seen.requests.append((host, request.path, dict(request.headers)))
        if request.path == "/set-cookie":
            response = web.Response(text="cookie set")
            response.set_cookie("sid", f"from-{host}", path="/")
            return response
        if request.path == "/to-b":
            port = request.url.port
            return web.Response(status=302, headers={"Location": f"http://b.test:{port}/x"})
        return web.Response(text="ok")

    async with serve(handler) as port:
        yield port, seen


def fetcher(**kw: object) -> Fetcher:
    args: dict[str, object] = {"user_agent": "t/1", "resolve": HOSTS}
    args.update(kw)
    settings = [cls(**{k: args.pop(k) for k in cls.__dataclass_fields__.keys() & set(args)})
                for cls in (Transport, Timeouts, FetchLimits)]  # fmt: skip
    return Fetcher(*settings, **args)  # type: ignore[arg-type]


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def test_headers_and_auth_only_to_matching_hosts(origin: tuple[int, Seen]) -> None:
    port, seen = origin
    rules = HostRules(
        [HostConfig(match="a.test", headers={"X-Api-Key": "k1"}, auth=("alice", "pw"))]
    )
    async with fetcher(headers={"Accept-Language": "de", "X-Tag": "t7"}, rules=rules) as f:
        first = await f.fetch(f"http://a.test:{port}/to-b")
        assert first.status == 302 and first.location is not None
        second = await f.fetch(first.location)  # the engine fetches a redirect target anew
    assert second.status == 200
    (a,) = seen.headers("a.test")
    (b,) = seen.headers("b.test")
    assert a["Authorization"] == basic("alice", "pw")
    assert a["X-Api-Key"] == "k1"
    assert "Authorization" not in b and "X-Api-Key" not in b  # checked by host B's server
    for headers in (a, b):
        assert headers["Accept-Language"] == "de" and headers["X-Tag"] == "t7"
        assert headers["User-Agent"] == "t/1"
    # what is kept for the archive carries no secret value
    kept = dict(first.request_headers)
    assert kept["Authorization"] == REDACTED and kept["X-Api-Key"] == REDACTED
    assert kept["X-Tag"] == REDACTED  # configured headers are secret too
    assert "pw" not in repr(first.request_headers) and "k1" not in repr(first.request_headers)
    assert dict(second.request_headers)["User-Agent"] == "t/1"


async def test_rule_headers_override_fetch_headers(origin: tuple[int, Seen]) -> None:
    port, seen = origin
    rules = HostRules([HostConfig(match="a.test", headers={"x-tag": "for-a"})])
    async with fetcher(headers={"X-Tag": "everywhere"}, rules=rules) as f:
        await f.fetch(f"http://a.test:{port}/")
        await f.fetch(f"http://b.test:{port}/")
    (a,), (b,) = seen.headers("a.test"), seen.headers("b.test")
    assert [v for k, v in a.items() if k.lower() == "x-tag"] == ["for-a"]  # replaced, not added
    assert b["X-Tag"] == "everywhere"


async def test_rule_with_a_port_matches_only_that_port(origin: tuple[int, Seen]) -> None:
    port, seen = origin
    rules = HostRules([HostConfig(match=f"a.test:{port + 1}", headers={"X-Api-Key": "k1"})])
    async with fetcher(rules=rules) as f:
        await f.fetch(f"http://a.test:{port}/")
    assert "X-Api-Key" not in seen.headers("a.test")[0]


async def test_a_rule_for_https_sends_nothing_over_http(origin: tuple[int, Seen]) -> None:
    port, seen = origin
    rules = HostRules(
        [
            HostConfig(match="https://a.test", auth=("alice", "pw")),
            HostConfig(match=f"http://b.test:{port}", headers={"X-Api-Key": "k1"}),
        ]
    )
    async with fetcher(rules=rules) as f:
        await f.fetch(f"http://a.test:{port}/")  # a link or redirect down to plain HTTP
        await f.fetch(f"http://b.test:{port}/")
    assert "Authorization" not in seen.headers("a.test")[0]
    assert seen.headers("b.test")[0]["X-Api-Key"] == "k1"


async def test_cookie_jar_is_per_host_and_off_by_default(origin: tuple[int, Seen]) -> None:
    port, seen = origin
    async with fetcher(cookies=True) as f:
        await f.fetch(f"http://a.test:{port}/set-cookie")
        await f.fetch(f"http://a.test:{port}/again")
        await f.fetch(f"http://b.test:{port}/other")
        kept = dict((await f.fetch(f"http://a.test:{port}/third")).request_headers)
    a = seen.headers("a.test")
    assert "Cookie" not in a[0]
    assert a[1]["Cookie"] == "sid=from-a.test"
    assert "Cookie" not in seen.headers("b.test")[0]  # a.test's cookie stays with a.test
    assert kept["Cookie"] == REDACTED
    seen.requests.clear()
    async with fetcher() as f:  # cookies = false: nothing stored, nothing sent
        await f.fetch(f"http://a.test:{port}/set-cookie")
        await f.fetch(f"http://a.test:{port}/again")
    assert all("Cookie" not in h for h in seen.headers("a.test"))


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[int, list[tuple[str, dict[str, str]]]]]:
    """A loopback HTTP proxy that answers absolute-form requests itself (forwards nothing)."""
    seen: list[tuple[str, dict[str, str]]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append((str(request.url), dict(request.headers)))
        return web.Response(text=f"proxied {request.url}")

    async with serve(handler) as port:
        yield port, seen


async def test_requests_go_through_the_proxy(
    proxy: tuple[int, list[tuple[str, dict[str, str]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    pport, seen = proxy
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "direct.test")
    rules = HostRules([HostConfig(match="far.test", auth=("alice", "pw"))])
    async with fetcher(proxy=f"http://pu:ppw@127.0.0.1:{pport}", rules=rules) as f:
        # far.test resolves nowhere: only the proxy can answer for it
        response = await f.fetch("http://far.test/page?q=1")
    assert response.body == b"proxied http://far.test/page?q=1"
    ((url, headers),) = seen
    assert url == "http://far.test/page?q=1"
    assert headers["Host"] == "far.test"
    assert headers["Proxy-Authorization"] == basic("pu", "ppw")
    assert headers["Authorization"] == basic("alice", "pw")
    kept = dict(response.request_headers)
    assert kept.get("Proxy-Authorization", REDACTED) == REDACTED
    assert "ppw" not in repr(response.request_headers)


async def test_no_proxy_hosts_bypass_the_proxy(
    proxy: tuple[int, list[tuple[str, dict[str, str]]]],
    origin: tuple[int, Seen],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pport, proxied = proxy
    port, seen = origin
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "direct.test")
    async with fetcher(proxy=f"http://pu:ppw@127.0.0.1:{pport}") as f:
        direct = await f.fetch(f"http://direct.test:{port}/")
        via = await f.fetch(f"http://a.test:{port}/")
    assert direct.body == b"ok" and [h for h, _, _ in seen.requests] == ["direct.test"]
    assert via.body == f"proxied http://a.test:{port}/".encode()
    assert [url for url, _ in proxied] == [f"http://a.test:{port}/"]
    # Proxy-Authorization goes in a plain-HTTP request's own headers, through the proxy only
    assert proxied[0][1]["Proxy-Authorization"] == basic("pu", "ppw")
    assert "Proxy-Authorization" not in seen.headers("direct.test")[0]


async def test_a_proxy_by_name_goes_through_the_ssrf_guard(
    proxy: tuple[int, list[tuple[str, dict[str, str]]]],
) -> None:
    pport, seen = proxy
    url = f"http://proxy.test:{pport}"
    async with fetcher(resolve={"proxy.test": "127.0.0.1"}, proxy=url, guard=AddressGuard()) as f:
        with pytest.raises(BlockedAddress, match=r"proxy\.test: 127\.0\.0\.1 is loopback"):
            await f.fetch("http://far.test/")
    allowed = AddressGuard(["127.0.0.0/8"])
    async with fetcher(resolve={"proxy.test": "127.0.0.1"}, proxy=url, guard=allowed) as f:
        assert (await f.fetch("http://far.test/")).status == 200
    assert [u for u, _ in seen] == ["http://far.test/"]


async def test_unreachable_proxy_is_a_fetch_error() -> None:
    # nothing listens on loopback port 1
    async with fetcher(proxy="http://pu:proxy-pw@127.0.0.1:1") as f:
        with pytest.raises(ConnectError) as info:
            await f.fetch("http://a.test/")
    assert "proxy-pw" not in str(info.value)  # the message becomes the result's error
