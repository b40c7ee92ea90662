"""Fixtures of the frontier's tests: the injected clock, and two connections to the module's
redis-server (two "processes" sharing one crawl), emptied for each test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from tests.support.redis_frontier import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def clients(redis_url: str) -> AsyncIterator[list[Redis]]:
    rs = [Redis.from_url(redis_url) for _ in range(2)]  # two connections: two "processes"
    yield rs
    for r in rs:
        await r.aclose()
