"""`--text` / `--markdown` ([output] text / markdown): each HTML result's main content in the
JSON Lines and on `CrawlResult`, null for what is not HTML, absent unless asked."""

from __future__ import annotations

import io
import json

from aiohttp import web

from crawler.cli.args import apply_overrides, build_parser
from crawler.cli.run import run
from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from tests.support.server import serve

ARTICLE = (
    "<html><head><title>Tides - Harbour notes</title></head><body>"
    "<nav><a href='/'>Home</a> <a href='/data.json'>Data</a> <a href='/notes.txt'>Notes</a></nav>"
    "<div class='cookie-banner'><p>We use cookies, to measure traffic, to show you ads and"
    " more. Accept?</p></div>"
    "<article><h1>Tides</h1><p>The tide rises twice a day, and the harbour master posts the"
    " times, which change with the moon, at the quay every morning.</p>"
    "<h2>Where</h2><ul><li>North quay</li><li>South quay</li></ul>"
    "<p>See <a href='/more.html'>the <b>full</b> table</a>, kept up to date by volunteers"
    " of the harbour society since 1990.</p></article>"
    "<footer><p>Harbour notes, a site of the harbour society, all rights reserved.</p></footer>"
    "</body></html>"
)


async def handler(request: web.Request) -> web.Response:
    if request.path == "/data.json":
        return web.Response(text='{"tide": "high"}', content_type="application/json")
    if request.path == "/notes.txt":
        return web.Response(text="plain notes", content_type="text/plain")
    if request.path == "/robots.txt":
        return web.Response(status=404)
    return web.Response(text=ARTICLE, content_type="text/html")


def config(*flags: str) -> Config:
    args = build_parser().parse_args(["http://x/", *flags])
    base = Config().override("politeness", delay=0.0, ip_delay=0.0, backoff_base=0.01)
    return apply_overrides(base.override("crawl", max_depth=1), args)


async def crawl_lines(*flags: str) -> dict[str, dict[str, object]]:
    out = io.StringIO()
    async with serve(handler) as port:
        outcome = await run(config(*flags), [f"http://127.0.0.1:{port}/"], out, quiet=True)
    assert outcome.status == 0
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    return {str(r["url"]).split("/", 3)[3]: r for r in records}


async def test_text_and_markdown_fields_in_the_json_lines() -> None:
    lines = await crawl_lines("--text", "--markdown")
    page = lines[""]
    text, markdown = page["text"], page["markdown"]
    assert isinstance(text, str) and isinstance(markdown, str)
    assert text.startswith("The tide rises twice a day")
    assert "North quay\nSouth quay" in text
    assert "cookies" not in text and "all rights reserved" not in text and "Home" not in text
    assert "## Where" in markdown and "- North quay" in markdown
    port_url = str(page["url"]).rstrip("/")
    assert f"[the **full** table]({port_url}/more.html)" in markdown
    assert page["text_truncated"] is False  # a normal page is far below the bound
    for other in ("data.json", "notes.txt"):
        assert lines[other]["text"] is None and lines[other]["markdown"] is None


async def test_no_text_fields_unless_asked() -> None:
    lines = await crawl_lines()
    assert all(
        "text" not in r and "markdown" not in r and "text_truncated" not in r
        for r in lines.values()
    )
    only_text = await crawl_lines("--text")
    assert all("text" in r and "markdown" not in r for r in only_text.values())
    assert isinstance(only_text[""]["text"], str)


async def test_library_results_carry_text_only_when_asked() -> None:
    async with serve(handler) as port:
        seed = f"http://127.0.0.1:{port}/"
        async with Crawler(config().override("output", markdown=True)) as asked:
            results = {r.url: r async for r in asked.crawl([seed])}
        async with Crawler(config()) as plain:
            without = {r.url: r async for r in plain.crawl([seed])}
    page = results[seed]
    assert page.text is not None and page.text.startswith("The tide rises")
    assert page.markdown is not None and page.markdown.startswith("The tide rises")
    assert results[seed + "data.json"].text is None
    assert without[seed].text is None and without[seed].markdown is None
