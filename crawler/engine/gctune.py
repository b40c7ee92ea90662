"""The garbage collector while a crawl runs: fewer, larger collections of young objects.

CPython collects its youngest generation each time 700 more container objects (dicts, tuples,
instances...) have been allocated than freed. A crawl keeps ~100 such objects per page alive for a
while (entries, results, futures, parsed records): in a 1,180-page crawl of sqlite3-doc the
collector ran 156 times and took ~116 ms, about a tenth of the crawl, mostly traversing young
objects that were about to be freed anyway (python3.11-doc: 247 times, ~127 ms). While a crawl
runs, `young_threshold` raises that threshold to YOUNG_THRESHOLD: 77-79 collections, ~37-49 ms,
+5-20% pages/s (`python -m bench.profile_crawl --compare --variants ";gc10k"`). Cyclic garbage
is still collected, a little later: at most YOUNG_THRESHOLD more container objects wait for it.

Like `crawler.parse.thread.switch_interval` for the GIL's switch interval, it never lowers a
threshold set higher, and restores the previous one at the end unless someone changed it meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["YOUNG_THRESHOLD", "young_threshold"]

YOUNG_THRESHOLD = 10_000
"""Net allocations of container objects between two collections of the youngest generation
while a crawl runs (CPython's default: 700)."""


@contextlib.contextmanager
def young_threshold(threshold: int | None = None) -> Iterator[None]:
    """Raise the collector's first threshold to `threshold` (default YOUNG_THRESHOLD) for the
    duration (never lower it); restore the previous thresholds after, unless someone else
    changed them meanwhile."""
    threshold = YOUNG_THRESHOLD if threshold is None else threshold
    previous = gc.get_threshold()
    if threshold <= previous[0]:
        yield
        return
    applied = (threshold, *previous[1:])
    gc.set_threshold(*applied)
    try:
        yield
    finally:
        if gc.get_threshold() == applied:
            gc.set_threshold(*previous)
