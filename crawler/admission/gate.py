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

`Admission` is the in-memory gate; a crawl shared through Redis has its twin,
`crawler.admission.shared.SharedAdmission`, behind the same interface (the entry points are
coroutines for it; in memory they never wait): the engine, the pages and the focus never ask
which one they hold. Each entry point checks the scope here, then hands what passed to a hook
(`_admit_seed`, `_admit_links`, `_admit_child`, `_admit_sitemap`) that the twin overrides. The
scored path has one algorithm for both (`_admit_scored`), over a store (`self.store`, see
`crawler.admission.store`) that the twin swaps for its Redis one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from crawler.admission.scope import Scope
from crawler.admission.store import AdmitStore, MemoryStore
from crawler.focus.scoring import Link, Rescorer, ScoreFn, score_links
from crawler.frontier import Frontier
from crawler.frontier.entries import Entry
from crawler.frontier.redis.lua_admit import AdmitFlag
from crawler.output.results import CrawlStats
from crawler.sieve import SeenTiers, fingerprint
from crawler.state.crawlstate import CrawlState
from crawler.urls.canonical import UrlNormalizer
from crawler.urls.syntax import cut_fragment

__all__ = ["Admission"]


class Admission:
    __slots__ = (
        "dedup", "fetch_canonical", "frontier", "max_pages", "max_redirects", "scope", "state",
        "stats", "store", "urls",
    )  # fmt: skip

    def __init__(
        self,
        *,
        urls: UrlNormalizer,
        scope: Scope,
        dedup: SeenTiers,
        frontier: Frontier | None,
        stats: CrawlStats,
        state: CrawlState | None = None,
        max_pages: int = 0,
        max_redirects: int = 5,
        fetch_canonical: bool = False,
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
        self.store: AdmitStore = MemoryStore(self)  # what `_admit_scored` asks and takes

    SITES_MOVE = True
    """A seed redirected to another host of its site puts that host in scope (`_seed_moved`;
    not in a shared crawl: the seed report names the target there)."""

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
        With a state, the new ones are kept for a larger limit (`crawler.state.limits`)."""
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
        a larger limit offers it again (`crawler.state.limits`)."""
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
        assert frontier is not None  # in memory (a shared crawl: SharedAdmission)
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
        return await self._admit_seed(entry)

    async def _admit_seed(self, entry: Entry) -> bool:
        return self.room_for_more() and self.dedup.add(entry.key) and self.admit(entry)

    async def links(self, parent: Entry, hrefs: Sequence[str], base: str) -> int:
        """Admit the new in-scope links of one page; returns how many were admitted.

        A page repeats its links (navigation, ``page.html#anchor``): each distinct href is
        resolved once, and the scope and the Sieve (one batch) see each distinct key once; a
        repeat counts as out of scope or as a duplicate, like its first occurrence."""
        depth = parent.depth + 1
        in_scope = self._in_scope(hrefs, base, depth, None, parent.url)
        if not in_scope:
            return 0
        return await self._admit_links(parent, in_scope, depth)

    async def _admit_links(self, parent: Entry, in_scope: dict[str, str], depth: int) -> int:
        """The in-scope keys of one page (key -> its URL as found) through the seen test."""
        keys = list(in_scope)
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
        `crawler.focus.scoring`), which sees a `Link` built from `anchors` (per href, fragment cut:
        anchor text, rel, text around it; see `crawler.parse.markup.Markup`) and the parent page's
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
        return await self._admit_scored(parent, score, in_scope, depth, origin, details, title,
                                        relevance)  # fmt: skip

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
        """The in-scope keys of one page scored and admitted through `self.store` (each key's
        `Link` carries what `details` says of the href it came from, `origin`, and the page's
        `title`, `relevance`). One look-up tells which links' URLs are queued (and at what
        priority), seen (fetched, in flight, refused: not scored) or new; new and queued ones
        are scored. Only then are the links taken in (a score function that fails leaves them
        unseen, for the page's fetch again after a resume): the skipped ones marked seen, the
        others admitted with their priorities. A link taken in by another page meanwhile is a
        duplicate (whether the score function skipped it or not: each distinct URL is counted
        once) whose URL its score may raise, as a link to a queued URL does."""
        stats, store, fc = self.stats, self.store, self.fetch_canonical
        links = []
        for key, url in in_scope.items():
            anchor, rel, context = details.get(origin[key], NO_DETAILS)
            links.append(Link(key if fc else url, key, anchor, rel, context, depth, parent.url,
                              title, relevance))  # fmt: skip
        fresh: list[Link] = []
        again: list[Link] = []  # links to URLs queued already
        current: list[float] = []  # their priorities as queued
        for link, what in zip(links, await store.peek(links), strict=True):
            if what is None:  # its host is at its cap: refused before scoring
                stats.scope_refused["host_limit"] += 1
            elif what is False:
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
        scored = list(zip(fresh, priorities[: len(fresh)], strict=True))
        skipped = [link.key for link, p in scored if p is None]
        for is_new in store.skip(skipped):
            if is_new:
                stats.scope_refused["score"] += 1
            else:
                stats.duplicates += 1
        entries = [Entry(link.url, link.key, depth, parent.url, priority=p)
                   for link, p in scored if p is not None]  # fmt: skip
        new = 0
        for entry, flag in zip(entries, await store.admit(entries), strict=True):
            if flag is AdmitFlag.ADMITTED:
                new += self.record(entry, True)
            elif flag is AdmitFlag.SEEN:  # admitted by another page since: maybe queued
                stats.duplicates += 1
                raised.append((entry.url, entry.key, entry.priority))
            elif flag is AdmitFlag.HOST_LIMIT:  # [scope] max_pages_per_host
                stats.scope_refused["host_limit"] += 1
            elif flag is AdmitFlag.OVER_LIMIT:
                stats.over_limit += 1
            else:  # a bound of the frontier (max_queued, max_queued_per_host)
                self.record(entry, False)
        if raised:
            await store.raise_priorities(raised)
        return new

    RESCORE_SIZE = 2_000
    """Queued URLs re-scored per round of `rescore` (round robin over all of them)."""

    async def rescore(self, rescorer: Rescorer) -> int:
        """Re-prioritize a slice of the queued URLs with what `rescorer` has learned since their
        links were scored (raised or lowered; a raise journaled with a state, a lowering not: a
        resumed crawl's scorer starts over anyway); returns how many changed. URLs no longer
        queued (fetched, in flight, refused) are forgotten by the scorer."""
        frontier, state = self.frontier, self.state
        assert frontier is not None
        changed = 0
        for url, key, priority in rescorer.rescore(self.RESCORE_SIZE):
            was = frontier.set_priority(url, key, priority)
            if was is None:
                rescorer.forget(url)
            elif priority != was:
                changed += 1
                if state is not None and priority > was:
                    state.reprioritized(key, priority)
        return changed

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
        return fetch_url, await self._admit_child(child), None

    async def _admit_child(self, child: Entry) -> int:
        """A redirect's target, in scope, through the page cap and the seen test."""
        if not self.room_for_more():
            self._keep(child)
            return 0
        if not self.dedup.add(child.key):
            self.stats.duplicates += 1
            return 0
        return int(self.admit(child))

    def _seed_moved(self, entry: Entry, key: str) -> bool:
        """A seed (or its redirect) sent to another host of its site puts that host in scope,
        and in the state's (not in a shared crawl: the seed report names the target there)."""
        seed = self.SITES_MOVE and not (entry.depth or entry.sitemap)
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
        return await self._admit_sitemap(entry)

    async def _admit_sitemap(self, entry: Entry) -> bool:
        if not self.room_for_more():
            if not self._seen(entry.key):
                self._keep(entry)
            return False
        if not self.dedup.add(entry.key):
            return False
        return self.admit(entry)

    def __repr__(self) -> str:
        return f"<Admission admitted={self.stats.admitted} max_pages={self.max_pages}>"


NO_DETAILS = ("", "", "")


def _occurrences(hrefs: Sequence[str]) -> dict[str, int]:
    """href, its fragment cut ("a.html#x" and "a.html#y" are one link) -> occurrences, in
    document order. Identical hrefs are counted first (in C): a page repeats most of its links."""
    times: dict[str, int] = {}
    get = times.get
    for href, n in Counter(hrefs).items():
        key = cut_fragment(href)
        times[key] = get(key, 0) + n
    return times
