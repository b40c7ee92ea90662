"""Metadata and ``[[extract]]`` fields read a rendered page's DOM, as its text is: what the
page's scripts write (JSON-LD, OpenGraph tags, the elements a rule selects) is there once
rendered, and not in the static HTML."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp import web

from crawler.config.load import Config
from crawler.config.sections import ExtractRule
from crawler.engine.crawler import Crawler
from crawler.parse.yields import ExtractPage
from tests.support.render import crawl_all, requires_browser
from tests.support.server import serve

pytestmark = requires_browser

HOST = "app.test"
LD = json.dumps({"@type": "Product", "name": "Kettle", "datePublished": "2024-06-01"})
APP = (
    "<!DOCTYPE html><html><head><title>App</title></head><body><main id=root></main><script>"
    "const m = document.createElement('meta'); m.setAttribute('property', 'og:title');"
    "m.setAttribute('content', 'Rendered title'); document.head.appendChild(m);"
    "const s = document.createElement('script'); s.type = 'application/ld+json';"
    f"s.textContent = {json.dumps(LD)}; document.head.appendChild(s);"
    "document.documentElement.lang = 'de';"
    "document.getElementById('root').innerHTML = '<h2>Made</h2><h2>by script</h2>"
    '<a class=buy href="/buy">buy</a>\';</script></body></html>'
)


async def handler(request: web.Request) -> web.StreamResponse:
    if request.path == "/":
        return web.Response(text=APP, content_type="text/html")
    raise web.HTTPNotFound()


def config(render: bool) -> Config:
    rules = (ExtractRule("headings", "h2", all=True), ExtractRule("buy", "a.buy", "href"))
    c = Config(extract=rules).override("fetch", resolve={HOST: "127.0.0.1"})
    c = c.override("politeness", delay=0.0, respect_robots=False)
    c = c.override("output", meta=True)
    return c.override("render", enabled=render, timeout=30.0)


def hook(page: ExtractPage) -> dict[str, Any]:
    return {"roots": len(page.tree.css("main#root > *"))}


@pytest.mark.slow
async def test_meta_and_fields_read_the_rendered_dom() -> None:
    async with serve(handler) as port:
        seed = f"http://{HOST}:{port}/"
        async with Crawler(config(False), extract=hook) as crawler:
            static = (await crawl_all(crawler, [seed]))[seed]
        async with Crawler(config(True), extract=hook) as crawler:
            rendered = (await crawl_all(crawler, [seed]))[seed]
    assert static.meta is not None and static.meta["jsonld"] == []
    assert static.fields == {"headings": [], "buy": None, "roots": 0}
    assert rendered.rendered
    meta = rendered.meta
    assert meta is not None
    assert meta["opengraph"] == {"og:title": "Rendered title"} and meta["language"] == "de"
    assert meta["jsonld"] == [json.loads(LD)] and meta["published"] == "2024-06-01"
    assert rendered.fields == {"headings": ["Made", "by script"], "buy": f"{seed}buy", "roots": 3}
