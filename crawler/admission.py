"""What enters the frontier: the per-link path and its bookkeeping.

Every URL a crawl finds (a page's links, a redirect target, a sitemap entry, a seed) goes
``urls.resolve -> scope.check -> seen test (Sieve, exact tier) -> frontier.put -> journal``, once
per distinct key per page. Each refusal is counted by reason; nothing is dropped silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from crawler.entries import Entry
from crawler.frontier import Frontier
from crawler.results import CrawlStats
from crawler.scope import Scope
from crawler.sieve import Dedup
from crawler.state import CrawlState
from crawler.urls import UrlNormalizer
from crawler.urlsyntax import cut_fragment

__all__ = ["Admission"]


class Admission:
    __slots__ = (
        "dedup", "fetch_canonical", "frontier", "max_pages", "max_redirects", "scope", "state",
        "stats", "urls",
    )  # fmt: skip

    def __init__(
        self,
        *,
        urls: UrlNormalizer,
        scope: Scope,
        dedup: Dedup,
        frontier: Frontier,
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

    def room_for_more(self) -> bool:
        """False (and counted) once `max_pages` URLs have been admitted."""
        if self.max_pages and self.stats.admitted >= self.max_pages:
            self.stats.over_limit += 1
            return False
        return True

    def admit(self, entry: Entry) -> bool:
        """Put a new (seen-test-approved, in-scope) entry in the frontier and the journal."""
        if not self.frontier.put(entry):
            self.stats.dropped_full += 1
            return False
        self.stats.admitted += 1
        self.scope.admitted(entry.key)
        if self.state is not None:
            self.state.admitted(entry)
        return True

    def seed(self, entry: Entry) -> bool:
        return self.room_for_more() and self.dedup.add(entry.key) and self.admit(entry)

    def links(self, parent: Entry, hrefs: Sequence[str], base: str) -> int:
        """Admit the new in-scope links of one page; returns how many were admitted.

        A page repeats its links (navigation, ``page.html#anchor``): each distinct href is
        resolved once, and the scope and the Sieve (one batch) see each distinct key once; a
        repeat counts as out of scope or as a duplicate, like its first occurrence."""
        depth = parent.depth + 1
        check = self.scope.check
        times = _occurrences(hrefs)
        in_scope: dict[str, str] = {}  # key -> URL to fetch
        refused: dict[str, str] = {}  # key -> why the scope refuses it
        stats = self.stats
        counts = stats.scope_refused
        repeats = 0
        for n, resolved in zip(times.values(), self.urls.resolve_all(times, base), strict=True):
            if resolved is None:
                continue
            fetch_url, key = resolved
            if key in in_scope:
                repeats += n
            elif (reason := refused.get(key) or check(key, depth)) is not None:
                refused[key] = reason
                counts[reason] += n
            else:
                in_scope[key] = fetch_url
                repeats += n - 1
        stats.links_seen += len(hrefs)
        stats.duplicates += repeats
        keys = list(in_scope)
        if not keys or not self.room_for_more():
            return 0
        new = 0
        for key, is_new in zip(keys, self.dedup.add_many(keys), strict=True):
            if not is_new:
                stats.duplicates += 1
            elif self.room_for_more():
                url = key if self.fetch_canonical else in_scope[key]
                new += self.admit(Entry(url=url, key=key, depth=depth, parent=parent.url))
        return new

    def redirect(self, entry: Entry, location: str) -> tuple[str | None, int, str | None]:
        """Admit a redirect's target at the same depth: (target URL, admitted 0/1, error)."""
        resolved = self.urls.resolve(location, entry.url)
        if resolved is None:
            return None, 0, f"redirect: bad Location {location!r}"
        fetch_url, key = resolved
        if entry.redirects >= self.max_redirects:
            return fetch_url, 0, f"redirect: more than {self.max_redirects} hops"
        reason = self.scope.check(key, entry.depth)
        if reason is not None:
            self.stats.scope_refused[reason] += 1
            return fetch_url, 0, None
        if not self.room_for_more():
            return fetch_url, 0, None
        if not self.dedup.add(key):
            self.stats.duplicates += 1
            return fetch_url, 0, None
        child = Entry(
            url=key if self.fetch_canonical else fetch_url,
            key=key,
            depth=entry.depth,
            parent=entry.url,
            redirects=entry.redirects + 1,
            sitemap=entry.sitemap,
        )
        return fetch_url, int(self.admit(child)), None

    def sitemap(self, loc: str, parent: str, depth: int) -> bool:
        """Admit a sitemap URL (from robots.txt or a sitemap index) like a seed of the crawl."""
        resolved = self.urls.resolve(loc, parent)
        if resolved is None:
            return False
        url, key = resolved
        reason = self.scope.check(key, depth)
        if reason is not None and reason != "extension":  # sitemaps are often .gz
            self.stats.scope_refused[reason] += 1
            return False
        if not (self.room_for_more() and self.dedup.add(key)):
            return False
        return self.admit(Entry(url=url, key=key, depth=depth, parent=parent, sitemap=True))

    def __repr__(self) -> str:
        return f"<Admission admitted={self.stats.admitted} max_pages={self.max_pages}>"


def _occurrences(hrefs: Sequence[str]) -> dict[str, int]:
    """href, its fragment cut ("a.html#x" and "a.html#y" are one link) -> occurrences, in
    document order. Identical hrefs are counted first (in C): a page repeats most of its links."""
    times: dict[str, int] = {}
    get = times.get
    for href, n in Counter(hrefs).items():
        key = cut_fragment(href)
        times[key] = get(key, 0) + n
    return times
