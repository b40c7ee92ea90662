"""Helpers shared by several test modules (moved from test_frontier_redis.py)."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from crawler.frontier.entries import Entry
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.settings import Sharing
from crawler.frontier.settings import Politeness, QueueLimits
from crawler.sieve.redis import RedisSieve

PREFIX = "crawl:t:"


class Clock:
    """The injected clock: tests move it by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def frontier(client: Redis, clock: Clock, **kw: Any) -> RedisFrontier:
    """A RedisFrontier under `PREFIX` with its Sieve; `kw` are settings' fields by name (the
    politeness, queue limits and sharing objects are made from them) or the frontier's own."""
    sieve = RedisSieve(client, PREFIX, capacity=10_000, error_rate=1e-3)
    kw.setdefault("respect_robots", False)  # (the RedisFrontier's default)
    if "robots_max_attempts" in kw:
        kw["robots_attempts"] = kw.pop("robots_max_attempts")
    settings = [cls(**{k: kw.pop(k) for k in cls.__dataclass_fields__.keys() & set(kw)})
                for cls in (Politeness, QueueLimits, Sharing)]  # fmt: skip
    f = RedisFrontier(client, PREFIX, sieve, *settings, clock=clock, **kw)
    await f.open()
    return f


def page(url: str, priority: float = 0.0, **kw: Any) -> Entry:
    return Entry(url=url, key=url, priority=priority, **kw)


async def claim_one(f: RedisFrontier) -> Entry | None:
    entries, _, _, _ = await f.claim()
    return entries[0] if entries else None


ROBOTS_BODY = b"User-agent: *\nDisallow: /private\n"
