"""When a rendered page is done: its load event, then its network quiet for ``settle`` seconds.

`Traffic` counts one page's requests in flight (every one passes through its route handler, so
the count is exact) and when the count last changed. `settled` waits until no request has been
in flight for ``quiet`` seconds, counted from the load event at the earliest: a link a script adds
after a timer shorter than that, or once a fetched JSON arrives, is in the DOM when it is read.
The bound on all of it is the page's timeout (`crawler.render.page`), not this module's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["Traffic", "settled"]


class Traffic:
    """One page's requests: in flight now, all, refused; when the count last changed."""

    __slots__ = ("_clock", "_idle", "in_flight", "last_change", "refused", "requests")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.in_flight = 0
        self.requests = 0
        self.refused = 0
        self.last_change = clock()
        self._idle = asyncio.Event()
        self._idle.set()

    def started(self) -> None:
        self.in_flight += 1
        self.requests += 1
        self.last_change = self._clock()
        self._idle.clear()

    def finished(self) -> None:
        self.in_flight -= 1
        self.last_change = self._clock()
        if not self.in_flight:
            self._idle.set()

    def quiet_since(self, floor: float) -> float:
        """Seconds without a request in flight, counted from `floor` at the earliest."""
        if self.in_flight:
            return 0.0
        return self._clock() - max(self.last_change, floor)

    async def idle(self) -> None:
        await self._idle.wait()

    def __repr__(self) -> str:
        counts = f"requests={self.requests} refused={self.refused}"
        return f"<Traffic in_flight={self.in_flight} {counts}>"


async def settled(traffic: Traffic, quiet: float, loaded_at: float) -> None:
    """Return once `traffic` has had nothing in flight for `quiet` seconds since `loaded_at`
    (the load event's time on the traffic's clock)."""
    while True:
        await traffic.idle()
        left = quiet - traffic.quiet_since(loaded_at)
        if left <= 0 and not traffic.in_flight:
            return
        await asyncio.sleep(max(left, 0.01))
