"""The URL-seen test: the Sieve (a scalable Bloom filter) and the exact tier behind it.

| module | holds |
| --- | --- |
| `bloom` | `BloomStage`, `Sieve` (the scalable Bloom filter), `hash_pair`, `fingerprint` |
| `batch` | the vectorized (numpy) insert of one page's links |
| `format` | the versioned, checksummed file format; atomic save; `SieveFormatError` |
| `tiers` | `SeenTiers`: the Sieve in front of the optional exact confirmation tier |
| `kinds` | the family: `make_filter`, `filter_from_bytes`, `FILTER_KINDS`, one module per kind |

`Sieve` is the in-memory backend; a shared one (issue: scale-out through Redis) sits beside it with
the same hashing (`hash_pair`, `SEED`), so both set the same bits for the same keys.
"""

from __future__ import annotations

from crawler.sieve.bloom import BloomStage, Sieve, StageStats, fingerprint, hash_pair
from crawler.sieve.format import SEED, SieveFormatError
from crawler.sieve.kinds import (
    FILTER_KINDS,
    SeenFilter,
    filter_from_bytes,
    load_filter,
    make_filter,
    save_filter,
)
from crawler.sieve.tiers import SeenTiers

__all__ = [
    "FILTER_KINDS",
    "SEED",
    "BloomStage",
    "SeenFilter",
    "SeenTiers",
    "Sieve",
    "SieveFormatError",
    "StageStats",
    "filter_from_bytes",
    "fingerprint",
    "hash_pair",
    "load_filter",
    "make_filter",
    "save_filter",
]
