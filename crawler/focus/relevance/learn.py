"""LinkLearner: which kinds of URL lead to relevant pages, learned online from the crawl so far.

After Aggarwal, Al-Garawi & Yu, "Intelligent crawling on the World Wide Web with arbitrary
predicates" (WWW 2001): the crawler learns, from the pages it has fetched and rated, how the
features of a link predict the relevance of the page behind it, and ranks new links by it.

A link's features are its URL's directory ("library/", "c3ref/"), the words of its URL path
(:func:`crawler.focus.relevance.text.url_words`) and the (stemmed) words of its anchor text, each
kept as a 64-bit hash. When a link is scored,
its features are remembered under its URL; when that page is rated, each feature's count and
relevance sum grow. A feature's rate is its mean relevance, smoothed toward the crawl's mean
relevance ``g`` by ``SMOOTHING`` (10) pseudo-pages; a link's expected relevance multiplies ``g``
by each feature's lift (rate / g), as naive Bayes would, and is capped at 1. **Learned evidence
needs support**: a feature counts only once ``MIN_SUPPORT`` (2) rated pages had it, and one page
moves its rate by a tenth of the way at most, so one relevant page does not send the crawl after
every URL sharing a word or a directory with it (on sqlite3-doc one relevant ``c3ref/wal_hook``
page would make every ``c3ref/*hook*`` link a favourite; the crawl re-scores queued links as it
learns, ``expected()``, but a slice at a time, so a mistake still costs fetches). Before
anything is learned every link expects ``g`` (the learner then changes no order). Both tables
are bounded (oldest forgotten first).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from typing import TypeVar

from crawler.focus.relevance.text import url_words

__all__ = ["LinkLearner"]

log = logging.getLogger(__name__)

V = TypeVar("V")

SMOOTHING = 10.0  # pseudo-pages at the crawl's mean relevance behind every feature's rate
MIN_SUPPORT = 2  # rated pages a feature needs before it counts
PRIOR_MEAN = 0.1  # the crawl's mean relevance before any page is rated (weighs one page)


def _forget_oldest(table: dict[int, V], capacity: int) -> None:
    while len(table) >= capacity:
        del table[next(iter(table))]


class LinkLearner:
    """Online relevance rates of URL features (see module doc); at most `memory` URLs and
    `memory` features remembered."""

    __slots__ = ("_pending", "_stats", "memory", "observed", "total")

    def __init__(self, memory: int = 100_000) -> None:
        self.memory = memory
        self.observed = 0  # pages learned from
        self.total = PRIOR_MEAN  # their relevance sum (with the prior's one page)
        self._stats: dict[int, list[float]] = {}  # feature -> [pages, relevance sum]
        self._pending: dict[int, tuple[int, ...]] = {}  # hash(URL) -> its features

    @staticmethod
    def features(url: str, words: Sequence[str] | None = None) -> tuple[int, ...]:
        """The features of a URL: its directory and its path's words (`words`, if the caller
        has them already), hashed."""
        rest = url.split("://", 1)[-1].split("?", 1)[0].split("#", 1)[0]
        slash = rest.find("/")
        path = rest[slash:] if slash >= 0 else "/"
        directory = path[: path.rfind("/") + 1]
        found = {hash("d:" + directory)}
        found.update(hash("w:" + w) for w in (url_words(url) if words is None else words))
        return tuple(found)

    @property
    def mean(self) -> float:
        """The mean relevance of the pages learned from (with the prior)."""
        return self.total / (self.observed + 1)

    def expect(
        self, url: str, words: Sequence[str] | None = None, anchor: Iterable[str] = ()
    ) -> float:
        """The relevance expected of the page behind `url` (0..1); remembers its features.
        `words`: the URL's words (:func:`crawler.focus.relevance.text.url_words`), if known;
        `anchor`: the stems of the link's anchor text."""
        feats = self.features(url, words)
        if anchor:
            feats += tuple({hash("a:" + w) for w in anchor})
        key = hash(url)
        if key not in self._pending:
            _forget_oldest(self._pending, self.memory)
            self._pending[key] = feats
        return self._expected(feats)

    def expected(self, url: str) -> float | None:
        """The relevance expected of the page behind a URL asked about before (by `expect`),
        with what is learned now; None if its features are not remembered."""
        feats = self._pending.get(hash(url))
        return None if feats is None else self._expected(feats)

    def expected_many(self, urls: Iterable[str]) -> list[float | None]:
        """`expected` of each URL, each feature's lift computed once for all of them (a
        re-scoring round asks about thousands of URLs sharing directories and words)."""
        mean, stats, pending = self.mean, self._stats, self._pending
        lifts: dict[int, float] = {}
        out: list[float | None] = []
        for url in urls:
            feats = pending.get(hash(url))
            if feats is None:
                out.append(None)
                continue
            lift = 0.0
            for f in feats:
                value = lifts.get(f)
                if value is None:
                    value = lifts[f] = self._lift(stats.get(f), mean)
                lift += value
            out.append(min(1.0, mean * math.exp(min(lift, 50.0))))
        return out

    @staticmethod
    def _lift(seen: list[float] | None, mean: float) -> float:
        """A feature's log-lift (0.0 until it has MIN_SUPPORT pages)."""
        if seen is None or seen[0] < MIN_SUPPORT:
            return 0.0
        rate = (seen[1] + SMOOTHING * mean) / (seen[0] + SMOOTHING)
        return math.log(max(rate, 1e-3) / mean)

    def _expected(self, feats: tuple[int, ...]) -> float:
        mean, stats, lift = self.mean, self._stats, 0.0
        for f in feats:
            lift += self._lift(stats.get(f), mean)
        return min(1.0, mean * math.exp(min(lift, 50.0)))

    def moved(self, url: str, target: str) -> None:
        """`url` redirected to `target`: the features remembered for `url` wait for `target`'s
        page (unless a link to `target` was scored itself)."""
        feats = self._pending.pop(hash(url), None)
        key = hash(target)
        if feats is not None and key not in self._pending:
            _forget_oldest(self._pending, self.memory)
            self._pending[key] = feats

    def observe(self, url: str, relevance: float) -> None:
        """Learn from a rated page (a no-op unless some link to `url` was scored)."""
        feats = self._pending.pop(hash(url), None)
        if feats is None:
            return
        self.observed += 1
        self.total += relevance
        stats = self._stats
        for f in feats:
            seen = stats.get(f)
            if seen is None:
                _forget_oldest(stats, self.memory)
                stats[f] = [1.0, relevance]
            else:
                seen[0] += 1.0
                seen[1] += relevance

    def __repr__(self) -> str:
        return (
            f"LinkLearner(observed={self.observed}, mean={self.mean:.3f}, "
            f"features={len(self._stats)}, pending={len(self._pending)})"
        )
