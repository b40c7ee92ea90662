"""The crawl's cookie jar (``[fetch] cookies = true``): aiohttp's, without public-suffix cookies.

aiohttp's `CookieJar` accepts a Set-Cookie whose Domain attribute domain-matches the host that
sent it, but it knows no public suffixes: ``a.example.co.uk`` could set a cookie for ``co.uk``
(and ``a.test`` one for ``test``), which the jar then sent to every other host under that
suffix. Browsers refuse such a cookie (RFC 6265 5.3 step 5, the Public Suffix List); so does
this jar, with the list the ``publicsuffixlist`` package ships (nothing is downloaded). Each
Set-Cookie field naming a Domain is parsed on its own by aiohttp's own parser (an empty jar of
its own), so what is refused is exactly what aiohttp would have stored.

The rest is aiohttp's: domain and path matching, Secure, expiry, no cookies from IP-address
hosts, and its bounds (a hostile server cannot grow the jar without end: aiohttp keeps at most
180 cookies per domain and 3,300 in all, and sends at most 150 in one request).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Final

import aiohttp
from publicsuffixlist import PublicSuffixList
from yarl import URL

__all__ = ["CrawlCookieJar", "is_public_suffix"]

log = logging.getLogger(__name__)

_MEMO: Final = 4096


@functools.cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()  # ~30 ms: loaded when a crawl first keeps cookies


@functools.lru_cache(maxsize=_MEMO)
def is_public_suffix(domain: str) -> bool:
    """Is `domain` (lower-case, no leading dot) a public suffix (``com``, ``co.uk``, ``test``)?"""
    return bool(_suffixes().is_public(domain))


class CrawlCookieJar(aiohttp.CookieJar):
    """aiohttp's cookie jar refusing cookies set for a public suffix; ``refused`` counts them."""

    __slots__ = ("refused",)

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        if any("domain" in h.lower() for h in headers):  # the attribute's name, in any case
            host = (response_url.raw_host or "").lower().rstrip(".")
            kept = [h for h in headers if not self._public(h, response_url, host)]
            self.refused += len(headers) - len(kept)
            headers = kept
        super().update_cookies_from_headers(headers, response_url)

    def _public(self, header: str, response_url: URL, host: str) -> bool:
        """Does this Set-Cookie field set a cookie for a public suffix (the host's own too)?"""
        if "domain" not in header.lower():
            return False
        probe = aiohttp.CookieJar()
        probe.update_cookies_from_headers([header], response_url)
        for morsel in probe:
            domain = str(morsel["domain"]).lower().lstrip(".")
            if not is_public_suffix(domain):
                return False
            # a public-suffix host may keep a cookie for itself alone (no Domain attribute)
            if domain == host and probe.host_only_cookies:
                return False
            log.debug("refused a cookie set by %s for the public suffix %s", host, domain)
            return True
        return False

    def __repr__(self) -> str:
        return f"<CrawlCookieJar cookies={len(self)} refused={self.refused}>"
