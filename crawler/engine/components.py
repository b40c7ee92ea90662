"""Build the crawl's components from the typed config (config flows one way: into here).

Each component takes a few frozen settings objects of its own folder (`crawler.frontier.settings`,
`crawler.fetch.settings`, ...), which the config sections build (`PolitenessConfig.politeness()`,
...), and its collaborators; only this module knows which component gets which.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from crawler.admission.scope import Scope, UrlTraps
from crawler.config.load import Config
from crawler.config.sections import same_names
from crawler.errors import ConfigError
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.guard import AddressGuard
from crawler.fetch.outage import Outage
from crawler.fetch.steering import HostRules
from crawler.focus.scoring import Scorer
from crawler.frontier import Frontier, HostRule
from crawler.frontier.addresses import Names
from crawler.sieve import SeenFilter, make_filter
from crawler.urls.canonical import UrlNormalizer

__all__ = [
    "cluster_settings",
    "make_fetcher",
    "make_frontier",
    "make_guard",
    "make_scope",
    "make_scorer",
    "make_sieve",
    "make_urls",
    "settings",
    "warn_unused_outputs",
]

logger = logging.getLogger(__name__)


def make_sieve(config: Config) -> SeenFilter:
    """The URL-seen filter of `[sieve]` (`kind`: the scalable Sieve by default, or another of the
    family, `crawler.sieve.kinds`); a ConfigError when it does not fit in memory (a `capacity`
    of 10^12 is terabytes: a typo, not a crawl). `ratio` and `growth` are the scalable Sieve's;
    the other growing kinds keep the family's (r = 0.5, growth 2)."""
    s = config.sieve
    options = {"ratio": s.ratio, "growth": s.growth} if s.kind == "scalable" else {}
    try:
        return make_filter(s.kind, capacity=s.capacity, error_rate=s.error_rate, **options)
    except (MemoryError, OverflowError):  # OverflowError: more bits than an index can count
        raise ConfigError(
            f"[sieve] capacity = {s.capacity:,} (error_rate {s.error_rate:g}): the {s.kind} "
            "filter does not fit in memory; lower capacity"
            + (" (it grows as the crawl needs)" if s.kind not in ("bloom", "stable") else "")
        ) from None
    except ValueError as exc:  # what the kind's constructor refused
        raise ConfigError(f"[sieve] {exc}") from None


def make_urls(config: Config) -> UrlNormalizer:
    u = config.urls
    return UrlNormalizer(
        session_params=u.session_params,
        tracking_params=u.tracking_params,
        sort_query=u.sort_query,
        strip_www=u.strip_www,
        memo_size=u.memo_size,
    )


def make_fetcher(config: Config) -> Fetcher:
    f = config.fetch
    return Fetcher(
        f.transport(config.crawl.user_agent),
        f.timeouts(),
        f.limits(connections=max(100, config.crawl.concurrency * 2)),
        guard=make_guard(config),
        rules=HostRules(config.hosts),
        outage=Outage(f.outage_give_up),
        dns=config.politeness.dns(),
    )


def make_guard(config: Config) -> AddressGuard:
    """The SSRF guard (always built; `ssrf_guard = false` turns it off, exemptions kept)."""
    s = config.security
    return AddressGuard(s.allow_networks, enabled=s.ssrf_guard)


def make_frontier(
    config: Config,
    clock: Callable[[], float] | None = None,
    host_rule: Callable[[str], HostRule | None] | None = None,
    names: Names | None = None,
) -> Frontier:
    """The frontier; `host_rule` gives a host key's politeness overrides (None: the globals);
    `names` resolves hosts for the budget by address (the fetcher's `addresses`; unused when
    `[politeness]` sets neither ip_delay nor ip_concurrency)."""
    return Frontier(
        config.politeness.politeness(),
        config.crawl.queue_limits(),
        clock=clock,
        host_rule=host_rule,
        names=names if config.politeness.by_address else None,
    )


def make_scope(config: Config) -> Scope:
    """The crawl's scope. In a crawl shared through Redis, `max_pages_per_host` is counted
    there, over every process (`crawler.cluster.ClusterNode.admit`): not by this scope."""
    sc, c = config.scope, config.crawl
    return Scope(
        allowed_domains=sc.allowed_domains,
        include=sc.include,
        exclude=sc.exclude,
        skip_extensions=sc.skip_extensions,
        max_depth=c.max_depth,
        max_pages_per_host=0 if config.cluster.redis else sc.max_pages_per_host,
        traps=UrlTraps(**same_names(sc, UrlTraps)),
        read_pdf=config.parse.pdf,
    )


def make_scorer(config: Config) -> Scorer | None:
    """The topic scorer of a focused crawl (`[focus] keywords`), None without keywords."""
    f = config.focus
    if not f.keywords:
        return None
    from crawler.focus.relevance import TopicScorer  # only a focused crawl needs it

    try:
        return TopicScorer(f.keywords, threshold=f.threshold)
    except ValueError as exc:  # keywords without a word
        raise ConfigError(f"[focus] {exc}") from None


_FREE_TO_CHANGE = frozenset({"urls.memo_size", "sieve.confirm"})


def settings(config: Config, *, scored: bool = False) -> dict[str, object]:
    """The settings a resumed crawl must share with the crawl it resumes: what decides which
    URLs are admitted and how they are keyed (scope, URL rules, Sieve), and its limits (depth
    and pages), which a state records apart: they may change across a resume
    (`crawler.state.limits`; the processes of a shared crawl agree on them too). A focused crawl's
    max_pages is a fetch budget: left out, so its absence tells a state the crawl is focused. A
    crawl is focused with `[focus] keywords` or with a score function (``Crawler(config,
    score=fn)``, which the config does not show: pass ``scored=True``)."""
    out: dict[str, object] = {}
    for section in ("scope", "urls", "sieve"):
        table = getattr(config, section)
        for name in table.__dataclass_fields__:
            if f"{section}.{name}" in _FREE_TO_CHANGE:
                continue
            value = getattr(table, name)
            out[f"{section}.{name}"] = list(value) if isinstance(value, tuple) else value
    out["crawl.max_depth"] = config.crawl.max_depth
    if not (scored or config.focus.keywords):
        out["crawl.max_pages"] = config.crawl.max_pages
    return out


def cluster_settings(config: Config) -> dict[str, object]:
    """What else the processes of a shared crawl must agree on, when it is on: content dedup
    (one content index: `crawler.content.redis`) and the adaptive delay (one delay per host,
    which a process without it would reset). Nothing when they are off, so a crawl without them
    is joined by processes without them only."""
    out: dict[str, object] = {}
    if config.politeness.adaptive:
        out["politeness.adaptive"] = True
    if config.dedup.enabled:
        from crawler.content.fingerprint import VERSION  # numpy: only with dedup on

        d = config.dedup
        out.update({"dedup.enabled": True, "dedup.near_distance": d.near_distance,
                    "dedup.follow_duplicates": d.follow_duplicates,
                    "dedup.fingerprint": VERSION})  # fmt: skip
    return out


def warn_unused_outputs(config: Config, *, state: bool, recorder: bool) -> None:
    """The `crawl` command opens the state directory and the WARC file the config names and
    hands them to the Crawler; a program that builds a Crawler from the same config gets
    neither unless it does the same (`state`, `recorder`: whether it did): say so rather than
    keep nothing silently. So for `use_sitemaps` without robots.txt, which holds the sitemaps."""
    if config.state.dir and not state:
        logger.warning(
            "[state] dir = %r is not used: a Crawler keeps a state only when given one "
            "(Crawler(config, state=CrawlState.open(dir, settings(config))))", config.state.dir,
        )  # fmt: skip
    if config.output.warc and not recorder:
        logger.warning(
            "[output] warc = %r is not used: a Crawler writes WARC only through a recorder "
            "(Crawler(config, recorder=WarcOutput(path).write))", config.output.warc,
        )  # fmt: skip
    if config.scope.use_sitemaps and not config.politeness.respect_robots:
        logger.warning(
            "[scope] use_sitemaps = true reads nothing: the Sitemap: lines are read from "
            "robots.txt, which [politeness] respect_robots = false does not fetch"
        )
