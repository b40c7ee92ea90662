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

By address (`crawler.frontier.addresses`): a host whose time has come but whose address may not
be hit yet is *parked* on the address (heap ``Address.parked``: the order hosts came to it, or
their best priority once scored) and the address itself is filed in the timeline at its ready
time (``file_address``; while it has a free slot: else the ``done()`` that frees one files it).
When the address comes up its first parked host still fit to go (not pushed back meanwhile:
that one returns to the timeline on its own time) is taken: one host per turn of the address,
never a herd of parked hosts woken to find it taken again. A host not parked that comes up while
its address is free and has no host parked takes it directly (else it parks behind them: the
hosts of an address take turns in the order they came to it). Unscored, a host filed while its
address has hosts parked (the address, not the host, is the bottleneck) waits in the address's
own heap from the start, keyed by its ready time, not in the timeline: the address is filed at
the later of its ready time and its first host's, and a hand-out costs two operations on the
addresses' heap, not four on the hosts' (scored, parked hosts are ranked by priority: only those
whose time came park). Without addresses (``host.address`` None) nothing here costs more than
one attribute test.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from typing import Final

from crawler.frontier.addresses import Address
from crawler.frontier.hosts import Host

__all__ = ["Schedule", "host_counts"]

_UNFILED: Final = float("inf")  # Host.filed_best when the host is not in the ready heap

Filed = Host | Address  # what the timeline and the ready heap hold


class Schedule:
    """The timeline and ready heaps of the module docstring."""

    __slots__ = ("_ready", "_seq", "_timeline", "scored")

    def __init__(self) -> None:
        self._timeline: list[tuple[float, int, Filed]] = []
        self._ready: list[tuple[float, int, Filed]] = []
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
            or host.resolving
        ):
            address = host.address
            if address is not None and address.parked and not address.in_heap:
                self.file_address(address)  # its taken host went without using it
            return
        host.in_heap = True
        address = host.address
        if address is not None and address.parked and not self.scored:
            # its address is the bottleneck: it waits there, in the order of its own time
            heapq.heappush(address.parked, (host.ready_at, next(self._seq), host))
            if not address.in_heap:
                self.file_address(address)
            return
        heapq.heappush(self._timeline, (host.ready_at, next(self._seq), host))

    def file_address(self, address: Address) -> None:
        """File an address with parked hosts, at its ready time (unscored: or its first host's,
        if later), if it has a free slot (else the ``done()`` that frees one calls this
        again)."""
        if address.in_heap or not address.parked or not address.room:
            return
        address.in_heap = True
        at = address.ready_at
        if not self.scored and address.parked[0][0] > at:
            at = address.parked[0][0]
        heapq.heappush(self._timeline, (at, next(self._seq), address))

    def take(self, now: float) -> Host | None:
        """Unfile and return the host whose next request goes first at ``now``; None if no
        filed host may be fetched at ``now``."""
        if self.scored:
            return self._take_best(now)
        timeline = self._timeline
        while timeline:
            ready_at, _, item = timeline[0]
            if ready_at > now:
                return None
            if item.ready_at > ready_at:  # pushed back while filed: file it again
                heapq.heapreplace(timeline, (item.ready_at, next(self._seq), item))
                continue
            heapq.heappop(timeline)
            item.in_heap = False
            if isinstance(item, Host):
                address = item.address
                if address is None or (not address.parked and address.free(now)):
                    return item
                self._park(item, address, ready_at)
            elif (host := self._unpark(item, now)) is not None:
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
            ready_at, order, item = heapq.heappop(timeline)
            if item.ready_at > ready_at:  # pushed back while filed: file it again
                heapq.heappush(timeline, (item.ready_at, next(seq), item))
                continue
            order = item.token = next(seq)  # moved in timeline order: earliest ready first
            item.filed_best = best = item.best
            heapq.heappush(ready, (-best, order, item))
        while ready:
            key, order, item = heapq.heappop(ready)
            if order != item.token or -key != item.filed_best:  # an outdated filing
                continue
            if item.ready_at > now:  # pushed back while ready: back to the timeline
                item.filed_best = _UNFILED
                heapq.heappush(timeline, (item.ready_at, next(seq), item))
                continue
            best = item.best
            if best != -key:  # its best URLs went (robots.txt sweep): file its true priority
                item.filed_best = best
                heapq.heappush(ready, (-best, order, item))  # same order: same rank on ties
                continue
            item.in_heap = False
            item.filed_best = _UNFILED
            if isinstance(item, Host):
                address = item.address
                if address is None or (not address.parked and address.free(now)):
                    return item
                self._park(item, address, -best)
            elif (host := self._unpark(item, now)) is not None:
                return host
        return None

    def _park(self, host: Host, address: Address, rank: float) -> None:
        """Park a host whose address may not be hit now (filed all the same: ``in_heap``)."""
        host.in_heap = True
        heapq.heappush(address.parked, (rank, next(self._seq), host))
        self.file_address(address)

    def _unpark(self, address: Address, now: float) -> Host | None:
        """The first parked host of an address whose turn came, or None (no slot: the ``done()``
        that frees one files it again). Unscored, the parked hosts are in the order of their own
        ready time: one pushed back meanwhile is filed again there, and when the first is not
        ready yet the address is filed at its time. Scored, one not ready (pushed back) goes
        back to the timeline on its own time, as does a host that moved to another address."""
        if not address.room:
            return None
        parked, scored = address.parked, self.scored
        while parked:
            key, _, host = parked[0]
            assert isinstance(host, Host)
            if host.address is not address or (scored and host.ready_at > now):
                heapq.heappop(parked)
                heapq.heappush(self._timeline, (host.ready_at, next(self._seq), host))
                continue
            if not scored and host.ready_at > key:  # pushed back while parked: file it again
                heapq.heapreplace(parked, (host.ready_at, next(self._seq), host))
                continue
            if not scored and key > now:  # the first is not ready yet: the address waits for it
                self.file_address(address)
                return None
            heapq.heappop(parked)
            host.in_heap = False
            return host
        return None

    def __repr__(self) -> str:
        return (
            f"<Schedule timeline={len(self._timeline)} ready={len(self._ready)} "
            f"scored={self.scored}>"
        )


def host_counts(
    hosts: Iterable[Host], now: float, robots: bool
) -> tuple[int, int, int, int, int, int]:
    """(ready, waiting, deferred for robots.txt, deferred by a backoff, backing off, down) at
    `now` (`robots`: robots.txt is respected): the frontier's stats. Ready, waiting and backing
    off count the hosts with work; down, every host refused as down."""
    ready = waiting = deferred_robots = deferred_backoff = backing_off = down = 0
    for host in hosts:
        down += host.down is not None
        if not host.queue.size:
            continue
        address = host.address
        if host.in_heap and host.ready_at <= now and (address is None or address.free(now)):
            ready += 1
        else:
            waiting += 1
            backing_off += host.backoff_until > now
        if robots and host.policy is None:
            deferred_robots += host.queued
        elif host.backoff_until > now:
            deferred_backoff += host.queued
    return ready, waiting, deferred_robots, deferred_backoff, backing_off, down
