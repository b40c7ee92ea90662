"""A crawl's metadata and fields (`--meta`, ``[[extract]]``, ``Crawler(extract=fn)``): on each
HTML result and in the JSON Lines, absent unless asked, and a hook that fails on one page marks
that page and the crawl goes on."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from aiohttp import web

from crawler.cli.args import apply_overrides, build_parser
from crawler.cli.run import run
from crawler.config.load import Config
from crawler.config.sections import ExtractRule
from crawler.engine.crawler import Crawler
from crawler.parse.yields import ExtractPage
from tests.support.server import serve

PAGE = (
    "<html lang='fr'><head><title>{path}</title>"
    "<meta property='og:title' content='OG {path}'>"
    '<script type=\'application/ld+json\'>{{"@type": "Article", "datePublished": '
    '"2024-05-0{n}"}}</script></head><body><h2>{path} one</h2><h2>{path} two</h2>'
    "<a rel=next href='/p{n}'>next</a></body></html>"
)


async def handler(request: web.Request) -> web.Response:
    if request.path == "/robots.txt":
        return web.Response(status=404)
    if request.path == "/data.json":
        return web.Response(text="{}", content_type="application/json")
    n = int(request.path[2:] or 0) + 1 if request.path.startswith("/p") else 1
    if n > 3:
        return web.Response(text="<html><body><a href='/data.json'>d</a></body></html>",
                            content_type="text/html")  # fmt: skip
    return web.Response(text=PAGE.format(path=request.path, n=n), content_type="text/html")


RULES = (ExtractRule("headings", "h2", all=True), ExtractRule("next", "a[rel=next]", "href"))


def config(**output: Any) -> Config:
    c = Config(extract=RULES) if output.pop("rules", True) else Config()
    c = c.override("politeness", delay=0.0, respect_robots=False)
    return c.override("output", **output) if output else c


@pytest.mark.slow
async def test_meta_fields_and_a_failing_hook_on_a_library_crawl() -> None:
    def hook(page: ExtractPage) -> dict[str, Any]:
        if page.url.endswith("/p2"):
            raise RuntimeError("no price here")
        return {"og": (page.meta or {}).get("opengraph", {}).get("og:title")}

    async with serve(handler) as port:
        root = f"http://127.0.0.1:{port}"
        async with Crawler(config(meta=True), extract=hook) as crawler:
            results = {r.url.removeprefix(root): r async for r in crawler.crawl([root + "/"])}
    assert set(results) == {"/", "/p1", "/p2", "/p3", "/data.json"}  # the crawl went on
    home = results["/"]
    assert home.meta is not None and home.meta["language"] == "fr"
    assert home.meta["published"] == "2024-05-01"
    assert home.fields == {"headings": ["/ one", "/ two"], "next": f"{root}/p1", "og": "OG /"}
    assert home.fields_error is None
    p2 = results["/p2"]
    assert p2.fields == {"headings": ["/p2 one", "/p2 two"], "next": f"{root}/p3"}
    assert p2.fields_error == "extract hook: RuntimeError: no price here"
    assert results["/p3"].fields == {"headings": [], "next": None, "og": None}
    data = results["/data.json"]
    assert data.meta is None and data.fields is None


def flags(*given: str) -> Config:
    args = build_parser().parse_args(["http://x/", *given])
    return apply_overrides(config(rules="--meta" in given), args)


async def lines(cfg: Config) -> list[dict[str, Any]]:
    out = io.StringIO()
    async with serve(handler) as port:
        outcome = await run(cfg, [f"http://127.0.0.1:{port}/"], out, quiet=True)
    assert outcome.status == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.slow
async def test_the_json_lines_have_meta_and_fields_only_when_asked() -> None:
    asked = await lines(flags("--meta"))
    home = next(r for r in asked if r["url"].endswith("/"))
    assert home["meta"]["opengraph"] == {"og:title": "OG /"}
    assert home["meta"]["jsonld"] == [{"@type": "Article", "datePublished": "2024-05-01"}]
    assert home["fields"]["headings"] == ["/ one", "/ two"] and home["fields_error"] is None
    data = next(r for r in asked if r["url"].endswith("/data.json"))
    assert data["meta"] is None and data["fields"] is None
    plain = await lines(flags())
    assert plain and all("meta" not in r and "fields" not in r for r in plain)
