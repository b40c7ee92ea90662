"""A crawl's limits across a resume: `max_pages` and `max_depth` may change, nothing is lost.

What defines a crawl (its scope, URL rules, Sieve: `crawler.engine.components.settings`) is locked
once its state is written; its limits (`crawler.state.db.LIMITS`: ``crawl.max_pages``,
``crawl.max_depth``) are how a crawl is grown step by step, so a resume may raise, lower, add or
remove them. For that, a crawl with a state keeps every link a limit refused, in the state's
``kept`` table (`KeptLinks`): once per URL (by its key's 64-bit fingerprint), in the order
found, with its depth, parent, redirect hops and priority. These are:

- a page's new links once `max_pages` URLs were admitted (refused before the Sieve), and those
  refused while room ran out in the middle of a page (taken in by the Sieve: which is why a
  kept link is offered again whatever the Sieve says, unless the journal has it);
- a redirect target or a sitemap URL refused by `max_pages`;
- a link found deeper than `max_depth` whose other scope checks pass (a trap URL refused for
  its length or repeats as well is not kept: a larger depth would not admit it).

A resume whose limits admit more than the previous run's (`LimitChange.grows`) offers the kept
links that the journal does not have (`crawler.admission.kept.offer_kept`), in the order they were
found, through the scope (the new depth, the per-host cap) and the page cap, before the seeds; they
are journaled like any admitted URL. One refused again stays kept for a later resume. So a 10-page
crawl resumed with ``--max-pages 20`` admits the links its first pages found past the tenth, as a
20-page crawl would have. A lowered `max_pages` admits nothing more once that many URLs were
admitted, but the URLs already admitted are all fetched (a state never drops an admitted URL);
a lowered `max_depth` refuses deeper links from then on (kept). In a focused crawl `max_pages`
is a fetch budget (`crawler.focus.budget`), not a limit on admissions, so only its depth refusals
are kept: they were refused before they were scored, and are scored when offered again, from their
URL and depth (their anchor text is not kept; the scorer has learned only what the resumed
crawl read so far). `crawler.admission.kept.notes` is what the `crawl` command says of each
changed limit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from crawler.frontier.entries import Entry
from crawler.sieve import fingerprint
from crawler.state.db import LIMITS

__all__ = ["KeptLinks", "LimitChange", "limit_changes"]

BATCH = 1_000  # kept links read (and scored) at a time


@dataclass(frozen=True, slots=True)
class LimitChange:
    """A limit (``max_pages``, ``max_depth``; 0 is none) changed since the previous run."""

    name: str
    old: int
    new: int

    @property
    def grows(self) -> bool:
        """Whether the new limit admits more than the old one."""
        return bool(self.old) and (not self.new or self.new > self.old)

    def __str__(self) -> str:
        return f"{self.name} {_shown(self.old)} -> {_shown(self.new)}"


def _shown(limit: int) -> str:
    return str(limit) if limit else "0 (none)"


def limit_changes(saved: Mapping[str, Any], settings: Mapping[str, Any]) -> list[LimitChange]:
    """The limits whose values differ between the `saved` settings and these `settings` (a
    limit on one side only is not a change of value: `crawler.state.db` refuses it)."""
    return [
        LimitChange(key.partition(".")[2], int(saved[key] or 0), int(settings[key] or 0))
        for key in LIMITS
        if key in saved and key in settings and saved[key] != settings[key]
    ]


class KeptLinks:
    """The state's ``kept`` table: links refused by a limit, written with the journal (each
    `keep` is buffered, and `write` runs in the state's transaction with the admitted URLs:
    after a crash, the page whose links were lost is not done either, and is fetched again)."""

    __slots__ = ("_db", "_rows")

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._rows: list[tuple[Any, ...]] = []

    def keep(self, entry: Entry, *, scored: bool = True) -> None:
        """Keep `entry`, refused by a limit (`scored` False: its priority is still to be given
        by a focused crawl's score function)."""
        url = None if entry.url == entry.key else entry.url
        self._rows.append((fingerprint(entry.key), entry.key, url, entry.depth, entry.parent,
                           entry.redirects, int(entry.sitemap),
                           entry.priority if scored else None))  # fmt: skip

    def write(self) -> None:
        if self._rows:
            self._db.executemany(
                "INSERT OR IGNORE INTO kept (fp, key, url, depth, parent, redirects, sitemap, "
                "priority) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self._rows,
            )
            self._rows.clear()

    _WAITING = (
        "FROM kept k WHERE (:depth = 0 OR k.depth <= :depth) AND k.depth > :deeper "
        "AND NOT EXISTS (SELECT 1 FROM urls u WHERE u.fp = k.fp)"
    )

    def waiting(self, max_depth: int) -> Iterator[list[tuple[Entry, bool]]]:
        """The kept links not admitted since, within `max_depth` (0: any), in the order they
        were found, in batches: (entry, whether it has its priority)."""
        self.write()
        last = 0
        while True:
            rows = self._db.execute(
                "SELECT k.id, k.key, k.url, k.depth, k.parent, k.redirects, k.sitemap, "
                f"k.priority {self._WAITING} AND k.id > :last ORDER BY k.id LIMIT {BATCH}",
                {"depth": max_depth, "deeper": -1, "last": last},
            ).fetchall()  # whole: admitting them writes to the seen table meanwhile
            if not rows:
                return
            last = rows[-1][0]
            yield [
                (Entry(url=url or key, key=key, depth=depth, parent=parent, redirects=redirects,
                       sitemap=bool(sitemap), priority=float(priority or 0.0)),
                 priority is not None)
                for _, key, url, depth, parent, redirects, sitemap, priority in rows
            ]  # fmt: skip

    def count(self, max_depth: int = 0, deeper: int = -1) -> int:
        """How many kept links `waiting` would give (found deeper than `deeper`, if given)."""
        self.write()
        row = self._db.execute(
            f"SELECT COUNT(*) {self._WAITING}", {"depth": max_depth, "deeper": deeper}
        ).fetchone()
        return int(row[0])

    def __len__(self) -> int:
        self.write()
        return int(self._db.execute("SELECT COUNT(*) FROM kept").fetchone()[0])

    def __repr__(self) -> str:
        return f"<KeptLinks buffered={len(self._rows)}>"
