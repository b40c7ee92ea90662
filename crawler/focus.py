"""A focused crawl's work on each fetched page: its relevance, and its new links' priorities.

The engine hands each parsed HTML page (read with its links' anchors and, with a topic scorer,
its text) to `Focus.read`: the `Scorer` rates the page's relevance (counted for the harvest
rate), then `Admission.scored_links` asks the score function (the user's ``score=fn``, else the
scorer's `link`) for the priority of each new link. Every `RESCORE_EVERY` pages rated, a
scorer that learns as it goes (a `Rescorer`: the built-in topic scorer, when it ranks the links)
scores a slice of the queued URLs again (`RESCORE_SIZE`, round robin), and their priorities in
the frontier are raised or lowered to match (`Focus.rescore`): a link queued before the scorer
learned that URLs like it lead to relevant pages (or do not) moves up (or down).
"""

from __future__ import annotations

from crawler.admission import Admission
from crawler.components import make_scorer
from crawler.config import Config
from crawler.entries import Entry
from crawler.errors import ScoreError
from crawler.links import Page
from crawler.results import CrawlStats
from crawler.scoring import FollowsRedirects, PageText, Rescorer, ScoreFn, Scorer

__all__ = ["Focus"]

RESCORE_EVERY = 10  # pages rated between two rounds of re-scoring queued URLs (0: never)
RESCORE_SIZE = 2_000  # queued URLs re-scored per round (round robin over all of them)
RESCORE_SIZE_SHARED = 500  # per round in a crawl shared through Redis (a script call each)


class Focus:
    """The score function and topic scorer of a crawl (at least one of them)."""

    __slots__ = ("_rated", "rescorer", "score", "scorer", "stats", "text")

    @classmethod
    def build(cls, config: Config, score: ScoreFn | None, stats: CrawlStats) -> Focus | None:
        """The Focus of a crawl with this config and score function; None when unfocused."""
        scorer = make_scorer(config)
        return None if score is None and scorer is None else cls(score, scorer, stats)

    def __init__(self, score: ScoreFn | None, scorer: Scorer | None, stats: CrawlStats) -> None:
        if score is None:
            if scorer is None:
                raise ValueError("a Focus needs a score function or a scorer")
            score = scorer.link
        self.score: ScoreFn = score
        self.scorer = scorer
        self.stats = stats
        self.text = scorer is not None  # whether pages' text is read (for their relevance)
        # the scorer ranking links and able to rank them again as it learns (see `rescore`)
        ranks = scorer is not None and score == scorer.link and isinstance(scorer, Rescorer)
        self.rescorer: Rescorer | None = scorer if ranks else None  # type: ignore[assignment]
        self._rated = 0

    async def read(
        self, entry: Entry, page: Page, admission: Admission, status: int
    ) -> tuple[float | None, int]:
        """(the page's relevance or None, links admitted) of one fetched page. Only pages served
        with a success status are rated (an HTML error page says nothing of the topic)."""
        relevance = None
        if self.scorer is not None and page.text is not None and status < 400:
            relevance = self.relevance(self.scorer, page.text)
        if not page.is_html:
            return relevance, 0
        new = await admission.scored_links(
            entry, page.links, page.base, self.score, anchors=page.anchors, title=page.title,
            relevance=relevance,
        )  # fmt: skip
        if self.rescorer is not None and relevance is not None and RESCORE_EVERY:
            self._rated += 1
            if self._rated % RESCORE_EVERY == 0:
                await self.rescore(self.rescorer, admission)
        return relevance, new

    def moved(self, url: str, target: str) -> None:
        """A fetched URL redirected to `target` (see `FollowsRedirects`)."""
        if self.rescorer is not None and isinstance(self.rescorer, FollowsRedirects):
            self.rescorer.moved(url, target)

    async def rescore(self, rescorer: Rescorer, admission: Admission) -> int:
        """Re-prioritize a slice of the queued URLs with what the scorer has learned since
        their links were scored (raised or lowered; a raise journaled with a state, a lowering
        not: a resumed crawl's scorer starts over anyway); returns how many changed. URLs no
        longer queued (fetched, in flight, refused) are forgotten by the scorer. In a crawl
        shared through Redis, a smaller slice in one round trip, and only raised: a URL may be
        queued at the priority of another process's better link, which this scorer never saw."""
        if admission.shared is not None:
            items = rescorer.rescore(RESCORE_SIZE_SHARED)
            befores = await admission.shared.frontier.set_priorities(items, lower=True)
            changed = 0
            for (url, _, priority), was in zip(items, befores, strict=True):
                if was is None:
                    rescorer.forget(url)
                else:
                    changed += priority != was
            return changed
        frontier, state = admission.frontier, admission.state
        assert frontier is not None
        changed = 0
        for url, key, priority in rescorer.rescore(RESCORE_SIZE):
            was = frontier.set_priority(url, key, priority)
            if was is None:
                rescorer.forget(url)
            elif priority != was:
                changed += 1
                if state is not None and priority > was:
                    state.reprioritized(key, priority)
        return changed

    def relevance(self, scorer: Scorer, text: PageText) -> float:
        """The scorer's relevance of a page, counted for the harvest rate."""
        try:
            value: object = scorer.page(text)
        except Exception as exc:
            raise ScoreError(
                f"the focus scorer raised {type(exc).__name__}: {exc} on page {text.url}"
            ) from exc
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise ScoreError(f"the focus scorer rated page {text.url} {value!r}: not a number")
        self.stats.scored += 1
        self.stats.relevant += value >= scorer.threshold
        return float(value)

    def __repr__(self) -> str:
        return f"<Focus score={self.score!r} scorer={self.scorer!r}>"
