"""The admission gate of a crawl shared through Redis: `SharedAdmission`, the twin of
`crawler.admission.gate.Admission` behind the same interface.

The scope is checked in this process as in memory; the seen test and the enqueue are one atomic
call per page for its in-scope keys (`ClusterNode.admit`), and ``max_pages`` caps the URLs
admitted by all processes together (the shared Sieve's count). A focused shared crawl scores
every in-scope link, admits the new ones with their priorities in that call and raises queued
URLs in one more round trip: the same choices as in memory, asked of Redis.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from crawler.admission.gate import NO_DETAILS, Admission
from crawler.focus.scoring import Link, Rescorer, ScoreFn, score_links
from crawler.frontier.entries import Entry
from crawler.frontier.redis.lua_admit import AdmitFlag

if TYPE_CHECKING:
    from crawler.cluster import ClusterNode

__all__ = ["SharedAdmission"]


class SharedAdmission(Admission):
    """`Admission` through the shared crawl of `shared` (this process's `ClusterNode`)."""

    __slots__ = ("shared",)
    SITES_MOVE = False  # the seed report names a seed's target host instead
    RESCORE_SIZE = 500  # a script call each: a smaller slice per round

    def __init__(self, *, shared: ClusterNode, **options: Any) -> None:
        super().__init__(frontier=None, **options)
        self.shared = shared

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

    async def _admit_scored(
        self,
        parent: Entry,
        score: ScoreFn,
        in_scope: dict[str, str],
        depth: int,
        origin: Mapping[str, str],
        details: Mapping[str, tuple[str, str, str]],
        title: str | None,
        relevance: float | None,
    ) -> int:
        """One script call tells which links' URLs are queued (and at what priority), seen
        (fetched, in flight, refused: not scored) or new (the Sieve's test, read only; a key
        this process's score function skipped counts as seen). New and queued ones are scored;
        the new ones are admitted with their priorities in one atomic call (another process may
        have admitted one meanwhile: SEEN, a duplicate), and the queued ones a link scores
        higher are raised (one pipeline)."""
        fc = self.fetch_canonical
        links = []
        for key, url in in_scope.items():
            anchor, rel, context = details.get(origin[key], NO_DETAILS)
            links.append(Link(key if fc else url, key, anchor, rel, context, depth, parent.url,
                              title, relevance))  # fmt: skip
        shared, stats = self.shared, self.stats
        frontier = shared.frontier
        per_host = shared.config.scope.max_pages_per_host
        known = await frontier.peek([(link.url, link.key) for link in links], per_host)
        fresh: list[Link] = []
        again: list[Link] = []  # links to URLs queued already
        current: list[float] = []  # their priorities as queued
        for link, what in zip(links, known, strict=True):
            if what is None:  # its host is at its cap: refused before scoring, as in memory
                stats.scope_refused["host_limit"] += 1
            elif what is False and link.key not in shared.cache:
                fresh.append(link)
            else:  # seen: scored only when still queued (`what` its priority)
                stats.duplicates += 1
                if not isinstance(what, bool):
                    again.append(link)
                    current.append(what)
        if not fresh and not again:
            return 0
        priorities = await score_links(score, fresh + again)
        raised = [(link.url, link.key, p) for link, was, p in
                  zip(again, current, priorities[len(fresh) :], strict=True)
                  if p is not None and p > was]  # fmt: skip
        entries: list[Entry] = []
        for link, priority in zip(fresh, priorities[: len(fresh)], strict=True):
            if priority is None:
                stats.scope_refused["score"] += 1
                shared.cache.add(link.key)  # not offered again by this process
            else:
                entries.append(Entry(link.url, link.key, link.depth, parent.url,
                                     priority=priority))  # fmt: skip
        new = 0
        flags = await shared.admit(entries) if entries else []
        for entry, flag in zip(entries, flags, strict=True):
            if flag is AdmitFlag.ADMITTED:
                new += self.record(entry, True)
            elif (
                flag is AdmitFlag.SEEN
            ):  # admitted by another process since: a duplicate, maybe queued
                stats.duplicates += 1
                raised.append((entry.url, entry.key, entry.priority))
            elif flag is AdmitFlag.HOST_LIMIT:  # [scope] max_pages_per_host, over every process
                stats.scope_refused["host_limit"] += 1
            else:  # a bound of the shared frontier (max_queued, max_queued_per_host)
                self.record(entry, False)
        if raised:
            await frontier.set_priorities(raised, lower=False)
        return new

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
