"""Content dedup: which fetched pages are exact or near duplicates of pages fetched before.

`crawler.parse.markup` reads a page's main-content text (`Markup.content`, in the same pass as the
text a focused crawl reads), `crawler.content.fingerprint` turns it into a content hash and a
simhash, and `crawler.content.index` keeps every distinct page's fingerprint and answers "seen
before?" for both. (`crawler.sieve.tiers` is the URL-seen test: of URLs, before they are fetched.)
"""

from __future__ import annotations

from crawler.content.fingerprint import Fingerprint, fingerprint, hamming, normalize
from crawler.content.index import ContentIndex, Match, NearDuplicateIndex

__all__ = [
    "ContentIndex", "Fingerprint", "Match", "NearDuplicateIndex", "fingerprint", "hamming",
    "normalize",
]  # fmt: skip
