"""How the Redis frontier writes an entry: a queue member, and back.

A member of ``q:{host}`` is ``{class}{seq:015d}{key}\n{payload}``: the class (``0`` retries and
reclaimed leases, ``1`` new work, ``2`` a ROBOTS entry) and a sequence number make equal
priorities pop first in, first out; the payload is the JSON of the entry's other fields (the URL
only when it differs from the key).
"""

from __future__ import annotations

import json
from typing import Final

from crawler.frontier.entries import Entry
from crawler.sieve.redis import text

__all__ = ["ROBOTS_CLASS", "entry_of", "member_tail", "text"]

ROBOTS_CLASS: Final = "2"  # the class of a ROBOTS entry's member: its host's robots.txt to fetch


def member_tail(entry: Entry) -> str:
    """The part of a queue member after its class and sequence: ``key\\npayload``.
    ValueError for a key with a newline (normalized URLs have none)."""
    if "\n" in entry.key:
        raise ValueError(f"a frontier key cannot hold a newline: {entry.key!r}")
    url = "" if entry.url == entry.key else entry.url
    payload = [url, entry.depth, entry.parent, entry.retries, entry.redirects, entry.sitemap]
    return entry.key + "\n" + json.dumps(payload, separators=(",", ":"))


def entry_of(host: str, member: str, priority: float) -> Entry:
    """The Entry of a queue member."""
    key, _, payload = member[16:].partition("\n")
    url, depth, parent, retries, redirects, sitemap = json.loads(payload)
    return Entry(url=url or key, key=key, depth=depth, parent=parent, retries=retries,
                 redirects=redirects, sitemap=sitemap, priority=priority)  # fmt: skip
