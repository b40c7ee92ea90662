"""`Crawler.forget` in the crawl state: a forgotten URL stays admissible across a resume.

Forgetting a done URL drops its journal row (its validators with it) and its fingerprint from the
``seen`` table (the exact tier), and commits: a resume neither fetches it nor finds it seen. The
Sieve is restored from its last snapshot (`crawler.state.db.restore_sieve`), which may predate
the forget: so the key of a row the snapshot covers (its id at most the snapshot's ``upto``) is
written to the ``forgotten`` table, and removed from the snapshot when it is loaded. The next
snapshot, taken from a filter the key has left, empties the table.

Two rules keep that exact:

- A row id at most ``upto`` is never given to a new row: SQLite numbers a row after the largest
  id left, so once a forget has dropped the rows at the top, the next rows are numbered above
  ``upto`` explicitly (`first_free_id`): a key admitted after the snapshot is always replayed.
- A URL forgotten while it is pending (admitted, not yet done: the result the consumer holds
  during the `async for` body is one) keeps its row until it is done, so that a crash still
  fetches it; it is forgotten then (`CrawlState.completed`). If a link admits it again in between,
  its row stays pending instead (it is queued again).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from crawler.sieve import fingerprint

__all__ = ["Forgetting", "Found", "first_free_id", "forget_key"]

Found = str  # "done" (forgotten), "pending" (to forget once done) or "" (not in the journal)


def snapshot_upto(db: sqlite3.Connection) -> int:
    """The last journal row the Sieve snapshot covers (0: no snapshot)."""
    row = db.execute("SELECT upto FROM sieve WHERE id = 0").fetchone()
    return 0 if row is None else int(row[0])


def first_free_id(db: sqlite3.Connection) -> int:
    """The id the next journal row must take when SQLite would give it one the Sieve snapshot
    covers (a forget dropped the rows at the top), else 0 (SQLite's own numbering is right)."""
    upto = snapshot_upto(db)
    top = db.execute("SELECT COALESCE(MAX(id), 0) FROM urls").fetchone()[0]
    return upto + 1 if top < upto else 0


def forget_key(db: sqlite3.Connection, key: str) -> Found:
    """Drop `key`'s journal row if it is done (see the module's doc), in the caller's
    transaction; what the journal had of it."""
    fp = fingerprint(key)
    row = db.execute("SELECT id, done FROM urls WHERE fp = ?", (fp,)).fetchone()
    if row is None:
        db.execute("DELETE FROM seen WHERE fp = ?", (fp,))  # (a seen key the journal lacks)
        return ""
    if not row[1]:
        return "pending"
    db.execute("DELETE FROM urls WHERE id = ?", (row[0],))
    db.execute("DELETE FROM seen WHERE fp = ?", (fp,))
    if row[0] <= snapshot_upto(db):  # the first key of that id is the one the snapshot holds
        db.execute("INSERT OR IGNORE INTO forgotten (id, key) VALUES (?, ?)", (row[0], key))
    return "done"


class Forgetting:
    """One open state's forgets: the URLs forgotten while pending (`CrawlState.forget`), and
    the id the next journal row must take (0: SQLite's own numbering)."""

    __slots__ = ("_dropping", "_requeued", "next_id")

    def __init__(self, db: sqlite3.Connection) -> None:
        self._dropping: set[int] = set()  # forgotten while pending: forgotten once done
        self._requeued: set[int] = set()  # those admitted again meanwhile: still to fetch
        self.next_id = first_free_id(db)

    def forget(self, db: sqlite3.Connection, key: str) -> bool:
        """Forget `key` (in the caller's transaction); True when the journal had it."""
        found = forget_key(db, key)
        if found == "pending":
            self._dropping.add(fingerprint(key))
        self.next_id = self.next_id or first_free_id(db)
        return bool(found)

    def admitted(self, fp: int) -> None:
        if self._dropping and fp in self._dropping:
            self._dropping.discard(fp)  # queued again: its row stays pending
            self._requeued.add(fp)

    def done(self, fp: int) -> int:
        """The ``done`` value of a completed URL: 0 when it is queued again."""
        return 0 if self._requeued and fp in self._requeued else 1

    def completed(self, db: sqlite3.Connection, key: str, fp: int) -> None:
        """After a URL's row was marked done: forget it now if it was forgotten while pending."""
        self._requeued.discard(fp)
        if self._dropping and fp in self._dropping:
            self._dropping.discard(fp)
            forget_key(db, key)
            self.next_id = self.next_id or first_free_id(db)

    def insert_first(self, db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
        """When a forget dropped the top rows, insert the first of `rows` (taken from the
        list) numbered above the snapshot's; the rest then follow it."""
        if self.next_id and rows:
            db.execute(
                "INSERT OR IGNORE INTO urls "
                "(id, fp, key, url, depth, parent, redirects, sitemap, priority) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (self.next_id, *rows.pop(0)),
            )
            self.next_id = first_free_id(db)
