"""The crawler's exceptions.

    CrawlerError
    ├── ConfigError            a config file, key or value is wrong (names the file and key)
    ├── SeedError              a seed is not a crawlable URL (names the source and line)
    ├── ScoreError             a score function raised or returned a bad priority (names the
    │                          link; the crawl ends with it, the original as __cause__)
    └── FetchError             one fetch failed; `kind` is the short name used in results
        ├── DNSError           "dns"          the host name did not resolve
        ├── ConnectError       "connect"      refused, reset, unreachable, TLS failure
        ├── FetchTimeout       "timeout"      connect, read or total timeout
        ├── BodyTooLarge       "too_large"    the body (or its decompressed form) passed the cap
        ├── ProtocolError      "protocol"     malformed response, bad headers, bad Content-Length
        ├── DecodingError      "decoding"     the Content-Encoding could not be decoded
        └── BlockedAddress     "blocked"      the address is refused by the SSRF guard

Foreign exceptions (aiohttp, OSError, asyncio) are translated into these in `crawler.fetcher` only.
A result's `error` field is `f"{exc.kind}: {exc}"`.
"""

from __future__ import annotations

__all__ = [
    "BlockedAddress",
    "BodyTooLarge",
    "ConfigError",
    "ConnectError",
    "CrawlerError",
    "DNSError",
    "DecodingError",
    "FetchError",
    "FetchTimeout",
    "ProtocolError",
    "ScoreError",
    "SeedError",
]


class CrawlerError(Exception):
    """Base class of every error the crawler raises on purpose."""


class ConfigError(CrawlerError, ValueError):
    """A configuration file, key or value is invalid."""


class SeedError(CrawlerError, ValueError):
    """A seed is not a crawlable http(s) URL."""


class ScoreError(CrawlerError):
    """A score function (``Crawler(config, score=fn)``) or the focus scorer failed on a link
    or a page; `crawl()` raises it, with the original exception as ``__cause__``."""


class FetchError(CrawlerError):
    """A fetch failed. `kind` is a short, stable name for the failure class."""

    kind = "fetch"

    def describe(self) -> str:
        """The `kind: message` form stored in a result's `error` field."""
        message = " ".join(str(self).split()) or self.__class__.__name__  # one line, always
        return f"{self.kind}: {message}"


class DNSError(FetchError):
    kind = "dns"


class ConnectError(FetchError):
    kind = "connect"


class FetchTimeout(FetchError):
    kind = "timeout"


class BodyTooLarge(FetchError):
    kind = "too_large"


class ProtocolError(FetchError):
    kind = "protocol"


class DecodingError(FetchError):
    kind = "decoding"


class BlockedAddress(FetchError):
    kind = "blocked"
