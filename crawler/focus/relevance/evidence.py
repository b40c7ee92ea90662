"""EvidenceTable: the fixed evidence of each queued URL's best link, kept to score it again.

A queued URL's priority is its link's *fixed evidence* (the weighted anchor text, URL words,
link context, parent's potential and depth penalty: what does not change once the link is
read) plus what the crawl has learned of URLs like it (:class:`crawler.focus.relevance.learn.
LinkLearner`), which changes as pages are rated. The topic scorer keeps each linked URL's best
fixed evidence so far (over all the links found to it; the best of each *piece* over its links
instead was measured and left out: see ``crawler.focus.relevance.scorer``), so that it can compute
the URL's priority again with what has been learned since: :meth:`EvidenceTable.batch` hands
out the remembered URLs a slice at a time, round robin, and the crawl re-prioritizes them
(``crawler.engine.focus``). A fetched URL is dropped (:meth:`EvidenceTable.pop`); the table holds at
most `capacity` URLs (oldest forgotten first): one URL string (and its key) and a float each.
"""

from __future__ import annotations

import logging

__all__ = ["EvidenceTable"]

log = logging.getLogger(__name__)

Evidence = tuple[str, str, float]  # url, canonical key (to find it in the frontier), fixed


class EvidenceTable:
    """hash(URL) -> (url, key, the best fixed evidence of its links), at most `capacity` URLs,
    with a round-robin cursor for :meth:`batch`."""

    __slots__ = ("_cursor", "_table", "capacity")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity!r}")
        self.capacity = capacity
        self._table: dict[int, Evidence] = {}
        self._cursor = 0  # the position in the table where the next batch starts

    def __len__(self) -> int:
        return len(self._table)

    def add(self, url: str, key: str, fixed: float) -> float:
        """Remember a link's fixed evidence if it is its URL's first or better than the one
        kept; returns the URL's best."""
        table = self._table
        h = hash(url)
        known = table.get(h)
        if known is not None:
            if fixed > known[2]:
                table[h] = (url, key, fixed)  # same place in the round robin
                return fixed
            return known[2]
        if len(table) >= self.capacity:
            del table[next(iter(table))]  # the oldest
            self._cursor = max(0, self._cursor - 1)
        table[h] = (url, key, fixed)
        return fixed

    def pop(self, url: str) -> Evidence | None:
        """Forget a URL (fetched, or no longer queued); its evidence, if it was remembered."""
        return self._table.pop(hash(url), None)

    def batch(self, size: int) -> list[Evidence]:
        """Up to `size` remembered URLs, taking up after the last batch (round robin; URLs
        added or forgotten meanwhile may shift it by as many)."""
        table = self._table
        if not table or size < 1:
            return []
        values = list(table.values())
        start = self._cursor if self._cursor < len(values) else 0
        chosen = values[start : start + size]
        if len(chosen) < size and start:
            chosen += values[: min(start, size - len(chosen))]
        self._cursor = (start + len(chosen)) % len(values)
        return chosen

    def __repr__(self) -> str:
        return f"EvidenceTable({len(self._table)} URLs, capacity={self.capacity})"
