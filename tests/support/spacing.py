"""Judging a real server's request times: spaced by a delay, with no tight gap.

Where a real server is the point (the requests really arrive spaced), the times are arrival
times on a shared machine: one request delivered late shortens its gap and lengthens the next.
So the spacing is judged over the whole run and on the median, at 80% of the delay: a crawler
that did not wait at all (gaps of a response's time, ~0) still fails, a late arrival does not.
The exact gaps are asserted in simulated time, where the crawler's own logic is the subject.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable

SLACK = 0.8  # of the delay: what scheduling on a loaded machine may take out of it


def assert_spaced(times: Iterable[float], delay: float, what: str = "") -> None:
    """`times` (seconds, any order) are spaced by `delay` on the whole and on the median."""
    ordered = sorted(times)
    assert len(ordered) >= 3, f"{what}: too few requests to judge ({len(ordered)})"
    gaps = [b - a for a, b in itertools.pairwise(ordered)]
    total = ordered[-1] - ordered[0]
    assert total >= (len(ordered) - 1) * delay * SLACK, f"{what}: {len(ordered)} in {total:.3f} s"
    assert statistics.median(gaps) >= delay * SLACK, f"{what}: gaps {gaps}"
