"""The render benchmark's peers, run in their own venv (bench/.cache/render-peers): crawlee-python's
PlaywrightCrawler and scrapy-playwright, each pointed at the same Chromium, 4 pages at once,
images, fonts and media not loaded, following every link of the site's host.

    render-peers/bin/python bench/render_peers.py crawlee|scrapy URL CHROMIUM

prints {"pages": N} on its last line. Not imported by the crawler (nor by its venv).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

SKIPPED = ("image", "font", "media")
ARGS = ["--no-sandbox", "--disable-dev-shm-usage"]


def crawlee(url: str, chromium: str) -> int:
    from crawlee import ConcurrencySettings  # type: ignore[import-not-found]
    from crawlee.crawlers import PlaywrightCrawler  # type: ignore[import-not-found]

    count = 0
    crawler = PlaywrightCrawler(
        headless=True,
        browser_type="chromium",
        browser_launch_options={"executable_path": chromium, "args": ARGS},
        concurrency_settings=ConcurrencySettings(desired_concurrency=4, max_concurrency=4),
        configure_logging=False,
    )

    @crawler.pre_navigation_hook
    async def skip(context: Any) -> None:
        async def route(r: Any) -> None:
            if r.request.resource_type in SKIPPED:
                await r.abort()
            else:
                await r.continue_()

        await context.page.route("**/*", route)

    @crawler.router.default_handler
    async def handler(context: Any) -> None:
        nonlocal count
        count += 1
        await context.enqueue_links(strategy="same-origin")

    asyncio.run(crawler.run([url]))
    return count


def scrapy(url: str, chromium: str) -> int:
    import scrapy as s  # type: ignore[import-not-found]
    from scrapy.crawler import CrawlerProcess  # type: ignore[import-not-found]

    counted: list[str] = []

    class Spider(s.Spider):  # type: ignore[misc]
        name = "render"

        async def start(self) -> Any:  # Scrapy >= 2.13 (start_requests before)
            yield s.Request(url, meta={"playwright": True})

        def start_requests(self) -> Any:
            yield s.Request(url, meta={"playwright": True})

        def parse(self, response: Any) -> Any:
            counted.append(response.url)
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, meta={"playwright": True})

    handler = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
    process = CrawlerProcess(
        {
            "DOWNLOAD_HANDLERS": {"http": handler, "https": handler},
            "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
            "PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": chromium, "args": ARGS},
            "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": 4,
            "PLAYWRIGHT_ABORT_REQUEST": lambda r: r.resource_type in SKIPPED,
            "CONCURRENT_REQUESTS": 4,
            "ROBOTSTXT_OBEY": False,
            "LOG_LEVEL": __import__("os").environ.get("PEER_LOG", "ERROR"),
            "TELNETCONSOLE_ENABLED": False,
        }
    )
    process.crawl(Spider)
    process.start()
    return len(counted)


if __name__ == "__main__":
    peer, target, path = sys.argv[1:4]
    pages = crawlee(target, path) if peer == "crawlee" else scrapy(target, path)
    print(json.dumps({"pages": pages}))
