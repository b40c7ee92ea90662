"""One host's queue: its packed entries in priority order, first in first out among equals.

Records are the ``(head, context)`` pairs of :class:`crawler.entries.Packer`, each queued with its
priority. Higher priorities go first; equal ones first in, first out.

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
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Final

from crawler.entries import Context

__all__ = ["HostQueue", "Record"]

Record = tuple[Any, Context, float]  # head, context (see crawler.entries.Packer), priority
_EMPTY: Final = float("-inf")


class HostQueue:
    """The queue of one host (see the module docstring): ``push``, ``push_front``, ``pop``."""

    __slots__ = ("_front", "_heap", "_items", "_priority", "_tail", "size")

    def __init__(self) -> None:
        self._items: deque[Any] = deque()  # two items per record while _heap is None
        self._heap: list[tuple[float, int, Any, Context]] | None = None
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
    def best(self) -> float:
        """The priority of the record ``pop()`` returns next; -inf when empty."""
        heap = self._heap
        if heap is not None:
            return -heap[0][0]
        return self._priority if self._items else _EMPTY

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
        heapq.heappush(heap, (-priority, seq, head, context))

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
        heapq.heappush(heap, (-priority, self._front, head, context))

    def pop(self) -> Record:
        """Take the best record (IndexError when empty)."""
        heap = self._heap
        if heap is None:
            items = self._items
            head = items.popleft()
            self.size -= 1
            return head, items.popleft(), self._priority
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
            for key, _, head, context in sorted(heap):
                yield head, context, -key

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
        for item in sorted(heap):
            head = item[2]
            if allowed(prefix + head if head.__class__ is str else head[0]):
                kept.append(item)  # in sorted order: a valid heap
            else:
                removed.append((head, item[3], -item[0]))
        self._heap = kept
        self.size = len(kept)
        if not kept:
            self._to_deque()
        return removed

    def _to_heap(self) -> list[tuple[float, int, Any, Context]]:
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
        return f"<HostQueue {len(self)} records, {mode}, best={self.best}>"
