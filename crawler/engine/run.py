"""`CrawlRun`: `Crawler.crawl()`'s generator, watched so that ``async with Crawler(...)`` ends
the crawl before it closes the session, however the consumer left the loop.

The generator is held by weak reference only: a loop left by ``break`` drops it, and the event
loop's finalizer closes it at once (the workers stop while the program goes on inside its
``async with``); `end` then waits for that close. A generator still referenced is closed by
`end` itself; one being iterated by another task is stopped and waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import Generic, TypeVar

__all__ = ["CrawlRun"]

T = TypeVar("T")


class CrawlRun(Generic[T]):
    """One crawl's generator: whether it started and ended, and how to end it."""

    __slots__ = ("_ended", "_ref", "_started")

    def __init__(self) -> None:
        self._ref: weakref.ref[AsyncGenerator[T, None]] | None = None
        self._started = False
        self._ended = asyncio.Event()

    def watch(self, results: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        """`results` as the consumer iterates them, watched (the generator to hand out)."""
        run = self._watched(results)
        self._ref = weakref.ref(run)
        return run

    async def _watched(self, results: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
        self._started = True
        try:
            async with contextlib.aclosing(results) as inner:
                async for item in inner:
                    yield item
        finally:
            self._ended.set()

    async def end(self, *stop: Callable[[], None]) -> None:
        """End the crawl, whoever holds its generator: a loop left by `break` (the event loop's
        finalizer of the dropped generator is closing it: wait for it), a generator still
        referenced (close it), one iterated by another task (call each `stop`, then wait)."""
        ref, self._ref = self._ref, None
        run = ref() if ref is not None else None
        if run is not None and not getattr(run, "ag_running", False):
            await run.aclose()
        elif self._started and not self._ended.is_set():
            if run is not None:
                for call in stop:
                    call()
            await self._ended.wait()

    @property
    def started(self) -> bool:
        return self._started

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    async def wait(self) -> None:
        """Until the crawl has ended (it must have started)."""
        await self._ended.wait()

    def __repr__(self) -> str:
        held = self._ref is not None and self._ref() is not None
        return f"<CrawlRun started={self._started} ended={self._ended.is_set()} held={held}>"
