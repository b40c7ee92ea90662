"""What a crawl report shows, aggregated one result at a time: `Digest`.

A report is made from a running crawl (each result as it is produced) or from a JSON Lines output
streamed line by line (`crawl report`); either way only aggregates are kept, bounded whatever the
crawl's size: counts by status, error kind, depth and host, the results over time (buckets that
widen as the crawl goes on), the `TOP` slowest and largest pages, the most copied pages.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from crawler.output.results import CrawlResult

__all__ = ["MAX_BUCKETS", "TOP", "Digest"]

TOP = 15  # rows of each top-N table
MAX_BUCKETS = 2048  # time buckets kept; past them, each bucket is made twice as wide
MAX_HOSTS = 50_000  # hosts counted one by one; past them, the rest are "(other hosts)"
OTHER_HOSTS = "(other hosts)"


@dataclass(slots=True)
class Slot:
    """One time bucket: results, errors, and the focused crawl's scored and relevant pages."""

    pages: int = 0
    errors: int = 0
    scored: int = 0
    relevant: int = 0


@dataclass(slots=True)
class Digest:
    """The aggregates of a crawl's results; `add` one result (a `CrawlResult` or a JSON Lines
    record, as a dict), `threshold`: the relevance a focused crawl's harvest counts."""

    threshold: float = 0.5
    pages: int = 0
    bytes: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    depths: Counter[int] = field(default_factory=Counter)
    host_pages: Counter[str] = field(default_factory=Counter)
    host_ms: Counter[str] = field(default_factory=Counter)
    types: Counter[str] = field(default_factory=Counter)
    copied: Counter[str] = field(default_factory=Counter)  # a page's URL -> its duplicates
    exact: int = 0
    near: int = 0
    rendered: int = 0
    relevance: list[int] = field(default_factory=lambda: [0] * 10)  # 0-0.1, ..., 0.9-1
    slowest: list[tuple[float, str]] = field(default_factory=list)  # heaps of TOP
    largest: list[tuple[int, str]] = field(default_factory=list)
    start: float | None = None  # the first result's time (epoch seconds)
    end: float = 0.0
    width: int = 1  # seconds per time bucket
    slots: dict[int, Slot] = field(default_factory=dict)  # bucket index -> its counts

    def add_result(self, result: CrawlResult) -> None:
        self.add(result.to_dict())

    def add(self, r: Mapping[str, Any]) -> None:
        """Count one result (a JSON Lines record's fields)."""
        self.pages += 1
        url: str = r.get("url") or ""
        size = int(r.get("size") or 0)
        self.bytes += size
        status = r.get("status")
        self.statuses["error" if status is None else str(status)] += 1
        error = r.get("error")
        if error:
            self.errors[str(error).split(":", 1)[0]] += 1
        self.depths[int(r.get("depth") or 0)] += 1
        host = url.split("/", 3)[2] if url.count("/") >= 2 else url
        if host not in self.host_pages and len(self.host_pages) >= MAX_HOSTS:
            host = OTHER_HOSTS
        self.host_pages[host] += 1
        ms = r.get("elapsed_ms")
        if ms is not None:
            self.host_ms[host] += ms
            _keep(self.slowest, (float(ms), url))
        if size:
            _keep(self.largest, (size, url))
        ctype = r.get("content_type")
        if ctype:
            self.types[str(ctype).split(";", 1)[0].strip().lower()] += 1
        if (original := r.get("duplicate_of")) is not None:
            self.exact += 1
            self.copied[original] += 1
        elif (original := r.get("near_duplicate_of")) is not None:
            self.near += 1
            self.copied[original] += 1
        self.rendered += bool(r.get("rendered"))
        self._in_time(r.get("fetched_at"), error is not None, r.get("relevance"))

    def _in_time(self, fetched_at: Any, failed: bool, relevance: Any) -> None:
        try:
            when = datetime.fromisoformat(str(fetched_at)).timestamp()
        except ValueError:
            return
        if self.start is None:
            self.start = when
        self.end = max(self.end, when)
        index = max(0, int(when - self.start)) // self.width
        slot = self.slots.get(index)
        if slot is None:
            slot = self.slots[index] = Slot()
            if len(self.slots) > MAX_BUCKETS:
                self._widen()
                slot = self.slots.setdefault(index // 2, Slot())
        slot.pages += 1
        slot.errors += failed
        if relevance is not None:
            slot.scored += 1
            slot.relevant += relevance >= self.threshold
            self.relevance[min(9, max(0, int(relevance * 10)))] += 1

    def _widen(self) -> None:
        """Twice as wide time buckets (half as many)."""
        self.width *= 2
        merged: dict[int, Slot] = {}
        for index, slot in self.slots.items():
            into = merged.setdefault(index // 2, Slot())
            into.pages += slot.pages
            into.errors += slot.errors
            into.scored += slot.scored
            into.relevant += slot.relevant
        self.slots = merged

    def timeline(self) -> list[tuple[float, Slot]]:
        """(seconds since the first result, its bucket's counts), every bucket (empty ones
        too), in order."""
        if not self.slots:
            return []
        last = max(self.slots)
        return [(i * self.width, self.slots.get(i, Slot())) for i in range(last + 1)]

    @property
    def scored(self) -> int:
        return sum(self.relevance)


def _keep(heap: list[Any], item: Any) -> None:
    """Keep the `TOP` largest items in `heap` (a min-heap)."""
    if len(heap) < TOP:
        heapq.heappush(heap, item)
    elif item > heap[0]:
        heapq.heapreplace(heap, item)
