"""A seed that redirects to another host of its own site (``example.org`` to ``www.example.org``)
takes the default scope there (`Scope.follow_site`); one that redirects to another site does not.
Virtual hosts on loopback through the crawler's resolver override."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from crawler.admission.scope import Scope
from crawler.cli.run import run
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.state.crawlstate import CrawlState
from crawler.urls.canonical import canonicalize
from tests.support.server import serve

HOSTS = ("example.test", "www.example.test", "moved.test", "new.test", "a.github.io",
         "b.github.io")  # fmt: skip


def page(*links: str) -> web.Response:
    body = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async def handler(request: web.Request) -> web.StreamResponse:
        host, path = request.host.partition(":")[0], request.path
        origin = f"http://{{}}:{request.url.port}"
        if path == "/" and host in ("example.test", "moved.test", "a.github.io"):
            target = {"example.test": "www.example.test", "moved.test": "new.test",
                      "a.github.io": "b.github.io"}[host]  # fmt: skip
            raise web.HTTPMovedPermanently(origin.format(target) + "/")
        if path == "/":
            return page("/a", "/b")
        if path == "/a":
            return page("/c")
        return page()

    async with serve(handler) as p:
        yield p


def config(port: int) -> Config:
    resolve = dict.fromkeys(HOSTS, "127.0.0.1")
    config = Config().override("fetch", resolve=resolve).override("crawl", concurrency=2)
    return config.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)


def paths(results: list[tuple[str, int | None]], host: str) -> set[str]:
    return {url.split(host, 1)[1].partition("/")[2] for url, _ in results if f"//{host}:" in url}


async def crawl(
    config: Config, seed: str, state: CrawlState | None = None
) -> list[tuple[str, int | None]]:
    async with Crawler(config, state=state) as crawler:
        return [(r.url, r.status) async for r in crawler.crawl([seed])]


async def test_a_seed_redirected_within_its_site_is_crawled_there(port: int) -> None:
    # before: one 301 and the crawl's end (www.example.test out of the seed's scope)
    results = await crawl(config(port), f"http://example.test:{port}/")
    assert paths(results, "www.example.test") == {"", "a", "b", "c"}
    assert all(status in (200, 301) for _, status in results)


@pytest.mark.parametrize("seed", ["moved.test", "a.github.io"])
async def test_a_seed_redirected_to_another_site_is_not_followed(port: int, seed: str) -> None:
    # another registrable domain, and two sites under the public suffix github.io
    results = await crawl(config(port), f"http://{seed}:{port}/")
    assert [status for _, status in results] == [301]


async def test_the_command_still_names_a_seed_redirected_to_another_site(
    port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (await run(config(port), [f"http://moved.test:{port}/"], io.StringIO())).status == 0
    err = " ".join(capsys.readouterr().err.split())
    assert f"redirected to http://new.test:{port}/, another site, outside the crawl's" in err
    assert (await run(config(port), [f"http://example.test:{port}/"], io.StringIO())).status == 0
    assert "redirected" not in capsys.readouterr().err


async def test_allowed_domains_replace_the_rule(port: int) -> None:
    narrow = config(port).override("scope", allowed_domains=("example.test",))
    assert len(await crawl(narrow, f"http://example.test:{port}/")) == 5  # www: a subdomain
    other = config(port).override("scope", allowed_domains=("moved.test",))
    results = await crawl(other, f"http://example.test:{port}/")
    assert [status for _, status in results] == [301]  # not widened by the redirect


async def test_a_resumed_crawl_keeps_the_host_in_its_scope(port: int, tmp_path: Path) -> None:
    conf = config(port)
    state = CrawlState.open(tmp_path / "state", settings(conf))
    async with Crawler(conf.override("crawl", concurrency=1), state=state) as crawler:
        async for result in crawler.crawl([f"http://example.test:{port}/"]):
            if result.url.endswith(f"www.example.test:{port}/"):
                break  # interrupted: /a and /b queued, /a's link to /c not yet seen
    state = CrawlState.open(tmp_path / "state", settings(conf))
    results = await crawl(conf, f"http://example.test:{port}/", state)
    # /c: in scope from the state (the page taken at the break comes again: at least once)
    assert paths(results, "www.example.test") - {""} == {"a", "b", "c"}


def test_follow_site_rules() -> None:
    scope = Scope(hosts=["example.org"])
    key = canonicalize("https://www.example.org/x")
    assert key is not None and scope.check(key, 0) == "domain"
    assert scope.follow_site("http://example.org/", key) == "www.example.org"
    assert scope.check(key, 0) is None  # the cached verdict was dropped
    for target in ("http://example.net/", "http://127.0.0.1/", "http://localhost/",
                   "http://co.uk/", "http://[::1]/"):  # fmt: skip
        assert scope.follow_site("http://example.org/", target) is None
    assert Scope(hosts=["127.0.0.1"]).follow_site("http://127.0.0.1/", "http://127.0.0.2/") is None
    assert Scope(allowed_domains=["x.org"]).follow_site("http://example.org/", key) is None
