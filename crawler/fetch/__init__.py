"""A request and everything around it: the fetcher, the SSRF guard, steering, bodies, outages.

| module | holds |
| --- | --- |
| `bodies` | Reading a response body within its caps: capped streaming and bounded decoding |
| `cookies` | The crawl's cookie jar (``[fetch] cookies = true``): aiohttp's, without ... |
| `fetcher` | HTTP fetching: one aiohttp session, capped streaming bodies, a floor on the ... |
| `guard` | The SSRF guard: which IP addresses the crawler may connect to |
| `headers` | What a response's header bytes mean: text every output can write, and the ... |
| `noproxy` | Which hosts bypass ``[fetch] proxy``: the ``no_proxy`` / ``NO_PROXY`` ... |
| `outage` | The crawl-wide connectivity gate: a proxy that is down, or the crawler's own ... |
| `resolver` | The `[fetch] resolve` overrides: host names resolved to given addresses, ... |
| `response` | `Response`: one HTTP response as `crawler.fetch.fetcher.Fetcher` hands it over |
| `settings` | What a `Fetcher` is told (``[fetch]``): `Timeouts`, `FetchLimits` and ... |
| `steering` | Steering each request: extra headers, per-host rules ([[hosts]]), ... |
| `translate` | One place for foreign errors: what aiohttp, asyncio and the OS raise while ... |
| `watch` | Watching the fetches as they go: their pace, held to a floor, and their ... |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.fetch.fetcher import Fetcher
    from crawler.fetch.guard import AddressGuard, parse_network
    from crawler.fetch.outage import Outage
    from crawler.fetch.response import Response
    from crawler.fetch.steering import (
        ALWAYS_SECRET,
        HostMatch,
        HostRule,
        HostRules,
        check_ca_file,
        check_headers,
        check_proxy,
        redact,
        shadowed,
    )

__all__ = [
    "ALWAYS_SECRET",
    "AddressGuard",
    "Fetcher",
    "HostMatch",
    "HostRule",
    "HostRules",
    "Outage",
    "Response",
    "check_ca_file",
    "check_headers",
    "check_proxy",
    "parse_network",
    "redact",
    "shadowed",
]

__getattr__ = lazy(
    __name__,
    {
        "ALWAYS_SECRET": "steering",
        "AddressGuard": "guard",
        "Fetcher": "fetcher",
        "HostMatch": "steering",
        "HostRule": "steering",
        "HostRules": "steering",
        "Outage": "outage",
        "Response": "response",
        "check_ca_file": "steering",
        "check_headers": "steering",
        "check_proxy": "steering",
        "parse_network": "guard",
        "redact": "steering",
        "shadowed": "steering",
    },
)
