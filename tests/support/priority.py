"""Helpers shared by several test modules (moved from test_frontier_priority.py)."""

from __future__ import annotations

from crawler.frontier import Entry, Frontier


def page(url: str, priority: float = 0.0, depth: int = 0) -> Entry:
    return Entry(url=url, key=url, depth=depth, priority=priority)


async def drain(frontier: Frontier) -> list[Entry]:
    """Everything the frontier hands out, one at a time (done at once)."""
    got = []
    while (entry := await frontier.get()) is not None:
        got.append(entry)
        frontier.done(entry)
    return got
