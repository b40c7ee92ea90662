"""`CrawlRun`: however the consumer left the crawl's generator, `end()` returns only once the
generator's own clean-up (its `finally`: the workers stopped, the state closed) has run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from crawler.engine.run import CrawlRun


class Source:
    """A generator of 0, 1, 2, ... that, at `block_at`, waits for `release`, then ends; `closed`
    once its clean-up ran."""

    def __init__(self, block_at: int = 1_000) -> None:
        self.closed = False
        self.block_at = block_at
        self.release = asyncio.Event()
        self.blocked = asyncio.Event()  # set once it waits for `release`

    async def items(self) -> AsyncGenerator[int, None]:
        try:
            for i in range(10_000):
                if i >= self.block_at:
                    self.blocked.set()
                    await self.release.wait()
                    return
                yield i
        finally:
            await asyncio.sleep(0)  # an asynchronous clean-up, as the crawl's
            self.closed = True


async def test_a_loop_left_by_break_is_closed_before_end_returns() -> None:
    source, run = Source(), CrawlRun[int]()
    async for _ in run.watch(source.items()):
        break  # the generator is dropped: the event loop's finalizer closes it
    await run.end()
    assert source.closed


async def test_a_generator_still_held_is_closed_by_end() -> None:
    source, run = Source(), CrawlRun[int]()
    results = run.watch(source.items())
    assert await anext(results) == 0
    await run.end()
    assert source.closed
    assert await anext(results, None) is None


async def test_a_generator_iterated_by_another_task_is_stopped_and_waited_for() -> None:
    source, run = Source(block_at=2), CrawlRun[int]()
    taken: list[int] = []

    async def consume() -> None:
        async for item in run.watch(source.items()):
            taken.append(item)

    task = asyncio.create_task(consume())
    await source.blocked.wait()  # the consumer waits inside the generator (not at a yield)
    await run.end(source.release.set)
    assert source.closed and taken == [0, 1]
    await task


async def test_a_crawl_never_started_ends_at_once() -> None:
    source, run = Source(), CrawlRun[int]()
    await run.end()  # nothing watched
    results = run.watch(source.items())
    await run.end()  # watched, never iterated: closed, nothing ran
    assert not source.closed
    assert await anext(results, None) is None
    assert "started=False" in repr(run)
