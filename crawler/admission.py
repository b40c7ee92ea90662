"""What enters the frontier: the per-link path and its bookkeeping.

Every URL a crawl finds (a page's links, a redirect target, a sitemap entry, a seed) goes
``urls.resolve -> scope.check -> seen test (Sieve, exact tier) -> frontier.put -> journal``, once
per distinct key per page. Each refusal is counted by reason; nothing is dropped silently.

In a focused crawl (`scored_links`), each new key's priority comes from a score function
between the Sieve and the frontier; a link it skips is a refusal like any other ("score"). A
link to a URL the Sieve has seen is scored too when (and only when) the frontier still has that
URL queued: a better link raises its priority (``reprioritize``: the combined priority is the
best of its links' scores), so a page first linked from an index with a bare anchor does not
keep that poor priority once a page about the topic links to it. Fetched and in-flight URLs
cost one frontier look-up and no score call. The new links of a page go to the frontier in one
batch (``put_many``): waiting workers get its best links, not its first.

In a crawl shared through Redis (`shared`: a `crawler.cluster.ClusterNode`), the seen test and
the enqueue are one atomic call per page for its in-scope keys (`ClusterNode.admit`), and
``max_pages`` caps the URLs admitted by all processes together (the shared Sieve's count).
A focused shared crawl scores every in-scope link, admits the new ones with their priorities
in that call and raises queued URLs in one more round trip (`crawler.cluster.admit`). The entry
points are coroutines for that reason; in memory they never wait.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from crawler.entries import Entry
from crawler.frontier import Frontier
from crawler.results import CrawlStats
from crawler.scope import Scope, split_host
from crawler.scoring import Link, ScoreFn, score_links
from crawler.sieve import Dedup, fingerprint
from crawler.state import CrawlState
from crawler.urls import UrlNormalizer
from crawler.urlsyntax import cut_fragment

if TYPE_CHECKING:  # the cluster package imports redis-py: only a shared crawl loads it
    from crawler.cluster import ClusterNode

__all__ = ["Admission"]


class Admission:
    __slots__ = (
        "dedup", "fetch_canonical", "frontier", "max_pages", "max_redirects", "scope", "shared",
        "state", "stats", "urls",
    )  # fmt: skip

    def __init__(
        self,
        *,
        urls: UrlNormalizer,
        scope: Scope,
        dedup: Dedup,
        frontier: Frontier | None,
        stats: CrawlStats,
        state: CrawlState | None = None,
        max_pages: int = 0,
        max_redirects: int = 5,
        fetch_canonical: bool = False,
        shared: ClusterNode | None = None,
    ) -> None:
        self.urls = urls
        self.scope = scope
        self.dedup = dedup
        self.frontier = frontier
        self.stats = stats
        self.state = state
        self.max_pages = max_pages
        self.max_redirects = max_redirects
        self.fetch_canonical = fetch_canonical
        self.shared = shared

    def room_for_more(self) -> bool:
        """False (and counted) once `max_pages` URLs have been admitted."""
        if self.max_pages and self.stats.admitted >= self.max_pages:
            self.stats.over_limit += 1
            return False
        return True

    def _over_limit(self, in_scope: Mapping[str, str], depth: int, parent: str) -> None:
        """Count a page's links once `max_pages` URLs were admitted: each new URL refused once
        (its key is not taken in, so another page's link to it counts too; a URL refused while
        room ran out mid-page was taken in and counts as a duplicate), the others duplicates.
        With a state, the new ones are kept for a larger limit (`crawler.limits`)."""
        seen = self._seen if self.state is not None else self.dedup.sieve.__contains__
        for key in in_scope:
            if seen(key):
                self.stats.duplicates += 1
            else:
                self.stats.over_limit += 1
                self._keep(Entry(self._fetch_url(in_scope, key), key, depth, parent))

    def _fetch_url(self, in_scope: Mapping[str, str], key: str) -> str:
        return key if self.fetch_canonical else in_scope[key]

    def _keep(self, entry: Entry, *, scored: bool = True) -> None:
        """With a state, keep a link refused by `max_pages` or `max_depth` in it: a resume with
        a larger limit offers it again (`crawler.limits`)."""
        if self.state is not None:
            self.state.kept.keep(entry, scored=scored)

    def _keep_deep(self, entry: Entry, *, scored: bool) -> None:
        """`_keep` a link refused for its depth alone, unless seen (a page at the limit links
        to pages admitted long ago: the depth is checked before the seen test)."""
        if self.scope.only_depth(entry.key) and not self._seen(entry.key):
            url = entry.key if self.fetch_canonical else entry.url
            self._keep(Entry(url, entry.key, entry.depth, entry.parent), scored=scored)

    def admit(self, entry: Entry) -> bool:
        """Put a new (seen-test-approved, in-scope) entry in the frontier and the journal."""
        frontier = self.frontier
        assert frontier is not None  # in memory (a shared crawl admits through `shared`)
        return self.record(entry, frontier.put(entry))

    def record(self, entry: Entry, queued: bool) -> bool:
        """The bookkeeping of an entry the frontier took (`queued`) or refused."""
        if not queued:
            self.stats.dropped_full += 1
            return False
        self.stats.admitted += 1
        self.scope.admitted(entry.key)
        if self.state is not None:
            self.state.admitted(entry)
        return True

    async def seed(self, entry: Entry) -> bool:
        if self.shared is not None:
            return await self._shared([entry], seeds=True) == 1
        return self.room_for_more() and self.dedup.add(entry.key) and self.admit(entry)

    async def _shared(self, entries: list[Entry], *, seeds: bool = False) -> int:
        """Admit `entries` through the shared crawl (seen test and enqueue in one atomic call);
        how many were new and queued. Each refusal is counted like in memory. `seeds` are not
        refused by `max_pages_per_host` (as in memory: no scope test) but count toward it."""
        assert self.shared is not None
        from crawler.frontier.redis import ADMITTED, HOST_LIMIT, OVER_LIMIT, SEEN

        stats, new = self.stats, 0
        flags = await self.shared.admit(entries, self.max_pages, seeds=seeds)
        for entry, flag in zip(entries, flags, strict=True):
            if flag == ADMITTED:
                new += self.record(entry, True)
            elif flag == SEEN:
                stats.duplicates += 1
            elif flag == OVER_LIMIT:
                stats.over_limit += 1
            elif flag == HOST_LIMIT:  # [scope] max_pages_per_host, over every process
                stats.scope_refused["host_limit"] += 1
            else:  # a bound of the shared frontier (max_queued, max_queued_per_host)
                self.record(entry, False)
        return new

    async def links(self, parent: Entry, hrefs: Sequence[str], base: str) -> int:
        """Admit the new in-scope links of one page; returns how many were admitted.

        A page repeats its links (navigation, ``page.html#anchor``): each distinct href is
        resolved once, and the scope and the Sieve (one batch) see each distinct key once; a
        repeat counts as out of scope or as a duplicate, like its first occurrence."""
        depth = parent.depth + 1
        in_scope = self._in_scope(hrefs, base, depth, None, parent.url)
        keys = list(in_scope)
        if not keys:
            return 0
        if self.shared is not None:
            fc = self.fetch_canonical
            return await self._shared(
                [
                    Entry(url=key if fc else in_scope[key], key=key, depth=depth, parent=parent.url)
                    for key in keys
                ]
            )
        stats = self.stats
        if self.max_pages and stats.admitted >= self.max_pages:
            self._over_limit(in_scope, depth, parent.url)
            return 0
        new = 0
        capped = self.scope.max_pages_per_host > 0
        for key, is_new in zip(keys, self.dedup.add_many(keys), strict=True):
            if not is_new:
                stats.duplicates += 1
            elif capped and not self.scope.host_room(key):  # reached by the page's own links
                stats.scope_refused["host_limit"] += 1
            elif self.room_for_more():
                url = key if self.fetch_canonical else in_scope[key]
                new += self.admit(Entry(url=url, key=key, depth=depth, parent=parent.url))
            else:  # taken in by the Sieve: kept all the same
                self._keep(Entry(self._fetch_url(in_scope, key), key, depth, parent.url))
        return new

    async def scored_links(
        self,
        parent: Entry,
        hrefs: Sequence[str],
        base: str,
        score: ScoreFn,
        *,
        anchors: Mapping[str, tuple[str, str, str]] | None = None,
        title: str | None = None,
        relevance: float | None = None,
    ) -> int:
        """`links` for a focused crawl: each new link's priority comes from `score` (see
        `crawler.scoring`), which sees a `Link` built from `anchors` (per href, fragment cut: anchor
        text, rel, text around it; see `crawler.markup.Markup`) and the parent page's
        `title` and `relevance`. A link it skips (None) is counted in ``scope_refused["score"]``
        and marked as seen all the same (it is not offered again from another page). A link to
        a URL still queued is scored too, and raises that URL's priority if it scores higher
        (`score` may thus see several links to one URL). A score function that raises, or
        returns something other than a number, raises `ScoreError` naming the link; the page's
        new links are then left unseen."""
        depth = parent.depth + 1
        origin: dict[str, str] = {}  # key -> the href it came from (its first)
        in_scope = self._in_scope(hrefs, base, depth, origin, parent.url)
        keys = list(in_scope)
        if not keys or not self.room_for_more():
            return 0
        details = anchors or {}
        if self.shared is not None:
            fc = self.fetch_canonical
            from crawler.cluster.admit import scored_links  # redis-py: a shared crawl only

            return await scored_links(self, parent, score, [
                Link(key if fc else in_scope[key], key, *details.get(origin[key], _NO_DETAILS),
                     depth, parent.url, title, relevance)
                for key in keys
            ])  # fmt: skip
        stats = self.stats
        links: list[Link] = []
        again: list[Link] = []  # links to URLs queued already
        current: list[float] = []  # their priorities as queued
        frontier = self.frontier
        assert frontier is not None  # in memory (a shared crawl: crawler.cluster.admit)
        seen, queued = self._seen, frontier.queued_priority
        for key in keys:
            url = key if self.fetch_canonical else in_scope[key]
            if seen(key):
                stats.duplicates += 1
                if (priority := queued(url, key)) is None:
                    continue  # fetched, in flight, refused or skipped: nothing to do
                into = again
                current.append(priority)
            else:
                into = links
            anchor, rel, context = details.get(origin[key], _NO_DETAILS)
            into.append(Link(url, key, anchor, rel, context, depth, parent.url, title, relevance))
        if not links and not again:
            return 0
        priorities = await score_links(score, links + again)
        # Only now are the links taken in (with no await until they are admitted): a score
        # function that fails leaves them unseen, for the page's fetch again after a resume.
        self._raise(again, current, priorities[len(links) :])
        if not links:
            return 0
        entries: list[Entry] = []
        flags = self.dedup.add_many([link.key for link in links])
        room = self.max_pages - stats.admitted if self.max_pages else len(links)
        capped = self.scope.max_pages_per_host > 0
        planned: Counter[str] = Counter()  # with a cap: each host's entries about to be admitted
        for link, priority, is_new in zip(links, priorities[: len(links)], flags, strict=True):
            if not is_new:  # another page admitted it while this one was being scored
                stats.duplicates += 1
            elif priority is None:
                stats.scope_refused["score"] += 1
            elif capped and not self.scope.host_room(link.key, planned[split_host(link.key)]):
                stats.scope_refused["host_limit"] += 1  # the page's earlier links reached it
            elif len(entries) >= room:
                stats.over_limit += 1
            else:
                entries.append(Entry(link.url, link.key, depth, parent.url, priority=priority))
                if capped:
                    planned[split_host(link.key)] += 1
        if not entries:
            return 0
        flags = frontier.put_many(entries)
        return sum(self.record(e, ok) for e, ok in zip(entries, flags, strict=True))

    def _raise(
        self, links: list[Link], current: list[float], priorities: list[float | None]
    ) -> None:
        """Raise the priority of the queued URLs that a link scored higher (`current`: their
        priorities when the page was read); journaled with a state."""
        frontier, state = self.frontier, self.state
        assert frontier is not None
        for link, was, priority in zip(links, current, priorities, strict=True):
            raised = priority is not None and priority > was
            if raised and frontier.reprioritize(link.url, link.key, priority or 0.0) and state:
                state.reprioritized(link.key, priority or 0.0)

    def _seen(self, key: str) -> bool:
        """Whether the seen test has `key`, without taking it in (a Sieve positive is confirmed
        by the exact tier, when there is one)."""
        dedup = self.dedup
        if key not in dedup.sieve:
            return False
        return dedup.exact is None or fingerprint(key) in dedup.exact

    def _in_scope(
        self,
        hrefs: Sequence[str],
        base: str,
        depth: int,
        origin: dict[str, str] | None,
        parent: str | None = None,
    ) -> dict[str, str]:
        """key -> URL to fetch of the distinct in-scope links of a page (refusals and repeats
        counted); `origin`, if given, gets key -> the href it was resolved from. A link refused
        for its depth alone is kept (`_keep`; unscored when `origin` is given)."""
        check = self.scope.check
        times = _occurrences(hrefs)
        in_scope: dict[str, str] = {}  # key -> URL to fetch
        refused: dict[str, str] = {}  # key -> why the scope refuses it
        stats = self.stats
        counts = stats.scope_refused
        repeats = 0
        for href, n, resolved in zip(
            times, times.values(), self.urls.resolve_all(times, base), strict=True
        ):
            if resolved is None:
                continue
            fetch_url, key = resolved
            if key in in_scope:
                repeats += n
            elif (reason := refused.get(key) or check(key, depth)) is not None:
                if reason == "depth" and key not in refused and self.state is not None:
                    self._keep_deep(Entry(fetch_url, key, depth, parent), scored=origin is None)
                refused[key] = reason
                counts[reason] += n
            else:
                in_scope[key] = fetch_url
                repeats += n - 1
                if origin is not None:
                    origin[key] = href
        stats.links_seen += len(hrefs)
        stats.duplicates += repeats
        return in_scope

    async def redirect(self, entry: Entry, location: str) -> tuple[str | None, int, str | None]:
        """Admit a redirect's target at the same depth: (target URL, admitted 0/1, error)."""
        resolved = self.urls.resolve(location, entry.url)
        if resolved is None:
            return None, 0, f"redirect: bad Location {location!r}"
        fetch_url, key = resolved
        if entry.redirects >= self.max_redirects:
            return fetch_url, 0, f"redirect: more than {self.max_redirects} hops"
        reason = self.scope.check(key, entry.depth)
        if reason == "domain" and self._seed_moved(entry, key):
            reason = self.scope.check(key, entry.depth)
        if reason is not None:
            self.stats.scope_refused[reason] += 1
            return fetch_url, 0, None
        child = Entry(
            url=key if self.fetch_canonical else fetch_url,
            key=key,
            depth=entry.depth,
            parent=entry.url,
            redirects=entry.redirects + 1,
            sitemap=entry.sitemap,
            priority=entry.priority,  # a redirect target keeps the priority of its link
        )
        if self.shared is not None:
            return fetch_url, await self._shared([child]), None
        if not self.room_for_more():
            self._keep(child)
            return fetch_url, 0, None
        if not self.dedup.add(key):
            self.stats.duplicates += 1
            return fetch_url, 0, None
        return fetch_url, int(self.admit(child)), None

    def _seed_moved(self, entry: Entry, key: str) -> bool:
        """A seed (or its redirect) sent to another host of its site puts that host in scope,
        and in the state's (not in a shared crawl: the seed report names the target there)."""
        seed = not (entry.depth or entry.sitemap or self.shared)
        host = self.scope.follow_site(entry.key, key) if seed else None
        if host is not None and self.state is not None:
            self.state.seed_hosts({host}, meta="site_hosts")
        return host is not None

    async def sitemap(self, loc: str, parent: str, depth: int) -> bool:
        """Admit a sitemap URL (from robots.txt or a sitemap index) like a seed of the crawl."""
        resolved = self.urls.resolve(loc, parent)
        if resolved is None:
            return False
        url, key = resolved
        reason = self.scope.check(key, depth)
        entry = Entry(url=url, key=key, depth=depth, parent=parent, sitemap=True)
        if reason is not None and reason != "extension":  # sitemaps are often .gz
            self.stats.scope_refused[reason] += 1
            if reason == "depth" and self.scope.only_depth(key, sitemap=True):
                self._keep(entry)
            return False
        if self.shared is not None:
            return await self._shared([entry]) == 1
        if not self.room_for_more():
            if not self._seen(key):
                self._keep(entry)
            return False
        if not self.dedup.add(key):
            return False
        return self.admit(entry)

    def __repr__(self) -> str:
        return f"<Admission admitted={self.stats.admitted} max_pages={self.max_pages}>"


_NO_DETAILS = ("", "", "")


def _occurrences(hrefs: Sequence[str]) -> dict[str, int]:
    """href, its fragment cut ("a.html#x" and "a.html#y" are one link) -> occurrences, in
    document order. Identical hrefs are counted first (in C): a page repeats most of its links."""
    times: dict[str, int] = {}
    get = times.get
    for href, n in Counter(hrefs).items():
        key = cut_fragment(href)
        times[key] = get(key, 0) + n
    return times
