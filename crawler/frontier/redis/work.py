"""The shared frontier as the engine's workers see it: `SharedWork`.

The engine's workers call ``await get()``, then ``done()`` (in ``finally``), ``set_robots()``
and ``refusal()`` without awaiting, as with the in-memory frontier. Here:

- ``get()`` joins a queue of waiting workers; one claim task serves them all, claiming as many
  entries as workers wait in one round trip (``RedisFrontier.claim(count)``: each claim still
  takes one host's best entry under its politeness, so processes take turns on a host). When
  nothing is ready it waits until the earliest ready time or the poll interval (a bounded
  fallback), and claims again at once when a completion of any process frees a slot (this
  process's own, or a wake-up from Redis: ``crawler.frontier.redis.wake``). It answers None,
  to every waiting worker, once nothing is queued and nothing is leased by any process (the
  shared crawl is over), or after ``close()``.
- The completion of a URL whose result the engine emitted (``emitted(key)``) is held until the
  crawl's consumer has taken that result (``consumed(key)``; the CLI writes it first): the
  lease is released only once the result is out of the process, so a process killed with
  results in its buffers leaves their URLs leased, and they are fetched again, not lost.
- ``done()`` and ``set_robots()`` go to an outbox that one flush task sends in order: runs of
  completions in one ``done_many`` round trip, a robots.txt answer before the completion of its
  ROBOTS entry. A completion is thus sent a round trip after the fetch ends; if the process dies
  first, the lease expires and the URL is fetched again (a repeat, bounded by leases in flight).
- A Redis failure in either task ends the crawl: every waiting and later ``get()`` raises the
  `SharedStateError` (no local fallback); the crawl resumes when run again with Redis back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Final

from crawler.errors import SharedStateError
from crawler.frontier.base import FrontierStats
from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.redis.frontier import RedisFrontier
from crawler.frontier.redis.sharded import ShardedFrontier
from crawler.frontier.robots import RobotsPolicy

__all__ = ["SharedWork"]

log = logging.getLogger(__name__)

EMPTY_STATS: Final = FrontierStats(*([0] * len(FrontierStats.__dataclass_fields__)))


class _Robots:
    __slots__ = ("body", "key", "policy")

    def __init__(self, key: str, policy: RobotsPolicy, body: bytes | None) -> None:
        self.key, self.policy, self.body = key, policy, body


_Done = tuple[Entry, Outcome | None, bool]


class SharedWork:
    """The engine's frontier interface over a `RedisFrontier` (see the module docstring)."""

    __slots__ = ("_claimer", "_closed", "_error", "_flusher", "_frontier", "_held", "_kick",
                 "_leased", "_outbox", "_queued", "_spare", "_unconsumed", "_waiters", "_wake",
                 "poll_interval", "stats")  # fmt: skip

    def __init__(
        self, frontier: RedisFrontier | ShardedFrontier, *, poll_interval: float = 0.2
    ) -> None:
        self._frontier = frontier
        self.poll_interval = poll_interval
        self._waiters: deque[asyncio.Future[Entry | None]] = deque()
        self._spare: deque[Entry] = deque()  # claimed for a worker that stopped waiting
        self._outbox: list[_Done | _Robots] = []
        self._unconsumed: set[str] = set()  # keys whose result is emitted, not yet consumed
        self._held: dict[str, _Done] = {}  # their completions, if done() came first
        self._wake = asyncio.Event()  # the outbox has something
        self._kick = asyncio.Event()  # a completion was sent (or an address recorded): a host
        # may be ready
        if frontier.resolution is not None:
            frontier.resolution.recorded = self._kick.set
        frontier.wakes.on_wake = self._kick.set  # another process freed a slot
        self._claimer: asyncio.Task[None] | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._closed = False
        self._queued = self._leased = 0
        self.stats = EMPTY_STATS  # the shared frontier's figures, as last read (`refresh`)

    # -- hand-out ------------------------------------------------------------------------------
    async def get(self) -> Entry | None:
        if self._error is not None:
            raise self._error
        if self._closed:
            return None
        if self._spare:
            return self._spare.popleft()
        future: asyncio.Future[Entry | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        if self._claimer is None or self._claimer.done():
            self._claimer = asyncio.create_task(self._claim_loop(), name="cluster-claim")
        return await future

    async def _claim_loop(self) -> None:
        frontier = self._frontier
        try:
            while not self._closed:
                waiting = [w for w in self._waiters if not w.done()]
                self._waiters = deque(waiting)
                if not waiting:
                    return
                await frontier.wakes.listen()  # (again, if its connection was lost)
                await frontier.maybe_reclaim()
                self._kick.clear()
                entries, ready_in, queued, leased = await frontier.claim(len(waiting))
                self._queued, self._leased = queued, leased
                for entry in entries:
                    self._hand(entry)
                if entries:
                    continue
                if queued == 0 and leased == 0 and not self._outbox:
                    self._finish(None)  # the shared crawl is over
                    return
                wait = self.poll_interval if ready_in is None else min(self.poll_interval, ready_in)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._kick.wait(), wait)
            self._finish(None)
        except Exception as exc:
            self._fail(exc)

    def _hand(self, entry: Entry) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(entry)
                return
        self._spare.append(entry)

    def _finish(self, value: Entry | None) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(value)

    def fail(self, exc: BaseException) -> None:
        """End the crawl here with `exc` (a SharedStateError): every get() raises it."""
        self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        if not isinstance(exc, SharedStateError):
            exc = SharedStateError(f"the shared frontier failed: {type(exc).__name__}: {exc}")
        if self._error is None:
            log.error("%s", exc)
            self._error = exc
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(exc)

    # -- completions ---------------------------------------------------------------------------
    def done(self, entry: Entry, outcome: Outcome | None = None, *, retry: bool = False) -> None:
        if entry.key in self._unconsumed:
            self._held[entry.key] = (entry, outcome, retry)
        else:
            self._send((entry, outcome, retry))

    def abandon(self, entry: Entry) -> None:
        """An entry whose handling was cut short (the crawl is ending): another worker here
        may take it; else `drain` gives it back to the shared frontier, leased to nobody."""
        self._spare.append(entry)

    def emitted(self, key: str) -> None:
        """A result for `key` is on its way to the consumer: hold its completion until then."""
        self._unconsumed.add(key)

    def consumed(self, key: str) -> None:
        """The consumer took the result for `key`: its completion may go."""
        self._unconsumed.discard(key)
        held = self._held.pop(key, None)
        if held is not None:
            self._send(held)

    def set_robots(self, key: str, policy: RobotsPolicy, body: bytes | None = None) -> None:
        self._send(_Robots(key, policy, body))

    def _send(self, item: _Done | _Robots) -> None:
        self._outbox.append(item)
        self._wake.set()
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_loop(), name="cluster-flush")

    async def _flush_loop(self) -> None:
        try:
            while not self._closed:
                await self._wake.wait()
                self._wake.clear()
                await self._flush()
        except Exception as exc:
            self._fail(exc)

    async def _flush(self) -> None:
        frontier = self._frontier
        while self._outbox:
            items, self._outbox = self._outbox, []
            run: list[_Done] = []
            for item in items:
                if isinstance(item, _Robots):
                    if run:
                        await self._complete(run)
                        run = []
                    await frontier.set_robots(item.key, item.policy, item.body)
                else:
                    run.append(item)
            if run:
                await self._complete(run)
            self._kick.set()

    async def _complete(self, run: list[_Done]) -> None:
        """Send completions once the links their pages admitted are safe (`sync`: on a
        replica, on a cluster that has them); else give the pages back, to be fetched again."""
        frontier = self._frontier
        if await frontier.sync():
            await frontier.done_many(run)
        else:
            await frontier.release([entry for entry, _, _ in run])

    def refusal(self, entry: Entry) -> str:
        return self._frontier.refusal(entry)

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop handing out work here (other processes go on); waiting workers get None."""
        self._closed = True
        self._frontier.close()
        self._finish(None)

    async def drain(self) -> None:
        """Send what the outbox holds, give back the entries claimed for no worker, and stop
        the tasks (after the workers ended)."""
        self.close()
        if self._claimer is not None and not self._claimer.done():
            self._claimer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._claimer
        await self._frontier.wakes.close()
        if self._flusher is not None and not self._flusher.done():
            # let a flush under way finish: a Redis call cancelled mid-reply may swallow the
            # cancellation (redis-py), leaving the task waiting for work that never comes
            self._wake.set()
            await self._flusher
        if self._error is None:
            if self._outbox:
                await self._flush()
            if self._spare:
                await self._frontier.release(list(self._spare))
                self._spare.clear()
        self._flusher = self._claimer = None

    async def refresh(self) -> FrontierStats:
        """Read the shared frontier's figures (`stats`)."""
        self.stats = await self._frontier.stats()
        self._queued = self.stats.queued
        return self.stats

    def __len__(self) -> int:
        """URLs queued in the shared frontier at the last claim."""
        return self._queued

    @property
    def in_flight(self) -> int:
        return self._leased

    @property
    def error(self) -> BaseException | None:
        return self._error

    def __repr__(self) -> str:
        return (
            f"SharedWork(waiting={len(self._waiters)}, outbox={len(self._outbox)}, "
            f"queued={self._queued}, leased={self._leased}, closed={self._closed})"
        )
