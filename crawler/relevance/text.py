"""Text for the topic scorer: case-folded word tokens, an English stemmer, URL words.

Words are runs of letters and digits (``\\w`` less the underscore) of the case-folded text
(:meth:`str.casefold`, so "Straße" and "STRASSE" meet). Each word is reduced by the Snowball
English stemmer (Porter2, the `snowballstemmer` package: pure Python) so that "replication",
"replicas" and "replicated" count as one term. Stemming costs ~40 µs a word in pure Python, so
stems are memoized in a bounded table (:class:`Stems`) and a page is never stemmed word by word:
:func:`term_counts` finds only the words that *could* stem to a topic term (a regex of the
terms' prefixes) and stems those.

URL words (:func:`url_words`) split a URL's path and query on ``/ - _ . = & ?`` and on camelCase
humps ("getAddrInfo" -> get, addr, info); the host is left out (on one site it says nothing).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import snowballstemmer

__all__ = ["STOPWORDS", "Stems", "term_counts", "url_words", "words"]

log = logging.getLogger(__name__)

WORD = re.compile(r"[^\W_]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
URL_SPLIT = re.compile(r"[/\-_.=&?;:,+%~!@$()*'\[\]]+")

# Words that carry no topic on their own: dropped from the keywords unless nothing else is left.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "in",
        "into",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "where",
        "which",
        "with",
    ]
)


def words(text: str) -> list[str]:
    """The case-folded words of a text, in order."""
    return WORD.findall(text.casefold())


class Stems:
    """A memoized Snowball English stemmer holding at most `capacity` words (then it starts over).

    >>> Stems().stem("Replication")
    'replic'
    """

    __slots__ = ("_cache", "_stemmer", "capacity")

    def __init__(self, capacity: int = 50_000) -> None:
        self.capacity = capacity
        self._cache: dict[str, str] = {}
        self._stemmer = snowballstemmer.stemmer("english")

    def stem(self, word: str) -> str:
        """The stem of one word (case-folded first)."""
        cache = self._cache
        found = cache.get(word)
        if found is None:
            found = str(self._stemmer.stemWord(word.casefold()))
            if len(cache) >= self.capacity:
                cache.clear()  # a crawl's vocabulary is mostly shared: refilling is cheap
            cache[word] = found
        return found

    def stems(self, text_words: Iterable[str]) -> list[str]:
        """The stems of some words."""
        return [self.stem(w) for w in text_words]

    def __repr__(self) -> str:
        return f"Stems(cached={len(self._cache)}, capacity={self.capacity})"


def prefix_pattern(terms: Iterable[str]) -> re.Pattern[str]:
    """A regex matching every case-folded word that may stem to one of `terms` (and some more).

    A Snowball stem is its word with an ending removed or changed in its last letter or two
    ("happy" -> "happi", "relational" -> "relat"), so each word stemming to a term begins with the
    term less its last two letters (at least two letters kept).
    """
    prefixes = sorted({t[: max(2, len(t) - 2)] for t in terms if t}, key=len, reverse=True)
    if not prefixes:
        return re.compile(r"(?!)")
    alternatives = "|".join(re.escape(p) for p in prefixes)
    return re.compile(rf"(?<![^\W_])(?:{alternatives})[^\W_]*")


def term_counts(
    text: str, pattern: re.Pattern[str], terms: frozenset[str], stems: Stems
) -> dict[str, int]:
    """How often each of `terms` occurs (as a stem) in the case-folded `text`."""
    counts: dict[str, int] = {}
    for word in pattern.findall(text.casefold()):
        stem = stems.stem(word)
        if stem in terms:
            counts[stem] = counts.get(stem, 0) + 1
    return counts


def url_words(url: str) -> list[str]:
    """The case-folded words of a URL's path and query (camelCase split), host left out."""
    rest = url.split("://", 1)[-1]
    slash = rest.find("/")
    if slash < 0:
        return []
    out: list[str] = []
    for part in URL_SPLIT.split(rest[slash:]):
        if part:
            out.extend(w.casefold() for w in CAMEL.findall(part) or [part])
    return out
