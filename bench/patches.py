"""Candidate hot-path optimizations, applied by monkeypatching, to measure them before adopting.

Nothing here is used by the crawler itself: `python -m bench.profile_crawl --compare` runs the
end-to-end crawl with and without each patch (`apply(["inline", ...])` in the crawl's child
process). A patch that pays off becomes a real change in crawler/; this file only measures.

- ``threadparse``: every HTML page is parsed in the parse thread (lexbor releases the GIL), not
  only pages over parsing.THREAD_PARSE_BYTES.
- ``inline``: every page is parsed on the event loop, none in a thread.
- ``switch5ms`` / ``switch01``: parsing.SWITCH_INTERVAL (the GIL switch interval during a crawl)
  at CPython's default of 5 ms, or at 0.1 ms. A parse thread needs the GIL back after each
  lexbor call; behind a busy event loop it waits up to one interval for it.
- ``threads2``: two parse threads instead of cpu_count - 1.
- ``procparse`` / ``procparse2``: every body parsed and read (`crawler.parse.markup.parse_markup`:
  decode, defuse, lexbor, read_tree) in a process pool of 1 / 2 workers (fork), off the event
  loop and the GIL: 0.68x / 0.61x (asyncio), 0.73x / 0.70x (uvloop) on sqlite3-doc, medians of 5
  (2026-11-23): the executor's pickling and hand-offs cost more than the work they move.
- ``gc700`` / ``gc50k``: the collector's young threshold during the crawl (`crawler.engine.gctune`)
  at CPython's default, 700, or at 50,000 instead of 10,000. Measured 2026-11-23 (machine shared,
  medians of 5), the default 700 against 10,000 / 50,000: sqlite3-doc 1.05x / 1.07x (asyncio),
  0.99x / 1.11x (uvloop); python3.11-doc 1.10x / 1.01x, 1.20x / 1.13x.
- ``numpy``: numpy imported before the crawl (as before it was imported lazily, at the first
  Sieve batch or big page): what the crawl's own time pays for that import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crawler.parse import thread as parsing

__all__ = ["PATCHES", "apply"]


def _threadparse() -> None:
    parsing.THREAD_PARSE_BYTES = -1


def _inline() -> None:
    parsing.THREAD_PARSE_BYTES = 1 << 62


def _switch5ms() -> None:
    parsing.SWITCH_INTERVAL = 0.005


def _switch01() -> None:
    parsing.SWITCH_INTERVAL = 0.0001


def _threads2() -> None:
    parsing.PARSE_THREADS = 2


def _procparse(workers: int = 1) -> None:
    import asyncio
    import concurrent.futures
    import functools
    import multiprocessing

    from crawler.parse import markup

    pool = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork")
    )
    pool.submit(int).result()  # started before the crawl's threads

    async def parse(
        self: parsing.Parser,
        body: bytes,
        url: str,
        content_type: str | None = None,
        *,
        anchors: bool = False,
        text: bool = False,
        content: bool = False,
    ) -> markup.Markup:
        job = functools.partial(
            markup.parse_markup, body, url, content_type, anchors=anchors, text=text,
            content=content,
        )  # fmt: skip
        return await asyncio.get_running_loop().run_in_executor(pool, job)

    parsing.Parser.parse = parse  # type: ignore[method-assign]


def _gc(threshold: int) -> None:
    from crawler.engine import gctune

    gctune.YOUNG_THRESHOLD = threshold


def _numpy() -> None:
    import numpy  # noqa: F401


PATCHES: dict[str, Callable[[], None]] = {
    "threadparse": _threadparse,
    "inline": _inline,
    "switch5ms": _switch5ms,
    "switch01": _switch01,
    "threads2": _threads2,
    "numpy": _numpy,
    "procparse": _procparse,
    "gc700": lambda: _gc(700),
    "gc50k": lambda: _gc(50_000),
    "procparse2": lambda: _procparse(2),
}


def apply(names: Sequence[str]) -> None:
    """Apply the named patches (unknown names raise KeyError)."""
    for name in names:
        PATCHES[name]()
