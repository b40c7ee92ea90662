"""A focused crawl's admission in a crawl shared through Redis (`scored_links`).

`crawler.admission.Admission.scored_links` calls it when the crawl is shared: the same choices
as in memory (which links are scored, which URLs are raised), asked of Redis.
"""

from __future__ import annotations

from crawler.admission import Admission
from crawler.entries import Entry
from crawler.frontier.redis import ADMITTED, HOST_LIMIT, SEEN
from crawler.scoring import Link, ScoreFn, score_links

__all__ = ["scored_links"]


async def scored_links(adm: Admission, parent: Entry, score: ScoreFn, links: list[Link]) -> int:
    """`scored_links` in a crawl shared through Redis, with the same choices: one script
    call tells which links' URLs are queued (and at what priority), seen (fetched, in flight,
    refused: not scored) or new (the Sieve's test, read only; a key this process's score
    function skipped counts as seen). New and queued ones are scored; the new ones are
    admitted with their priorities in one atomic call (another process may have admitted one
    meanwhile: SEEN, a duplicate), and the queued ones a link scores higher are raised (one
    pipeline)."""
    shared, stats = adm.shared, adm.stats
    assert shared is not None
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
            entries.append(Entry(link.url, link.key, link.depth, parent.url, priority=priority))
    new = 0
    flags = await shared.admit(entries) if entries else []
    for entry, flag in zip(entries, flags, strict=True):
        if flag == ADMITTED:
            new += adm.record(entry, True)
        elif flag == SEEN:  # admitted by another process since: a duplicate, maybe queued
            stats.duplicates += 1
            raised.append((entry.url, entry.key, entry.priority))
        elif flag == HOST_LIMIT:  # [scope] max_pages_per_host, over every process
            stats.scope_refused["host_limit"] += 1
        else:  # a bound of the shared frontier (max_queued, max_queued_per_host)
            adm.record(entry, False)
    if raised:
        await frontier.set_priorities(raised, lower=False)
    return new
