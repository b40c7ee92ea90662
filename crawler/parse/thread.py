"""The parse thread: response bodies to `Markup` records, lexbor running on another core.

Lexbor releases the GIL while it builds a tree, so a crawl parses big bodies in a thread and
keeps the event loop free for fetches and the per-link path. Only the parse itself runs there:
sniffing, the nesting guard and reading the tree hold the GIL anyway, and every extra hand-over
of the GIL between the threads costs more than it saves: each numpy call of the nesting guard
would give the GIL up and wait behind the busy loop to get it back (docs/BENCHMARKS.md, "Before
and after the nesting guard and collector changes").

    parser = Parser()
    markup = await parser.parse(body, url, content_type)
    ...
    await parser.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser

from crawler.parse import markup
from crawler.parse.defuse import MAX_ATTRIBUTES, STRICT_MAX_TAGS
from crawler.parse.markup import (
    NOT_HTML,
    Main,
    Markup,
    parse_markup,
    parse_tree,
    prepare,
    read_tree,
)  # fmt: skip

if TYPE_CHECKING:
    from crawler.parse.yields import Yields

__all__ = [
    "CLOSE_WAIT_SECONDS", "PARSE_THREADS", "SPARE_THREADS", "STUCK_SECONDS", "SWITCH_INTERVAL",
    "THREAD_PARSE_BYTES", "Parser", "switch_interval",
]  # fmt: skip

if TYPE_CHECKING:
    from crawler.parse.pdf.pool import PdfPool, PdfRead

Tree = LexborHTMLParser | None

logger = logging.getLogger(__name__)

_RETIRED = -1.0

THREAD_PARSE_BYTES = 16 * 1024
"""Bodies larger than this are parsed in a parse thread; smaller ones parse faster on the loop
than a thread hop costs."""
PARSE_THREADS = max(1, min(4, (os.cpu_count() or 2) - 1))
"""Parse threads: lexbor parses without the GIL, so these use the cores the event loop does not."""
SPARE_THREADS = 2
"""Threads a Parser may add when every thread is stuck on one slow parse (markup built to make
lexbor quadratic: see crawler.parse.defuse.estimate), so that other pages keep flowing."""
STUCK_SECONDS = 1.0
"""A thread busy with one parse for longer than this is stuck (a typical page takes ~1 ms)."""
CLOSE_WAIT_SECONDS = 5.0
"""How long `Parser.close` waits for its threads (normally they are done at once)."""
SWITCH_INTERVAL = 0.00005
"""GIL switch interval (seconds) while a crawl runs, if the process's is longer (CPython's
default is 5 ms; restored after the crawl). A parse thread needs the GIL back for a moment after
each page; behind a busy event loop it would wait a whole interval for it, idling its core
(docs/BENCHMARKS.md, "Event loop and GIL settings")."""


class Parser:
    """Parses bodies on the calling loop (small ones) or in `threads` parse threads (the rest).

    The hand-over between the loop and the threads is built to take the GIL as rarely as
    possible, since each take behind a busy loop costs up to a switch interval: jobs and
    results go through deques; a thread sleeps (and is woken) only when there is no job, and
    wakes the loop (one self-pipe write) only when no earlier wake-up is still pending, so
    under load a page costs the thread one GIL take, after lexbor returns.

    A page can keep lexbor busy for seconds (markup built to be quadratic). While jobs wait,
    the loop checks every STUCK_SECONDS whether every thread has been on one parse for longer;
    if so it adds a spare thread (at most SPARE_THREADS, logged), so the other pages keep
    flowing. A spare retires once it finds no job waiting: more parse threads than cores only
    contend for the GIL.
    """

    __slots__ = (
        "_busy_since", "_closed", "_cond", "_done", "_idle", "_jobs", "_loop", "_pdfs", "_suspects",
        "_wake_pending", "_watch", "_workers", "threads",
    )  # fmt: skip

    def __init__(self, threads: int | None = None) -> None:
        self.threads = PARSE_THREADS if threads is None else threads
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"threads must be an int >= 1, got {threads!r}")
        self._cond = threading.Condition()
        self._jobs: deque[tuple[asyncio.Future[Tree], bytes, str]] = deque()
        self._done: deque[tuple[asyncio.Future[Tree], Tree, BaseException | None]] = deque()
        self._idle = 0  # threads waiting for a job
        self._wake_pending = False
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers: list[threading.Thread] = []
        # per thread: when its current parse began, 0.0 between parses, _RETIRED once gone
        self._busy_since: list[float] = []
        self._watch: asyncio.TimerHandle | None = None  # the next stuck-threads check
        self._suspects: set[str] = set()  # hosts whose markup took lexbor seconds
        self._pdfs: PdfPool | None = None  # PDF worker processes, started by the first PDF

    async def read_pdf(
        self,
        body: bytes,
        *,
        anchors: bool = False,
        text: bool = False,
        content: bool = False,
        main: Main = None,
    ) -> tuple[Markup, PdfRead]:
        """A PDF body read in a bounded worker process (`crawler.parse.pdf`), as a Markup
        (`text`, `content`, `main` as for `parse`; a PDF's links have no `anchors`) and what
        the read gave (its error, its page count)."""
        from crawler.parse.pdf.page import pdf_markup
        from crawler.parse.pdf.pool import PdfPool

        if self._pdfs is None:
            self._pdfs = PdfPool()
        read = await self._pdfs.read(body)
        return pdf_markup(read.doc, text=text, content=content, main=main), read

    async def parse(
        self,
        body: bytes,
        url: str,
        content_type: str | None = None,
        *,
        anchors: bool = False,
        text: bool = False,
        content: bool = False,
        main: Main = None,
        yields: Yields | None = None,
    ) -> Markup:
        """`crawler.parse.markup.parse_markup(body, url, content_type, anchors=, text=, content=,
        main=, yields=)`, lexbor in a thread if big (the tree is read on the loop, as without
        them: the main content's extraction holds the GIL too)."""
        if len(body) <= THREAD_PARSE_BYTES:
            return parse_markup(
                body, url, content_type, anchors=anchors, text=text, content=content, main=main,
                yields=yields,
            )  # fmt: skip
        strict = bool(self._suspects) and urlsplit(url).netloc in self._suspects
        prepared = prepare(body, url, content_type, strict=strict)
        if prepared is None:
            return NOT_HTML
        charset, data = prepared
        if self._closed:
            raise RuntimeError("Parser is closed")
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._start(loop)
        future: asyncio.Future[Tree] = loop.create_future()
        with self._cond:
            self._jobs.append((future, data, url))
            idle = self._idle
            if idle:
                self._cond.notify()
        if not idle and self._watch is None:
            self._watch_threads()
        tree = await future
        return read_tree(
            tree, charset, anchors=anchors, text=text, content=content, main=main, url=url,
            yields=yields,
        )  # fmt: skip

    async def close(self) -> None:
        """Let the threads finish the jobs queued and exit; waits for them off the loop, for at
        most CLOSE_WAIT_SECONDS: a thread still stuck on a slow page then finishes it in the
        background (it is a daemon thread) and the jobs still queued are cancelled."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._pdfs is not None:
            await self._pdfs.close()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        workers, self._workers = self._workers, []
        if workers:
            loop = asyncio.get_running_loop()
            await asyncio.gather(
                *(loop.run_in_executor(None, w.join, CLOSE_WAIT_SECONDS) for w in workers)
            )
            if any(w.is_alive() for w in workers):
                with self._cond:
                    left = list(self._jobs)
                    self._jobs.clear()
                for future, _, _ in left:
                    future.cancel()
                logger.warning(
                    "a parse thread is still on a slow page after %.0f s: left to finish it in "
                    "the background (%d queued parses cancelled)", CLOSE_WAIT_SECONDS, len(left),
                )  # fmt: skip
        self._deliver()

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._workers:
            raise RuntimeError("a Parser serves one event loop")
        self._loop = loop
        for _ in range(self.threads):
            self._add_worker()

    def _add_worker(self) -> None:
        self._workers = [w for w in self._workers if w.is_alive()]  # forget retired spares
        index = len(self._busy_since)
        self._busy_since.append(0.0)
        worker = threading.Thread(
            target=self._work, args=(index,), name=f"crawl-parse-{index}", daemon=True
        )
        worker.start()
        self._workers.append(worker)

    def _watch_threads(self) -> None:
        """On the loop, while jobs wait: every STUCK_SECONDS, add a thread if each one has been
        on one parse for longer than that (up to SPARE_THREADS more than `threads`)."""
        self._watch = None
        if self._closed or not self._jobs or self._loop is None:
            return
        since = time.monotonic() - STUCK_SECONDS
        running = [started for started in self._busy_since if started != _RETIRED]
        if all(0.0 < started < since for started in running):
            if len(running) >= self.threads + SPARE_THREADS:
                return  # all spares stuck too: the jobs wait
            logger.warning("every parse thread is stuck on a slow page: adding one")
            self._add_worker()
        self._watch = self._loop.call_later(max(STUCK_SECONDS, 0.0), self._watch_threads)

    def _work(self, index: int) -> None:
        """A parse thread: take a job, run lexbor (without the GIL), hand the tree back."""
        cond, jobs, done, busy_since = self._cond, self._jobs, self._done, self._busy_since
        while True:
            with cond:
                if not jobs and index >= self.threads:  # a spare, and nothing waits: retire
                    busy_since[index] = _RETIRED
                    return
                while not jobs and not self._closed:
                    self._idle += 1
                    cond.wait()
                    self._idle -= 1
                if not jobs:
                    return  # closed, and nothing left to do
                future, data, url = jobs.popleft()
            if future.cancelled():  # its worker was cancelled meanwhile
                continue
            busy_since[index] = started = time.monotonic()
            try:
                done.append((future, parse_tree(data, url), None))
            except BaseException as exc:  # a bug, handed to the awaiting worker
                done.append((future, None, exc))
            busy_since[index] = 0.0
            try:
                if time.monotonic() - started > markup.SLOW_PARSE_SECONDS:
                    self._suspect(url)
            except Exception:  # a bug: the thread lives on (the last one: every parse waited)
                logger.exception("parse thread: screening the host of %s failed", url)
            finally:  # the result is in `done`: the loop must come for it, whatever failed
                self._wake()

    def _wake(self) -> None:
        """From a parse thread: have the loop deliver the finished parses."""
        if not self._wake_pending:  # else the loop will find this result with the others
            self._wake_pending = True
            loop = self._loop
            if loop is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # closed in between
                    loop.call_soon_threadsafe(self._deliver)

    def _suspect(self, url: str) -> None:
        """After a parse of markup built to be slow: the host's next pages are parsed strictly."""
        host = urlsplit(url).netloc
        if host not in self._suspects:
            self._suspects.add(host)
            logger.warning(
                "%s served markup built to be slow: its pages are now screened (tags with %d "
                "attributes or more dropped, %d tags kept)", host, MAX_ATTRIBUTES, STRICT_MAX_TAGS,
            )  # fmt: skip

    def _deliver(self) -> None:
        """On the loop: resolve the futures of every finished parse."""
        self._wake_pending = False  # before draining: a result added later schedules a wake
        done = self._done
        while done:
            future, tree, exc = done.popleft()
            if future.done():  # cancelled: its worker was
                continue
            if exc is not None:
                future.set_exception(exc)
            else:
                future.set_result(tree)

    def __repr__(self) -> str:
        return (
            f"<Parser threads={self.threads} "
            f"running={sum(started != _RETIRED for started in self._busy_since)} "
            f"thread_parse_bytes={THREAD_PARSE_BYTES} "
            f"queued={len(self._jobs)} closed={self._closed}>"
        )


@contextlib.contextmanager
def switch_interval(interval: float | None = None) -> Iterator[None]:
    """Lower the GIL switch interval to `interval` (default SWITCH_INTERVAL; never raise it);
    restore it after, unless someone else changed it meanwhile."""
    interval = SWITCH_INTERVAL if interval is None else interval
    previous = sys.getswitchinterval()
    if interval >= previous:
        yield
        return
    sys.setswitchinterval(interval)
    applied = sys.getswitchinterval()  # CPython keeps whole microseconds
    try:
        yield
    finally:
        if sys.getswitchinterval() == applied:
            sys.setswitchinterval(previous)
