"""The fetch budget of a focused crawl shared through Redis: `SharedBudget`.

`crawler.focus.budget.FetchBudget` counts one process's page results. Shared, the count is one Redis
counter (``{prefix}budget``) that every process adds its page results to. A process claims a
slot while the shared count, its own results not yet added and its own claims in flight stay
under ``max_pages`` (each page result is added at once, and the reply tells the total; near
the limit every claim reads the counter first, and waits for the process's own fetches in
flight when they hold the rest). Other processes' claims in flight are not seen, so when the
budget runs out each process may still finish what it had claimed: a shared focused crawl
gives at least ``max_pages`` page results (when there are that many pages) and at most about
its processes' concurrency beyond it. A killed process's claims
hold nothing (only results count). The counter stays with the crawl: a process that joins
later, or a run with a larger ``max_pages``, goes on from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from redis.asyncio import Redis, RedisCluster
from redis.exceptions import RedisError

from crawler.errors import SharedStateError
from crawler.focus.budget import FetchBudget

__all__ = ["SharedBudget"]

log = logging.getLogger(__name__)

NEAR = 8  # slots from the limit where each claim reads the shared count first


class SharedBudget(FetchBudget):
    """`limit` page results over every process of a shared crawl (see the module docstring).
    ``await open()`` before the first claim, ``await drain()`` before leaving."""

    __slots__ = ("_client", "_key", "_lock", "_pending", "_poll", "_sender", "shared")

    def __init__(
        self, client: Redis | RedisCluster, key: str, limit: int, *, poll: float = 0.2
    ) -> None:
        super().__init__(limit)
        self._client = client
        self._key = key
        self._poll = poll
        self.shared = 0  # every process's page results, as last read or written
        self._pending = 0  # this process's page results not yet added to the counter
        self._sender: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def exhausted(self) -> bool:
        return self.shared + self._pending >= self.limit

    async def open(self) -> None:
        await self._sync()

    async def claim(self) -> bool:
        """Wait for a free slot and take it; False once the shared budget is spent. Within
        `NEAR` slots of the limit, the counter is read again first (a round trip)."""
        if self.shared + self._pending + self.held + NEAR >= self.limit:
            await self._sync()
        while self.shared + self._pending + self.held >= self.limit:
            await self._sync()
            if self.exhausted:
                return False
            if self.shared + self._pending + self.held >= self.limit:  # ours hold the rest
                changed = self._changed
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), self._poll)
        self.held += 1
        return True

    def settle(self, spent: bool) -> None:
        super().settle(spent)
        if spent:
            self._pending += 1
            if self._sender is None or self._sender.done():
                self._sender = asyncio.create_task(self._send(), name="shared-budget")

    async def drain(self) -> None:
        """Add what this process spent to the shared counter (before it leaves the crawl);
        SharedStateError if Redis fails."""
        if self._sender is not None:
            await self._sender
        await self._sync()

    async def _send(self) -> None:
        try:
            while self._pending:  # results settled during a round trip go in the next one
                await self._sync()
        except SharedStateError as exc:  # the crawl's own calls to Redis fail too
            log.warning("shared fetch budget: %s", exc)  # kept pending: sent by drain()

    async def _sync(self) -> None:
        """Add this process's unsent page results to the counter and read the total, in one
        INCRBY under a lock: a read overtaking an addition would count it twice."""
        async with self._lock:
            n = self._pending
            try:
                total = int(await self._client.incrby(self._key, n))
            except (RedisError, OSError) as exc:
                raise SharedStateError(f"Redis: {exc}") from exc
            self._pending -= n
            self.shared = total

    def __repr__(self) -> str:
        return (
            f"<SharedBudget shared={self.shared} pending={self._pending}/{self.limit} "
            f"held={self.held}>"
        )
