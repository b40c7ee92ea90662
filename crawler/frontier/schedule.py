"""Which host goes next: the hosts that have work and a free slot, filed by ready time.

A filed host sits in the *timeline*, a heap ordered by its ready time (the earliest moment its
next request may start; ties first filed, first out), so a host that must wait never holds up
one that is ready.

Without priorities (every entry's priority 0, the default) the next host is the timeline's head
once its time has come: breadth-first, exactly as before best-first crawling. Once an entry with
another priority is queued the schedule is *scored* for good: ``take()`` first moves every host
whose time has come to the *ready* heap, ordered by the host's best waiting priority (highest
first), then by when it was moved (in timeline order: earliest ready first, then first filed),
and takes its head. With equal priorities everywhere
that is again the timeline's order.

Politeness is decided before a host counts as ready, and checked again when it is taken (a host
pushed back meanwhile returns to the timeline): priorities choose among ready hosts, never when a
host may be hit. A host's best priority may rise while it sits in the ready heap (a better URL
was queued): ``raised()`` files it again under the better priority, and the old filing is
skipped when it comes up (a filing is current while its token and priority are the host's
``token`` and ``filed_best``). It may fall (robots.txt swept its best URLs): the host is then
filed again under its true priority when it comes up.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Final

from crawler.frontier.hosts import Host

__all__ = ["Schedule"]

_UNFILED: Final = float("inf")  # Host.filed_best when the host is not in the ready heap


class Schedule:
    """The timeline and ready heaps of the module docstring."""

    __slots__ = ("_ready", "_seq", "_timeline", "scored")

    def __init__(self) -> None:
        self._timeline: list[tuple[float, int, Host]] = []
        self._ready: list[tuple[float, int, Host]] = []
        self._seq = itertools.count()
        self.scored = False  # set for good by the first entry with a priority other than 0

    def file(self, host: Host) -> None:
        """File the host if it is not filed yet and may be asked for work: it has a free slot,
        entries queued, and is not held until its robots.txt is known."""
        if (
            host.in_heap
            or host.in_flight >= host.concurrency
            or not host.queue.size
            or (host.policy is None and host.robots_fetching)
        ):
            return
        host.in_heap = True
        heapq.heappush(self._timeline, (host.ready_at, next(self._seq), host))

    def take(self, now: float) -> Host | None:
        """Unfile and return the host whose next request goes first at ``now``; None if no
        filed host may be fetched at ``now``."""
        if self.scored:
            return self._take_best(now)
        timeline = self._timeline
        while timeline:
            ready_at, _, host = timeline[0]
            if ready_at > now:
                return None
            if host.ready_at > ready_at:  # pushed back while filed: file it again
                heapq.heapreplace(timeline, (host.ready_at, next(self._seq), host))
                continue
            heapq.heappop(timeline)
            host.in_heap = False
            return host
        return None

    def raised(self, host: Host, priority: float) -> None:
        """A record of ``priority`` joined the queue of ``host``: call it when ``priority >
        host.filed_best`` (never true unless the host waits in the ready heap)."""
        host.filed_best = priority
        heapq.heappush(self._ready, (-priority, host.token, host))  # its rank on ties kept

    @property
    def next_at(self) -> float | None:
        """When the timeline's head may be fetched (None when the timeline is empty)."""
        timeline = self._timeline
        return timeline[0][0] if timeline else None

    def _take_best(self, now: float) -> Host | None:
        timeline, ready, seq = self._timeline, self._ready, self._seq
        while timeline and timeline[0][0] <= now:
            ready_at, order, host = heapq.heappop(timeline)
            if host.ready_at > ready_at:  # pushed back while filed: file it again
                heapq.heappush(timeline, (host.ready_at, next(seq), host))
                continue
            order = host.token = next(seq)  # moved in timeline order: earliest ready first
            host.filed_best = best = host.queue.best
            heapq.heappush(ready, (-best, order, host))
        while ready:
            key, order, host = heapq.heappop(ready)
            if order != host.token or -key != host.filed_best:  # an outdated filing
                continue
            if host.ready_at > now:  # pushed back while ready: back to the timeline
                host.filed_best = _UNFILED
                heapq.heappush(timeline, (host.ready_at, next(seq), host))
                continue
            best = host.queue.best
            if best != -key:  # its best URLs went (robots.txt sweep): file its true priority
                host.filed_best = best
                heapq.heappush(ready, (-best, order, host))  # same order: same rank on ties
                continue
            host.in_heap = False
            host.filed_best = _UNFILED
            return host
        return None

    def __repr__(self) -> str:
        return (
            f"<Schedule timeline={len(self._timeline)} ready={len(self._ready)} "
            f"scored={self.scored}>"
        )
