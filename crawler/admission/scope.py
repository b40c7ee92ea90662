"""Which canonical URLs a crawl follows, and the crawler-trap guards.

By default the crawl stays on its seeds' hosts (exact host names), and on the host a seed
redirects to when it is of the seed's own site (`follow_site`: ``example.org`` to
``www.example.org``, as Heritrix's seedsRedirectNewSeeds). `allowed_domains` replaces that with
a list of domains, each admitting its subdomains too. Then, in this order: depth, the URL
limits (length, path depth, repeated path segments, query parameters), skipped file extensions,
exclude regexes, include regexes (when any is given, a URL must match one), and the per-host page
limit. `check()` runs on every extracted link, so it works on the canonical string without
parsing it again, and returns a short reason (one of `REASONS`) for a refused URL.

The URL limits are the crawler-trap guards: pages that link to ever longer URLs of themselves
(relative-link loops like ``a/b/a/b/...``, session ids appended forever, calendars with filters)
never end on their own. Each limit is 0 to switch it off.
"""

from __future__ import annotations

import logging
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from crawler.urls.host import split_host
from crawler.urls.suffixes import registrable_domain

__all__ = [
    "DEFAULT_MAX_PATH_DEPTH",
    "DEFAULT_MAX_QUERY_PARAMS",
    "DEFAULT_MAX_SEGMENT_REPEATS",
    "DEFAULT_MAX_URL_LENGTH",
    "REASONS",
    "Scope",
    "UrlTraps",
]

DEFAULT_MAX_URL_LENGTH: Final = 2048
"""Longest canonical URL followed, in characters (browsers and Heritrix use about 2k)."""
DEFAULT_MAX_PATH_DEPTH: Final = 32
"""Most ``/`` in a URL's path: ``/a/b/c`` and ``/a/b/`` both have 3."""
DEFAULT_MAX_SEGMENT_REPEATS: Final = 2
"""Most times one non-empty path segment may occur (Heritrix's PathologicalPath rule, but the
repeats need not be consecutive, which also catches ``/a/b/a/b/a/`` relative-link loops)."""
DEFAULT_MAX_QUERY_PARAMS: Final = 32
"""Most ``&``-separated pairs in a URL's query."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class UrlTraps:
    """The limits that catch crawler traps (``[scope]``, 0 = no limit): a canonical URL's
    length, its path's depth, one segment's repeats, its query's parameters."""

    max_url_length: int = DEFAULT_MAX_URL_LENGTH
    max_path_depth: int = DEFAULT_MAX_PATH_DEPTH
    max_segment_repeats: int = DEFAULT_MAX_SEGMENT_REPEATS
    max_query_params: int = DEFAULT_MAX_QUERY_PARAMS


VERDICT_CACHE: Final = 20_000
"""Keys whose verdict is cached (two generations; about 3 MB)."""

REASONS: Final = (
    "domain",
    "depth",
    "url_length",
    "query_params",
    "path_depth",
    "repeated_segment",
    "extension",
    "exclude",
    "include",
    "host_limit",
)
"""Every reason `Scope.check` can return, in the order the checks run."""


def _limit(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0 (0 = no limit), got {value!r}")
    return value


def _most_repeated(segments: list[str]) -> int:
    """How often the most frequent non-empty segment occurs."""
    counts = Counter(segments)
    del counts[""]
    return max(counts.values(), default=0)


class Scope:
    """The crawl's scope. Limits given as 0 are off.

    `max_depth`: links found deeper than this are refused ("depth"). `max_pages_per_host`: URLs
    admitted per host ("host_limit"). Trap guards, on by default: `max_url_length` characters in
    the canonical URL ("url_length"); `max_path_depth` slashes in its path ("path_depth");
    `max_segment_repeats` occurrences of any one non-empty path segment ("repeated_segment");
    `max_query_params` pairs in its query ("query_params").
    """

    __slots__ = (
        "_domains",
        "_exclude",
        "_hosts",
        "_hot",
        "_include",
        "_max_path_depth",
        "_max_query_params",
        "_max_segment_repeats",
        "_max_url_length",
        "_old",
        "_per_host",
        "_skip",
        "_trap_min",
        "max_depth",
        "max_pages_per_host",
    )

    def __init__(
        self,
        *,
        hosts: Iterable[str] = (),
        allowed_domains: Iterable[str] = (),
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        skip_extensions: Iterable[str] = (),
        max_depth: int = 0,
        max_pages_per_host: int = 0,
        traps: UrlTraps = UrlTraps(),
        read_pdf: bool = False,
    ) -> None:
        """`read_pdf`: PDFs are read (`[parse] pdf`), so "pdf" is never a skipped extension."""
        max_path_depth, max_segment_repeats = traps.max_path_depth, traps.max_segment_repeats
        self._hosts: set[str] = {h.lower() for h in hosts}
        self._domains = tuple(d.lower().strip(".") for d in allowed_domains if d.strip("."))
        self._include = [re.compile(p) for p in include]
        self._exclude = [re.compile(p) for p in exclude]
        self._skip = frozenset(e.lower().lstrip(".") for e in skip_extensions) - (
            {"pdf"} if read_pdf else set()
        )
        self.max_depth = _limit("max_depth", max_depth)
        self.max_pages_per_host = _limit("max_pages_per_host", max_pages_per_host)
        self._max_url_length = _limit("max_url_length", traps.max_url_length)
        self._max_path_depth = _limit("max_path_depth", max_path_depth)
        self._max_segment_repeats = _limit("max_segment_repeats", max_segment_repeats)
        self._max_query_params = _limit("max_query_params", traps.max_query_params)
        # The shortest path that can spring a path trap: max_path_depth + 1 slashes, or
        # "/a" repeated max_segment_repeats + 1 times.
        shortest = []
        if max_path_depth:
            shortest.append(max_path_depth + 1)
        if max_segment_repeats:
            shortest.append(2 * max_segment_repeats + 2)
        self._trap_min = min(shortest, default=sys.maxsize)
        self._per_host: Counter[str] = Counter()
        self._hot: dict[str, tuple[str | None, str]] = {}
        self._old: dict[str, tuple[str | None, str]] = {}

    @property
    def max_url_length(self) -> int:
        return self._max_url_length

    @property
    def max_path_depth(self) -> int:
        return self._max_path_depth

    @property
    def max_segment_repeats(self) -> int:
        return self._max_segment_repeats

    @property
    def max_query_params(self) -> int:
        return self._max_query_params

    def add_host(self, host: str) -> None:
        """Admit a seed's host (used only when no `allowed_domains` are configured)."""
        self._hosts.add(host.lower())
        self._hot, self._old = {}, {}  # "domain" verdicts may have changed

    def follow_site(self, from_key: str, to_key: str) -> str | None:
        """Admit the host of `to_key` if the scope is the seeds' hosts and it is another host
        of `from_key`'s site (the same registrable domain, by the Public Suffix List: not for IP
        addresses, not across ``*.github.io``): the host admitted, else None."""
        if self._domains:
            return None
        host = split_host(to_key)
        site = registrable_domain(host)
        if site is None or site != registrable_domain(split_host(from_key)):
            return None
        self.add_host(host)
        log.info("%s: a seed redirects there, within its site: in the crawl's scope now", host)
        return host

    def host_allowed(self, host: str) -> bool:
        if self._domains:
            return any(host == d or host.endswith("." + d) for d in self._domains)
        return host in self._hosts

    def check(self, key: str, depth: int) -> str | None:
        """None when canonical URL `key` found at `depth` is in scope, else the reason (one of
        `REASONS`) it is not."""
        verdict = self._hot.get(key)
        if verdict is None:
            verdict = self._old.get(key) or self._classify(key)
            self._hot[key] = verdict
            if len(self._hot) >= VERDICT_CACHE // 2:  # two generations, bounded
                self._old, self._hot = self._hot, {}
        reason, host = verdict
        if reason == "domain":
            return reason
        if self.max_depth and depth > self.max_depth:
            return "depth"
        if reason is not None:
            return reason
        if self.max_pages_per_host and self._per_host[host] >= self.max_pages_per_host:
            return "host_limit"
        return None

    def only_depth(self, key: str, *, sitemap: bool = False) -> bool:
        """Whether `key`, which `check` refused for its depth, passes the other checks (but the
        per-host count; a `sitemap`'s extension too): a larger `max_depth` would admit it
        (`crawler.state.limits` keeps it)."""
        reason = (self._hot.get(key) or self._old.get(key) or self._classify(key))[0]
        return reason is None or (sitemap and reason == "extension")

    def _classify(self, key: str) -> tuple[str | None, str]:
        """(the first reason that does not depend on depth or counts, or None; the host). A
        link's verdict is cached: navigation links repeat on every page of a site."""

        start = key.find("//") + 2
        slash = key.find("/", start)
        authority = key[start:] if slash < 0 else key[start:slash]
        if authority.startswith("["):
            host = authority[: authority.find("]") + 1]
        else:
            colon = authority.rfind(":")
            host = authority if colon < 0 else authority[:colon]
        if not self.host_allowed(host):
            return "domain", host
        if self._max_url_length and len(key) > self._max_url_length:
            return "url_length", host
        if slash < 0:
            slash = end = len(key)
        else:
            end = key.find("?", slash)
            if end < 0:
                end = len(key)
            elif (
                self._max_query_params
                and len(key) - end > self._max_query_params  # room for that many pairs
                and key.count("&", end) >= self._max_query_params
            ):
                return "query_params", host
        if end - slash >= self._trap_min:  # a shorter path cannot spring a path trap
            segments = key[slash + 1 : end].split("/")  # as many as the path has slashes
            if self._max_path_depth and len(segments) > self._max_path_depth:
                return "path_depth", host
            repeats = self._max_segment_repeats
            # A segment occurring more than `repeats` times makes at least `repeats` duplicates.
            if (
                repeats
                and len(segments) - len(set(segments)) >= repeats
                and _most_repeated(segments) > repeats
            ):
                return "repeated_segment", host
        if self._skip:
            dot = key.rfind(".", slash, end)
            if dot > key.rfind("/", slash, end) and key[dot + 1 : end].lower() in self._skip:
                return "extension", host
        if self._exclude and any(p.search(key) for p in self._exclude):
            return "exclude", host
        if self._include and not any(p.search(key) for p in self._include):
            return "include", host
        return None, host

    def host_room(self, key: str, planned: int = 0) -> bool:
        """Whether `key`'s host may have one more URL admitted (`max_pages_per_host`), with
        `planned` more of its URLs about to be: a page's links pass `check` together, before
        any of them is admitted, so each is asked again as it is admitted."""
        limit = self.max_pages_per_host
        return not limit or self._per_host[split_host(key)] + planned < limit

    def admitted(self, key: str) -> None:
        """Count one URL admitted to the frontier against its host's page limit."""
        if self.max_pages_per_host:
            self._per_host[split_host(key)] += 1

    def __repr__(self) -> str:
        where = (
            f"domains={list(self._domains)}" if self._domains else f"hosts={sorted(self._hosts)}"
        )
        return (
            f"<Scope {where} max_depth={self.max_depth} include={len(self._include)} "
            f"exclude={len(self._exclude)} max_url_length={self._max_url_length} "
            f"max_path_depth={self._max_path_depth} "
            f"max_segment_repeats={self._max_segment_repeats} "
            f"max_query_params={self._max_query_params}>"
        )
