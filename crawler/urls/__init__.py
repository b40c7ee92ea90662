"""URLs: canonical keys and fetchable forms, RFC 3986 syntax, hosts and public suffixes.

| module | holds |
| --- | --- |
| `canonical` | URL canonicalization: turn every extracted link into a fetchable URL and a ... |
| `host` | A URL's authority as `crawler.urls.canonical` writes it: the host mapped and ... |
| `parts` | The fetch form of a URL: a reference resolved against its base and ... |
| `suffixes` | The Public Suffix List, as the ``publicsuffixlist`` package ships it ... |
| `syntax` | URL syntax: the RFC 3986 pieces `crawler.urls.canonical` is built from ... |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.urls.canonical import UrlNormalizer, canonicalize, document_base, normalize
    from crawler.urls.host import split_host
    from crawler.urls.suffixes import is_public_suffix, registrable_domain
    from crawler.urls.syntax import STRIP, cut_fragment, legacy_query

__all__ = [
    "STRIP",
    "UrlNormalizer",
    "canonicalize",
    "cut_fragment",
    "document_base",
    "is_public_suffix",
    "legacy_query",
    "normalize",
    "registrable_domain",
    "split_host",
]

__getattr__ = lazy(
    __name__,
    {
        "STRIP": "syntax",
        "UrlNormalizer": "canonical",
        "canonicalize": "canonical",
        "cut_fragment": "syntax",
        "document_base": "canonical",
        "is_public_suffix": "suffixes",
        "legacy_query": "syntax",
        "normalize": "canonical",
        "registrable_domain": "suffixes",
        "split_host": "host",
    },
)
