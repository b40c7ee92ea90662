"""TopicScorer: a page's relevance to some keywords, and a link's priority, for best-first crawling.

The model (a focused crawler in the sense of Chakrabarti, van den Berg & Dom, "Focused crawling: a
new approach to topic-specific Web resource discovery", WWW 1999: rate each fetched page, and
expand the most promising links first):

**Terms.** The keywords ("replication standby", or several phrases) are split into words,
case-folded and stemmed (Snowball English, :mod:`crawler.focus.relevance.text`); stop words are
dropped unless nothing else is left. Each distinct stem is a query term *t*.

**Page relevance** (0..1) is a BM25F-style score (Robertson & Zaragoza, "The Probabilistic
Relevance Framework: BM25 and Beyond", 2009). A term's frequency is the weighted sum of its counts
in the page's fields, ``tf = 4·title + 2·headings + body``; it saturates as
``s = tf / (tf + k1·(1 - b + b·len/avglen))`` with ``k1 = 2`` (the top of the usual 1.2..2:
one mention is not yet "about") and ``b = 0.75``, where ``len`` is
the body's length and ``avglen`` the mean length of the pages rated so far (so repeating a word
has a diminishing effect, and a long page needs more occurrences than a short one). Terms are
weighted by an IDF learned online from the pages the crawl has rated:
``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` over ``N`` pages of which ``df`` contained the
term, with a prior of 10 pages of which 1 did (so all terms weigh the same at the start, and a
term found on most pages of the site weighs little later). The relevance is the IDF-weighted mean
of the saturations, times the share of the query's weight present at all (a soft AND, Lucene's
"coordination factor"): ``rel = coord · Σ idf·s / Σ idf``. Each term present a few times in a
page of ordinary length gives about 0.5: **the default threshold** (what counts as a relevant
page, and the harvest rate's numerator) **is 0.5**; a page with none of the terms scores 0, a page
full of them approaches 1. The statistics are bounded: one counter per query term, one mean.

**Link priority** (about -0.6..1.2; only the order matters) is a weighted sum of five pieces of
evidence, less a depth penalty:

- its anchor text (0.35): the IDF-weighted share of the query terms in the anchor;
- the words of its URL (0.15): the same over its path and query split on punctuation and camelCase;
- the text around it (0.15): the saturated term frequencies of its enclosing block (the link
  context of Pant & Srinivasan, "Link contexts in classifier-guided topical crawlers", 2006);
- its parent's *potential* (0.2): the parent page's relevance, or, when that page is less
  relevant than its own parent, a decayed share (0.25) of the potential inherited from that
  parent, as in Menczer's shark search (Hersovici et al., "The shark-search algorithm", 1998):
  a link from a relevant page is promising even if its anchor says nothing, and a path that has
  just passed through an irrelevant page keeps part of its promise (tunneling). As the *width*
  of De Bra & Post's fish search ("Information retrieval in the World-Wide Web", 1994) limits
  the children of a relevant page that inherit its promise, only its first 10 new links get the
  whole potential, the n-th after them 10/n of it: a relevant hub (an index, a site map) linking
  to the whole site does not flood the queue;
- what the crawl has learned of URLs like it (0.3): the relevance expected of the page by
  :class:`crawler.focus.relevance.learn.LinkLearner` (rates of URL directories and words, after
  Aggarwal et al., "Intelligent crawling on the World Wide Web with arbitrary predicates", 2001),
  less the crawl's mean relevance, so that it is 0 until something is learned; a feature counts
  only once two rated pages had it, and its rate is smoothed by 10 pseudo-pages, so one relevant
  page does not outrank breadth-first order for every URL that shares a word with it (a queued
  link's learned evidence is only brought up to date a slice at a time, see below);

and a depth penalty (0.05 per level, at most 0.3): among links without evidence the shallower
goes first, so a focused crawl falls back to breadth-first order (on documentation sites the
shallow index pages are rich in every topic). Potentials and the learner's features are
remembered per URL (64-bit hashes, not strings) in tables capped at `memory` entries (oldest
forgotten first).

A link to a URL still queued is scored too (``crawler.admission.gate``), so ``link()`` may see
several links to one URL: the URL's *fixed evidence* (the weighted sum of all but the learned piece)
is that of its best link so far (:mod:`crawler.focus.relevance.evidence`; an in-link bonus on top,
or the best of each piece over its links, tried on the focus benchmark, did not raise the held-out
topics' harvest), and its priority that evidence plus what is learned now. **Re-scoring:**
``rescore(n)`` gives the priorities now of n URLs linked and not yet rated, round robin; the
crawl (``crawler.engine.focus``) raises or lowers the queued ones to match every 10 pages, so a URL
queued before the learner knew better moves up or down; ``forget(url)`` drops one no longer
queued.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from crawler.focus.relevance.evidence import EvidenceTable
from crawler.focus.relevance.learn import LinkLearner
from crawler.focus.relevance.text import (
    STOPWORDS,
    Stems,
    prefix_pattern,
    term_counts,
    url_words,
    words,
)
from crawler.focus.scoring import Link, PageText

__all__ = ["DEFAULT_THRESHOLD", "TopicScorer"]

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.5
K1 = 2.0
B = 0.75
TITLE_WEIGHT = 4
HEADINGS_WEIGHT = 2
PRIOR_PAGES = 10  # the IDF prior: PRIOR_PAGES pages seen, PRIOR_DF of them with each term
PRIOR_DF = 1
PRIOR_LENGTH = 4000.0  # the mean body length (characters) before any page is rated
W_ANCHOR = 0.35
W_URL = 0.15
W_CONTEXT = 0.15
W_PARENT = 0.2
W_LEARNED = 0.3
DECAY = 0.25  # the share of a parent's potential an irrelevant page passes on (shark search)
DEPTH_PENALTY = 0.05
MAX_DEPTH_PENALTY = 0.3
WIDTH = 10  # links of a page inheriting its full potential; the n-th after: WIDTH/n of it


class TopicScorer:
    """Relevance of pages and priority of links for a topic given by keywords (see module doc)."""

    __slots__ = (
        "_df",
        "_evidence",
        "_fanout",
        "_inherited",
        "_learner",
        "_length_sum",
        "_pattern",
        "_potential",
        "_stems",
        "_weights",
        "memory",
        "pages",
        "terms",
        "threshold",
    )

    def __init__(
        self,
        keywords: Sequence[str],
        *,
        threshold: float = DEFAULT_THRESHOLD,
        memory: int = 100_000,
    ) -> None:
        if isinstance(keywords, str):
            keywords = [keywords]
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"relevance threshold must be within 0..1, not {threshold!r}")
        if memory < 1:
            raise ValueError(f"memory must be at least 1, not {memory!r}")
        self._stems = Stems()
        all_words = [w for k in keywords for w in words(k)]
        if not all_words:
            raise ValueError(f"focus keywords have no words: {list(keywords)!r}")
        kept = [w for w in all_words if w not in STOPWORDS] or all_words
        self.terms: tuple[str, ...] = tuple(dict.fromkeys(self._stems.stems(kept)))
        self.threshold = threshold
        self.memory = memory
        self.pages = 0  # pages rated so far
        self._df = dict.fromkeys(self.terms, 0)
        self._length_sum = 0.0
        self._pattern = prefix_pattern(self.terms)
        self._weights = self._idf()
        self._potential: dict[int, float] = {}  # hash(page URL) -> its potential
        self._inherited: dict[int, float] = {}  # hash(link URL) -> its parent's potential
        self._learner = LinkLearner(memory)
        self._fanout: dict[int, int] = {}  # hash(page URL) -> its links scored so far
        self._evidence = EvidenceTable(memory)  # linked URLs not rated yet -> their evidence

    def _idf(self) -> dict[str, float]:
        """Each term's IDF weight, normalized to sum to 1."""
        n = self.pages + PRIOR_PAGES
        idf = {}
        for term, df in self._df.items():
            d = df + PRIOR_DF
            idf[term] = math.log(1.0 + (n - d + 0.5) / (d + 0.5))
        total = sum(idf.values())
        return {t: w / total for t, w in idf.items()}

    def _counts(self, text: str) -> dict[str, int]:
        return term_counts(text, self._pattern, frozenset(self.terms), self._stems)

    def page(self, text: PageText) -> float:
        """The relevance of a fetched page, 0..1 (>= threshold: relevant); learns IDF from it."""
        title = self._counts(text.title) if text.title else {}
        headings = self._counts(text.headings) if text.headings else {}
        body = self._counts(text.body)
        length = float(len(text.body))
        mean = (self._length_sum + PRIOR_LENGTH) / (self.pages + 1)
        norm = K1 * (1.0 - B + B * length / mean)
        weights = self._weights
        score = present = 0.0
        for term in self.terms:
            tf = (
                TITLE_WEIGHT * title.get(term, 0)
                + HEADINGS_WEIGHT * headings.get(term, 0)
                + body.get(term, 0)
            )
            if tf:
                score += weights[term] * tf / (tf + norm)
                present += weights[term]
                self._df[term] += 1
        relevance = score * present
        self.pages += 1
        self._length_sum += length
        self._weights = self._idf()
        self._learner.observe(text.url, relevance)
        self._evidence.pop(text.url)
        key = hash(text.url)
        inherited = self._inherited.pop(key, 0.0)
        self._remember(self._potential, key, max(relevance, DECAY * inherited))
        return relevance

    def _share(self, stems: set[str]) -> float:
        """The IDF-weighted share of the query terms among some stems."""
        return sum(w for t, w in self._weights.items() if t in stems)

    def link(self, link: Link) -> float:
        """The priority of a new link, about -0.6..1.2 (higher: fetched sooner)."""
        stem = self._stems.stem
        anchor_stems = {stem(w) for w in words(link.anchor)} if link.anchor else set()
        anchor = self._share(anchor_stems)
        in_url = url_words(link.url)
        url = self._share({stem(w) for w in in_url})
        context = 0.0
        if link.context:
            for term, tf in self._counts(link.context).items():
                context += self._weights[term] * tf / (tf + K1)
        parent = self._potential.get(hash(link.parent_url))
        if parent is None:
            parent = link.parent_relevance or 0.0
        self._remember(self._inherited, hash(link.url), parent)
        if WIDTH:  # the fish search's width (see the module docstring)
            parent_key = hash(link.parent_url)
            n = self._fanout.get(parent_key, 0) + 1
            if n == 1 and len(self._fanout) >= 64:
                self._fanout.clear()
            self._fanout[parent_key] = n
            if n > WIDTH:
                parent *= WIDTH / n
        penalty = min(MAX_DEPTH_PENALTY, DEPTH_PENALTY * link.depth)
        fixed = W_ANCHOR * anchor + W_URL * url + W_CONTEXT * context + W_PARENT * parent - penalty
        best = self._evidence.add(link.url, link.key, fixed)  # of the URL's links so far
        return self._priority(best, self._learner.expect(link.url, in_url, anchor_stems))

    def _priority(self, fixed: float, expected: float | None) -> float:
        """A link's priority: its fixed evidence and what is learned of its URL now."""
        learned = 0.0 if expected is None else expected - self._learner.mean
        return fixed + W_LEARNED * learned

    def rescore(self, size: int) -> list[tuple[str, str, float]]:
        """(url, key, priority now) of up to `size` URLs linked and not rated yet, round robin
        over them (see :mod:`crawler.focus.relevance.evidence`): their priorities with what the
        crawl has learned since their links were scored. The caller re-prioritizes the ones still
        queued and passes the others to `forget`."""
        batch = self._evidence.batch(size)
        expected = self._learner.expected_many([u for u, _, _ in batch])
        priority = self._priority
        return [(u, k, priority(f, e)) for (u, k, f), e in zip(batch, expected, strict=True)]

    def moved(self, url: str, target: str) -> None:
        """A link's URL redirected to `target`: the learner rates its features by `target`."""
        self._learner.moved(url, target)

    def forget(self, url: str) -> None:
        """Stop rescoring a URL (no longer queued: in flight, refused, or dropped)."""
        self._evidence.pop(url)

    def _remember(self, table: dict[int, float], key: int, value: float) -> None:
        if key in table:
            table[key] = max(table[key], value)
            return
        if len(table) >= self.memory:
            del table[next(iter(table))]  # the oldest entry
        table[key] = value

    def __repr__(self) -> str:
        return (
            f"TopicScorer(terms={self.terms!r}, threshold={self.threshold}, pages={self.pages}, "
            f"remembered={len(self._potential)}+{len(self._inherited)})"
        )
