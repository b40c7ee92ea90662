"""The crawl's browser: replaced when it crashes mid-crawl or grows past its memory cap; its
processes found, measured and killed; without playwright or Chromium, a clear error."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crawler.engine.crawler import Crawler
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.settings import Transport
from crawler.render import browser, page, pool
from crawler.render.browser import PageTimeout, RenderUnavailable, find_browser, launch_args
from crawler.render.network import Subresources
from crawler.render.page import PageOptions
from crawler.testing import scripted
from crawler.testing.fixture import FixtureSite
from tests.support.render import WATCHDOG, render_config, requires_browser


@pytest.fixture
async def app_site() -> AsyncIterator[FixtureSite]:
    async with FixtureSite(crawl_delay=0.0, scripted=True) as site:
        yield site


@pytest.mark.slow
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


@pytest.mark.slow
@requires_browser
@pytest.mark.xdist_group("render-memory")  # not beside the other browser eating memory
async def test_a_browser_past_its_memory_cap_is_replaced(
    app_site: FixtureSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    # read every 2.5 s: a page whose browser is retired is rendered again once, so a render
    # must fit between two readings (on a loaded 2-core machine one took over a second)
    monkeypatch.setattr(pool, "MEMORY_CHECK_SECONDS", 2.5)
    config = render_config(app_site, memory_cap=1)  # 1 MiB: every browser is past it
    async with Crawler(config) as crawler:
        async with asyncio.timeout(WATCHDOG):
            results = [r async for r in crawler.crawl([app_site.url(scripted.APP, "/")])]
    figures = crawler.stats_dict()["render"]
    pages = [r for r in results if r.status == 200]
    unrendered = sum(not r.rendered for r in pages)
    # a page cut by a replacement is rendered again once; one cut twice (a render slower than
    # two readings, on a loaded machine) is a counted render failure, its static HTML read
    assert unrendered <= figures["render_failures"] and unrendered < len(pages) / 2
    assert figures["browser_launches"] >= 2
    assert figures["browser_peak_pss"] > 1024 * 1024  # the browser's memory, measured


@pytest.mark.slow
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
    with pytest.raises(RenderUnavailable, match=r"apt-get install chromium") as caught:
        find_browser("/nonexistent/chromium")
    assert "pip install" not in str(caught.value)  # playwright is installed: Chromium is missing
    with pytest.raises(RenderUnavailable, match=r"'/nonexistent/chromium' is not an executable"):
        Crawler(render_config(app_site, browser="/nonexistent/chromium"))


def without_playwright(monkeypatch: pytest.MonkeyPatch, path: str = "") -> str:
    """find_browser's message when the playwright package cannot be imported."""
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)  # import raises ImportError
    with pytest.raises(RenderUnavailable, match="needs the playwright package") as caught:
        find_browser(path)
    return str(caught.value)


def test_without_playwright_a_checkout_is_told_to_install_itself(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A release's extra would replace the checkout being run: its own install is said."""
    root = Path(browser.__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    message = without_playwright(monkeypatch)
    assert f"{sys.executable} -m pip install -e '.[render]'" in message
    assert "sieve-crawler[render]" not in message and "make test" in message
    monkeypatch.chdir(tmp_path)  # run from elsewhere: the checkout's path
    assert f"-m pip install -e '{root}[render]'" in without_playwright(monkeypatch)


def test_without_playwright_a_release_is_told_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser, "checkout", lambda: None)
    message = without_playwright(monkeypatch, "/nonexistent/chromium")  # and no Chromium
    assert (
        "pip install 'sieve-crawler[render]'" in message and "apt-get install chromium" in message
    )


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
    assert "is not an executable file" in proc.stderr and "apt-get install chromium" in proc.stderr
