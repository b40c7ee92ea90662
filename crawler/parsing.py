"""The parse thread: response bodies to `Markup` records, lexbor running on another core.

Lexbor releases the GIL while it builds a tree, so a crawl parses big bodies in a thread and
keeps the event loop free for fetches and the per-link path. Only the parse itself runs there:
sniffing, the nesting guard and reading the tree hold the GIL anyway, and every extra hand-over
of the GIL between the threads costs more than it saves (measured with bench.patches).

    parser = Parser()
    markup = await parser.parse(body, url, content_type)
    ...
    await parser.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from crawler.markup import NOT_HTML, Markup, parse_markup, parse_tree, prepare, read_tree

__all__ = ["PARSE_THREADS", "SWITCH_INTERVAL", "THREAD_PARSE_BYTES", "Parser", "switch_interval"]

THREAD_PARSE_BYTES = 16 * 1024
"""Bodies larger than this are parsed in a parse thread; smaller ones parse faster on the loop
than a thread hop costs."""
PARSE_THREADS = max(1, min(4, (os.cpu_count() or 2) - 1))
"""Parse threads: lexbor parses without the GIL, so these use the cores the event loop does not."""
SWITCH_INTERVAL = 0.00005
"""GIL switch interval (seconds) while a crawl runs, if the process's is longer (CPython's
default is 5 ms; restored after the crawl). A parse thread needs the GIL back for a moment after
each page; behind a busy event loop it would wait a whole interval for it, idling its core
(measured: 5 ms -> 50 us took the crawl from ~300 to ~420 pages/s)."""


class Parser:
    """Parses bodies on the calling loop (small ones) or in `threads` parse threads (the rest)."""

    __slots__ = ("_pool", "threads")

    def __init__(self, threads: int | None = None) -> None:
        self.threads = PARSE_THREADS if threads is None else threads
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"threads must be an int >= 1, got {threads!r}")
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="crawl-parse")

    async def parse(self, body: bytes, url: str, content_type: str | None = None) -> Markup:
        """`crawler.markup.parse_markup(body, url, content_type)`, lexbor in a thread if big."""
        if len(body) <= THREAD_PARSE_BYTES:
            return parse_markup(body, url, content_type)
        prepared = prepare(body, url, content_type)
        if prepared is None:
            return NOT_HTML
        charset, data = prepared
        tree = await asyncio.get_running_loop().run_in_executor(self._pool, parse_tree, data, url)
        return read_tree(tree, charset)

    async def close(self) -> None:
        """Wait for the parses in flight (bounded by the body and tag caps) off the loop."""
        await asyncio.get_running_loop().run_in_executor(None, self._pool.shutdown)

    def __repr__(self) -> str:
        return f"<Parser threads={self.threads} thread_parse_bytes={THREAD_PARSE_BYTES}>"


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
