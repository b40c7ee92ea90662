from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from crawler.config import Config
from crawler.fixture import FixtureSite


@pytest.fixture
async def site() -> AsyncIterator[FixtureSite]:
    """The fixture site on a free loopback port, with a short Crawl-delay."""
    async with FixtureSite(crawl_delay=0.02, slow=0.1) as s:
        yield s


def site_config(site: FixtureSite, **crawl: object) -> Config:
    """Default config pointed at the fixture site: resolver override, no extra delay."""
    config = Config().override("fetch", resolve=site.resolve)
    config = config.override("politeness", delay=0.0, backoff_base=0.05)
    config = config.override("crawl", concurrency=8)
    if crawl:
        config = config.override("crawl", **crawl)
    return config
