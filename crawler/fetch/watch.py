"""Watching the fetches as they go: their pace, held to a floor, and their peer's address.

:class:`RateFloor` is the transfer-rate floor, like curl's ``--speed-limit``/``--speed-time``: a
transfer is *too slow* when, over any stretch of ``window`` seconds since it started, fewer than
``rate * window`` bytes came. It is pure arithmetic on the times it is given (tested without
sleeping) and keeps only the samples still needed.

:class:`Pacer` applies it to the fetches in flight on the event loop's clock: the headers are due
``window`` seconds after the request is sent, then the body is held to the floor. Each fetch's
:class:`FetchWatch` also notes the peer's address when :class:`WatchedRequest` (aiohttp's
request, the session's ``request_class``) sends the request: the connection is surely open then,
whereas a ``Connection: close`` response may have closed it by the time its headers are parsed;
and whether that connection had carried a request before (`FetchWatch.reused`): a pooled one,
which the server may have closed meanwhile (`StaleConnection`: `Fetcher.fetch` sends it again).
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from contextvars import ContextVar
from typing import Any

import aiohttp

__all__ = [
    "CURRENT",
    "STALE_TRIES",
    "FetchWatch",
    "Pacer",
    "RateFloor",
    "StaleConnection",
    "WatchedRequest",
]


class RateFloor:
    """The floor of one transfer started at ``now``; ``feed()`` each chunk as it arrives."""

    __slots__ = ("_need", "_samples", "_total", "rate", "window")

    def __init__(self, rate: float, window: float, now: float) -> None:
        if not (rate > 0 and window > 0):
            raise ValueError(f"rate and window must be > 0, got {rate!r} and {window!r}")
        self.rate = rate
        self.window = window
        self._need = rate * window
        self._total = 0
        # (time, bytes received up to then); the start counts as a sample of 0 bytes.
        self._samples: deque[tuple[float, int]] = deque([(now, 0)])

    @property
    def total(self) -> int:
        """Bytes fed so far."""
        return self._total

    @property
    def deadline(self) -> float:
        """When the transfer is too slow if nothing more comes: ``window`` after the earliest
        sample such that fewer than ``rate * window`` bytes came after it."""
        return self._samples[0][0] + self.window

    def feed(self, size: int, now: float) -> float:
        """Count `size` bytes received at `now`; returns the new deadline."""
        self._total += size
        samples = self._samples
        samples.append((now, self._total))
        enough = self._total - self._need  # a sample at or below this is no longer needed
        while samples[0][1] <= enough:
            samples.popleft()
        return samples[0][0] + self.window

    def __repr__(self) -> str:
        return (
            f"<RateFloor {self.rate:g} B/s over {self.window:g} s total={self._total} "
            f"deadline={self.deadline:.3f}>"
        )


class FetchWatch:
    """One fetch as it goes: its task, its peer's address, when its request was sent, and once
    the headers came, its body's stream and `RateFloor`. A `Pacer` checks it (`check`) and
    cancels its task when it is too slow; `expired()` then tells that cancellation from any
    other, as ``asyncio.timeout`` does."""

    __slots__ = ("_cancelling", "_fired", "_task", "floor", "peer", "reused", "sent_at", "stream")

    def __init__(self, task: asyncio.Task[Any] | None = None) -> None:
        self._task = task  # None: not watched (no floor)
        self._cancelling = 0 if task is None else task.cancelling()
        self._fired = False
        self.sent_at: float | None = None  # loop time the request was (last) sent
        self.stream: aiohttp.StreamReader | None = None
        self.floor: RateFloor | None = None
        self.peer: str | None = None
        self.reused = False  # the request was (last) sent on a connection that carried another

    def body(self, stream: aiohttp.StreamReader, rate: float, window: float, now: float) -> None:
        """The headers came: from now on the bytes of `stream` are held to the floor."""
        if self._task is not None:
            self.stream = stream
            self.floor = RateFloor(rate, window, now)

    def check(self, now: float, window: float) -> None:
        """Cancel the fetch if at `now` its headers are overdue or its body is under the floor."""
        floor, stream = self.floor, self.stream
        if floor is None or stream is None:
            if self.sent_at is None or now < self.sent_at + window:
                return
        else:
            received = stream.total_bytes - floor.total
            if received > 0:
                floor.feed(received, now)
            if floor.deadline > now:
                return
        task = self._task
        if task is not None and not self._fired and not task.done():
            self._fired = True
            task.cancel()

    def expired(self) -> bool:
        """True (once) when the task was cancelled by this watch alone: the fetch was too slow."""
        if not self._fired or self._task is None:
            return False
        self._fired = False
        return self._task.uncancel() <= self._cancelling

    def __repr__(self) -> str:
        return f"<FetchWatch peer={self.peer!r} sent_at={self.sent_at} floor={self.floor!r}>"


class Pacer:
    """Holds the fetches in flight to a floor of `rate` bytes/s over `window` s (`rate` 0: no
    floor): one timer for them all, every ``min(1 s, window / 4)`` while any is in flight (curl
    too samples once a second), so a fetch costs no timer of its own and reading a chunk costs
    nothing. A fetch is cut at most two ticks after the exact deadline."""

    __slots__ = ("_handle", "_watches", "rate", "tick", "window")

    def __init__(self, rate: float, window: float) -> None:
        if rate < 0 or window <= 0:
            raise ValueError(
                f"min_rate must be >= 0 and min_rate_window > 0, got {rate!r} and {window!r}"
            )
        self.rate = float(rate)
        self.window = float(window)
        self.tick = min(1.0, self.window / 4)
        self._watches: set[FetchWatch] = set()
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> FetchWatch:
        """The watch of a fetch starting in the current task; `finish()` it."""
        if self.rate <= 0:
            return FetchWatch()
        watch = FetchWatch(asyncio.current_task())
        self._watches.add(watch)
        if self._handle is None:
            loop = asyncio.get_running_loop()
            self._handle = loop.call_later(self.tick, self._tick, loop)
        return watch

    def body(self, watch: FetchWatch, stream: aiohttp.StreamReader) -> None:
        """The headers of `watch`'s fetch came: hold its body to the floor from now on."""
        if self.rate > 0:
            watch.body(stream, self.rate, self.window, asyncio.get_running_loop().time())

    def finish(self, watch: FetchWatch) -> None:
        self._watches.discard(watch)
        watch.expired()  # a cancellation that came too late to matter is taken back

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for watch in self._watches:
            watch.check(now, self.window)
        self._handle = loop.call_later(self.tick, self._tick, loop) if self._watches else None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def __repr__(self) -> str:
        return f"<Pacer {self.rate:g} B/s over {self.window:g} s, {len(self._watches)} in flight>"


CURRENT: ContextVar[FetchWatch | None] = ContextVar("crawler_fetch_watch", default=None)
"""The watch of the fetch running in this task (set by ``Fetcher.fetch``)."""

# The connections (their protocols) that have carried a request: one sent on them again is on a
# pooled connection, which the server may have closed meanwhile (its keep-alive timeout)
_CARRIED: weakref.WeakSet[asyncio.BaseProtocol] = weakref.WeakSet()
STALE_TRIES = 8  # sends of a request whose pooled connections the server had closed


class StaleConnection(Exception):
    """A reset or close before any answer on a connection that had carried a request
    (`FetchWatch.reused`; aiohttp sends it again once, maybe on another such): args[0] is the
    `crawler.errors.ConnectionReset` it would be."""


class WatchedRequest(aiohttp.ClientRequest):
    """aiohttp's request, noting the peer's address (and starting the clock of the headers) at
    the moment it is sent: the connection is open then, whatever happens after; and whether
    the connection had carried a request before (`FetchWatch.reused`)."""

    async def send(self, conn: aiohttp.connector.Connection) -> aiohttp.ClientResponse:
        watch = CURRENT.get()
        protocol = conn.protocol
        if watch is not None:
            watch.reused = protocol is not None and protocol in _CARRIED
            transport = conn.transport
            peer: Any = None if transport is None else transport.get_extra_info("peername")
            if isinstance(peer, tuple) and peer:
                watch.peer = str(peer[0])
            watch.sent_at = self.loop.time()
        if protocol is not None:
            _CARRIED.add(protocol)
        return await super().send(conn)
