"""Candidate hot-path optimizations, applied by monkeypatching, to measure them before adopting.

Nothing here is used by the crawler itself: `python -m bench.profile_crawl --compare` runs the
end-to-end crawl with and without each patch (`apply(["inline", ...])` in the crawl's child
process). A patch that pays off becomes a real change in crawler/; this file only measures.

- ``threadparse``: every HTML page is parsed in a worker thread (lexbor releases the GIL), not
  only pages over 256 KiB, so parsing overlaps the event loop's work on a second core.
- ``inline``: every page is parsed on the event loop, none in a thread. A parse thread holds the
  GIL for extract()'s Python part; each time the loop thread drops the GIL (every socket send),
  it may then wait up to the switch interval (5 ms) to get it back.
- ``switch``: `sys.setswitchinterval(0.0005)`: the same convoy, with 10x shorter waits.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from crawler import engine

__all__ = ["PATCHES", "apply"]


def _threadparse() -> None:
    engine.THREAD_PARSE_BYTES = -1


def _inline() -> None:
    engine.THREAD_PARSE_BYTES = 1 << 62


def _switch() -> None:
    sys.setswitchinterval(0.0005)


PATCHES: dict[str, Callable[[], None]] = {
    "threadparse": _threadparse,
    "inline": _inline,
    "switch": _switch,
}


def apply(names: Sequence[str]) -> None:
    """Apply the named patches (unknown names raise KeyError)."""
    for name in names:
        PATCHES[name]()
