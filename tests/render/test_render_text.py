"""The focus scorer and content dedup read a rendered page's text: two pages with one static
shell and different script-made content are not duplicates once rendered, and a page whose topic
words only its scripts write is relevant once rendered."""

from __future__ import annotations

import json

import pytest
from aiohttp import web

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from tests.support.render import crawl_all, requires_browser
from tests.support.server import serve

pytestmark = requires_browser

HOST = "shell.test"
TOPIC = {
    "/a": "Replication and standby servers: streaming replication keeps a standby in step.",
    "/b": "Baking bread at home: flour, water, salt and a slow rise overnight in a cool room.",
}


def shell(path: str) -> str:
    """The same static page for every path; its script writes the path's own content."""
    content = json.dumps(f"<h1>{path}</h1><p>{TOPIC.get(path, 'Home')}</p>")
    links = json.dumps([p for p in TOPIC if p != path])
    return (
        "<!DOCTYPE html><html><head><title>App</title></head><body><main id=root></main>"
        "<script>const root = document.getElementById('root');"
        f"root.innerHTML = {content};"
        f"for (const h of {links}) {{ const a = document.createElement('a'); a.href = h;"
        " root.appendChild(a); }</script></body></html>"
    )


async def handler(request: web.Request) -> web.StreamResponse:
    if request.path in ("/", *TOPIC):
        return web.Response(text=shell(request.path), content_type="text/html")
    raise web.HTTPNotFound()


def config(render: bool, **focus: object) -> Config:
    c = Config().override("fetch", resolve={HOST: "127.0.0.1"})
    c = c.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    c = c.override("dedup", enabled=True)
    if focus:
        c = c.override("focus", **focus)
    return c.override("render", enabled=render, timeout=30.0)


@pytest.mark.slow
async def test_content_dedup_reads_the_rendered_text() -> None:
    async with serve(handler) as port:
        seeds = [f"http://{HOST}:{port}{p}" for p in TOPIC]
        async with Crawler(config(False)) as crawler:
            static = await crawl_all(crawler, seeds)
        async with Crawler(config(True)) as crawler:
            rendered = await crawl_all(crawler, seeds)
    a, b = seeds
    assert static[b].duplicate_of == a or static[a].duplicate_of == b  # one shell, twice
    assert rendered[a].rendered and rendered[b].rendered
    assert rendered[a].content_hash != rendered[b].content_hash
    assert rendered[a].duplicate_of is None and rendered[b].duplicate_of is None


@pytest.mark.slow
async def test_the_focus_scorer_reads_the_rendered_text() -> None:
    async with serve(handler) as port:
        seed = f"http://{HOST}:{port}/a"
        focus = {"keywords": ("replication", "standby")}
        async with Crawler(config(False, **focus)) as crawler:
            static = await crawl_all(crawler, [seed])
        async with Crawler(config(True, **focus)) as crawler:
            rendered = await crawl_all(crawler, [seed])
    assert (static[seed].relevance or 0.0) < 0.5  # its static text: "App"
    assert rendered[seed].relevance is not None and rendered[seed].relevance >= 0.5


@pytest.mark.slow
async def test_text_and_markdown_are_the_rendered_page_s() -> None:
    async with serve(handler) as port:
        seed = f"http://{HOST}:{port}/a"
        asked = config(True).override("output", markdown=True)
        async with Crawler(asked) as crawler:
            rendered = await crawl_all(crawler, [seed])
        async with Crawler(config(False).override("output", markdown=True)) as crawler:
            static = await crawl_all(crawler, [seed])
    page = rendered[seed]
    assert page.rendered and page.text is not None and page.markdown is not None
    assert "streaming replication keeps a standby in step" in page.text
    assert "# /a" in page.markdown or "streaming replication" in page.markdown
    assert "replication" not in (static[seed].text or "")  # the shell says nothing of it
