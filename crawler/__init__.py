"""A single-process asyncio web crawler for focused crawls, with a scalable Bloom URL-seen Sieve.

from crawler import Config, Crawler

async with Crawler(Config()) as crawler:
    async for result in crawler.crawl(["https://example.org/"]):
        print(result.status, result.url, result.title)
"""

from __future__ import annotations

from crawler.config import Config, load_config
from crawler.engine import Crawler
from crawler.errors import (
    BlockedAddress,
    BodyTooLarge,
    ConfigError,
    ConnectError,
    CrawlerError,
    DecodingError,
    DNSError,
    FetchError,
    FetchTimeout,
    ProtocolError,
    ScoreError,
    SeedError,
)
from crawler.frontier import Entry, EntryKind, Frontier, Outcome
from crawler.results import CrawlResult, CrawlStats
from crawler.robots import RobotsPolicy, policy_from_response
from crawler.scoring import Link, PageText, ScoreFn, Scorer
from crawler.sieve import BloomStage, Sieve, SieveFormatError
from crawler.urls import UrlNormalizer, canonicalize, normalize

__version__ = "0.1.0"

__all__ = [
    "BlockedAddress",
    "BloomStage",
    "BodyTooLarge",
    "Config",
    "ConfigError",
    "ConnectError",
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
    "Outcome",
    "PageText",
    "ProtocolError",
    "RobotsPolicy",
    "ScoreError",
    "ScoreFn",
    "Scorer",
    "SeedError",
    "Sieve",
    "SieveFormatError",
    "UrlNormalizer",
    "__version__",
    "canonicalize",
    "load_config",
    "normalize",
    "policy_from_response",
]
