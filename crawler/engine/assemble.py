"""Assembling a crawl: the parts `Crawler.crawl()` builds once, before its first worker starts.

`seen_test` is the URL-seen test (the Sieve, restored from a resumed state, and the exact tier in
front of it), built when the `Crawler` is made. `Assembly._prepare` builds the rest, in order:
the scope, the frontier (in memory, or the shared crawl's through `crawler.cluster`) with the
fetch budget (one process's, or the shared one: built once, the right one), the state's stats,
budget and content index, the admission gate, the `PageHandler` (over its `PageParts`); then the
seed hosts are put in scope, a resumed crawl's pending URLs back in the frontier, and the seeds
admitted. The run loop is `crawler.engine.crawler.Crawler`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from crawler.admission.gate import Admission
from crawler.admission.kept import offer_kept
from crawler.admission.scope import Scope
from crawler.config.load import Config
from crawler.engine.components import cluster_settings, make_frontier, make_scope, make_sieve
from crawler.engine.components import settings as shared_settings
from crawler.engine.focus import Focus
from crawler.engine.pages import PageHandler, PageParts
from crawler.engine.rendering import Rendering
from crawler.errors import SeedError
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.response import Response
from crawler.focus.budget import FetchBudget
from crawler.frontier import Entry, Frontier
from crawler.frontier.base import WorkSource
from crawler.output.results import CrawlStats
from crawler.parse.thread import Parser
from crawler.parse.yields import ExtractFn
from crawler.sieve import SeenFilter, SeenTiers
from crawler.sieve.seen import SeenStore
from crawler.state.crawlstate import CrawlState
from crawler.urls.canonical import UrlNormalizer
from crawler.urls.host import split_host

if TYPE_CHECKING:
    from crawler.cluster import ClusterNode  # redis-py: only for a shared crawl
    from crawler.content import ContentIndex
    from crawler.content.redis import RedisContentIndex

__all__ = ["Assembly", "seen_test"]

log = logging.getLogger(__name__)


def seen_test(config: Config, state: CrawlState | None) -> tuple[SeenFilter, SeenTiers]:
    """The URL-seen filter of `[sieve]` (a resumed state's, as the crawl left it) and the seen
    test over it, with the exact tier (`[sieve] confirm`: "exact", or "auto" with a state)."""
    sieve = make_sieve(config)
    if state is not None and state.resumed:
        sieve = state.restore_sieve(sieve)  # the snapshot's, else this one, keys replayed
    confirm = config.sieve.confirm
    exact = confirm == "exact" or (confirm == "auto" and state is not None)
    store = (state.seen if state is not None else SeenStore()) if exact else None
    return sieve, SeenTiers(sieve, store)


class Assembly:
    """The part of `Crawler` that builds a crawl's parts (module docstring)."""

    config: Config
    stats: CrawlStats
    focus: Focus | None
    budget: FetchBudget | None
    state: CrawlState | None
    sieve: SeenFilter
    dedup: SeenTiers
    urls: UrlNormalizer
    fetcher: Fetcher
    parser: Parser
    rendering: Rendering | None
    recrawl: bool
    content: ContentIndex | RedisContentIndex | None
    frontier: WorkSource | None
    scope: Scope | None
    cluster: ClusterNode | None
    admission: Admission
    pages: PageHandler | None
    _clock: Callable[[], float] | None
    _recorder: Callable[[Response], None] | None
    _extract: ExtractFn | None
    _entered: bool

    @property
    def budget_limit(self) -> int:
        """The fetch budget's page results: scoring makes ``max_pages`` a budget
        (`crawler.focus.budget`), else it caps admissions (0: no budget)."""
        return self.config.crawl.max_pages if self.focus is not None else 0

    def seed_entries(self, seeds: Iterable[str]) -> list[Entry]:
        """Validate seeds into frontier entries; raises SeedError naming a bad one."""
        entries = []
        for seed in seeds:
            url, key = self.urls.normalize(seed), self.urls.canonicalize(seed)
            if url is None or key is None:
                raise SeedError(f"not a crawlable http(s) URL: {seed!r}")
            fetch = key if self.config.urls.fetch_canonical else url
            entries.append(Entry(url=fetch, key=key, depth=0))
        return entries

    async def _prepare(self, seeds: Iterable[str]) -> None:
        """Set up frontier, scope and the seen test; restore a saved state; admit the seeds."""
        if not self._entered:  # else every fetch fails, robots.txt first, as an internal error
            raise RuntimeError("crawl() needs an open Crawler: async with Crawler(config) as c: "
                               "async for result in c.crawl(seeds): ...")  # fmt: skip
        if isinstance(seeds, str):  # else each of its characters is a seed: 'h', 't', ...
            raise TypeError(f"crawl() takes a list of seed URLs, not one: crawl([{seeds!r}])")
        entries = self.seed_entries(seeds)
        self.scope = make_scope(self.config)
        frontier = await self._open_frontier()
        assert self.frontier is not None
        self._restore()
        self._open_admission(frontier)
        parts = PageParts(self.fetcher, self.parser, self.urls, self.admission, self.frontier,
                          self.stats, self.state, self.focus, self.content)  # fmt: skip
        self.pages = PageHandler(self.config, parts, recrawl=self.recrawl,
                                 recorder=self._recorder, rendering=self.rendering,
                                 extract=self._extract)  # fmt: skip
        self._scope_seed_hosts(entries, frontier)
        state = self.state
        if state is not None:  # a resume whose limits admit more: the links they refused
            score = self.focus.score if self.focus is not None else None
            if offered := await offer_kept(self.admission, state, score):
                log.info("resuming: %d links kept for a larger limit admitted", offered)
        for entry in entries:
            await self.admission.seed(entry)
        if state is not None and frontier is not None:  # (a run with nothing to fetch: no gap)
            state.dedup(self.content is not None, fetching=len(frontier) > 0)

    async def _open_frontier(self) -> Frontier | None:
        """The frontier the workers take work from: in memory (returned: the admission gate
        fills it), or a shared crawl's, with its content index (None); with the fetch budget
        (`budget_limit`), one process's or every process's."""
        limit = self.budget_limit
        if not self.config.cluster.redis:
            frontier = make_frontier(self.config, self._clock, self.fetcher.rules.host_rule,
                                     self.fetcher.addresses)  # fmt: skip
            self.frontier = frontier
            self.budget = FetchBudget(limit) if limit else None
            return frontier
        from crawler.cluster import ClusterNode

        shared = shared_settings(self.config, scored=self.focus is not None)
        if self.focus is not None:  # max_pages is a budget, free to change: not its presence
            shared["crawl.fetch_budget"] = limit > 0
        shared.update(cluster_settings(self.config))  # one content index, one delay
        self.cluster = node = ClusterNode(self.config, shared, clock=self._clock,
                                          host_rule=self.fetcher.rules.host_rule,
                                          names=self.fetcher.addresses)  # fmt: skip
        await node.open(self.stats.as_dict)
        if self.config.dedup.enabled:
            self.content = node.content_index(self.config.dedup.near_distance)
        if limit:  # page results of every process
            self.budget = await node.budget(limit)
        self.frontier = node.work
        return None

    def _restore(self) -> None:
        """With a resumed state: the stats, the budget and the content index as the crawl left
        them (its Sieve is restored when the Crawler is made: `seen_test`)."""
        state = self.state
        if state is not None and state.resumed:
            self.stats.restore(state.stats() or {})
            if self.budget is not None:  # the budget counts the page results of every run
                self.budget.spend(
                    self.stats.pages - self.stats.robots_refused - self.stats.host_down
                )
        content = self.content
        if state is not None and content is not None:
            from crawler.content import ContentIndex

            assert isinstance(content, ContentIndex)  # a shared crawl has no --state
            if state.resumed:
                content.load(state.content())
            content.store = state.add_content

    def _open_admission(self, frontier: Frontier | None) -> None:
        """The admission gate: in memory into `frontier`, or through the shared crawl."""
        gate: dict[str, Any] = {
            "urls": self.urls, "scope": self.scope, "dedup": self.dedup, "stats": self.stats,
            "state": self.state,
            "max_pages": 0 if self.budget is not None else self.config.crawl.max_pages,
            "max_redirects": self.config.fetch.max_redirects,
            "fetch_canonical": self.config.urls.fetch_canonical,
        }  # fmt: skip
        if self.cluster is not None:
            from crawler.admission.shared import SharedAdmission  # redis-py: a shared crawl only

            self.admission: Admission = SharedAdmission(shared=self.cluster, **gate)
        else:
            self.admission = Admission(frontier=frontier, **gate)

    def _scope_seed_hosts(self, entries: list[Entry], frontier: Frontier | None) -> None:
        """The seeds' hosts (every run's, with a state, and those seeds redirected to) in scope
        and exempt from the SSRF guard; a resumed crawl's pending URLs back in the frontier."""
        assert self.scope is not None
        state = self.state
        hosts = {split_host(e.key) for e in entries}
        if state is not None:
            assert frontier is not None  # a shared crawl has no --state (crawler.cluster)
            hosts = state.seed_hosts(hosts)
            resumed = 0
            for entry in state.pending():
                resumed += frontier.put(entry)
            if self.scope.max_pages_per_host:  # every URL admitted before counts, done or not
                for key in state.admitted_keys():
                    self.scope.admitted(key)
            if resumed:
                log.info("resuming: %d URLs still to fetch", resumed)
        if not self.config.scope.allowed_domains:  # (+ hosts seeds redirected to, resumed)
            for host in hosts | (state.seed_hosts(set(), "site_hosts") if state else set()):
                self.scope.add_host(host)
        # SSRF guard: the seeds' hosts (and every address they resolve to) are exempt.
        guard = self.fetcher.guard
        if guard is not None:
            for host in hosts | {split_host(e.url) for e in entries}:
                guard.allow_host(host)
