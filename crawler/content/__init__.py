"""Content dedup: which fetched pages are exact or near duplicates of pages fetched before.

`crawler.content.text` reads a page's visible text from its lexbor tree,
`crawler.content.fingerprint` turns it into a content hash and a simhash, and
`crawler.content.index` keeps every distinct page's fingerprint and answers "seen before?" for
both. (`crawler.dedup` is the other dedup: of URLs, before they are fetched.)
"""

from __future__ import annotations

from crawler.content.fingerprint import Fingerprint, fingerprint, hamming, normalize
from crawler.content.index import ContentIndex, Match, NearDuplicateIndex
from crawler.content.text import visible_text

__all__ = [
    "ContentIndex", "Fingerprint", "Match", "NearDuplicateIndex", "fingerprint", "hamming",
    "normalize", "visible_text",
]  # fmt: skip
