"""A single-process asyncio web crawler for focused crawls, with a scalable Bloom URL-seen Sieve.

from crawler import Config, Crawler

async with Crawler(Config()) as crawler:
    async for result in crawler.crawl(["https://example.org/"]):
        print(result.status, result.url, result.title)
"""

from __future__ import annotations

from importlib import import_module

# Not `typing.TYPE_CHECKING`: `crawl` imports this package first, and importing `typing` here
# would widen the start-up window in which a Ctrl-C prints a traceback (crawler.cli.command).
TYPE_CHECKING = False
if TYPE_CHECKING:  # the names below, imported when first used (see __getattr__)
    from typing import Any

    from crawler.config.load import Config, load_config
    from crawler.config.sections import ExtractRule
    from crawler.engine.components import settings
    from crawler.engine.crawler import Crawler
    from crawler.errors import (
        BlockedAddress,
        BodyTooLarge,
        CertificateError,
        ConfigError,
        ConnectError,
        ConnectionReset,
        CrawlerError,
        DecodingError,
        DNSError,
        FetchError,
        FetchTimeout,
        NetworkUnavailable,
        OutputError,
        ProtocolError,
        ProxyError,
        ProxyUnavailable,
        ScoreError,
        SeedError,
        SharedStateError,
        SieveFormatError,
        SitemapError,
        StateError,
        TooSlow,
        Truncated,
    )
    from crawler.focus.scoring import Link, PageText, ScoreFn, Scorer
    from crawler.frontier import Entry, EntryKind, Frontier, Outcome
    from crawler.frontier.robots import RobotsPolicy, policy_from_response
    from crawler.output.results import CrawlResult, CrawlStats
    from crawler.parse.yields import ExtractPage
    from crawler.render.browser import (
        BrowserGone,
        PageFailed,
        PageTimeout,
        RenderError,
        RenderUnavailable,
    )
    from crawler.sieve import (
        FILTER_KINDS,
        BloomStage,
        SeenFilter,
        Sieve,
        filter_from_bytes,
        make_filter,
    )
    from crawler.state.crawlstate import CrawlState
    from crawler.urls.canonical import UrlNormalizer, canonicalize, normalize

# public name -> the module that defines it. `import crawler.cli.main` (the `crawl` command) imports
# this package first: importing every module here would cost each run of the command the
# start-up of what it may not use (numpy, rich, warcio...), so a name's module is imported on
# first access instead (PEP 562).
_ERRORS = """BlockedAddress BodyTooLarge CertificateError ConfigError ConnectError ConnectionReset
    CrawlerError DecodingError DNSError FetchError FetchTimeout NetworkUnavailable OutputError
    ProtocolError ProxyError ProxyUnavailable ScoreError SeedError SharedStateError
    SieveFormatError SitemapError StateError TooSlow Truncated"""
_SIEVE = "BloomStage FILTER_KINDS SeenFilter Sieve filter_from_bytes make_filter"
_RENDER = "BrowserGone PageFailed PageTimeout RenderError RenderUnavailable"  # (no playwright)
_LAZY = {
    **dict.fromkeys(("Config", "load_config"), "crawler.config.load"),
    "Crawler": "crawler.engine.crawler",
    "ExtractRule": "crawler.config.sections",
    "ExtractPage": "crawler.parse.yields",
    **dict.fromkeys(_ERRORS.split(), "crawler.errors"),
    **dict.fromkeys(("Entry", "EntryKind", "Frontier", "Outcome"), "crawler.frontier"),
    **dict.fromkeys(("CrawlResult", "CrawlStats"), "crawler.output.results"),
    **dict.fromkeys(("RobotsPolicy", "policy_from_response"), "crawler.frontier.robots"),
    **dict.fromkeys(("Link", "PageText", "ScoreFn", "Scorer"), "crawler.focus.scoring"),
    **dict.fromkeys(_SIEVE.split(), "crawler.sieve"),
    **dict.fromkeys(_RENDER.split(), "crawler.render.browser"),
    "CrawlState": "crawler.state.crawlstate",
    "settings": "crawler.engine.components",
    **dict.fromkeys(("UrlNormalizer", "canonicalize", "normalize"), "crawler.urls.canonical"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'crawler' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"

__all__ = [
    "FILTER_KINDS",
    "BlockedAddress",
    "BloomStage",
    "BodyTooLarge",
    "BrowserGone",
    "CertificateError",
    "Config",
    "ConfigError",
    "ConnectError",
    "ConnectionReset",
    "CrawlResult",
    "CrawlState",
    "CrawlStats",
    "Crawler",
    "CrawlerError",
    "DNSError",
    "DecodingError",
    "Entry",
    "EntryKind",
    "ExtractPage",
    "ExtractRule",
    "FetchError",
    "FetchTimeout",
    "Frontier",
    "Link",
    "NetworkUnavailable",
    "Outcome",
    "OutputError",
    "PageFailed",
    "PageText",
    "PageTimeout",
    "ProtocolError",
    "ProxyError",
    "ProxyUnavailable",
    "RenderError",
    "RenderUnavailable",
    "RobotsPolicy",
    "ScoreError",
    "ScoreFn",
    "Scorer",
    "SeedError",
    "SeenFilter",
    "SharedStateError",
    "Sieve",
    "SieveFormatError",
    "SitemapError",
    "StateError",
    "TooSlow",
    "Truncated",
    "UrlNormalizer",
    "__version__",
    "canonicalize",
    "filter_from_bytes",
    "load_config",
    "make_filter",
    "normalize",
    "policy_from_response",
    "settings",
]
