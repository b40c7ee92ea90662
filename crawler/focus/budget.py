"""The fetch budget of a focused crawl: at most `limit` page results, whatever is admitted.

Best-first crawling admits every new link (with its priority) and fetches the best ones first,
so its page limit must count fetches, not admissions. A worker claims a slot before it takes an
entry from the frontier and settles it after: spent when the entry gave a page result, given
back otherwise (a retry, a robots.txt fetch or refusal). Workers wait while every slot is
claimed, and stop once all are spent; the entries still queued stay queued (pending in a
crawl state, for a resume with a larger budget: the budget counts the results of every run).
"""

from __future__ import annotations

import asyncio

__all__ = ["FetchBudget"]


class FetchBudget:
    """`limit` page results, claimed and settled one at a time by the crawl's workers."""

    __slots__ = ("_changed", "held", "limit", "spent")

    def __init__(self, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        self.limit = limit
        self.spent = 0  # slots used by a page result
        self.held = 0  # slots claimed by a worker, not yet settled
        self._changed = asyncio.Event()

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.limit

    async def claim(self) -> bool:
        """Wait for a free slot and take it; False once the whole budget is spent."""
        while self.spent + self.held >= self.limit:
            if self.spent >= self.limit:
                return False
            await self._changed.wait()
        self.held += 1
        return True

    def spend(self, n: int) -> None:
        """Count `n` page results given before (by the runs a resumed crawl continues)."""
        self.spent += max(0, n)

    def settle(self, spent: bool) -> None:
        """Settle a claimed slot: `spent` when it gave a page result, else given back."""
        self.held -= 1
        self.spent += spent
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()  # wakes the workers waiting for a slot, or for the budget's end

    def __repr__(self) -> str:
        return f"<FetchBudget spent={self.spent}/{self.limit} held={self.held}>"
