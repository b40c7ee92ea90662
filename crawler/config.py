"""Typed, frozen configuration, loaded from TOML.

`config.toml` at the repository root documents every setting with its default; the defaults here
are the same values (a test keeps the two in step). Unknown sections or keys and values of the
wrong type are `ConfigError`s that name the file and the key.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawler.errors import ConfigError
from crawler.guard import parse_network
from crawler.steering import HostMatch, check_headers, check_proxy
from crawler.urls import UrlNormalizer

__all__ = [
    "ClusterConfig",
    "Config",
    "CrawlConfig",
    "DedupConfig",
    "FetchConfig",
    "FocusConfig",
    "HostConfig",
    "OutputConfig",
    "PolitenessConfig",
    "ScopeConfig",
    "SecurityConfig",
    "SieveConfig",
    "StateConfig",
    "UrlsConfig",
    "load_config",
]

DEFAULT_USER_AGENT = "sieve-crawler/0.1 (+https://example.invalid/contact)"

DEFAULT_SKIP_EXTENSIONS = (
    # images
    "png", "jpg", "jpeg", "gif", "webp", "svg", "ico", "bmp", "tif", "tiff", "avif",
    # archives and binaries
    "zip", "gz", "tgz", "bz2", "xz", "7z", "rar", "tar", "exe", "msi", "dmg", "iso", "bin", "deb",
    "rpm", "apk", "jar",
    # media
    "mp3", "mp4", "m4a", "m4v", "avi", "mov", "mkv", "webm", "wav", "flac", "ogg", "wmv",
    # documents and assets that carry no links we follow
    "pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "woff", "woff2", "ttf", "otf", "eot",
    "css", "js",
)  # fmt: skip

DEFAULT_SESSION_PARAMS = (
    "jsessionid", "phpsessid", "sid", "sessionid", "session_id", "aspsessionid*", "cfid",
    "cftoken",
)  # fmt: skip
DEFAULT_TRACKING_PARAMS = ("utm_*", "gclid", "fbclid", "msclkid")


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    concurrency: int = 16
    max_pages: int = 0
    max_depth: int = 16
    user_agent: str = DEFAULT_USER_AGENT
    max_queued: int = 1_000_000
    max_queued_per_host: int = 100_000


@dataclass(frozen=True, slots=True)
class PolitenessConfig:
    delay: float = 1.0
    per_host_concurrency: int = 1
    max_delay: float = 30.0
    adaptive: bool = False
    respect_robots: bool = True
    robots_ttl: float = 86400.0
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    max_retry_after: float = 600.0
    max_host_failures: int = 10


@dataclass(frozen=True, slots=True)
class FetchConfig:
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 60.0
    max_body: int = 10 * 1024 * 1024
    max_header_size: int = 16 * 1024
    min_rate: float = 1000.0
    min_rate_window: float = 20.0
    retries: int = 2
    max_redirects: int = 5
    resolve: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    cookies: bool = False
    proxy: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class HostConfig:
    """One ``[[hosts]]`` rule (crawler.steering matches it; the first matching rule wins)."""

    match: str
    delay: float | None = None
    per_host_concurrency: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    auth: tuple[str, ...] | None = None

    def __repr__(self) -> str:  # header values and the password are secret
        auth = "" if self.auth is None else f" auth={self.auth[0]!r}:[redacted]"
        return (
            f"HostConfig(match={self.match!r}, delay={self.delay!r}, "
            f"per_host_concurrency={self.per_host_concurrency!r}, "
            f"headers={sorted(self.headers)!r}{auth})"
        )


@dataclass(frozen=True, slots=True)
class ScopeConfig:
    allowed_domains: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_pages_per_host: int = 0
    skip_extensions: tuple[str, ...] = DEFAULT_SKIP_EXTENSIONS
    follow_nofollow: bool = False
    use_sitemaps: bool = False
    max_links_per_page: int = 10_000
    max_url_length: int = 2048
    max_path_depth: int = 32
    max_segment_repeats: int = 2
    max_query_params: int = 32


@dataclass(frozen=True, slots=True)
class SieveConfig:
    capacity: int = 1_000_000
    error_rate: float = 1e-4
    ratio: float = 0.85
    growth: int = 2
    confirm: str = "auto"


@dataclass(frozen=True, slots=True)
class UrlsConfig:
    session_params: tuple[str, ...] = DEFAULT_SESSION_PARAMS
    tracking_params: tuple[str, ...] = DEFAULT_TRACKING_PARAMS
    sort_query: bool = True
    strip_www: bool = False
    fetch_canonical: bool = False
    memo_size: int = 100_000


@dataclass(frozen=True, slots=True)
class StateConfig:
    dir: str = ""
    checkpoint_interval: float = 30.0


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    ssrf_guard: bool = True
    allow_networks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OutputConfig:
    path: str = "-"
    stats: str = ""
    warc: str = ""
    warc_max_size: int = 1024**3
    progress_interval: float = 10.0


_NEAR_DISTANCE = 3  # within crawler.content's MAX_DISTANCE (a test checks)


@dataclass(frozen=True, slots=True)
class DedupConfig:
    enabled: bool = False  # off by default: ~40-60% more CPU per page (README "Content dedup")
    near_distance: int = _NEAR_DISTANCE
    follow_duplicates: bool = True


@dataclass(frozen=True, slots=True)
class FocusConfig:
    keywords: tuple[str, ...] = ()
    threshold: float = 0.5  # crawler.relevance.DEFAULT_THRESHOLD


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    redis: str = field(default="", repr=False)  # may hold a password
    crawl_id: str = "default"
    lease_ttl: float = 0.0  # 0: crawler.cluster.node.LEASE_TTL (30 s)
    heartbeat: float = 5.0


_CRAWL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True)
class Config:
    crawl: CrawlConfig = field(default_factory=CrawlConfig)
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    fetch: FetchConfig = field(default_factory=FetchConfig)
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    sieve: SieveConfig = field(default_factory=SieveConfig)
    urls: UrlsConfig = field(default_factory=UrlsConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    state: StateConfig = field(default_factory=StateConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    hosts: tuple[HostConfig, ...] = ()
    focus: FocusConfig = field(default_factory=FocusConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)

    def override(self, section: str, **values: Any) -> Config:
        """A copy with some keys of one section replaced (used for CLI flags); validated."""
        current = getattr(self, section)
        checked = _build(type(current), {**_as_table(current), **values}, f"override [{section}]")
        return dataclasses.replace(self, **{section: checked})


def load_config(path: str | Path | None = None) -> Config:
    """Load a TOML config file; `None` gives the defaults. Raises ConfigError on any problem."""
    if path is None:
        return Config()
    where = str(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read config: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    return config_from_mapping(data, where)


def config_from_mapping(data: Mapping[str, Any], where: str = "<config>") -> Config:
    """Build a Config from parsed TOML, checking every section, key and type."""
    sections = {f.name: f for f in dataclasses.fields(Config)}
    built: dict[str, Any] = {}
    for name, table in data.items():
        if name == "hosts":
            built[name] = _build_hosts(table, where)
            continue
        if name not in sections:
            if not isinstance(table, Mapping | list):
                raise ConfigError(_stray_key(name, where))
            known = ", ".join(sorted(sections))
            raise ConfigError(f"{where}: unknown section [{name}] (known: {known})")
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: [{name}] must be a table")
        cls = _field_types(Config)[name]
        built[name] = _build(cls, table, f"{where}: [{name}]")
    return Config(**built)


def _build_hosts(rules: Any, where: str) -> tuple[HostConfig, ...]:
    """The ``[[hosts]]`` array of tables, each rule checked like a section."""
    if not isinstance(rules, list) or not all(isinstance(r, Mapping) for r in rules):
        raise ConfigError(f"{where}: hosts must be an array of tables ([[hosts]])")
    out = []
    for i, table in enumerate(rules, 1):
        here = f"{where}: [[hosts]] #{i}"
        if "match" not in table:
            raise ConfigError(f"{here}: missing key 'match' (a host glob, e.g. '*.example.org')")
        out.append(_build(HostConfig, table, here))
    return tuple(out)


def _stray_key(name: str, where: str) -> str:
    """The error for a key written above every section header (a `key = value` at top level)."""
    homes = [f"[{section}]" for section, hint in _field_types(Config).items()
             if isinstance(hint, type) and dataclasses.is_dataclass(hint)
             and name in _field_types(hint)]  # fmt: skip
    if homes:
        return (f"{where}: top-level key {name!r} must be inside a section, "
                f"e.g. {' or '.join(homes)}")  # fmt: skip
    sections = [f"[[{f.name}]]" if f.name == "hosts" else f"[{f.name}]"
                for f in dataclasses.fields(Config)]  # fmt: skip
    return (f"{where}: top-level key {name!r} is not a setting; settings go inside a section "
            f"({', '.join(sections)})")  # fmt: skip


def _as_table(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(cls: type[Any], table: Mapping[str, Any], where: str) -> Any:
    types_ = _field_types(cls)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in types_:
            known = ", ".join(sorted(types_))
            raise ConfigError(f"{where}: unknown key {key!r} (known: {known})")
        values[key] = _coerce(value, types_[key], f"{where} {key}")
    obj = cls(**values)
    _check_ranges(obj, where)
    return obj


_SECRET_KEYS = frozenset({"headers", "auth", "proxy"})


def _coerce(value: Any, hint: Any, where: str) -> Any:
    try:
        return _coerce_value(value, hint, where)
    except ConfigError as exc:
        if where.rsplit(" ", 1)[-1] not in _SECRET_KEYS:
            raise
        # never echo a value that may hold a credential
        message = str(exc).split(", got ", 1)[0]
        raise ConfigError(f"{message}, got {type(value).__name__}") from None


def _coerce_value(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif origin is tuple:
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    elif origin is dict:
        if isinstance(value, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            return dict(value)
        raise ConfigError(f"{where}: expected a table of strings, got {value!r}")
    elif isinstance(hint, types.UnionType):  # `X | None`: TOML has no null, so a given value is X
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _coerce_value(value, inner, where)
    name = getattr(hint, "__name__", str(hint))
    raise ConfigError(f"{where}: expected {name}, got {type(value).__name__} {value!r}")


_POSITIVE = {
    "concurrency", "per_host_concurrency", "capacity", "growth", "warc_max_size", "max_queued",
    "max_queued_per_host",
}  # fmt: skip
_NON_NEGATIVE = {
    "max_pages", "max_depth", "delay", "max_delay", "robots_ttl", "backoff_base", "backoff_max",
    "max_retry_after", "retries", "max_redirects", "max_pages_per_host", "memo_size",
    "max_links_per_page", "progress_interval", "checkpoint_interval", "max_url_length",
    "max_path_depth", "max_segment_repeats", "max_query_params", "min_rate", "lease_ttl",
    "max_host_failures",
}  # fmt: skip
_POSITIVE_FLOAT = {
    "connect_timeout",
    "read_timeout",
    "total_timeout",
    "max_body",
    "max_header_size",
    "min_rate_window",
    "heartbeat",
}


def _check_ranges(obj: Any, where: str) -> None:
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None:  # an optional key that was not given
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{where} {f.name}: must be a finite number, got {value!r}")
        if f.name in _POSITIVE and value < 1:
            raise ConfigError(f"{where} {f.name}: must be >= 1, got {value!r}")
        if f.name in _NON_NEGATIVE and value < 0:
            raise ConfigError(f"{where} {f.name}: must be >= 0, got {value!r}")
        if f.name in _POSITIVE_FLOAT and value <= 0:
            raise ConfigError(f"{where} {f.name}: must be > 0, got {value!r}")
    if isinstance(obj, SieveConfig):
        if not 0 < obj.error_rate < 1:
            raise ConfigError(f"{where} error_rate: must be between 0 and 1, got {obj.error_rate}")
        if not 0 < obj.ratio < 1:
            raise ConfigError(f"{where} ratio: must be between 0 and 1, got {obj.ratio}")
        if obj.confirm not in ("auto", "none", "exact"):
            raise ConfigError(
                f"{where} confirm: must be one of 'auto', 'none', 'exact', got {obj.confirm!r}"
            )
    if isinstance(obj, DedupConfig) and obj.near_distance != _NEAR_DISTANCE:
        # checked against crawler.content, imported (numpy with it) only for a value set
        from crawler.content.index import MAX_DISTANCE

        if not 0 <= obj.near_distance <= MAX_DISTANCE:
            raise ConfigError(
                f"{where} near_distance: must be in 0..{MAX_DISTANCE}, got {obj.near_distance}"
            )
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
        if obj.redis and not obj.redis.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError(f"{where} redis: a redis://HOST:PORT/DB URL (or rediss://, "
                              "unix://), got one without that scheme")  # fmt: skip
    if isinstance(obj, ScopeConfig):
        for key in ("include", "exclude"):
            for pattern in getattr(obj, key):
                try:
                    re.compile(pattern)
                except (re.error, OverflowError, RecursionError) as exc:
                    raise ConfigError(f"{where} {key}: bad regex {pattern!r}: {exc}") from None


def _check_steering(obj: FetchConfig | HostConfig, where: str) -> None:
    problem = check_headers(obj.headers)
    if problem is not None:
        raise ConfigError(f"{where} headers: {problem}")
    if isinstance(obj, FetchConfig):
        problem = check_proxy(obj.proxy)
        if problem is not None:
            raise ConfigError(f"{where} proxy: {problem}")
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
