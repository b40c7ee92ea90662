"""The config's sections: one frozen dataclass per TOML table, each field with its default.

`crawler.config.load.Config` holds one of each (and the `[[hosts]]` rules); `config.toml` at the
repository root documents every field with the same default (a test keeps the two in step).
The values are checked by `crawler.config.checks` when a config is loaded or overridden.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # built on demand: loading a config imports none of the crawl
    from crawler.fetch.resolver import DnsTtl
    from crawler.fetch.settings import FetchLimits, Timeouts, Transport
    from crawler.frontier.settings import Politeness, QueueLimits
    from crawler.render.page import PageOptions
    from crawler.render.settings import BrowserSettings

__all__ = [
    "DEFAULT_NEAR_DISTANCE",
    "DEFAULT_SKIP_EXTENSIONS",
    "DEFAULT_USER_AGENT",
    "ClusterConfig",
    "CrawlConfig",
    "DedupConfig",
    "ExtractRule",
    "FetchConfig",
    "FocusConfig",
    "HostConfig",
    "MetricsConfig",
    "OutputConfig",
    "ParseConfig",
    "PolitenessConfig",
    "RenderConfig",
    "ScopeConfig",
    "SecurityConfig",
    "SieveConfig",
    "StateConfig",
    "UrlsConfig",
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


def same_names(section: object, target: type[Any], *given: str) -> dict[str, Any]:
    """The fields of `section` that `target` (a component's settings object) has by the same
    name, but those `given` apart: a key added to both is passed on with no other edit."""
    return {f.name: getattr(section, f.name) for f in fields(target) if f.name not in given}


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    concurrency: int = 16
    max_pages: int = 0
    max_depth: int = 16
    user_agent: str = DEFAULT_USER_AGENT
    max_queued: int = 1_000_000
    max_queued_per_host: int = 100_000

    def queue_limits(self) -> QueueLimits:
        """The frontier's queue limits (`crawler.frontier.settings.QueueLimits`)."""
        from crawler.frontier.settings import QueueLimits

        return QueueLimits(**same_names(self, QueueLimits))


@dataclass(frozen=True, slots=True)
class PolitenessConfig:
    delay: float = 1.0
    per_host_concurrency: int = 1
    max_delay: float = 30.0
    adaptive: bool = False
    respect_robots: bool = True
    robots_ttl: float = 86400.0
    robots_attempts: int = 6
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    max_retry_after: float = 600.0
    max_host_failures: int = 10
    ip_delay: float = 0.25
    ip_concurrency: int = 4
    dns_ttl: float = 300.0
    dns_min_ttl: float = 30.0
    dns_max_ttl: float = 3600.0

    def politeness(self) -> Politeness:
        """The frontiers' politeness (`crawler.frontier.settings.Politeness`: same names)."""
        from crawler.frontier.settings import Politeness

        return Politeness(**same_names(self, Politeness))

    def dns(self) -> DnsTtl:
        """How long the fetcher's resolver keeps an answer (`crawler.fetch.resolver.DnsTtl`)."""
        from crawler.fetch.resolver import DnsTtl

        return DnsTtl(self.dns_ttl, self.dns_min_ttl, self.dns_max_ttl)

    @property
    def by_address(self) -> bool:
        """Whether hosts share their address's budget (an ip_delay or an ip_concurrency)."""
        return self.ip_delay > 0 or self.ip_concurrency > 0


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
    tls_verify: bool = True
    ca_file: str = ""
    outage_give_up: float = 300.0

    def timeouts(self) -> Timeouts:
        """The fetcher's timeouts and minimum rate (`crawler.fetch.settings.Timeouts`)."""
        from crawler.fetch.settings import Timeouts

        return Timeouts(**same_names(self, Timeouts))

    def limits(self, connections: int) -> FetchLimits:
        """The fetcher's size limits, and `connections` open at once."""
        from crawler.fetch.settings import FetchLimits

        return FetchLimits(self.max_body, self.max_header_size, connections)

    def transport(self, user_agent: str) -> Transport:
        """How the fetcher's requests go out (`crawler.fetch.settings.Transport`)."""
        from crawler.fetch.settings import Transport

        return Transport(user_agent, **same_names(self, Transport, "user_agent"))


@dataclass(frozen=True, slots=True, repr=False)
class HostConfig:
    """One ``[[hosts]]`` rule (crawler.fetch.steering matches it; the first matching rule wins)."""

    match: str
    delay: float | None = None
    per_host_concurrency: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    auth: tuple[str, ...] | None = None
    tls_verify: bool | None = None
    render: bool | None = None  # render these hosts' pages (true) or never (false): [render]

    def __repr__(self) -> str:  # header values and the password are secret
        auth = "" if self.auth is None else f" auth={self.auth[0]!r}:[redacted]"
        tls = "" if self.tls_verify is None else f" tls_verify={self.tls_verify!r}"
        tls += "" if self.render is None else f" render={self.render!r}"
        return (
            f"HostConfig(match={self.match!r}, delay={self.delay!r}, "
            f"per_host_concurrency={self.per_host_concurrency!r}, "
            f"headers={sorted(self.headers)!r}{auth}{tls})"
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
    kind: str = "scalable"
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
    text: bool = False  # each HTML result's main content as plain text (crawler.parse.extract)
    markdown: bool = False  # ... and as markdown
    meta: bool = False  # each HTML result's metadata (crawler.parse.yields.meta)
    report: str = ""  # an HTML report of the crawl, written at its end (crawler.observe)


@dataclass(frozen=True, slots=True)
class ExtractRule:
    """One ``[[extract]]`` rule: the field `name` of each HTML result, the elements matching the
    CSS selector `css`, and what is taken of them (`attr`: "text", "html" or an attribute's
    name); `all`: every match, as a list, else the first (crawler.parse.yields.fields)."""

    name: str
    css: str
    attr: str = "text"
    all: bool = False


DEFAULT_NEAR_DISTANCE = 3  # within crawler.content's MAX_DISTANCE (a test checks)


@dataclass(frozen=True, slots=True)
class DedupConfig:
    enabled: bool = False  # off by default: ~30-50% more CPU per page (docs/dedup-and-recrawl.md)
    near_distance: int = DEFAULT_NEAR_DISTANCE
    follow_duplicates: bool = True


@dataclass(frozen=True, slots=True)
class FocusConfig:
    keywords: tuple[str, ...] = ()
    threshold: float = 0.5  # crawler.focus.relevance.DEFAULT_THRESHOLD


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    redis: str = field(default="", repr=False)  # may hold a password
    crawl_id: str = "default"
    lease_ttl: float = 0.0  # 0: crawler.cluster.node.LEASE_TTL (30 s)
    heartbeat: float = 5.0
    groups: int = 0  # groups of hosts (crawler.frontier.redis.shards); 0: 1 on one node, 4 a master


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """Prometheus metrics while the crawl runs (crawler.observe, docs/observe.md)."""

    listen: str = ""  # HOST:PORT (or PORT: loopback) to serve /metrics on; "" = don't


@dataclass(frozen=True, slots=True)
class RenderConfig:
    """Rendering pages in a headless Chromium (crawler.render, docs/render.md)."""

    enabled: bool = False
    mode: str = "always"  # or "auto": only pages whose static HTML looks script-driven
    tabs: int = 4
    settle: float = 0.5
    timeout: float = 20.0
    browser: str = ""
    skip_types: tuple[str, ...] = ("image", "font", "media")
    memory_cap: int = 1536  # MiB of the browser's PSS; 0: no cap

    def page_options(self, user_agent: str, *, max_html: int) -> PageOptions:
        """How each page is rendered (`crawler.render.page.PageOptions`)."""
        from crawler.render.page import PageOptions

        return PageOptions(user_agent=user_agent, settle=self.settle, timeout=self.timeout,
                           skip_types=frozenset(self.skip_types), max_html=max_html)  # fmt: skip

    def browser_settings(self) -> BrowserSettings:
        """Which Chromium, its tabs and its memory cap (`crawler.render.settings`)."""
        from crawler.render.settings import BrowserSettings

        return BrowserSettings(path=self.browser, tabs=self.tabs,
                               memory_cap=self.memory_cap * 1024 * 1024)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ParseConfig:
    """What is read besides HTML (crawler.parse.pdf, docs/yields.md)."""

    pdf: bool = False  # read PDFs (and take "pdf" off the skip list)
