"""Politeness by address on loopback: several virtual hosts resolved to one address (the
``[fetch] resolve`` override) share ``ip_delay``, measured at the server; each name is resolved
once, by the frontier, and the connection goes to the address it pinned (`AddressBook`)."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from crawler.engine.crawler import Crawler
from crawler.fetch.resolver import AddressBook, DnsTtl, OverrideResolver, numeric
from tests.support.address_site import address_config, logging_site
from tests.support.server import serve
from tests.support.spacing import assert_spaced

HOSTS = [f"v{i}.test" for i in range(6)]
PAGES = 4  # per host, robots.txt apart
IP_DELAY = 0.15
V4 = socket.AF_INET


@pytest.mark.slow
async def test_virtual_hosts_on_one_address_share_its_delay_at_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    starts: list[float] = []
    asked: Counter[str] = Counter()
    resolve = OverrideResolver.resolve

    async def counted(
        self: OverrideResolver, host: str, port: int = 0, family: socket.AddressFamily = V4
    ) -> list[ResolveResult]:
        asked[host] += 1
        return await resolve(self, host, port, family)

    monkeypatch.setattr(OverrideResolver, "resolve", counted)

    async with serve(logging_site(starts, PAGES)) as port:
        config = address_config(HOSTS, IP_DELAY)
        async with asyncio.timeout(60), Crawler(config) as crawler:
            results = [r async for r in crawler.crawl([f"http://{h}:{port}/" for h in HOSTS])]
            stats = crawler.stats_dict()
    assert len(results) == len(HOSTS) * PAGES
    assert len(starts) == len(HOSTS) * (PAGES + 1)  # robots.txt counts
    # arrival times at a real server: judged on the whole and on the median, with no tight gap
    # (one late arrival shortens its gap); without the address budget the 6 hosts start
    # together, gaps of ~0. The exact gaps: tests/frontier/test_frontier_address.py
    assert_spaced(starts, IP_DELAY, "one address")
    assert asked == dict.fromkeys(HOSTS, 1)  # one resolution per name, by the frontier
    assert stats["addresses"]["ip_delay"] == IP_DELAY
    assert stats["addresses"]["addresses"] == 1


class Flipping(AbstractResolver):
    """Answers 127.0.0.1 the first time, then an address nothing listens on (a DNS rebind)."""

    def __init__(self) -> None:
        self.calls = 0

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = V4
    ) -> list[ResolveResult]:
        self.calls += 1
        return [numeric(host, "127.0.0.1" if self.calls == 1 else "127.0.0.9", port)]

    async def close(self) -> None:
        pass


async def test_a_pinned_name_connects_to_its_pinned_address_without_asking_again() -> None:
    inner = Flipping()
    book = AddressBook(inner, DnsTtl(default=0.0, low=0.0, high=0.0))  # every answer expired
    answer = await book.lookup("a.test")
    book.pin("a.test", answer.addresses[0])
    for _ in range(3):
        assert await book.resolve("a.test", 80) == [numeric("a.test", "127.0.0.1", 80)]
    assert inner.calls == 1
    book.pin("a.test", None)  # not pinned: looked up (the TTL of 0 s: asked again)
    assert [r["host"] for r in await book.resolve("a.test", 80)] == ["127.0.0.9"]
    assert inner.calls == 2
