"""The crawl's browser: replaced when it crashes mid-crawl or grows past its memory cap; its
processes found, measured and killed; without playwright or Chromium, a clear error."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import pytest

from crawler.engine.crawler import Crawler
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.settings import Transport
from crawler.render import page, pool
from crawler.render.browser import PageTimeout, RenderUnavailable, find_browser, launch_args
from crawler.render.network import Subresources
from crawler.render.page import PageOptions
from crawler.testing import scripted
from crawler.testing.fixture import FixtureSite
from tests.render_support import WATCHDOG, render_config, requires_browser


@pytest.fixture
async def app_site() -> AsyncIterator[FixtureSite]:
    async with FixtureSite(crawl_delay=0.0, scripted=True) as site:
        yield site


@requires_browser
async def test_a_browser_killed_mid_crawl_is_replaced_and_the_crawl_goes_on(
    app_site: FixtureSite,
) -> None:
    config = render_config(app_site).override("crawl", concurrency=2)
    seed = app_site.url(scripted.APP, "/")
    killed = False
    results = {}
    async with Crawler(config) as crawler:
        async with asyncio.timeout(WATCHDOG):
            async for result in crawler.crawl([seed, app_site.url("site-b.test", "/")]):
                results[result.url] = result
                if result.rendered and not killed:  # the browser is up: kill it (a crash)
                    assert crawler.rendering is not None
                    process = crawler.rendering.renderer.process
                    assert process is not None and process.pids()
                    process.kill()
                    killed = True
    assert killed
    assert set(results) >= {app_site.url(scripted.APP, p) for p in scripted.RENDERED_PAGES}
    figures = crawler.stats_dict()["render"]
    assert figures["browser_launches"] >= 2
    assert sum(r.rendered for r in results.values()) > len(results) // 2  # after it too


@requires_browser
async def test_a_browser_past_its_memory_cap_is_replaced(
    app_site: FixtureSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "MEMORY_CHECK_SECONDS", 1.0)  # read every second
    config = render_config(app_site, memory_cap=1)  # 1 MiB: every browser is past it
    async with Crawler(config) as crawler:
        async with asyncio.timeout(WATCHDOG):
            results = [r async for r in crawler.crawl([app_site.url(scripted.APP, "/")])]
    assert all(r.rendered for r in results if r.status == 200)
    figures = crawler.stats_dict()["render"]
    assert figures["browser_launches"] >= 2
    assert figures["browser_peak_pss"] > 1024 * 1024  # the browser's memory, measured


@requires_browser
async def test_a_hung_browser_is_killed_and_replaced(
    app_site: FixtureSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page, "CLOSE_TIMEOUT", 1.0)
    url = app_site.url(scripted.APP, "/static")
    async with Fetcher(Transport(user_agent="t/1", resolve=app_site.resolve)) as fetcher:
        response = await fetcher.fetch(url)
        options = PageOptions(user_agent="t/1", timeout=2.0)
        renderer = pool.Renderer(Subresources(fetcher.fetch), options)
        try:
            await renderer.render(url, response)
            process = renderer.process
            assert process is not None and process.pid is not None
            hung = process.pid
            os.kill(hung, signal.SIGSTOP)  # the browser stops answering
            with pytest.raises(PageTimeout):
                await renderer.render(url, response)
            assert renderer.process is None  # taken for hung: killed, and dropped
            rendered = await renderer.render(url, response)  # on a new browser
            assert b"Static" in rendered.html and renderer.launches == 2
            assert renderer.process is not None and renderer.process.pid != hung
        finally:
            await renderer.close()


async def test_without_a_browser_rendering_is_a_clear_error(app_site: FixtureSite) -> None:
    with pytest.raises(RenderUnavailable, match=r"apt-get install chromium"):
        find_browser("/nonexistent/chromium")
    with pytest.raises(RenderUnavailable, match=r"sieve-crawler\[render\]"):
        Crawler(render_config(app_site, browser="/nonexistent/chromium"))


def test_the_browser_has_no_network_of_its_own() -> None:
    args = launch_args(1234, "m")
    assert "--proxy-server=http://127.0.0.1:1234" in args
    assert "--proxy-bypass-list=<-loopback>" in args  # loopback through the dead proxy too
    assert "--host-resolver-rules=MAP * ~NOTFOUND" in args
    assert {"--disable-background-networking", "--disable-component-update"} <= set(args)
    assert "--force-webrtc-ip-handling-policy=disable_non_proxied_udp" in args  # no UDP


def test_render_without_a_browser_exits_2_naming_what_to_install() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "http://example.invalid/", "--render",
         "-s", "render.browser=/nonexistent/chromium"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "sieve-crawler[render]" in proc.stderr and "chromium" in proc.stderr
