"""One host's queue: its packed entries in priority order, first in first out among equals.

Records are the ``(head, context)`` pairs of :class:`crawler.frontier.entries.Packer`, each queued
with its priority. Higher priorities go first; equal ones first in, first out.

While every record in the queue has the same priority (always, in a crawl without scoring) the
queue is a deque holding each record as two consecutive items and the priority once: O(1) at
both ends and no memory per entry beyond the two slots. The first record with another priority
turns the queue into a binary heap of ``(-priority, seq, head, context)`` tuples (``seq`` counts
up at the tail, down at the head, so ties keep their order; about 130 bytes per entry more);
once the heap runs empty the queue is a deque again.

Head insertions (a retried entry, or one whose getter was cancelled) go before every record of
equal or lower priority and after the higher ones: a retry keeps its place in the best-first
order, never losing it to lower-priority work, and never jumping ahead of better work queued
meanwhile. Among equal priorities that is the very head (as in the deque).

**Raising a queued record's priority** (``raise_``; a better link to a queued URL was found;
with ``lower=True`` it may lower it too: a focused crawl's scorer learned better)
needs to find the record: once ``track()`` is called (the frontier does it when a crawl is
scored, never without scoring) the queue is a heap for good and keeps ``_live``, a map from each
queued record's *mark* (its URL's key: the head itself when it is a string, else the key in
the ``(url, key)`` pair) to its current heap item (shared, so a map slot is all it costs). A
raise pushes a new item and points the map at it; the old item stays in the heap, *stale*, and
is skipped (dropped) when it comes to the top, by ``pop()``, ``best``, iteration and the robots
sweep alike: a record is live while the map points at its item. ``size`` counts live records;
when stale items outnumber them the heap is rebuilt without them.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Final

from crawler.frontier.entries import Context

__all__ = ["HostQueue", "Record", "mark", "marks"]

Record = tuple[Any, Context, float]  # head, context (see crawler.frontier.entries.Packer), priority
Item = tuple[float, int, Any, Context]  # a heap item: -priority, seq, head, context
_EMPTY: Final = float("-inf")
_SLACK: Final = 64  # stale items tolerated beyond the live ones before the heap is rebuilt


def mark(head: Any) -> str:
    """The key a record is tracked under: the head if it is a string (a URL, its host's origin
    cut), else the key of its ``(url, key)`` pair."""
    return head if head.__class__ is str else head[1]


def marks(prefix: str, key: str) -> tuple[str, ...]:
    """The marks (``mark``) a queued entry with this key may have in the queue of the host whose
    origin is ``prefix``: the key with the origin cut (a record whose URL is its key), or the
    whole key (one whose URL differs)."""
    return (key[len(prefix) :], key) if key.startswith(prefix) else (key,)


class HostQueue:
    """The queue of one host (see the module docstring): ``push``, ``push_front``, ``pop``."""

    __slots__ = ("_front", "_heap", "_items", "_live", "_priority", "_tail", "size")

    def __init__(self) -> None:
        self._items: deque[Any] = deque()  # two items per record while _heap is None
        self._heap: list[Item] | None = None
        self._live: dict[str, Item] | None = None  # mark -> live item, once track() was called
        self._priority = 0.0  # the priority of every record in _items
        self._front = 0  # the last seq given at the head (counts down)
        self._tail = 0  # the next seq given at the tail (counts up)
        self.size = 0  # records queued (len(), without a call on the hot path)

    def __len__(self) -> int:
        return self.size

    @property
    def ordered(self) -> bool:
        """False while every record has one priority (the queue is a plain deque)."""
        return self._heap is not None

    @property
    def tracked(self) -> bool:
        """Whether queued records can be found (and raised) by their mark: see ``track()``."""
        return self._live is not None

    @property
    def best(self) -> float:
        """The priority of the record ``pop()`` returns next; -inf when empty."""
        heap = self._heap
        if heap is not None:
            if self._live is not None:
                if not self.size:
                    return _EMPTY
                self._drop_stale()
            return -heap[0][0]
        return self._priority if self._items else _EMPTY

    def track(self) -> None:
        """Keep the map of live records from now on (a heap for good): ``raise_`` and
        ``priority`` work from then on. Idempotent."""
        if self._live is not None:
            return
        heap = self._heap if self._heap is not None else self._to_heap()
        self._live = {mark(item[2]): item for item in heap}

    def priority(self, marks: tuple[str, ...]) -> float | None:
        """The priority of the queued record tracked under one of ``marks`` (None if none is;
        always None before ``track()``)."""
        live = self._live
        if live is None:
            return None
        for m in marks:
            item = live.get(m)
            if item is not None:
                return -item[0]
        return None

    def raise_(self, marks: tuple[str, ...], priority: float, *, lower: bool = False) -> bool:
        """Raise the queued record tracked under one of ``marks`` to ``priority`` (with
        ``lower``, lower it too), placed after the records of equal or higher priority; False
        (nothing changed) if no such record is queued or its priority is not lower (with
        ``lower``: is equal). Needs ``track()``."""
        live = self._live
        heap = self._heap
        if live is None or heap is None:
            return False
        for m in marks:
            item = live.get(m)
            if item is not None:
                break
        else:
            return False
        was = -item[0]
        if was == priority or (was > priority and not lower):
            return False
        seq = self._tail
        self._tail = seq + 1
        new = (-priority, seq, item[2], item[3])
        live[m] = new
        heapq.heappush(heap, new)
        if len(heap) > 2 * self.size + _SLACK:
            self._compact()
        return True

    def push(self, head: Any, context: Context, priority: float) -> None:
        """Queue a record after every record of equal or higher priority."""
        self.size += 1
        heap = self._heap
        if heap is None:
            items = self._items
            if not items or priority == self._priority:
                self._priority = priority
                items.append(head)
                items.append(context)
                return
            heap = self._to_heap()
        seq = self._tail
        self._tail = seq + 1
        item = (-priority, seq, head, context)
        heapq.heappush(heap, item)
        if self._live is not None:
            self._track(item)

    def push_front(self, head: Any, context: Context, priority: float) -> None:
        """Queue a record before every record of equal or lower priority."""
        self.size += 1
        heap = self._heap
        if heap is None:
            items = self._items
            if not items or priority == self._priority:
                self._priority = priority
                items.appendleft(context)
                items.appendleft(head)
                return
            heap = self._to_heap()
        self._front -= 1
        item = (-priority, self._front, head, context)
        heapq.heappush(heap, item)
        if self._live is not None:
            self._track(item)

    def pop(self) -> Record:
        """Take the best record (IndexError when empty)."""
        heap = self._heap
        if heap is None:
            items = self._items
            head = items.popleft()
            self.size -= 1
            return head, items.popleft(), self._priority
        live = self._live
        if live is not None:
            if not self.size:
                raise IndexError("pop from an empty HostQueue")
            self._drop_stale()
            key, _, head, context = heapq.heappop(heap)
            del live[mark(head)]
            self.size -= 1
            if not self.size:
                heap.clear()  # stale items only
            return head, context, -key
        key, _, head, context = heapq.heappop(heap)
        self.size -= 1
        if not heap:
            self._to_deque()
        return head, context, -key

    def __iter__(self) -> Iterator[Record]:
        """The records in the order ``pop()`` would give them (a snapshot)."""
        heap = self._heap
        if heap is None:
            items = iter(list(self._items))
            priority = self._priority
            for head, context in zip(items, items, strict=True):
                yield head, context, priority
        else:
            live = self._live
            for item in sorted(heap):
                if live is None or live.get(mark(item[2])) is item:
                    yield item[2], item[3], -item[0]

    def remove_disallowed(self, allowed: Callable[[str], bool], prefix: str) -> list[Record]:
        """Remove the records whose URL ``allowed`` refuses (``prefix``: the host's origin, as
        packed); returns them in queue order."""
        removed: list[Record] = []
        heap = self._heap
        if heap is None:
            keep: deque[Any] = deque()
            items = iter(self._items)
            for head, context in zip(items, items, strict=True):
                if allowed(prefix + head if head.__class__ is str else head[0]):
                    keep.append(head)
                    keep.append(context)
                else:
                    removed.append((head, context, self._priority))
            self._items = keep
            self.size = len(keep) >> 1
            return removed
        kept = []
        live = self._live
        for item in sorted(heap):
            head = item[2]
            if live is not None and live.get(mark(head)) is not item:
                continue  # stale: dropped
            if allowed(prefix + head if head.__class__ is str else head[0]):
                kept.append(item)  # in sorted order: a valid heap
            else:
                removed.append((head, item[3], -item[0]))
                if live is not None:
                    del live[mark(head)]
        self._heap = kept
        self.size = len(kept)
        if not kept and live is None:
            self._to_deque()
        return removed

    def _track(self, item: Item) -> None:
        """Map a newly pushed item; a record already queued under its mark (the same URL put
        twice) keeps the better of the two, the other becomes stale."""
        live = self._live
        assert live is not None
        m = mark(item[2])
        old = live.get(m)
        if old is None:
            live[m] = item
            return
        self.size -= 1  # one record, not two
        if old[0] > item[0] or (old[0] == item[0] and old[1] > item[1]):
            live[m] = item

    def _drop_stale(self) -> None:
        """Pop the stale items off the top of the heap (there is a live one below them)."""
        heap, live = self._heap, self._live
        assert heap is not None and live is not None
        while live.get(mark(heap[0][2])) is not heap[0]:
            heapq.heappop(heap)

    def _compact(self) -> None:
        heap, live = self._heap, self._live
        assert heap is not None and live is not None
        heap[:] = sorted(live.values())  # sorted: a valid heap

    def _to_heap(self) -> list[Item]:
        items = iter(self._items)
        key = -self._priority
        # equal first keys and increasing seqs: already a valid heap
        pairs = enumerate(zip(items, items, strict=True))
        heap = self._heap = [(key, seq, head, ctx) for seq, (head, ctx) in pairs]
        self._tail = len(heap)
        self._front = 0
        self._items = deque()
        return heap

    def _to_deque(self) -> None:
        self._heap = None
        self._items.clear()
        self._priority = 0.0
        self._front = self._tail = 0

    def __repr__(self) -> str:
        mode = "heap" if self._heap is not None else "deque"
        mode += ", tracked" if self._live is not None else ""
        return f"<HostQueue {len(self)} records, {mode}, best={self.best}>"
