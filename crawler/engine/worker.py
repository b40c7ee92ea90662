"""A crawl worker's loop: entries taken from the frontier, each turned into its result.

`run_worker` is what each of `Crawler`'s worker tasks runs (`crawler.engine.crawler`): claim a slot
of the fetch budget (a focused crawl's), `frontier.get()`, then fetch robots.txt, emit a refusal,
or fetch the page (`crawler.engine.pages`); `frontier.done()` (`frontier.abandon` for an entry left
unhandled) runs in `finally`. A failure while handling one URL becomes that URL's result
(``internal: ...``), it never ends the loop, except the errors that end the crawl (a failed scorer,
an output or crawl state that cannot be written, a lost shared crawl in Redis, a network or proxy
outage, memory running out). Those, and whatever is raised outside the handling of one URL (by the
frontier: ``get()``, ``done()``, a `crawler.frontier.FrontierFailure`; the budget), end the loop
and are returned: the engine raises the `FATAL` ones as they are, any other as "a crawl worker
died", at once (a bug never looks like a slow site). Cancelled, the loop returns None:
the entry in flight stays pending in the state.
`WorkerDone` is what a worker leaves on the engine's results queue when it ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from crawler.engine.pages import PageHandler, failed_result
from crawler.errors import NetworkUnavailable, OutputError, ScoreError, SharedStateError
from crawler.focus.budget import FetchBudget
from crawler.frontier import EntryKind, Outcome
from crawler.frontier.base import WorkSource
from crawler.output.results import CrawlResult
from crawler.state.db import StateError

__all__ = ["FATAL", "WorkerDone", "run_worker"]

# the engine's logger, whose name a URL's internal error was always logged under (the `crawl`
# command's log lines show it)
log = logging.getLogger("crawler.engine.crawler")

# errors that end the crawl, raised by crawl(): a failed scorer, the shared state in Redis, an
# output or the crawl state that cannot be written (a full disk), a proxy or network outage, and
# memory running out (no URL's fault: recorded as one URL's result it would read as a bad page,
# and the next URLs would only run out again)
FATAL = (ScoreError, SharedStateError, OutputError, StateError, NetworkUnavailable, MemoryError)


class WorkerDone:
    """What a worker leaves on the results queue when it ends: the error that ended it, if any."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


async def run_worker(
    frontier: WorkSource,
    pages: PageHandler,
    budget: FetchBudget | None,
    emit: Callable[[CrawlResult], Awaitable[None]],
) -> BaseException | None:
    """Handle the frontier's entries until it runs out or closes, or the budget is spent; the
    error that ended the loop, or None (cancelled too: the entry in flight stays pending).

    `emit` hands a result to the consumer."""
    error: BaseException | None = None
    try:
        while budget is None or await budget.claim():
            if (entry := await frontier.get()) is None:
                if budget is not None:
                    budget.settle(False)
                break
            outcome: Outcome | None = None
            retry = handled = False
            try:
                if entry.kind is EntryKind.ROBOTS:
                    outcome = await pages.fetch_robots(entry)
                elif entry.kind is EntryKind.REFUSED:
                    refused = frontier.refusal(entry)  # "robots: ..." or "host_down: ..."
                    await emit(failed_result(entry, refused))  # counted by its kind
                else:
                    outcome, retry, result = await pages.fetch_page(entry)
                    if result is not None:
                        await emit(result)
                handled = True
            except FATAL:
                raise  # ends the crawl: raised by crawl(); with a state, the URL stays pending
            except Exception as exc:  # a bug handling one URL must not kill the crawl
                log.exception("internal error while crawling %s", entry.url)
                await emit(failed_result(entry, f"internal: {type(exc).__name__}: {exc}"))
                handled = True
            finally:
                try:
                    if handled:
                        frontier.done(entry, outcome, retry=retry)  # its host's slot, always
                    else:  # aborted: its slot freed (with a state, left pending; shared: back)
                        frontier.abandon(entry)
                finally:
                    if budget is not None:  # spent by a page's result
                        budget.settle(handled and entry.kind is EntryKind.PAGE and not retry)
    except asyncio.CancelledError:
        pass  # aborted: the entry in flight stays pending in the state, if any
    except BaseException as exc:
        error = exc
    return error
