"""A [[hosts]] rule's credentials never follow a redirect to what the rule does not match, in a
whole crawl on loopback (checked by the servers): another port, a userinfo URL, an IP literal,
an IDN spelling of another host; a spelling of the same host (case, trailing dot) keeps them."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from crawler.config.load import Config
from crawler.config.sections import HostConfig
from crawler.engine.crawler import Crawler
from tests.support.server import serve

HOSTS = {"a.test": "127.0.0.1", "b.test": "127.0.0.1"}
SEEN: list[tuple[int, str, str, str | None]] = []  # (server, host, path, Authorization)


def handler(
    server: int, other: list[int]
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        host = request.host.rpartition(":")[0]
        SEEN.append((server, host, request.path, request.headers.get("Authorization")))
        port = request.url.port
        targets = {
            "/other-port": f"http://a.test:{other[0]}/landed-other-port",
            "/userinfo": f"http://alice:stolen@b.test:{port}/landed-userinfo",
            "/ip": f"http://127.0.0.1:{port}/landed-ip",
            "/idn": f"http://ⓑ.test:{port}/landed-idn",  # b.test spelled in Unicode
            "/same": f"http://A.TEST.:{port}/landed-same",
        }
        if request.path in targets:
            return web.Response(status=302, headers={"Location": targets[request.path]})
        links = "".join(f'<a href="{p}">x</a>' for p in targets) if request.path == "/" else ""
        return web.Response(text=f"<html>{links}</html>", content_type="text/html")

    return handle


@pytest.fixture
async def ports() -> AsyncIterator[tuple[int, int]]:
    SEEN.clear()
    other: list[int] = []
    async with serve(handler(1, other)) as first, serve(handler(2, [first])) as second:
        other.append(second)
        yield first, second


async def test_credentials_do_not_follow_redirects_off_their_rule(ports: tuple[int, int]) -> None:
    first, _ = ports
    config = (
        Config()
        .override("fetch", resolve=HOSTS)
        .override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
        .override("scope", allowed_domains=("a.test", "b.test", "127.0.0.1"))
    )
    rule = HostConfig(match=f"a.test:{first}", auth=("alice", "pw"), headers={"X-Key": "k"})
    config = dataclasses.replace(config, hosts=(rule,))
    async with Crawler(config) as crawler:
        results = [r async for r in crawler.crawl([f"http://a.test:{first}/"])]
    landed = {path: (server, host, auth) for server, host, path, auth in SEEN}
    assert len(results) == 11 and set(landed) >= {f"/landed-{t}" for t in ("other-port", "ip")}
    assert landed["/landed-other-port"] == (2, "a.test", None)
    assert landed["/landed-userinfo"] == (1, "b.test", None)  # the URL's userinfo is dropped too
    assert landed["/landed-ip"] == (1, "127.0.0.1", None)
    assert landed["/landed-idn"] == (1, "b.test", None)
    assert landed["/landed-same"][2] is not None  # a.test. is a.test: the rule matches
    assert all(auth for server, host, _, auth in SEEN if (server, host) == (1, "a.test"))
