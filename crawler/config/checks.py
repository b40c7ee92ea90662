"""The checks of a config section's values: ranges, patterns, header and proxy syntax.

`check_section` runs on every section `crawler.config.load` builds (from TOML or an override) and
raises `ConfigError` naming the file, the section and the key.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import re
import warnings
from importlib.util import find_spec
from typing import Any

from crawler.config.sections import (
    DEFAULT_NEAR_DISTANCE,
    ClusterConfig,
    CrawlConfig,
    DedupConfig,
    ExtractRule,
    FetchConfig,
    FocusConfig,
    HostConfig,
    MetricsConfig,
    ParseConfig,
    PolitenessConfig,
    RenderConfig,
    ScopeConfig,
    SecurityConfig,
    SieveConfig,
    UrlsConfig,
)
from crawler.errors import ConfigError
from crawler.fetch.guard import parse_network
from crawler.fetch.steering import HostMatch, check_ca_file, check_headers, check_proxy
from crawler.frontier.robots import product_token
from crawler.urls.canonical import UrlNormalizer

__all__ = [
    "MAX_SECONDS", "MIN_ERROR_RATE", "RATIO_RANGE", "check_extract", "check_section",
    "extract_rule_problem", "listen_address",
]  # fmt: skip

_CRAWL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_POSITIVE = {
    "concurrency", "per_host_concurrency", "capacity", "growth", "warc_max_size", "max_queued",
    "max_queued_per_host", "robots_attempts", "tabs",
}  # fmt: skip
_AT_MOST = {
    "concurrency": 10_000,  # one task each: a million took 1.5 GB and 30 s before any fetch
    "growth": 16,  # each new Sieve stage that many times the last: 1e12 asked terabytes at once
}
MAX_SECONDS = 86_400.0  # a day: any time setting beyond it is a typo (1e308 waited forever)
_SECONDS = {
    "delay", "max_delay", "robots_ttl", "backoff_base", "backoff_max", "max_retry_after",
    "connect_timeout", "read_timeout", "total_timeout", "min_rate_window", "outage_give_up",
    "checkpoint_interval", "progress_interval", "lease_ttl", "heartbeat", "settle", "timeout",
    "ip_delay", "dns_ttl", "dns_min_ttl", "dns_max_ttl",
}  # fmt: skip
# the Sieve's stage i has error rate P*(1-r)*r^i: a P or r below these makes stages of more than
# ~50 hash positions (and r^i reaches 0.0 after a few stages: no rate at all)
MIN_ERROR_RATE = 1e-12
RATIO_RANGE = (0.1, 0.99)
_NON_NEGATIVE = {
    "max_pages", "max_depth", "delay", "max_delay", "robots_ttl", "backoff_base", "backoff_max",
    "max_retry_after", "retries", "max_redirects", "max_pages_per_host", "memo_size",
    "max_links_per_page", "progress_interval", "checkpoint_interval", "max_url_length",
    "max_path_depth", "max_segment_repeats", "max_query_params", "min_rate", "lease_ttl",
    "max_host_failures", "outage_give_up", "settle", "memory_cap", "ip_delay", "ip_concurrency",
    "dns_ttl", "dns_min_ttl", "dns_max_ttl",
}  # fmt: skip
_POSITIVE_FLOAT = {
    "connect_timeout",
    "read_timeout",
    "total_timeout",
    "max_body",
    "max_header_size",
    "min_rate_window",
    "heartbeat",
    "timeout",
}


def check_section(obj: Any, where: str) -> None:
    """Check the values of one built section (or `[[hosts]]` rule); ConfigError names the key."""
    _check_values(obj, where)
    _check_by_kind(obj, where)


def _check_values(obj: Any, where: str) -> None:
    """Each key's value against the bounds its name has (finite, positive, at most...)."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None:  # an optional key that was not given
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{where} {f.name}: must be a finite number, got {value!r}")
        if f.name in _POSITIVE and value < 1:
            raise ConfigError(f"{where} {f.name}: must be >= 1, got {value!r}")
        if f.name in _AT_MOST and value > _AT_MOST[f.name]:
            raise ConfigError(f"{where} {f.name}: must be <= {_AT_MOST[f.name]:,}, got {value!r}")
        if f.name in _NON_NEGATIVE and value < 0:
            raise ConfigError(f"{where} {f.name}: must be >= 0, got {value!r}")
        if f.name in _POSITIVE_FLOAT and value <= 0:
            raise ConfigError(f"{where} {f.name}: must be > 0, got {value!r}")
        if f.name in _SECONDS and value > MAX_SECONDS:
            raise ConfigError(f"{where} {f.name}: must be <= {MAX_SECONDS:,.0f} seconds "
                              f"(a day), got {value!r}")  # fmt: skip


def _check_by_kind(obj: Any, where: str) -> None:
    """What a section of this kind must hold beyond its keys' bounds."""
    if isinstance(obj, SieveConfig):
        _check_sieve(obj, where)
    if isinstance(obj, DedupConfig) and obj.near_distance != DEFAULT_NEAR_DISTANCE:
        # checked against crawler.content, imported (numpy with it) only for a value set
        from crawler.content.index import MAX_DISTANCE

        if not 0 <= obj.near_distance <= MAX_DISTANCE:
            raise ConfigError(
                f"{where} near_distance: must be in 0..{MAX_DISTANCE}, got {obj.near_distance}"
            )
    if isinstance(obj, PolitenessConfig) and obj.dns_min_ttl > obj.dns_max_ttl:
        raise ConfigError(f"{where} dns_min_ttl: must be <= dns_max_ttl ({obj.dns_max_ttl!r}), "
                          f"got {obj.dns_min_ttl!r}")  # fmt: skip
    if isinstance(obj, CrawlConfig):
        _check_user_agent(obj.user_agent, where)
    if isinstance(obj, FetchConfig | HostConfig):
        _check_steering(obj, where)
    if isinstance(obj, SecurityConfig):
        for network in obj.allow_networks:
            try:
                parse_network(network)
            except ValueError as exc:  # "allow_networks: '10.0.0.1/8' is not a valid network: ..."
                raise ConfigError(f"{where} {exc}") from None
    if isinstance(obj, UrlsConfig):
        try:  # the patterns are compiled by UrlNormalizer: check them now, not at crawl time
            UrlNormalizer(session_params=obj.session_params,
                          tracking_params=obj.tracking_params, memo_size=0)  # fmt: skip
        except ValueError as exc:
            raise ConfigError(f"{where} {exc}") from None
    if isinstance(obj, FocusConfig):
        if any(not word.strip() for word in obj.keywords):
            raise ConfigError(f"{where} keywords: blank keyword in {list(obj.keywords)!r}")
        if not 0 <= obj.threshold <= 1:
            raise ConfigError(f"{where} threshold: must be within 0..1, got {obj.threshold!r}")
    if isinstance(obj, ClusterConfig):
        if not _CRAWL_ID.fullmatch(obj.crawl_id):
            raise ConfigError(f"{where} crawl_id: 1-64 letters, digits, '.', '_' or '-' "
                              f"(not first), got {obj.crawl_id!r}")  # fmt: skip
        if not 0 <= obj.groups <= 1024:
            raise ConfigError(f"{where} groups: 0 (as many as the Redis deployment suits) or "
                              f"1..1024, got {obj.groups!r}")  # fmt: skip
        if obj.redis and not obj.redis.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError(f"{where} redis: a redis://HOST:PORT/DB URL (or rediss://, "
                              "unix://), got one without that scheme")  # fmt: skip
    if isinstance(obj, RenderConfig):
        _check_render(obj, where)
    if isinstance(obj, ParseConfig) and obj.pdf and find_spec("pypdfium2") is None:
        raise ConfigError(f"{where} pdf: reading PDFs needs pypdfium2: "
                          "pip install 'sieve-crawler[pdf]'")  # fmt: skip
    if isinstance(obj, ExtractRule):
        problem = extract_rule_problem(obj)
        if problem is not None:
            raise ConfigError(f"{where} {problem}")
    if isinstance(obj, MetricsConfig) and obj.listen:
        try:
            listen_address(obj.listen)
        except ValueError as exc:
            raise ConfigError(f"{where} listen: {exc}") from None
    if isinstance(obj, ScopeConfig):
        for key in ("include", "exclude"):
            for pattern in getattr(obj, key):
                try:
                    with warnings.catch_warnings():  # "possible nested set": not an error
                        warnings.simplefilter("ignore", FutureWarning)
                        re.compile(pattern)
                except (re.error, OverflowError, RecursionError) as exc:
                    raise ConfigError(f"{where} {key}: bad regex {pattern!r}: {exc}") from None


def _check_sieve(obj: SieveConfig, where: str) -> None:
    """The Sieve's kind and numbers, bounded so that no stage asks for absurd memory or hash
    positions (`capacity` is checked against memory when the filter is made)."""
    if not MIN_ERROR_RATE <= obj.error_rate < 1:
        raise ConfigError(f"{where} error_rate: must be between {MIN_ERROR_RATE:g} and 1, "
                          f"got {obj.error_rate}")  # fmt: skip
    low, high = RATIO_RANGE
    if not low <= obj.ratio <= high:
        raise ConfigError(f"{where} ratio: must be between {low} and {high}, got {obj.ratio}")
    from crawler.sieve.kinds import FILTER_KINDS  # (no numpy: a kind's module loads when made)

    if obj.kind not in FILTER_KINDS:
        known = ", ".join(map(repr, FILTER_KINDS))
        raise ConfigError(f"{where} kind: must be one of {known}, got {obj.kind!r}")
    if obj.confirm not in ("auto", "none", "exact"):
        raise ConfigError(
            f"{where} confirm: must be one of 'auto', 'none', 'exact', got {obj.confirm!r}"
        )


def _check_user_agent(user_agent: str, where: str) -> None:
    """The User-Agent is sent as a header and names us to robots.txt (`product_token`)."""
    if any((c < " " and c != "\t") or c == "\x7f" for c in user_agent):
        raise ConfigError(f"{where} user_agent: contains a control character")
    try:
        product_token(user_agent)
    except ValueError:
        raise ConfigError(
            f"{where} user_agent: must start with the crawler's name, robots.txt is matched "
            f"against it (e.g. 'mybot/1.0 (+https://example.com/bot)'), got {user_agent!r}"
        ) from None


def _check_steering(obj: FetchConfig | HostConfig, where: str) -> None:
    problem = check_headers(obj.headers, everywhere=isinstance(obj, FetchConfig))
    if problem is not None:
        raise ConfigError(f"{where} headers: {problem}")
    if isinstance(obj, FetchConfig):
        problem = check_proxy(obj.proxy)
        if problem is not None:
            raise ConfigError(f"{where} proxy: {problem}")
        problem = check_ca_file(obj.ca_file)
        if problem is not None:
            raise ConfigError(f"{where} ca_file: {problem}")
        for host, address in obj.resolve.items():
            try:  # like curl's --resolve: a name to an address, not to another name or a port
                ipaddress.ip_address(address)
            except ValueError:
                example = "(e.g. '127.0.0.1' or '::1')"
                raise ConfigError(f"{where} resolve: {host!r} maps to {address!r}, which is "
                                  f"not an IP address {example}") from None  # fmt: skip
        return
    try:
        HostMatch(obj.match)
    except ValueError as exc:
        raise ConfigError(f"{where} match: {exc}") from None
    if obj.auth is not None:
        if len(obj.auth) != 2 or ":" in obj.auth[0]:
            raise ConfigError(f"{where} auth: must be [user, password] (no ':' in the user)")
        if any(k.lower() == "authorization" for k in obj.headers):
            raise ConfigError(f"{where} auth: give either auth or an Authorization header")


# resource types a page requests (Playwright's names) that [render] skip_types may name
_RESOURCE_TYPES = frozenset({"document", "stylesheet", "image", "media", "font", "script",
                             "texttrack", "xhr", "fetch", "other"})  # fmt: skip


def _check_render(obj: RenderConfig, where: str) -> None:
    if obj.mode not in ("always", "auto"):
        raise ConfigError(f"{where} mode: must be 'always' or 'auto', got {obj.mode!r}")
    if obj.tabs > 64:
        raise ConfigError(f"{where} tabs: must be <= 64, got {obj.tabs!r}")
    unknown = sorted(set(obj.skip_types) - _RESOURCE_TYPES)
    if unknown:
        known = ", ".join(sorted(_RESOURCE_TYPES))
        raise ConfigError(f"{where} skip_types: unknown {unknown} (known: {known})")


_ATTR = re.compile(r"[^\s\"'>/=\x00-\x1f\x7f]+")  # an HTML attribute's name


def extract_rule_problem(rule: ExtractRule) -> str | None:
    """What is wrong with an ``[[extract]]`` rule ("KEY: why"), or None."""
    from crawler.parse.yields import selector_problem

    if not rule.name.strip():
        return "name: must not be blank"
    problem = selector_problem(rule.css)
    if problem is not None:
        return f"css: {rule.css!r} is {problem}"
    if not _ATTR.fullmatch(rule.attr):
        return (f"attr: must be 'text', 'html' or an attribute's name (e.g. 'href'), "
                f"got {rule.attr!r}")  # fmt: skip
    return None


def check_extract(rules: tuple[ExtractRule, ...]) -> None:
    """Check a config's ``[[extract]]`` rules as loading a file does (a library user may build
    them in Python): ConfigError names the first bad rule."""
    names: set[str] = set()
    for i, rule in enumerate(rules, 1):
        if not isinstance(rule, ExtractRule):
            raise ConfigError(f"extract #{i}: must be an ExtractRule, got {type(rule).__name__}")
        problem = extract_rule_problem(rule)
        if problem is None and rule.name in names:
            problem = f"name: {rule.name!r} is the name of an earlier rule"
        if problem is not None:
            raise ConfigError(f"[[extract]] #{i} ({rule.name!r}) {problem}")
        names.add(rule.name)


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT``, ``:PORT`` or ``PORT`` as (host, port): loopback unless a
    host is named (port 0: any free port). A ValueError says what is wrong."""
    host, sep, port = text.strip().rpartition(":")
    if not sep:
        host, port = "", text.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"an IPv6 address goes in brackets ([::1]:9100), got {text!r}")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"HOST:PORT with a port in 0..65535 (e.g. 127.0.0.1:9100), got {text!r}")
    if any(c.isspace() or c in "/?#@" for c in host):
        raise ValueError(f"not a host name or address: {host!r}")
    return host or "127.0.0.1", int(port)
