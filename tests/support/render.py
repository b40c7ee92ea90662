"""What the rendering tests share: the skip when no browser is installed (outside CI only), a
config rendering the fixture site, and a crawl collected into a dict."""

from __future__ import annotations

import os

import pytest

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from crawler.render import RenderUnavailable, find_browser
from crawler.testing.fixture import FixtureSite
from tests.support.server import site_config

__all__ = ["WATCHDOG", "crawl_all", "render_config", "requires_browser"]

WATCHDOG = 180.0  # seconds a whole rendering crawl may take in a test (a generous bound)


def _missing() -> str:
    try:
        find_browser()
    except RenderUnavailable as exc:
        return str(exc)
    return ""


MISSING = _missing()

# CI installs playwright and Chromium (make test): there, a missing browser fails the tests
requires_browser = pytest.mark.skipif(
    bool(MISSING) and not os.environ.get("CI"),
    reason=f"no browser to render with: {MISSING} (make test installs it)",
)


def render_config(site: FixtureSite, **render: object) -> Config:
    """The fixture site's test config with rendering on (and `render` over [render])."""
    config = site_config(site).override("render", enabled=True, timeout=30.0)
    return config.override("render", **render) if render else config


async def crawl_all(crawler: Crawler, seeds: list[str]) -> dict[str, CrawlResult]:
    """Every result of a crawl of `seeds`, by URL (within WATCHDOG seconds)."""
    import asyncio

    results: dict[str, CrawlResult] = {}
    async with asyncio.timeout(WATCHDOG):
        async for result in crawler.crawl(seeds):
            results[result.url] = result
    return results
