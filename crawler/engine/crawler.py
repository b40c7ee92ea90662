"""The crawl engine: workers that take URLs from the frontier and turn them into results.

    async with Crawler(config) as crawler:
        async for result in crawler.crawl(["https://example.org/"]):
            ...

Each worker (`crawler.engine.worker`) loops: `frontier.get()` (politeness is decided there, before a
URL is handed out), fetch, extract links (`crawler.engine.pages`: what is done with each URL), then
the per-link path (`crawler.admission.gate`: ``urls.resolve -> scope.check -> Sieve ->
frontier.put``); `frontier.done()` runs in `finally`. A failure while handling one URL becomes that
URL's result (`error`), it never kills a worker; a worker that dies anyway ends the crawl with its
exception instead of vanishing. An output or crawl state that cannot be written (`OutputError`,
`StateError`: a full disk) ends the crawl with that error; the URL stays pending in the state. So
does a proxy or network outage that outlasts ``[fetch] outage_give_up`` (`NetworkUnavailable`,
`ProxyUnavailable`: `crawler.fetch.outage`); every URL not yet fetched stays pending.

With ``[cluster] redis`` (``crawl --redis URL``) the frontier and the seen test are shared with
other processes (`crawler.cluster`): the same workers, a `SharedWork` frontier, and admission
through the shared crawl. A Redis failure ends the crawl with `SharedStateError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncGenerator, Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from crawler.admission.scope import Scope
from crawler.config.checks import check_extract
from crawler.config.load import Config
from crawler.engine.assemble import Assembly, seen_test
from crawler.engine.components import (
    make_fetcher,
    make_urls,
    warn_unused_outputs,
)
from crawler.engine.focus import Focus
from crawler.engine.gctune import young_threshold
from crawler.engine.pages import PageHandler
from crawler.engine.recrawl import stored_validators
from crawler.engine.rendering import Rendering
from crawler.engine.run import CrawlRun
from crawler.engine.stats import crawl_stats
from crawler.engine.worker import FATAL, WorkerDone, run_worker
from crawler.errors import ConfigError, SharedStateError
from crawler.fetch.response import Response
from crawler.focus.budget import FetchBudget
from crawler.focus.scoring import ScoreFn
from crawler.frontier.base import WorkSource
from crawler.output.results import CrawlResult, CrawlStats
from crawler.parse.thread import Parser, switch_interval
from crawler.parse.yields import ExtractFn
from crawler.state.crawlstate import CrawlState

if TYPE_CHECKING:
    from crawler.cluster import ClusterNode  # redis-py: only for a shared crawl
    from crawler.content import ContentIndex
    from crawler.content.redis import RedisContentIndex

__all__ = ["Crawler"]

log = logging.getLogger(__name__)


class Crawler(Assembly):
    """A crawl: configuration, the Sieve, the canonicalizer, the fetcher and the stats."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        clock: Callable[[], float] | None = None,
        recorder: Callable[[Response], None] | None = None,
        state: CrawlState | None = None,
        score: ScoreFn | None = None,
        extract: ExtractFn | None = None,
    ) -> None:
        """`clock` drives politeness (default: the event loop's); `recorder` sees every HTTP
        response as received, robots.txt and redirects included (the WARC writer is one);
        `state` makes the crawl crash-safe and resumable (see `crawler.state.crawlstate`); `score`
        gives each new link its priority, or None to skip it (see `crawler.focus.scoring`; it takes
        the place of the `[focus]` scorer's link priorities, not of its page relevance); `extract`
        reads fields of each HTML page beyond the ``[[extract]]`` rules' (`fn(page) -> dict`,
        `crawler.parse.yields.ExtractPage`; docs/yields.md)."""
        self.config = config = config or Config()
        self.stats = CrawlStats()
        self.focus = Focus.build(config, score, self.stats)
        self._extract = extract
        check_extract(config.extract)
        self.budget: FetchBudget | None = None  # built with the frontier (`budget_limit`)
        self._clock = clock
        self._recorder = recorder
        self.state = state
        warn_unused_outputs(config, state=state is not None, recorder=recorder is not None)
        self.urls = make_urls(config)
        self.fetcher = make_fetcher(config)
        self.frontier: WorkSource | None = None
        self.scope: Scope | None = None
        self.cluster: ClusterNode | None = None
        if config.cluster.redis:
            try:
                from crawler.cluster import check_cluster_config
            except ImportError as exc:  # redis-py is an extra
                raise ConfigError(f"--redis needs redis-py: pip install "
                                  f"'sieve-crawler[redis]' ({exc})") from None  # fmt: skip
            check_cluster_config(config, state=state is not None)
        self.sieve, self.dedup = seen_test(config, state)  # a resumed state's Sieve: restored
        self.stopped = False
        self._ran_out = False
        self._results: asyncio.Queue[CrawlResult | WorkerDone] = asyncio.Queue()
        self._room = asyncio.Semaphore(2 * config.crawl.concurrency)
        self._workers: list[asyncio.Task[None]] = []
        self._untaken: CrawlResult | None = None  # yielded, and the consumer has not come back
        self._checkpoint_at = 0.0  # when the state's next checkpoint is due
        self.pages: PageHandler | None = None  # built with the frontier (_prepare)
        self.parser = Parser()
        dc = config.dedup
        self.content: ContentIndex | RedisContentIndex | None = None
        # imported only then: numpy (a shared crawl's index lives in Redis: see _prepare)
        if dc.enabled and not config.cluster.redis:
            from crawler.content import ContentIndex

            self.content = ContentIndex(dc.near_distance)
        # a recrawl (a state's generation > 0): pages are fetched with their stored validators
        self.recrawl = state is not None and state.generation > 0
        # [render]: a browser for the pages to render (RenderUnavailable without one), or None
        self.rendering = Rendering.build(config, self.fetcher, self.parser, recorder)
        self._entered = False  # `async with Crawler(...)`: the fetcher's session is open
        self._run = CrawlRun[CrawlResult]()  # crawl()'s generator: `async with` ends it first
        # called with each result as it is counted (crawler.observe's metrics and report)
        self.watchers: list[Callable[[CrawlResult], None]] = []

    async def __aenter__(self) -> Crawler:
        await self.fetcher.__aenter__()
        self._entered = True
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._entered = False
        try:
            await self._run.end(self.stop, self.abort)
        finally:
            try:
                if self.rendering is not None:
                    await self.rendering.close()
            finally:
                try:
                    await self.fetcher.close()
                finally:
                    await self.parser.close()

    # -- the crawl -------------------------------------------------------------------------

    def crawl(self, seeds: Iterable[str]) -> AsyncGenerator[CrawlResult, None]:
        """Crawl from `seeds`, yielding one result per fetched, failed or refused URL.

        A Crawler runs one crawl; breaking out of the loop ends it cleanly: at once with
        `contextlib.aclosing`, else when `async with Crawler(...)` ends. With a `state`, the
        crawl closes it at the end, with a last snapshot and the status "finished" or
        "interrupted"; a state it could not load is closed untouched."""
        return self._run.watch(self._run_crawl(seeds))

    async def _run_crawl(self, seeds: Iterable[str]) -> AsyncGenerator[CrawlResult, None]:
        """The crawl, top to bottom: assemble, start the workers, hand their results out one by
        one (each then done for good), see whether the work ran out, shut down."""
        if self._workers:
            raise RuntimeError("this Crawler has already crawled; make a new one")
        await self._assemble(seeds)
        self._start_workers()
        with switch_interval(), young_threshold():
            try:
                async for result in self._results_of_workers():
                    self._untaken = result
                    yield result
                    self._untaken = None  # the consumer has taken it: now the URL is done
                    self._consumed(result)
                self._ran_out = not self.stopped and not await self._budget_spent_with_work_left()
            finally:
                await self._shut_down()

    async def _assemble(self, seeds: Iterable[str]) -> None:
        """The crawl's parts (`crawler.engine.assemble`); on failure, a state is left untouched
        and a shared crawl's process leaves it."""
        try:
            await self._prepare(seeds)
        except BaseException:
            if self.state is not None:
                self.state.abandon()
            if self.cluster is not None:
                await self.cluster.close(self.stats.as_dict)
            raise

    def _start_workers(self) -> None:
        self.stats.started = time.monotonic() - self.stats.elapsed
        self._checkpoint_at = time.monotonic() + self.config.state.checkpoint_interval
        self._workers = [
            asyncio.create_task(self._worker(), name=f"crawl-worker-{i}")
            for i in range(self.config.crawl.concurrency)
        ]

    async def _results_of_workers(self) -> AsyncGenerator[CrawlResult, None]:
        """Each worker's results until every worker has ended; a worker that died ends the crawl
        with its error (a fatal one as it is, any other as a RuntimeError: a bug)."""
        results, running = self._results, len(self._workers)
        while running:
            item = await results.get()
            if isinstance(item, WorkerDone):
                running -= 1
                if isinstance(item.error, FATAL):
                    raise item.error
                if item.error is not None:  # a bug: the crawl ends now (state kept)
                    why = f"{type(item.error).__name__}: {item.error}"
                    raise RuntimeError(f"a crawl worker died: {why}") from item.error
                continue
            self.stats.record(item)
            for watch in self.watchers:
                watch(item)
            self.stats.elapsed = time.monotonic() - self.stats.started
            yield item

    def _consumed(self, result: CrawlResult) -> None:
        """The consumer took `result`: room for another (back-pressure), its lease ended, the
        URL journaled done, a checkpoint when one is due."""
        self._room.release()
        if self.cluster is not None:
            self.cluster.work.consumed(result.key)
        state = self.state
        if state is not None:
            state.completed(result.key, *stored_validators(result), stats=self.stats.as_dict())
            if time.monotonic() >= self._checkpoint_at:
                state.checkpoint(self.sieve, self.stats.as_dict())
                self._checkpoint_at = time.monotonic() + self.config.state.checkpoint_interval

    async def _budget_spent_with_work_left(self) -> bool:
        """Whether the fetch budget ended the crawl with URLs left (unfinished: resumable)."""
        budget = self.budget
        if self.cluster is not None and budget is not None and budget.exhausted:
            with contextlib.suppress(SharedStateError):  # else: as at the last claim
                await self.cluster.work.refresh()  # queued now, by every process
        left = self.frontier is not None and len(self.frontier) > 0
        return budget is not None and budget.exhausted and left

    async def _shut_down(self) -> None:
        """Close the frontier, cancel and await the workers, and save: a result whose consumer
        did not come back (it raised, or broke out of the loop) stays pending, uncounted."""
        assert self.frontier is not None
        self.frontier.close()
        self.abort()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self.stats.elapsed = time.monotonic() - self.stats.started
        saved = functools.partial(self.stats.without, self._untaken)
        if self.cluster is not None:  # completions sent, a last heartbeat
            await self.cluster.close(saved)
        if self.state is not None:
            status = "finished" if self._ran_out else "interrupted"
            self.state.close(self.sieve, saved(), status)

    def stop(self) -> None:
        """Stop handing out work; fetches in flight finish, then the crawl ends."""
        self.stopped = True
        if self.frontier is not None:
            self.frontier.close()

    def abort(self) -> None:
        """Cancel the fetches in flight (with a state, they stay pending for a resume)."""
        for task in self._workers:
            task.cancel()

    @property
    def complete(self) -> bool:
        """True when the crawl ran out of work (not stopped, not left early by its consumer)."""
        return self._ran_out

    # -- workers ---------------------------------------------------------------------------

    async def _emit(self, result: CrawlResult) -> None:
        await self._room.acquire()  # back-pressure: at most 2 x concurrency results waiting
        assert self.frontier is not None
        self.frontier.emitted(result.key)  # (a shared crawl's lease ends once it is consumed)
        self._results.put_nowait(result)

    async def _worker(self) -> None:
        assert self.frontier is not None and self.pages is not None
        error: BaseException | None = None
        try:
            error = await run_worker(self.frontier, self.pages, self.budget, self._emit)
        except asyncio.CancelledError:
            raise  # aborted (the crawl is ending): not an error
        except BaseException as exc:  # (run_worker returns its errors): never end unannounced
            error = exc
            raise
        finally:  # crawl() counts its workers' ends: each must say it ended, or it waits forever
            self._results.put_nowait(WorkerDone(error))

    def forget(self, url: str) -> bool:
        """Let `url` be admitted again (when a page links it or it is given as a seed), in this
        crawl and, with a state, in every resume of it: its key leaves the URL-seen filter, the
        exact tier and the state's journal (its validators with it; a URL still to fetch, such
        as the result being handled, once it is done). Only with a kind that can delete
        (`[sieve] kind = "counting"` or `"cuckoo"`), else a TypeError; a ValueError for a URL
        that is not crawlable.

        Inside the `async for` loop: True when the filter had the URL. Before `crawl()`: with a
        state, it is forgotten there (the resumed crawl's filter is restored without it), True
        when the state had it; without one, there is nothing to forget (False). Once the crawl
        has ended: a RuntimeError (forget with the next run's Crawler, before its `crawl()`)."""
        if not self.sieve.supports_remove:
            raise TypeError(f"Crawler.forget needs a [sieve] kind that can delete ('counting' or "
                            f"'cuckoo'); this crawl's is {self.sieve.kind!r}")  # fmt: skip
        if self.cluster is not None:  # (refused before: a shared crawl's Sieve is scalable)
            raise TypeError("Crawler.forget: a shared crawl's Sieve cannot delete")
        key = self.urls.canonicalize(url)
        if key is None:
            raise ValueError(f"Crawler.forget: not a crawlable http(s) URL: {url!r}")
        if self._run.ended:
            raise RuntimeError("Crawler.forget: this crawl has ended (its state is closed); "
                               "forget URLs inside its loop, or before the next run's crawl() "
                               "with the same state")  # fmt: skip
        if not self._run.started:  # the filter is not restored yet: the state's record only
            return self.state.forget(key) if self.state is not None else False
        if self.pages is None:
            raise RuntimeError("Crawler.forget: the crawl is starting; forget URLs before "
                               "crawl() or inside its loop")  # fmt: skip
        had = self.dedup.forget(key)  # (first: it consults the exact tier the state forgets)
        if self.state is not None:
            self.state.forget(key)
        return had

    def seen_figures(self) -> dict[str, Any]:
        """The seen test's figures: the shared Sieve's in a crawl through Redis (this process's
        local one is unused), else the filter's and the exact tier's."""
        return self.cluster.sieve_stats() if self.cluster is not None else self.dedup.figures()

    def stats_dict(self) -> dict[str, Any]:
        """Crawl, frontier, Sieve and canonicalizer figures in one JSON-ready dict."""
        scorer = self.focus.scorer if self.focus is not None else None
        guard, outage = self.fetcher.guard, self.fetcher.outage
        figures = crawl_stats(
            self.stats.as_dict(),
            seen=self.seen_figures(),
            memo_hit_rate=self.urls.memo_hit_rate,
            threshold=scorer.threshold if scorer is not None else None,
            content=self.content,
            ssrf_blocked=guard.blocked if guard is not None else 0,
            outages=outage.stats() if outage is not None else None,
            frontier=self.frontier.stats if self.frontier is not None else None,
        )
        if self.rendering is not None:
            figures["render"] = self.rendering.stats()
        return figures
