"""Hostile pages cost a rendering crawl at most their timeout, and never stall it.

An endless script, a flood of dialogs, popups, a download, a document that is an attachment, a
huge DOM, a redirect storm by script (each target a link, so the crawl's depth limit ends it), a
server-side redirect loop fetched by script, a request flood: every page gets its result, the
well-behaved page among them is rendered with its script's link, and the crawl ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from tests.support.render import crawl_all, requires_browser
from tests.support.server import serve

pytestmark = requires_browser

HOST = "hostile.test"
TIMEOUT = 8.0  # [render] timeout of these crawls (generous: the pages that end must end in it)

SCRIPTS = {
    "/ok": "link('/made-by-script');",
    "/endless": "for (;;) {}",
    "/dialogs": "for (let i = 0; i < 30; i++) { alert(i); confirm(i); prompt(i); }"
    " link('/after-dialogs');",
    "/popups": "for (let i = 0; i < 10; i++) window.open('/popup-' + i); link('/after-popups');",
    "/download": "const a = document.createElement('a'); a.href = '/file.bin'; a.download = 'f';"
    " document.body.appendChild(a); a.click(); link('/after-download');",
    "/huge": "const f = document.createDocumentFragment();"
    " for (let i = 0; i < 100000; i++) f.appendChild(document.createElement('div'));"
    " document.body.appendChild(f); link('/after-huge');",
    "/storm": "setTimeout(() => location.replace('/storm?n=' + (Number("
    "new URLSearchParams(location.search).get('n')) + 1)), 10);",
    "/reload": "setTimeout(() => location.reload(), 10);",
    "/loop-fetch": "fetch('/redirect-loop').catch(() => link('/after-loop'));",
    "/flood": "for (let i = 0; i < 2000; i++) fetch('/flood-' + i).catch(() => 0);"
    " link('/after-flood');",
}


def page(path: str) -> str:
    script = SCRIPTS[path]
    return (
        f"<!DOCTYPE html><html><head><title>{path}</title></head><body>"
        f'<a href="/static{path.replace("/", "-")}">static</a>'
        "<script>function link(h) { const a = document.createElement('a'); a.href = h;"
        f" document.body.appendChild(a); }}\n{script}</script></body></html>"
    )


async def handler(request: web.Request) -> web.StreamResponse:
    path = request.path
    if path == "/":
        items = "".join(f'<a href="{p}">{p}</a>' for p in [*SCRIPTS, "/attachment"])
        return web.Response(text=f"<title>index</title>{items}", content_type="text/html")
    if path in SCRIPTS:
        return web.Response(text=page(path), content_type="text/html")
    if path == "/attachment":
        headers = {"Content-Disposition": 'attachment; filename="a.html"'}
        text = '<title>attachment</title><a href="/after-attachment">x</a>'
        return web.Response(text=text, content_type="text/html", headers=headers)
    if path == "/redirect-loop":
        raise web.HTTPFound("/redirect-loop")
    if path == "/file.bin":
        headers = {"Content-Disposition": 'attachment; filename="f.bin"'}
        return web.Response(body=b"\0" * 1000, content_type="application/octet-stream",
                            headers=headers)  # fmt: skip
    return web.Response(text=f"<title>{path}</title>", content_type="text/html")


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async with serve(handler) as p:
        yield p


@pytest.mark.slow
async def test_hostile_pages_cost_their_timeout_at_most_and_the_crawl_ends(port: int) -> None:
    config = Config().override("fetch", resolve={HOST: "127.0.0.1"})
    config = config.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    config = config.override("crawl", max_depth=2, concurrency=8)
    config = config.override("render", enabled=True, timeout=TIMEOUT, tabs=2)
    base = f"http://{HOST}:{port}"
    async with Crawler(config) as crawler:
        results = await crawl_all(crawler, [f"{base}/"])
    for path in [*SCRIPTS, "/attachment"]:  # every page has its result, rendered or not
        assert results[base + path].status == 200, path
        assert f"{base}/static{path.replace('/', '-')}" in results or path == "/attachment"
    ok = results[f"{base}/ok"]
    assert ok.rendered and f"{base}/made-by-script" in results
    assert not results[f"{base}/endless"].rendered  # past its timeout: its static HTML is read
    for after in (
        "/after-dialogs",
        "/after-popups",
        "/after-download",
        "/after-huge",
        "/after-loop",
    ):  # fmt: skip  (the flood's page may take its timeout)
        assert base + after in results, after
    assert not any("/popup-" in url for url in results)  # a popup's target is no link
    assert f"{base}/storm?n=1" in results  # the storm: a chain of links, cut by max_depth
    assert not any("n=3" in url for url in results)
    figures = crawler.stats_dict()["render"]
    assert figures["render_timeouts"] >= 1
