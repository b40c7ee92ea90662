"""Links made by scripts, read from the rendered DOM: the fixture's script-driven host.

Each way a page's scripts make a link (DOM calls, fetched JSON, an external script, a timer, an
open shadow root) is found by a rendering crawl and by none without rendering; robots.txt still
decides which of them are fetched; a rendered page's subresources go to the recorder (WARC).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crawler.config.load import config_from_mapping
from crawler.engine.crawler import Crawler
from crawler.fetch.response import Response
from crawler.testing import scripted
from crawler.testing.fixture import FixtureSite
from crawler.urls.canonical import canonicalize
from tests.support.render import crawl_all, render_config, requires_browser
from tests.support.server import site_config

pytestmark = requires_browser


@pytest.fixture
async def app_site() -> AsyncIterator[FixtureSite]:
    async with FixtureSite(crawl_delay=0.0, scripted=True) as site:
        yield site


def app_url(site: FixtureSite, path: str) -> str:
    return site.url(scripted.APP, path)


@pytest.mark.slow
async def test_each_script_technique_makes_a_link_the_crawl_follows(app_site: FixtureSite) -> None:
    seed = app_url(app_site, "/")
    async with Crawler(render_config(app_site)) as crawler:
        results = await crawl_all(crawler, [seed])
    expected = {app_url(app_site, p) for p in scripted.RENDERED_PAGES}
    refused = {app_url(app_site, p) for p in scripted.REFUSED}
    assert set(results) == expected | refused
    index = results[seed]
    assert index.rendered and index.title == "Script-driven app"  # the title scripts set
    for path in ("/dom", "/from-json", "/from-script", "/after-timer", "/in-shadow"):
        assert results[app_url(app_site, path)].status == 200, path
    # robots.txt decides for the links scripts make: refused, and never fetched
    for url in refused:
        assert (results[url].error or "").startswith("robots")
    fetched = {(r.host, r.path) for r in app_site.requests}
    assert (scripted.APP, "/private/js-link") not in fetched
    # the page's own document was fetched once (served to the browser from that response)
    assert sum(1 for r in app_site.requests if (r.host, r.path) == (scripted.APP, "/")) == 1
    assert crawler.stats_dict()["render"]["rendered"] == len(expected)


async def test_without_rendering_only_the_static_link_is_found(app_site: FixtureSite) -> None:
    async with Crawler(site_config(app_site)) as crawler:
        results = await crawl_all(crawler, [app_url(app_site, "/")])
    assert set(results) == {app_url(app_site, p) for p in scripted.STATIC_PAGES}
    assert not any(r.rendered for r in results.values())


@pytest.mark.slow
async def test_auto_mode_renders_the_script_driven_page_only(app_site: FixtureSite) -> None:
    config = render_config(app_site, mode="auto")
    async with Crawler(config) as crawler:
        seeds = [app_url(app_site, "/"), app_site.url("site-a.test", "/")]
        results = await crawl_all(crawler, seeds)
    rendered = {url for url, r in results.items() if r.rendered}
    assert rendered == {app_url(app_site, "/")}  # site-a's pages have no scripts
    assert {app_url(app_site, p) for p in scripted.RENDERED_PAGES} <= set(results)
    figures = crawler.stats_dict()["render"]
    assert figures["auto_rendered"] == 1 and figures["auto_checked"] > 10


@pytest.mark.slow
async def test_a_hosts_rule_renders_its_host_only(app_site: FixtureSite) -> None:
    rules = config_from_mapping({"hosts": [{"match": scripted.APP, "render": True}]}).hosts
    config = dataclasses.replace(
        site_config(app_site).override("render", timeout=30.0), hosts=rules
    )
    async with Crawler(config) as crawler:
        seeds = [app_url(app_site, "/"), app_site.url("site-b.test", "/")]
        results = await crawl_all(crawler, seeds)
    assert {url for url, r in results.items() if r.rendered} == {
        app_url(app_site, p) for p in scripted.RENDERED_PAGES
    }


@pytest.mark.slow
async def test_every_response_of_a_page_goes_to_the_recorder(app_site: FixtureSite) -> None:
    recorded: list[Response] = []
    async with Crawler(render_config(app_site), recorder=recorded.append) as crawler:
        await crawl_all(crawler, [app_url(app_site, "/")])
    urls = {canonicalize(r.url) for r in recorded}
    for path in ("/app.js", "/api/links.json", "/robots.txt", "/", "/dom"):
        assert canonicalize(app_url(app_site, path)) in urls, path
    # each fetched once: the crawl's cache answers the other pages' requests
    assert sum(1 for r in recorded if r.url.endswith("/app.js")) == 1


@pytest.mark.slow
def test_the_demo_renders_the_script_driven_host(tmp_path: Path) -> None:
    out = tmp_path / "demo.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "--demo", "--render", "--max-depth", "1",
         "-o", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "equals the fixture's ground truth" in proc.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    app = [r for r in results if f"//{scripted.APP}:" in r["url"]]
    assert {r["url"].split("/", 3)[3] for r in app} >= {"", "dom", "in-shadow", "from-json"}
    assert any(r["rendered"] for r in app)
