"""Crash-safe crawl state in one directory: ``DIR/state.sqlite`` (stdlib sqlite3, WAL mode).

What is kept, and when:

- ``urls``: a journal of every URL admitted to the frontier (its canonical key, the URL fetched
  when it differs, depth, parent, redirect hops, best-first priority) with ``done = 0``. A row
  is written when the URL is admitted; it is marked ``done = 1`` once its result has been handed
  to the consumer (and, for the CLI, written to the output). Each completion commits, together
  with everything admitted before it, so after a crash every admitted URL is either done or
  still pending, and only fetches that were in flight can be repeated. (A state written before
  the priority column existed gets it, all 0, when it is opened.) A queued URL whose priority a
  better link raised (``reprioritized``) gets its row's priority updated, batched like the rows.
  Each completion writes the URL's validators (ETag, Last-Modified: what `crawler.engine.recrawl`
  keeps of its response) and the crawl's stats, so a crash loses neither.
- ``seen``: the 64-bit fingerprints of every key the Sieve took in: the exact confirmation tier
  (`SeenStore`), consulted only when the Bloom filter says "seen".
- ``sieve``: a periodic snapshot of the Sieve's bytes and the last ``urls`` row it covers.
  Resuming loads the snapshot and replays only the rows written after it, so restart cost does
  not grow with the size of the crawl.
- ``content``: the content-dedup index (`crawler.content`): (simhash, content hash, URL) of every
  page with new content, in fetch order, written with the journal; a resumed crawl reloads it.
  Meta ``content_fingerprint`` is the fingerprint version of its rows: another version's index
  is refused (`StateError`), never compared against.
- ``kept``: the links refused by a limit (``max_pages``, ``max_depth``), written with the
  journal, offered again by a resume whose limits admit more (`crawler.state.limits`).
- ``meta``: format version, the settings that must not change across a resume (scope, URL
  rules, Sieve parameters) with the limits as of the last run (free to change:
  ``limit_changes``), the stats (as of the last completion) and the crawl's status.

A finished crawl can be visited again: `CrawlState.start_recrawl()` begins a new *generation*
(meta ``generation``, 0 for the first crawl): every known URL is pending again, its validators
kept, the stats of the generation start from zero (the previous ones are kept as meta
``previous_stats``). The generation is a crawl like the first: interrupted, it resumes.

The database file (its schema, opening, checking and migrating it): `crawler.state.db`; the
``seen`` table's reader and writer: `crawler.sieve.seen.SeenStore`.

A missing directory starts a new crawl. A directory with an unfinished crawl resumes it, unless
a setting that matters changed (`StateError` names them; `--fresh` starts over explicitly). A
corrupt or foreign file is a `StateError`, never a silent fresh start.

One crawl at a time: an open state holds an exclusive lock on ``DIR/state.lock`` (`flock`,
released when it is closed or the process dies, even by ``kill -9``); opening a state another
process holds is a `StateError` naming that process, before anything is read or removed
(``--fresh`` included). A write that fails (a full disk, an I/O error) is a `StateError` that
ends the crawl: what was committed before it stands, so the same command resumes the crawl
once the cause is fixed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crawler.frontier.entries import Entry
from crawler.sieve import SeenFilter, fingerprint
from crawler.sieve.seen import SeenStore
from crawler.state.db import (
    FILENAME,
    LOCKNAME,
    StateError,
    connect,
    content_rows,
    get_meta,
    insert_content,
    lock_directory,
    note_dedup,
    put_meta,
    restore_sieve,
)
from crawler.state.forgetting import Forgetting
from crawler.state.limits import KeptLinks, LimitChange, limit_changes

__all__ = ["CrawlState", "Validators"]


log = logging.getLogger(__name__)

# (ETag, Last-Modified) of a URL's last 2xx response, either may be None
Validators = tuple[str | None, str | None]
_KEEP_VALIDATORS = "etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified)"


class CrawlState:
    """The state database of one crawl. Use `CrawlState.open(directory, settings)`."""

    __slots__ = ("_closed", "_db", "_failed", "_forgets", "_lock", "_raises", "_rows", "directory",
                 "finished", "kept", "limit_changes", "max_depth", "previous_status", "resumed",
                 "seen")  # fmt: skip

    def __init__(
        self, directory: Path, db: sqlite3.Connection, *, resumed: bool, lock: int = -1
    ) -> None:
        self.directory = directory
        self._db = db
        self._lock = lock  # the file descriptor holding DIR/state.lock, -1 for none
        self._failed = False  # a write failed: nothing more is written
        self._closed = False
        self.resumed = resumed
        self.finished = False
        # the status the state had when opened: "running", "interrupted", "finished"; None if new
        self.previous_status = self.status if resumed else None
        self.seen = SeenStore(db)
        self.kept = KeptLinks(db)  # links refused by a limit (crawler.state.limits)
        self.limit_changes: list[LimitChange] = []  # since the previous run
        self.max_depth = 0  # this run's (0: none)
        self._rows: list[tuple[Any, ...]] = []  # admitted URLs not written yet
        self._raises: list[tuple[float, int, float]] = []  # raised priorities not written yet
        self._forgets = Forgetting(db)  # `forget` (crawler.state.forgetting)

    @classmethod
    def open(
        cls, directory: str | Path, settings: dict[str, Any], *, fresh: bool = False
    ) -> CrawlState:
        """Open (or create) the state in `directory` for a crawl with these `settings`."""
        directory = Path(directory)
        path = directory / FILENAME
        if directory.exists() and not directory.is_dir():
            raise StateError(f"{directory}: not a directory")
        if (
            directory.exists()
            and not path.exists()
            and any(p.name != LOCKNAME for p in directory.iterdir())
        ):
            raise StateError(f"{directory}: not empty and holds no crawl state ({FILENAME})")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            lock = lock_directory(directory)
        except OSError as exc:
            raise StateError(f"{directory}: cannot use it: {exc.strerror or exc}") from None
        db = None
        try:
            if fresh and path.exists():
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
                log.warning("--fresh: removed the previous crawl state in %s", directory)
            db, existed = connect(path, settings)
            state = cls(directory, db, resumed=existed, lock=lock)
            db.execute("BEGIN")
            state._set_limits(settings)
        except BaseException:
            if db is not None:
                db.close()
            os.close(lock)
            raise
        return state

    def _set_limits(self, settings: dict[str, Any]) -> None:
        """Note the limits that changed since the previous run; the settings saved are this
        run's (committed with the first commit: the next resume compares with them)."""
        saved = json.loads(get_meta(self._db, "settings") or "{}")
        self.limit_changes = limit_changes(saved, settings)
        self.max_depth = int(settings.get("crawl.max_depth") or 0)
        if self.limit_changes:
            with self._writing():
                put_meta(self._db, settings=json.dumps(settings, sort_keys=True))

    @property
    def status(self) -> str:
        return get_meta(self._db, "status") or "running"

    @property
    def generation(self) -> int:
        """0 for the first crawl, n for the n-th recrawl (`start_recrawl`)."""
        return int(get_meta(self._db, "generation") or 0)

    # -- recrawling ------------------------------------------------------------------------

    def start_recrawl(self) -> int:
        """Begin a new generation of a finished crawl: every known URL pending again (its
        validators kept), the stats reset. Returns the new generation's number. Raises
        StateError unless the crawl is finished (an unfinished one is resumed first)."""
        if self.previous_status != "finished":
            raise StateError(
                f"{self.directory}: the crawl is not finished; run it again without --recrawl "
                "to resume it first"
                if self.resumed
                else f"{self.directory}: no crawl to visit again (run it once without --recrawl)"
            )
        generation = self.generation + 1
        with self._writing():
            self._write_rows()
            self._db.execute("UPDATE urls SET done = 0")
            put_meta(self._db, generation=str(generation), status="running",
                     previous_stats=get_meta(self._db, "stats") or "{}", stats="{}")  # fmt: skip
        self.commit()
        self.previous_status = "running"
        log.info("state: recrawl (generation %d) of %s", generation, self.directory)
        return generation

    def validators(self, key: str) -> Validators | None:
        """The stored (ETag, Last-Modified) of `key`, or None when it has neither."""
        row = self._db.execute(
            "SELECT etag, last_modified FROM urls WHERE fp = ?", (fingerprint(key),)
        ).fetchone()
        if row is None or (row[0] is None and row[1] is None):
            return None
        return row[0], row[1]

    # -- resuming --------------------------------------------------------------------------

    def restore_sieve(self, new: SeenFilter) -> SeenFilter:
        """The Sieve as of the crash: the last snapshot plus every key admitted after it."""
        with self._reading("the Sieve snapshot"):
            return restore_sieve(self._db, self.directory, new)

    @contextlib.contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        if self._closed:
            raise StateError(f"{self.directory}: the crawl state is closed: cannot read {what}")
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise StateError(f"{self.directory}: cannot read {what}: {exc}") from None

    def pending(self) -> Iterator[Entry]:
        """Every admitted URL not yet done, in admission order (what was in flight included),
        each with its priority: put back in a frontier, they are handed out in the same order."""
        with self._reading("the pending URLs"):
            rows = self._db.execute(
                "SELECT key, url, depth, parent, redirects, sitemap, priority FROM urls "
                "WHERE done = 0 ORDER BY id"
            )
            while batch := rows.fetchmany(10_000):
                for key, url, depth, parent, redirects, sitemap, priority in batch:
                    yield Entry(url=url or key, key=key, depth=depth, parent=parent,
                                redirects=redirects, sitemap=bool(sitemap),
                                priority=float(priority))  # fmt: skip

    def admitted_keys(self) -> Iterator[str]:
        """The key of every URL admitted by any run, done or not (per-host counts)."""
        with self._reading("the admitted URLs"):
            yield from (key for (key,) in self._db.execute("SELECT key FROM urls"))

    def seed_hosts(self, hosts: set[str], meta: str = "seed_hosts") -> set[str]:
        """The seed hosts of every run of this crawl (the default scope), these included;
        `meta="site_hosts"`: the hosts seeds redirected to within their sites instead."""
        text = get_meta(self._db, meta)
        merged = set(json.loads(text)) | hosts if text else set(hosts)
        with self._writing():
            put_meta(self._db, **{meta: json.dumps(sorted(merged))})
        return merged

    def stats(self) -> dict[str, Any] | None:
        text = get_meta(self._db, "stats")
        return None if text is None else dict(json.loads(text))

    # -- journal ---------------------------------------------------------------------------

    def admitted(self, entry: Entry) -> None:
        """Journal a URL admitted to the frontier (written and committed with the next
        completion, in one statement with the other URLs admitted meanwhile)."""
        url = None if entry.url == entry.key else entry.url
        fp = fingerprint(entry.key)
        self._forgets.admitted(fp)
        self._rows.append(
            (
                fp,
                entry.key,
                url,
                entry.depth,
                entry.parent,
                entry.redirects,
                int(entry.sitemap),
                entry.priority,
            )
        )

    def forget(self, key: str) -> bool:
        """Let `key` be admitted again by this crawl and every resume of it (`Crawler.forget`;
        how: `crawler.state.forgetting`): a done URL's journal row, validators and seen
        fingerprint are dropped, and committed; a pending one's once it is done. True when the
        journal had the URL."""
        with self._writing():
            self._write_rows()
            found = self._forgets.forget(self._db, key)
        self.commit()
        return found

    def reprioritized(self, key: str, priority: float) -> None:
        """Journal a pending URL's raised priority (written with the next completion, like the
        admitted URLs; a resume queues it with that priority)."""
        self._raises.append((priority, fingerprint(key), priority))

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a failed write (a full disk, an I/O error) into a StateError that ends the
        crawl; nothing is written after it (what was committed before stands)."""
        if self._closed:
            raise StateError(f"{self.directory}: the crawl state is closed (the crawl that used "
                             "it has ended): open it again with CrawlState.open")  # fmt: skip
        if self._failed:
            raise StateError(f"{self.directory}: the crawl state could not be written")
        try:
            yield
        except sqlite3.Error as exc:
            self._failed = True
            full = getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL"
            raise StateError(
                f"{self.directory}: cannot write the crawl state: {exc}; what was saved before "
                f"is kept: fix the cause{' (free some space)' if full else ''} and run the same "
                "command to resume"
            ) from exc

    def completed(
        self,
        key: str,
        validators: Validators | None = None,
        keep: bool = True,
        stats: dict[str, Any] | None = None,
    ) -> None:
        """Mark a URL done, its validators replaced (None: cleared; with `keep`, a 304 or a
        failure: only by those not None), with the crawl's `stats` (this URL counted): commits
        everything journaled so far."""
        etag, modified = validators or (None, None)
        new = _KEEP_VALIDATORS if keep else "etag = ?, last_modified = ?"
        fp = fingerprint(key)
        done = self._forgets.done(fp)  # 0: forgotten, then admitted again (still to fetch)
        with self._writing():
            self._write_rows()
            if stats is not None:
                put_meta(self._db, stats=json.dumps(stats))
            self._db.execute(
                f"UPDATE urls SET done = ?, {new} WHERE fp = ?", (done, etag, modified, fp)
            )
            self._forgets.completed(self._db, key, fp)
        self.commit()

    def commit(self) -> None:
        with self._writing():
            self._write_rows()
            self._db.execute("COMMIT")
            self._db.execute("BEGIN")

    def _write_rows(self) -> None:
        self.kept.write()
        if self._rows:
            self._forgets.insert_first(self._db, self._rows)  # (after a forget only)
            self._db.executemany(
                "INSERT OR IGNORE INTO urls "
                "(fp, key, url, depth, parent, redirects, sitemap, priority) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self._rows,
            )
            self._rows.clear()
        if self._raises:  # after the rows: a URL may be admitted and raised in one batch
            self._db.executemany(
                "UPDATE urls SET priority = ? WHERE fp = ? AND done = 0 AND priority < ?",
                self._raises,
            )
            self._raises.clear()

    def checkpoint(self, sieve: SeenFilter, stats: dict[str, Any], status: str = "running") -> None:
        """Snapshot the Sieve and the stats (and the status), then commit."""
        with self._writing():
            self._write_rows()
            upto = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM urls").fetchone()[0]
            self._db.execute(
                "INSERT OR REPLACE INTO sieve (id, upto, data) VALUES (0, ?, ?)",
                (upto, sieve.to_bytes()),
            )
            self._db.execute("DELETE FROM forgotten")  # the snapshot is without them
            put_meta(self._db, stats=json.dumps(stats), status=status)
        self.commit()

    def counts(self) -> tuple[int, int]:
        """(admitted, done) URLs in the journal."""
        self._write_rows()
        row = self._db.execute("SELECT COUNT(*), COALESCE(SUM(done), 0) FROM urls").fetchone()
        return int(row[0]), int(row[1])

    def close(self, sieve: SeenFilter, stats: dict[str, Any], status: str) -> None:
        """Write a last checkpoint with the crawl's status and close the database (after a
        failed write, only close it: the crawl resumes from what was committed)."""
        try:
            if not self._failed:
                self.checkpoint(sieve, stats, status)
                with self._writing():
                    self._db.execute("COMMIT")
                self.finished = status == "finished"
        finally:
            self._release()

    def abandon(self) -> None:
        """Commit the journal as it stands and close, without a snapshot or a status change."""
        try:
            if not self._failed:
                with self._writing():
                    self._write_rows()
                    self._db.execute("COMMIT")
        finally:
            self._release()

    def _release(self) -> None:
        """Close the database (rolling back what a failed write left) and release the lock."""
        self._closed = True
        try:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._db.close()
        except sqlite3.Error as exc:
            log.warning("%s: closing the crawl state: %s", self.directory, exc)
        finally:
            if self._lock >= 0:
                os.close(self._lock)
                self._lock = -1

    def add_content(self, simhash: int, digest: bytes, url: str) -> None:
        """Journal a page that entered the content index (committed at the next completion)."""
        with self._writing():
            insert_content(self._db, self.directory, simhash, digest, url)

    def dedup(self, enabled: bool, fetching: bool = True) -> None:
        """Note whether this run has content dedup on (see `crawler.state.db.note_dedup`)."""
        with self._writing():
            note_dedup(self._db, self.directory, enabled, fetching)

    def content(self) -> Iterator[tuple[int, bytes, str]]:
        """Every journaled (simhash, content hash, URL), oldest first."""
        with self._reading("the content-dedup index"):
            yield from content_rows(self._db, self.directory)

    def __repr__(self) -> str:
        return f"<CrawlState {str(self.directory)!r} resumed={self.resumed}>"
