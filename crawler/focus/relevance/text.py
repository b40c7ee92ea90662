"""Text for the topic scorer: case-folded word tokens, an English stemmer, URL words.

Words are runs of letters and digits (``\\w`` less the underscore) of the case-folded text
(:meth:`str.casefold`, so "Straße" and "STRASSE" meet). Each word is reduced by the Snowball
English stemmer (Porter2, the `snowballstemmer` package: pure Python) so that "replication",
"replicas" and "replicated" count as one term. Stemming costs ~40 µs a word in pure Python, so
stems are memoized in a bounded table (:class:`Stems`) and a page is never stemmed word by word:
:func:`term_counts` finds only the words that *could* stem to a topic term (a regex of the
terms' prefixes) and stems those.

URL words (:func:`url_words`) are the runs of ASCII letters and digits of a URL's path and query,
split on camelCase humps too ("getAddrInfo" -> get, addr, info); the host is left out (on one
site it says nothing).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import snowballstemmer

__all__ = ["STOPWORDS", "Stems", "fold", "prefix_pattern", "term_counts", "url_words", "words"]

log = logging.getLogger(__name__)

WORD = re.compile(r"[^\W_]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

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
    return WORD.findall(fold(text))


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
    """A regex finding every lower-case word that may stem to one of `terms` (and some more).

    A Snowball stem is its word with an ending removed, or changed in its last letter ("happy" ->
    "happi"), so each word stemming to a term begins with the term less its last letter (at
    least three letters kept). The pattern has no word-boundary test, which makes it several
    times faster: :func:`term_counts` checks the boundary of each (rare) match.
    """
    prefixes = sorted({t if len(t) <= 3 else t[:-1] for t in terms if t}, key=len, reverse=True)
    if not prefixes:
        return re.compile(r"(?!)")
    alternatives = "|".join(re.escape(p) for p in prefixes)
    return re.compile(rf"(?:{alternatives})[^\W_]*")


def fold(text: str) -> str:
    """Case-folded text (:meth:`str.lower` for ASCII text, where it is the same and faster)."""
    return text.lower() if text.isascii() else text.casefold()


def term_counts(
    text: str, pattern: re.Pattern[str], terms: frozenset[str], stems: Stems
) -> dict[str, int]:
    """How often each of `terms` occurs (as a stem) in `text`, case-folded."""
    folded = fold(text)
    counts: dict[str, int] = {}
    for match in pattern.finditer(folded):
        start = match.start()
        if start and (folded[start - 1].isalnum()):
            continue  # inside a word
        stem = stems.stem(match.group())
        if stem in terms:
            counts[stem] = counts.get(stem, 0) + 1
    return counts


def url_words(url: str) -> list[str]:
    """The case-folded words of a URL's path and query (camelCase split), host left out."""
    rest = url.split("://", 1)[-1]
    slash = rest.find("/")
    if slash < 0:
        return []
    return [w.lower() for w in CAMEL.findall(rest, slash)]
