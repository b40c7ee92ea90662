"""The hosts by state that `crawl_hosts` reports: the frontier counts the hosts backed off (of
those waiting) and the hosts down."""

from __future__ import annotations

import asyncio

from crawler.frontier import Entry, Frontier, Outcome
from crawler.frontier.settings import Politeness
from tests.support.frontier_sim import page


async def handed_out(frontier: Frontier, n: int) -> dict[str, Entry]:
    async with asyncio.timeout(10):
        entries = [await frontier.get() for _ in range(n)]
    return {e.url.split("/")[2]: e for e in entries}


async def test_the_frontier_counts_hosts_backed_off_and_down() -> None:
    frontier = Frontier(Politeness(respect_robots=False, max_host_failures=2))
    for host in ("busy", "ok"):
        for i in range(3):
            frontier.put(page(f"http://{host}.test/{i}"))
    entries = await handed_out(frontier, 2)
    frontier.done(entries["busy.test"], Outcome(status=503, retry_after="120"), retry=True)
    frontier.done(entries["ok.test"], Outcome(status=200))
    stats = frontier.stats
    assert (stats.ready_hosts, stats.waiting_hosts, stats.backoff_hosts) == (1, 1, 1)
    assert stats.down_hosts == 0
    frontier = Frontier(Politeness(respect_robots=False, max_host_failures=1))
    for i in range(3):
        frontier.put(page(f"http://gone.test/{i}"))
    entries = await handed_out(frontier, 1)
    frontier.done(entries["gone.test"], Outcome(failed=True))
    stats = frontier.stats
    assert stats.down_hosts == 1 and stats.backoff_hosts == 0
