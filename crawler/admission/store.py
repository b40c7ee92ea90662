"""Where a focused crawl's admission asks and takes: the store behind the one scoring algorithm.

`Admission._admit_scored` (in `crawler.admission.gate`) is the only copy of the algorithm that
scores a page's links and admits the new ones; it asks an `AdmitStore` four things and never
which store it holds. `MemoryStore` answers from this process's seen test and frontier;
`crawler.admission.shared.SharedStore` from the shared crawl in Redis (one script call each).
Both answer in the shared frontier's vocabulary (`AdmitFlag`), so the counters are updated in
one place, in one order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.urls.host import split_host

if TYPE_CHECKING:
    from crawler.admission.scope import Scope
    from crawler.focus.scoring import Link
    from crawler.frontier import Frontier
    from crawler.frontier.entries import Entry
    from crawler.output.results import CrawlStats
    from crawler.sieve.tiers import SeenTiers
    from crawler.state.crawlstate import CrawlState

__all__ = ["AdmitStore", "MemoryStore", "Raise"]

Raise = tuple[str, str, float]
"""(url, key, priority) of a queued URL a link scored higher."""


class AdmitStore(Protocol):
    async def peek(self, links: Sequence[Link]) -> list[float | bool | None]:
        """Per link, changing nothing: None when its host is at ``max_pages_per_host``, else
        the priority its URL is queued at, else True when seen (fetched, in flight, refused,
        skipped) and False when new."""
        ...

    def skip(self, keys: Sequence[str]) -> list[bool]:
        """Mark keys the score function skipped as seen (not offered again); True where the
        key was new until now (False: taken in by another page meanwhile, a duplicate)."""
        ...

    async def admit(self, entries: Sequence[Entry]) -> list[AdmitFlag]:
        """Take in and queue `entries` (seen test, caps, ``max_pages``, frontier bounds):
        what happened to each."""
        ...

    async def raise_priorities(self, items: Sequence[Raise]) -> None:
        """Raise (never lower) the queued URLs of `items`; the others are left alone."""
        ...


class MemoryGate(Protocol):
    """What `MemoryStore` reads of the in-memory gate (`crawler.admission.gate.Admission`)."""

    frontier: Frontier | None
    dedup: SeenTiers
    scope: Scope
    stats: CrawlStats
    state: CrawlState | None
    max_pages: int

    def _seen(self, key: str) -> bool: ...


class MemoryStore:
    """`AdmitStore` of an in-memory crawl: `gate`'s seen test, scope and frontier."""

    __slots__ = ("gate",)

    def __init__(self, gate: MemoryGate) -> None:
        self.gate = gate

    async def peek(self, links: Sequence[Link]) -> list[float | bool | None]:
        frontier = self.gate.frontier
        assert frontier is not None
        seen, queued = self.gate._seen, frontier.queued_priority
        answers: list[float | bool | None] = []
        for link in links:  # a host at its cap: refused by the scope check already
            known = seen(link.key)
            priority = queued(link.url, link.key) if known else None
            answers.append(known if priority is None else priority)
        return answers

    def skip(self, keys: Sequence[str]) -> list[bool]:
        return self.gate.dedup.add_many(keys)

    async def admit(self, entries: Sequence[Entry]) -> list[AdmitFlag]:
        """As the shared ADMIT script answers, in its order: seen, host cap, ``max_pages``,
        then the frontier's bounds (here a key the caps refuse is taken in all the same)."""
        gate = self.gate
        frontier = gate.frontier
        assert frontier is not None
        scope = gate.scope
        flags: list[AdmitFlag] = []
        room = gate.max_pages - gate.stats.admitted if gate.max_pages else len(entries)
        capped = scope.max_pages_per_host > 0
        planned: Counter[str] = Counter()  # with a cap: each host's entries about to be queued
        todo: list[Entry] = []
        for entry, is_new in zip(entries, gate.dedup.add_many([e.key for e in entries]),
                                 strict=True):  # fmt: skip
            host = split_host(entry.key) if capped else ""
            if not is_new:  # another page admitted it while this one was being scored
                flags.append(AdmitFlag.SEEN)
            elif capped and not scope.host_room(entry.key, planned[host]):
                flags.append(AdmitFlag.HOST_LIMIT)  # the page's earlier links reached it
            elif len(todo) >= room:
                flags.append(AdmitFlag.OVER_LIMIT)
            else:
                flags.append(AdmitFlag.ADMITTED)
                todo.append(entry)
                planned[host] += 1
        queued = iter(frontier.put_many(todo))
        return [
            (AdmitFlag.ADMITTED if next(queued) else AdmitFlag.FULL)
            if flag is AdmitFlag.ADMITTED
            else flag
            for flag in flags
        ]

    async def raise_priorities(self, items: Sequence[Raise]) -> None:
        """Journaled with a state."""
        frontier, state = self.gate.frontier, self.gate.state
        assert frontier is not None
        for url, key, priority in items:
            if frontier.reprioritize(url, key, priority) and state is not None:
                state.reprioritized(key, priority)
