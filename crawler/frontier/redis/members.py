"""How the Redis frontier writes an entry: a queue member, and back.

A member of ``q:{host}`` is ``{class}{seq:015d}{key}\n{payload}``: the class (``0`` retries and
reclaimed leases, ``1`` new work, ``2`` a ROBOTS entry) and a sequence number make equal
priorities pop first in, first out; the payload is the JSON of the entry's other fields (the URL
only when it differs from the key). ``blame_args`` turns an outcome into what the DONE script
takes.
"""

from __future__ import annotations

import json

from crawler.frontier.entries import Entry, Outcome
from crawler.frontier.hosts import blame_of, parse_retry_after
from crawler.sieve.redis import text

__all__ = ["blame_args", "entry_of", "latency_args", "member_tail", "text"]


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


def blame_args(outcome: Outcome | None) -> tuple[str, float | None]:
    """The blame of an outcome as ``PolitenessRules.response`` decides it, and the Retry-After wait
    (None: use the exponential backoff)."""
    if outcome is None:
        return "", None
    blame = blame_of(outcome)
    wait = None
    if outcome.retry_after is not None and outcome.status is not None:
        wait = parse_retry_after(outcome.retry_after)
    return ("" if blame is None else blame.value), wait


def latency_args(outcome: Outcome | None) -> tuple[str, str]:
    """An outcome's latency and status as the DONE script reads them ('' for none): what the
    adaptive delay follows."""
    if outcome is None or outcome.latency is None:
        return "", ""
    return repr(outcome.latency), "" if outcome.status is None else str(outcome.status)
