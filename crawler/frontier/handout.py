"""Handing entries out: the schedule of hosts, the getters waiting on it, and its one timer.

:class:`Handout` is the base of the in-memory :class:`crawler.frontier.memory.Frontier`: the side
of it that decides *when* an entry is handed out and *to whom*, while the frontier decides
*which* (its ``_poll(now)``, over the hosts its :class:`crawler.frontier.schedule.Schedule`
files) and takes back a hand-out nobody saw (its ``_unget(entry)``).

Waiting: idle ``get()`` calls park a future in a FIFO of waiters. Whenever something may have become
ready (``put``, ``done``, ``set_robots``, the timer) the frontier calls ``_dispatch()``, which hands
ready entries straight to waiting futures, and arms ONE timer (``loop.call_later``) for the
schedule's next ready time: no polling. Time: the clock defaults to the running loop's
``time()``; tests and benchmarks use :class:`crawler.testing.simtime.SimulatedLoop`.

A failure while handing out (an exception of the frontier's own code: a bug, never a slow site)
*breaks* the frontier: it closes, and every waiting and later ``get()`` raises
:class:`FrontierFailure` (the original as its ``__cause__``), so the crawl ends at once
instead of waiting for an entry that will never come (an error raised inside, say,
``set_robots()``'s hand-out would otherwise lose the entry and leave every worker waiting
forever). The call that triggered the hand-out (``put``, ``done``, ``set_robots``, the timer)
returns normally: the getters carry the failure.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress

from crawler.frontier.entries import Entry
from crawler.frontier.schedule import Schedule

__all__ = ["FrontierFailure", "Handout"]


class FrontierFailure(RuntimeError):
    """The frontier failed while handing out (a bug): the crawl ends; with a crawl state, every
    URL not done stays pending (the entry being handed out included)."""


class Handout:
    """The waiting getters, the timer and the counts that tell when the crawl is over (nothing
    queued, nothing in flight). Subclasses provide ``_poll`` and ``_unget``."""

    __slots__ = ("_clock", "_closed", "_failure", "_in_flight", "_loop", "_queued", "_schedule",
                 "_timer", "_timer_at", "_waiters")  # fmt: skip

    def __init__(self, clock: Callable[[], float] | None) -> None:
        self._clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._schedule = Schedule()
        self._waiters: deque[asyncio.Future[Entry | None]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._queued = 0
        self._in_flight = 0
        self._closed = False
        self._failure: FrontierFailure | None = None

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} queued={self._queued} in_flight={self._in_flight} "
            f"waiters={len(self._waiters)} closed={self._closed}>"
        )

    def __len__(self) -> int:
        return self._queued

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def get(self) -> Entry | None:
        """The next entry whose host may be fetched now, waiting as long as needed. None once the
        crawl is finished (nothing queued, nothing in flight) or the frontier is closed."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            if self._clock is None:
                self._clock = self._loop.time
            self._bound(self._loop)
        if self._failure is not None:
            raise self._failure
        if self._closed:
            return None
        if not self._waiters:
            try:
                entry = self._poll(self._now())
            except Exception as exc:
                raise self._fail(exc) from exc
            if entry is not None:
                return entry
            if self._queued == 0 and self._in_flight == 0:
                return None
        future: asyncio.Future[Entry | None] = self._loop.create_future()
        self._waiters.append(future)
        self._dispatch()
        try:
            return await future
        except asyncio.CancelledError:
            with suppress(ValueError):
                self._waiters.remove(future)
            handed = future.done() and not future.cancelled() and future.exception() is None
            if handed and (lost := future.result()) is not None:
                self._unget(lost)
            raise

    def close(self) -> None:
        """Stop handing out work: waiting and later ``get()`` calls return None."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._release_waiters()

    def _poll(self, now: float) -> Entry | None:
        """Hand out the next ready entry, or None if no host is ready at ``now``."""
        raise NotImplementedError

    def _bound(self, loop: asyncio.AbstractEventLoop) -> None:
        """The first ``get()`` bound the frontier to `loop` (subclasses may start work there)."""

    def _unget(self, entry: Entry) -> None:
        """Undo a hand-out whose getter was cancelled before it saw the entry."""
        raise NotImplementedError

    def _now(self) -> float:
        clock = self._clock
        if clock is not None:
            return clock()
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    def _fail(self, exc: Exception) -> FrontierFailure:
        """Break the frontier (module docstring): close it, hand the failure to every getter."""
        if self._failure is None:
            failure = FrontierFailure(
                f"internal error in the frontier while handing out: {type(exc).__name__}: {exc}"
            )
            failure.__cause__ = exc
            self._failure = failure
        self.close()
        return self._failure

    def _dispatch(self) -> None:
        """Hand ready entries to waiting getters; arm the timer for the rest, or finish. A
        failure breaks the frontier (module docstring), never the caller."""
        if self._failure is not None:
            return
        try:
            self._hand_out()
        except Exception as exc:
            self._fail(exc)

    def _hand_out(self) -> None:
        waiters = self._waiters
        now = self._now()
        while waiters:
            if waiters[0].done():  # cancelled
                waiters.popleft()
                continue
            entry = self._poll(now)
            if entry is None:
                break
            waiters.popleft().set_result(entry)
        if not waiters or self._closed:
            return
        if self._queued == 0 and self._in_flight == 0:
            self._release_waiters()
        elif (when := self._schedule.next_at) is not None:
            self._arm(when, now)

    def _release_waiters(self) -> None:
        """Answer None to every waiting getter (the crawl is over, or the frontier closed), or
        the failure that broke the frontier."""
        while self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                if self._failure is not None:
                    future.set_exception(self._failure)
                else:
                    future.set_result(None)

    def _arm(self, when: float, now: float) -> None:
        if self._timer is not None:
            if self._timer_at <= when:
                return
            self._timer.cancel()
        assert self._loop is not None, "waiters exist only after get() bound the loop"
        self._timer_at = when
        self._timer = self._loop.call_later(max(0.0, when - now), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = float("inf")
        self._dispatch()
