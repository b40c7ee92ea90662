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

from crawler.admission.gate import Admission
from crawler.config.load import Config
from crawler.engine.components import make_scorer
from crawler.errors import ScoreError
from crawler.focus.scoring import FollowsRedirects, PageText, Rescorer, ScoreFn, Scorer
from crawler.frontier.entries import Entry
from crawler.output.results import CrawlStats
from crawler.parse.links import Page

__all__ = ["Focus"]

RESCORE_EVERY = 10  # pages rated between two rounds of re-scoring queued URLs (0: never)
RESCORE_SIZE = Admission.RESCORE_SIZE  # queued URLs re-scored per round (round robin)


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
        their links were scored (`Admission.rescore`: the gate knows its frontier, in memory or
        shared through Redis); returns how many changed."""
        return await admission.rescore(rescorer)

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
