"""The admission gate of a crawl shared through Redis: `SharedAdmission`, the twin of
`crawler.admission.gate.Admission` behind the same interface, and `SharedStore`, the Redis
store behind the one scored-admission algorithm (`crawler.admission.store`).

The scope is checked in this process as in memory; the seen test and the enqueue are one atomic
call per page for its in-scope keys (`ClusterNode.admit`), and ``max_pages`` caps the URLs
admitted by all processes together (the shared Sieve's count). A focused shared crawl runs the
in-memory algorithm itself (`Admission._admit_scored`) over `SharedStore`: one script call tells
which links are queued, seen or new, one admits the new ones with their priorities, and one
pipeline raises queued URLs: the same choices as in memory, asked of Redis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from crawler.admission.gate import Admission
from crawler.admission.store import Raise
from crawler.focus.scoring import Link, Rescorer
from crawler.frontier.entries import Entry
from crawler.frontier.redis.lua_admit import AdmitFlag

if TYPE_CHECKING:
    from crawler.cluster import ClusterNode

__all__ = ["SharedAdmission", "SharedStore"]


class SharedAdmission(Admission):
    """`Admission` through the shared crawl of `shared` (this process's `ClusterNode`)."""

    __slots__ = ("shared",)
    SITES_MOVE = False  # the seed report names a seed's target host instead
    RESCORE_SIZE = 500  # a script call each: a smaller slice per round

    def __init__(self, *, shared: ClusterNode, **options: Any) -> None:
        super().__init__(frontier=None, **options)
        self.shared = shared
        self.store = SharedStore(shared, self.max_pages)

    async def _shared(self, entries: list[Entry], *, seeds: bool = False) -> int:
        """Admit `entries` through the shared crawl (seen test and enqueue in one atomic call);
        how many were new and queued. Each refusal is counted like in memory. `seeds` are not
        refused by `max_pages_per_host` (as in memory: no scope test) but count toward it."""
        stats, new = self.stats, 0
        flags = await self.shared.admit(entries, self.max_pages, seeds=seeds)
        for entry, flag in zip(entries, flags, strict=True):
            if flag is AdmitFlag.ADMITTED:
                new += self.record(entry, True)
            elif flag is AdmitFlag.SEEN:
                stats.duplicates += 1
            elif flag is AdmitFlag.OVER_LIMIT:
                stats.over_limit += 1
            elif flag is AdmitFlag.HOST_LIMIT:  # [scope] max_pages_per_host, over every process
                stats.scope_refused["host_limit"] += 1
            else:  # a bound of the shared frontier (max_queued, max_queued_per_host)
                self.record(entry, False)
        return new

    async def _admit_seed(self, entry: Entry) -> bool:
        return await self._shared([entry], seeds=True) == 1

    async def _admit_links(self, parent: Entry, in_scope: dict[str, str], depth: int) -> int:
        fc = self.fetch_canonical
        return await self._shared([
            Entry(url=key if fc else url, key=key, depth=depth, parent=parent.url)
            for key, url in in_scope.items()
        ])  # fmt: skip

    async def _admit_child(self, child: Entry) -> int:
        return await self._shared([child])

    async def _admit_sitemap(self, entry: Entry) -> bool:
        return await self._shared([entry]) == 1

    async def rescore(self, rescorer: Rescorer) -> int:
        """`Admission.rescore` in one round trip, and only raised: a URL may be queued at the
        priority of another process's better link, which this scorer never saw."""
        items = rescorer.rescore(self.RESCORE_SIZE)
        befores = await self.shared.frontier.set_priorities(items, lower=True)
        changed = 0
        for (url, _, priority), was in zip(items, befores, strict=True):
            if was is None:
                rescorer.forget(url)
            else:
                changed += priority != was
        return changed

    def __repr__(self) -> str:
        return f"<SharedAdmission admitted={self.stats.admitted} max_pages={self.max_pages}>"


class SharedStore:
    """`crawler.admission.store.AdmitStore` of the shared crawl of `shared`: one script call
    per `peek` and per `admit`, one pipeline per `raise_priorities`. ``max_pages`` caps the
    URLs admitted by all processes together (the shared Sieve's count)."""

    __slots__ = ("max_pages", "shared")

    def __init__(self, shared: ClusterNode, max_pages: int) -> None:
        self.shared, self.max_pages = shared, max_pages

    async def peek(self, links: Sequence[Link]) -> list[float | bool | None]:
        """A key this process's score function skipped counts as seen."""
        shared = self.shared
        per_host = shared.config.scope.max_pages_per_host
        known = await shared.frontier.peek([(link.url, link.key) for link in links], per_host)
        cache = shared.cache
        return [True if what is False and link.key in cache else what
                for link, what in zip(links, known, strict=True)]  # fmt: skip

    def skip(self, keys: Sequence[str]) -> list[bool]:
        """In this process only (the Redis Sieve is not asked again: a round trip): a key
        another process admitted since it was peeked counts here as skipped."""
        cache = self.shared.cache
        flags = [key not in cache for key in keys]
        for key in keys:
            cache.add(key)
        return flags

    async def admit(self, entries: Sequence[Entry]) -> list[AdmitFlag]:
        return await self.shared.admit(entries, self.max_pages) if entries else []

    async def raise_priorities(self, items: Sequence[Raise]) -> None:
        await self.shared.frontier.set_priorities(items, lower=False)
