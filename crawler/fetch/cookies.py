"""The crawl's cookie jar (``[fetch] cookies = true``): aiohttp's, without public-suffix cookies.

aiohttp's `CookieJar` accepts a Set-Cookie whose Domain attribute domain-matches the host that
sent it, but it knows no public suffixes: ``a.example.co.uk`` could set a cookie for ``co.uk``
(and ``a.test`` one for ``test``), which the jar then sent to every other host under that
suffix. Browsers refuse such a cookie (RFC 6265 5.3 step 5, the Public Suffix List); so does
this jar, with the list `crawler.urls.suffixes` reads (nothing is downloaded), but for
a host that is itself a public suffix (``localhost``, an intranet's one-label name) naming
itself: that cookie is the host's alone (host-only, its Domain attribute dropped). Each
Set-Cookie field naming a Domain is parsed on its own by aiohttp's own parser (an empty jar of
its own), so what is refused is exactly what aiohttp would have stored.

The rest is aiohttp's: domain and path matching, Secure, expiry, no cookies from IP-address
hosts, and its bounds (a hostile server cannot grow the jar without end: aiohttp keeps at most
180 cookies per domain and 3,300 in all, and sends at most 150 in one request).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import aiohttp
from yarl import URL

from crawler.urls.suffixes import is_public_suffix

__all__ = ["CrawlCookieJar", "is_public_suffix"]

log = logging.getLogger(__name__)

# what is done with a Set-Cookie field naming a Domain (`CrawlCookieJar._verdict`)
_Verdict = Literal["keep", "refuse", "host-only"]


def _host_only(header: str) -> str:
    """The Set-Cookie field without its Domain attributes (its first pair is the cookie's own,
    whatever its name). Split at ';', which RFC 6265 keeps out of values: a quoted value hiding
    one loses at most its own cookie, and no Domain attribute is left in any case."""
    pair, *attributes = header.split(";")
    kept = [a for a in attributes if a.partition("=")[0].strip().lower() != "domain"]
    return ";".join([pair, *kept])


class CrawlCookieJar(aiohttp.CookieJar):
    """aiohttp's cookie jar refusing cookies set for a public suffix; ``refused`` counts them."""

    __slots__ = ("refused",)

    def __init__(self) -> None:
        super().__init__()
        self.refused = 0

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        if any("domain" in h.lower() for h in headers):  # the attribute's name, in any case
            host = (response_url.raw_host or "").lower().rstrip(".")
            kept = []
            for header in headers:
                verdict = self._verdict(header, response_url, host)
                if verdict == "refuse":
                    self.refused += 1
                else:
                    kept.append(header if verdict == "keep" else _host_only(header))
            headers = kept
        super().update_cookies_from_headers(headers, response_url)

    def _verdict(self, header: str, response_url: URL, host: str) -> _Verdict:
        """A Set-Cookie field setting a cookie for a public suffix is refused, unless that
        suffix is the host itself: then it is a cookie for that host alone ("host-only": RFC
        6265 5.3 step 5 drops the Domain attribute). Any other is kept."""
        if "domain" not in header.lower():
            return "keep"
        probe = aiohttp.CookieJar()
        probe.update_cookies_from_headers([header], response_url)
        for morsel in probe:
            domain = str(morsel["domain"]).lower().lstrip(".")
            if not is_public_suffix(domain) or probe.host_only_cookies:  # (no Domain attribute)
                return "keep"
            if domain == host:
                return "host-only"
            log.debug("refused a cookie set by %s for the public suffix %s", host, domain)
            return "refuse"
        return "keep"

    def __repr__(self) -> str:
        return f"<CrawlCookieJar cookies={len(self)} refused={self.refused}>"
