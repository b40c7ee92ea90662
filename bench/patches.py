"""Candidate hot-path optimizations, applied by monkeypatching, to measure them before adopting.

Nothing here is used by the crawler itself: `python -m bench.profile_crawl --compare` runs the
end-to-end crawl with and without each patch (`apply(["dedup", ...])` in the crawl's child
process). A patch that pays off becomes a real change in crawler/; this file only measures.

- ``dedup``: `Crawler._follow` resolves every href but runs the scope check and the Sieve once
  per distinct key of the page (navigation links and ``page.html#anchor`` links repeat the same
  key many times per page: 164k links of the docs corpus give only 22.6k page-distinct keys).
  Counters keep their meaning: a repeat of an out-of-scope key counts as out of scope again, a
  repeat of an in-scope key counts as a duplicate.
- ``threadparse``: every HTML page is parsed in a worker thread (lexbor releases the GIL), not
  only pages over 256 KiB, so parsing overlaps the event loop's work on a second core.
- ``inline``: every page is parsed on the event loop, none in a thread. A parse thread holds the
  GIL for extract()'s Python part; each time the loop thread drops the GIL (every socket send),
  it may then wait up to the switch interval (5 ms) to get it back.
- ``switch``: `sys.setswitchinterval(0.0005)`: the same convoy, with 10x shorter waits.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence

from crawler import engine
from crawler.frontier import Entry

__all__ = ["PATCHES", "apply"]


def _follow_dedup(self: engine.Crawler, entry: Entry, hrefs: Iterable[str], base: str) -> int:
    """`Crawler._follow`, with one scope check and one Sieve test per distinct key per page."""
    assert self.scope is not None
    depth = entry.depth + 1
    resolve, check = self.urls.resolve, self.scope.check
    pending: dict[str, str | None] = {}  # key -> fetch URL, or None when out of scope
    out_of_scope = repeats = seen = 0
    for href in hrefs:
        seen += 1
        resolved = resolve(href, base)
        if resolved is None:
            continue
        fetch_url, key = resolved
        if key in pending:
            if pending[key] is None:
                out_of_scope += 1
            else:
                repeats += 1
            continue
        if check(key, depth) is not None:
            pending[key] = None
            out_of_scope += 1
        else:
            pending[key] = fetch_url
    stats = self.stats
    stats.links_seen += seen
    stats.out_of_scope += out_of_scope
    stats.duplicates += repeats
    keys = [k for k, v in pending.items() if v is not None]
    if not keys or not self._room_for_more():
        return 0
    canonical = self.config.urls.fetch_canonical
    new = 0
    for key, is_new in zip(keys, self.dedup.add_many(keys), strict=True):
        if not is_new:
            stats.duplicates += 1
            continue
        if not self._room_for_more():
            continue
        url = pending[key]
        assert url is not None
        child = Entry(url=key if canonical else url, key=key, depth=depth, parent=entry.url)
        new += self._admit(child)
    return new


def _dedup() -> None:
    engine.Crawler._follow = _follow_dedup  # type: ignore[method-assign]


def _threadparse() -> None:
    engine.THREAD_PARSE_BYTES = -1


def _inline() -> None:
    engine.THREAD_PARSE_BYTES = 1 << 62


def _switch() -> None:
    sys.setswitchinterval(0.0005)


PATCHES: dict[str, Callable[[], None]] = {
    "dedup": _dedup,
    "threadparse": _threadparse,
    "inline": _inline,
    "switch": _switch,
}


def apply(names: Sequence[str]) -> None:
    """Apply the named patches (unknown names raise KeyError)."""
    for name in names:
        PATCHES[name]()
