"""Offering the links a limit refused again, when a resumed crawl's limits grew.

The state keeps them (`crawler.state.limits.KeptLinks`, which says which and why); a resume
whose limits admit more offers those the journal does not have, in the order they were found,
through the scope and the page cap, before the seeds (`offer_kept`). `notes` is what the
`crawl` command says of each changed limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.focus.scoring import Link, ScoreFn, score_links
from crawler.frontier.entries import Entry

if TYPE_CHECKING:
    from crawler.admission.gate import Admission
    from crawler.state.crawlstate import CrawlState

__all__ = ["notes", "offer_kept"]


async def offer_kept(admission: Admission, state: CrawlState, score: ScoreFn | None) -> int:
    """Offer the kept links again when a limit grew (see the module's doc); how many were
    admitted. Those without a priority are scored by `score` (one skips: left kept)."""
    if not any(change.grows for change in state.limit_changes):
        return 0
    scope, stats, cap = admission.scope, admission.stats, admission.max_pages
    state.commit()  # the journal written: a kept link it has is not offered
    admitted = 0
    for batch in state.kept.waiting(scope.max_depth):
        unscored = [entry for entry, scored in batch if not scored]
        given: dict[str, float | None] = {}
        if unscored and score is not None:
            links = [Link(e.url, e.key, "", "", "", e.depth, e.parent or "", None, None)
                     for e in unscored]  # fmt: skip
            given = dict(zip([e.key for e in unscored], await score_links(score, links),
                             strict=True))  # fmt: skip
        for entry, scored in batch:
            if cap and stats.admitted >= cap:
                return admitted
            reason = scope.check(entry.key, entry.depth)
            if reason is not None and not (entry.sitemap and reason == "extension"):
                continue  # (a sitemap URL is often .gz) still too deep, or its host full
            if not scored and score is not None:
                priority = given[entry.key]
                if priority is None:
                    continue
                entry = Entry(entry.url, entry.key, entry.depth, entry.parent,
                              redirects=entry.redirects, sitemap=entry.sitemap,
                              priority=priority)  # fmt: skip
            admission.dedup.add(entry.key)  # (maybe taken in already, when it was refused)
            admitted += admission.admit(entry)
    return admitted


def notes(state: CrawlState) -> list[str]:
    """One line per limit changed since the previous run, saying what the change does."""
    lines = []
    admitted = int((state.stats() or {}).get("admitted", 0))
    for change in state.limit_changes:
        line = f"resuming with {change}"
        if change.name == "max_pages" and change.grows:
            more = f"up to {change.new - admitted:,} more" if change.new else "no limit"
            line += f" ({admitted:,} URLs admitted so far, {more})"
            if admitted >= change.old and (kept := state.kept.count(state.max_depth)):
                line += f"; it was reached: {kept:,} links kept for it are offered again"
        elif change.name == "max_pages":
            line += (
                f": {admitted:,} URLs were admitted already, so no more is; those not fetched "
                "yet still are"
                if admitted >= change.new
                else f" ({admitted:,} URLs admitted so far, up to {change.new - admitted:,} more)"
            )
        elif change.grows:
            kept = state.kept.count(change.new, deeper=change.old)
            line += f": {kept:,} links found deeper than {change.old} are offered again"
        else:
            line += (f": links deeper than {change.new} are refused from now on (kept for a "
                     "larger limit); URLs deeper already admitted are still fetched")  # fmt: skip
        lines.append(line)
    return lines
