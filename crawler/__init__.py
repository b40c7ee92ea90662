"""A single-process asyncio web crawler for focused crawls, with a scalable Bloom URL-seen Sieve.

from crawler import Config, Crawler

async with Crawler(Config()) as crawler:
    async for result in crawler.crawl(["https://example.org/"]):
        print(result.status, result.url, result.title)
"""

from __future__ import annotations

from importlib import import_module

# Not `typing.TYPE_CHECKING`: `crawl` imports this package first, and importing `typing` here
# would widen the start-up window in which a Ctrl-C prints a traceback (crawler.command).
TYPE_CHECKING = False
if TYPE_CHECKING:  # the names below, imported when first used (see __getattr__)
    from typing import Any

    from crawler.config import Config, load_config
    from crawler.engine import Crawler
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
        StateError,
        TooSlow,
        Truncated,
    )
    from crawler.frontier import Entry, EntryKind, Frontier, Outcome
    from crawler.results import CrawlResult, CrawlStats
    from crawler.robots import RobotsPolicy, policy_from_response
    from crawler.scoring import Link, PageText, ScoreFn, Scorer
    from crawler.sieve import BloomStage, Sieve, SieveFormatError
    from crawler.urls import UrlNormalizer, canonicalize, normalize

# public name -> the module that defines it. `import crawler.cli` (the `crawl` command) imports
# this package first: importing every module here would cost each run of the command the
# start-up of what it may not use (numpy, rich, warcio...), so a name's module is imported on
# first access instead (PEP 562).
_ERRORS = """BlockedAddress BodyTooLarge CertificateError ConfigError ConnectError ConnectionReset
    CrawlerError DecodingError DNSError FetchError FetchTimeout NetworkUnavailable OutputError
    ProtocolError ProxyError ProxyUnavailable ScoreError SeedError SharedStateError StateError
    TooSlow Truncated"""
_LAZY = {
    **dict.fromkeys(("Config", "load_config"), "crawler.config"),
    "Crawler": "crawler.engine",
    **dict.fromkeys(_ERRORS.split(), "crawler.errors"),
    **dict.fromkeys(("Entry", "EntryKind", "Frontier", "Outcome"), "crawler.frontier"),
    **dict.fromkeys(("CrawlResult", "CrawlStats"), "crawler.results"),
    **dict.fromkeys(("RobotsPolicy", "policy_from_response"), "crawler.robots"),
    **dict.fromkeys(("Link", "PageText", "ScoreFn", "Scorer"), "crawler.scoring"),
    **dict.fromkeys(("BloomStage", "Sieve", "SieveFormatError"), "crawler.sieve"),
    **dict.fromkeys(("UrlNormalizer", "canonicalize", "normalize"), "crawler.urls"),
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
    "BlockedAddress",
    "BloomStage",
    "BodyTooLarge",
    "CertificateError",
    "Config",
    "ConfigError",
    "ConnectError",
    "ConnectionReset",
    "CrawlResult",
    "CrawlStats",
    "Crawler",
    "CrawlerError",
    "DNSError",
    "DecodingError",
    "Entry",
    "EntryKind",
    "FetchError",
    "FetchTimeout",
    "Frontier",
    "Link",
    "NetworkUnavailable",
    "Outcome",
    "OutputError",
    "PageText",
    "ProtocolError",
    "ProxyError",
    "ProxyUnavailable",
    "RobotsPolicy",
    "ScoreError",
    "ScoreFn",
    "Scorer",
    "SeedError",
    "SharedStateError",
    "Sieve",
    "SieveFormatError",
    "StateError",
    "TooSlow",
    "Truncated",
    "UrlNormalizer",
    "__version__",
    "canonicalize",
    "load_config",
    "normalize",
    "policy_from_response",
]
