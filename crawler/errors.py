"""The crawler's exceptions, and what each failure says about its URL and its host.

    CrawlerError
    ├── ConfigError            a config file, key or value is wrong (names the file and key)
    ├── SeedError              a seed is not a crawlable URL (names the source and line)
    ├── ScoreError             a score function raised or returned a bad priority (names the
    │                          link; the crawl ends with it, the original as __cause__)
    ├── SharedStateError       the shared crawl in Redis (``--redis``) is unreachable or was
    │                          started with other settings (the crawl ends with it)
    ├── OutputError            an output (JSON Lines, WARC) could not be written, e.g. a full
    │                          disk (names the output; the crawl ends with it)
    ├── StateError             the state directory (``--state``) cannot be used: corrupt,
    │                          foreign, locked by another crawl, or from an incompatible one
    ├── SieveFormatError       saved Sieve data is truncated, corrupt, foreign or of an unknown
    │                          version (also a ValueError)
    ├── SitemapError           a body is not a sitemap: bad XML, wrong root, forbidden XML
    │                          features (also a ValueError)
    ├── NetworkUnavailable     the crawler's own network was down for ``[fetch] outage_give_up``
    │   │                      seconds (`crawler.fetch.outage`; the crawl ends with it, unfinished
    │   │                      URLs stay pending in the state)
    │   └── ProxyUnavailable   the same for the proxy (``[fetch] proxy``), or it refused the
    │                          crawler's credentials (407)
    └── FetchError             one fetch failed; `kind` is the short name used in results
        ├── DNSError           "dns"          the host name did not resolve
        ├── ConnectError       "connect"      refused, unreachable, connect timeout, TLS failure
        │   ├── CertificateError "connect"    the TLS certificate was not accepted (not retried)
        │   └── ProxyError     "proxy"        the proxy is down: refused, unresolvable, or closed
        │                                     the connection before answering (blamed on nobody)
        ├── ConnectionReset    "reset"        the connection was reset or closed before a response
        ├── FetchTimeout       "timeout"      read_timeout or total_timeout expired
        ├── TooSlow            "too_slow"     less than min_rate bytes/s over min_rate_window
        ├── Truncated          "truncated"    the connection ended before the end of the body
        ├── BodyTooLarge       "too_large"    the body (or its decompressed form) passed the cap
        ├── ProtocolError      "protocol"     malformed response, bad headers, bad Content-Length
        ├── DecodingError      "decoding"     the Content-Encoding could not be decoded
        └── BlockedAddress     "blocked"      the address is refused by the SSRF guard

Foreign exceptions (aiohttp, OSError, asyncio) are translated into these in
`crawler.fetch.translate` only. A result's `error` field is `f"{exc.kind}: {exc}"`.

Every failure is classified here, in one place (docs/politeness.md has the table): its
:class:`Blame` (does it back off the host, or only mark the URL?) and whether the URL is retried. A
timeout (``timeout`` or ``too_slow``) while waiting for the response headers is a *suspect* failure
(the server may be overloaded); once the headers came, the host has answered and a slow body is the
URL's own failure. `failure_class(status)` does the same for HTTP statuses.
"""

from __future__ import annotations

import enum

__all__ = [
    "Blame",
    "BlockedAddress",
    "BodyTooLarge",
    "CertificateError",
    "ConfigError",
    "ConnectError",
    "ConnectionReset",
    "CrawlerError",
    "DNSError",
    "DecodingError",
    "FetchError",
    "FetchTimeout",
    "NetworkUnavailable",
    "OutputError",
    "ProtocolError",
    "ProxyError",
    "ProxyUnavailable",
    "ScoreError",
    "SeedError",
    "SharedStateError",
    "SieveFormatError",
    "SitemapError",
    "StateError",
    "TooSlow",
    "Truncated",
    "failure_class",
]


MAX_MESSAGE = 300  # characters of a failure's message kept in its result


class Blame(enum.Enum):
    """Whom a failed fetch is held against (applied by
    ``crawler.frontier.hosts.PolitenessRules.response``)."""

    HOST = "host"  # the host is in trouble: back it off at once
    SUSPECT = "suspect"  # the URL's failure, but a sign of host trouble: several distinct URLs
    # of one host in a row back the host off (hosts.SUSPECT_STREAK)
    URL = "url"  # the URL's failure only; the host answered, so its backoff is reset
    PROXY = "proxy"  # the proxy's failure: held against neither the host nor the URL (the
    # crawl waits for the proxy instead: crawler.fetch.outage)


class CrawlerError(Exception):
    """Base class of every error the crawler raises on purpose."""


class ConfigError(CrawlerError, ValueError):
    """A configuration file, key or value is invalid."""


class SeedError(CrawlerError, ValueError):
    """A seed is not a crawlable http(s) URL."""


class ScoreError(CrawlerError):
    """A score function (``Crawler(config, score=fn)``) or the focus scorer failed on a link
    or a page; `crawl()` raises it, with the original exception as ``__cause__``."""


class SharedStateError(CrawlerError):
    """The shared crawl state in Redis cannot be used: unreachable, or other settings."""


class OutputError(CrawlerError):
    """An output of the crawl (JSON Lines, WARC) could not be written (a full disk, a closed
    file): the crawl ends with it, naming the output; the OSError is its ``__cause__``. With a
    crawl state, the URL whose record could not be written stays pending for the resume."""


class StateError(CrawlerError):
    """The state directory cannot be used: corrupt, foreign, or from an incompatible crawl."""


class SieveFormatError(CrawlerError, ValueError):
    """A saved Sieve is truncated, corrupt, from another program or from an unknown version."""


class SitemapError(CrawlerError, ValueError):
    """The body is not a sitemap (bad XML, wrong root, forbidden XML features)."""


class NetworkUnavailable(CrawlerError):
    """The crawler's own network stayed down (no route, or its DNS resolver unreachable) for
    ``[fetch] outage_give_up`` seconds: the crawl ends with it (`crawler.fetch.outage`). With a
    crawl state every unfinished URL stays pending: ``crawl ... --state DIR`` resumes them."""


class ProxyUnavailable(NetworkUnavailable):
    """The proxy stayed unreachable for ``[fetch] outage_give_up`` seconds, or refused the
    crawler's credentials (407): the crawl ends with it, like `NetworkUnavailable`."""


class FetchError(CrawlerError):
    """A fetch failed. `kind` is a short, stable name for the failure class; `blame` and `retry`
    say whether it backs off the host and whether the URL is fetched again (up to `retries`)."""

    kind = "fetch"
    blame = Blame.URL
    retry = False
    network = False  # a sign the crawler's own network is down (crawler.fetch.outage), set by
    # crawler.fetch.translate: "Network is unreachable", a DNS resolver that cannot be reached
    refused = False  # the host refused the connection (ECONNREFUSED: nothing listens on the
    # port) or its name does not exist (DNS: no such name), set by crawler.fetch.translate: an
    # answer, not a silence (crawler.frontier.hosts: robots.txt)

    def describe(self) -> str:
        """The `kind: message` form stored in a result's `error` field: one line, at most
        `MAX_MESSAGE` characters of message (aiohttp quotes a whole garbage read: 100 KB+)."""
        message = " ".join(str(self).split()) or self.__class__.__name__  # one line, always
        if len(message) > MAX_MESSAGE:
            message = f"{message[:MAX_MESSAGE]}... ({len(message)} characters)"
        return f"{self.kind}: {message}"


class DNSError(FetchError):
    kind = "dns"
    blame = Blame.HOST
    retry = True


class ConnectError(FetchError):
    kind = "connect"
    blame = Blame.HOST
    retry = True


class CertificateError(ConnectError):
    """The host's TLS certificate was not accepted (unknown CA, expired, another name): the
    same again on a retry, so none; every URL of the host fails alike (the circuit breaker)."""

    retry = False


class ProxyError(ConnectError):
    """The proxy failed, not the target: it refused the connection, its name did not resolve,
    it closed the connection before answering, or (`status` 407) it refused the credentials.
    Held against neither the host nor the URL: a crawl waits for the proxy
    (`crawler.fetch.outage`)."""

    kind = "proxy"
    blame = Blame.PROXY
    retry = False  # a crawl holds the URL until the proxy is back, without spending a retry

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the proxy's answer to CONNECT (407), None if it gave none


class ConnectionReset(FetchError):
    """Reset or closed before any response: one broken URL, or a host dropping connections."""

    kind = "reset"
    blame = Blame.SUSPECT
    retry = True  # cheap: nothing was waited for


class _Slow(FetchError):
    """A time limit expired: suspect while waiting for the headers, the URL's once they came.
    Never retried: a retry would cost the whole wait again."""

    def __init__(self, message: str, *, waiting: bool = True) -> None:
        super().__init__(message)
        self.blame = Blame.SUSPECT if waiting else Blame.URL


class FetchTimeout(_Slow):
    kind = "timeout"


class TooSlow(_Slow):
    kind = "too_slow"


class Truncated(FetchError):
    """The headers came, then the connection ended early (short body, reset mid-body)."""

    kind = "truncated"
    retry = True  # it came fast enough (or it would be too_slow): a retry is cheap


class BodyTooLarge(FetchError):
    kind = "too_large"


class ProtocolError(FetchError):
    kind = "protocol"


class DecodingError(FetchError):
    kind = "decoding"


class BlockedAddress(FetchError):
    kind = "blocked"


_STATUS_CLASSES = {
    429: (Blame.HOST, True),  # Too Many Requests: honour Retry-After
    503: (Blame.HOST, True),  # Service Unavailable: honour Retry-After
    500: (Blame.SUSPECT, True),
    502: (Blame.SUSPECT, True),  # a gateway's upstream failed
    504: (Blame.SUSPECT, True),
}


def failure_class(status: int) -> tuple[Blame, bool] | None:
    """(blame, retry?) of an HTTP status that is a failure; None for any other status."""
    return _STATUS_CLASSES.get(status)
