"""The crawl state's database file, ``DIR/state.sqlite`` (stdlib sqlite3, WAL mode).

Its tables (what each holds and when it is written: `crawler.state.crawlstate`): ``meta``, ``urls``
(the journal), ``seen``, ``sieve``, ``kept`` (the links refused by a limit: `crawler.state.limits`)
and, created on first use, ``content``. `connect` creates the file with its schema and meta, or
opens an existing one: checked to be a crawl state of this `FORMAT` started with the same settings
(but its `LIMITS`, free to change), then brought up to date (additions only).
`get_meta`/`put_meta` read and write ``meta``; `content_table` creates the content-dedup table
and refuses rows of another fingerprint version, `insert_content` / `content_rows` write and
read it, `note_dedup` marks a run without dedup (its pages are not in the index).
`lock_directory`: one crawl per state directory (an exclusive `flock` on ``DIR/state.lock``,
our pid written in it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from crawler.errors import StateError
from crawler.sieve import SeenFilter, SieveFormatError, filter_from_bytes

__all__ = [
    "FILENAME",
    "FORMAT",
    "LIMITS",
    "LOCKNAME",
    "StateError",
    "connect",
    "content_rows",
    "content_table",
    "get_meta",
    "insert_content",
    "lock_directory",
    "note_dedup",
    "put_meta",
    "restore_sieve",
]

log = logging.getLogger(__name__)

FORMAT = 1
FILENAME = "state.sqlite"
LOCKNAME = "state.lock"  # held (flock) by the process that has the state open
# the settings that may change across a resume (`crawler.state.limits`): the others are the crawl's
LIMITS = ("crawl.max_pages", "crawl.max_depth")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    fp INTEGER NOT NULL UNIQUE,
    key TEXT NOT NULL,
    url TEXT,
    depth INTEGER NOT NULL,
    parent TEXT,
    redirects INTEGER NOT NULL,
    sitemap INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    priority REAL NOT NULL DEFAULT 0,
    etag TEXT,
    last_modified TEXT
);
CREATE INDEX IF NOT EXISTS urls_pending ON urls (done, id);
CREATE TABLE IF NOT EXISTS seen (fp INTEGER PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sieve (id INTEGER PRIMARY KEY CHECK (id = 0), upto INTEGER NOT NULL,
                                  data BLOB NOT NULL);
"""

# a link refused by max_pages or max_depth, once (by its key's fingerprint), in order found;
# priority NULL: a focused crawl's link refused before it was scored
_KEPT_SCHEMA = """
CREATE TABLE IF NOT EXISTS kept (id INTEGER PRIMARY KEY, fp INTEGER NOT NULL UNIQUE,
                                 key TEXT NOT NULL, url TEXT, depth INTEGER NOT NULL,
                                 parent TEXT, redirects INTEGER NOT NULL DEFAULT 0,
                                 sitemap INTEGER NOT NULL DEFAULT 0, priority REAL);
"""

# a done URL's journal row dropped by `Crawler.forget` while the Sieve snapshot held its key: the
# row's id (at most the snapshot's ``upto``) and the key, removed from the snapshot on a resume;
# emptied by the next snapshot (`crawler.state.forgetting`)
_FORGOTTEN_SCHEMA = """
CREATE TABLE IF NOT EXISTS forgotten (id INTEGER PRIMARY KEY, key TEXT NOT NULL);
"""

_CONTENT_SCHEMA = """
CREATE TABLE IF NOT EXISTS content (id INTEGER PRIMARY KEY, simhash INTEGER NOT NULL,
                                    hash BLOB NOT NULL, url TEXT NOT NULL);
"""


def connect(path: Path, settings: dict[str, Any]) -> tuple[sqlite3.Connection, bool]:
    """Open the state database at `path` (autocommit; the caller begins its transactions) and
    whether it held a crawl: an existing one is checked against `settings` and migrated, a new
    one created.

    The schema and the meta are created in one transaction: a creation cut short (a full disk,
    a kill) leaves a database without a table, made again by the next run, never a state
    without its format. A full disk is said as such, not as a corrupt database."""
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        existed = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
        if existed:
            _check_existing(db, path, settings)
            _migrate(db)
        else:
            db.executescript("BEGIN IMMEDIATE;" + _SCHEMA + _KEPT_SCHEMA + _FORGOTTEN_SCHEMA)
            put_meta(db, format=str(FORMAT), settings=json.dumps(settings, sort_keys=True),
                     status="running", created=time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                             time.gmtime()))  # fmt: skip
            db.execute("COMMIT")
    except BaseException as exc:
        if db is not None:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            db.close()  # a refused state is not left open
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL":
            raise StateError(f"{path}: cannot write: {exc} (ENOSPC)") from None
        if isinstance(exc, sqlite3.DatabaseError):
            raise StateError(f"{path}: corrupt or not a crawl state database ({exc})") from None
        raise
    return db, existed


def get_meta(db: sqlite3.Connection, name: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])


def content_table(db: sqlite3.Connection, directory: Path) -> None:
    """Create the content table if missing, marked with the fingerprint version of its rows
    (meta ``content_fingerprint``; rows without the mark are version 1). Simhashes and
    content hashes of another version cannot be compared with this crawler's: refused."""
    from crawler.content.fingerprint import VERSION as FINGERPRINT_VERSION  # numpy: if used

    db.execute(_CONTENT_SCHEMA)
    version = get_meta(db, "content_fingerprint")
    if version is None:
        if db.execute("SELECT 1 FROM content LIMIT 1").fetchone() is None:
            put_meta(db, content_fingerprint=str(FINGERPRINT_VERSION))
            return
        version = "1"
    if version != str(FINGERPRINT_VERSION):
        raise StateError(
            f"{directory}: its content-dedup index holds fingerprints of version "
            f"{version}, this crawler computes version {FINGERPRINT_VERSION}: resume with "
            "[dedup] enabled = false, or use --fresh to start over"
        )


def insert_content(
    db: sqlite3.Connection, directory: Path, simhash: int, digest: bytes, url: str
) -> None:
    """Add a page that entered the content-dedup index to its table (created on first use)."""
    signed = simhash - (1 << 64) if simhash >= 1 << 63 else simhash  # SQLite: signed 64-bit
    sql = "INSERT INTO content (simhash, hash, url) VALUES (?, ?, ?)"
    try:
        db.execute(sql, (signed, digest, url))
    except sqlite3.OperationalError:  # no such table yet
        content_table(db, directory)
        db.execute(sql, (signed, digest, url))


def content_rows(db: sqlite3.Connection, directory: Path) -> Iterator[tuple[int, bytes, str]]:
    """Every (simhash, content hash, URL) of the content-dedup table, oldest first."""
    content_table(db, directory)
    rows = db.execute("SELECT simhash, hash, url FROM content ORDER BY id")
    while batch := rows.fetchmany(10_000):
        for simhash, digest, url in batch:
            yield simhash & ((1 << 64) - 1), bytes(digest), str(url)


def note_dedup(db: sqlite3.Connection, directory: Path, enabled: bool, fetching: bool) -> None:
    """Note whether this run (`fetching` URLs, or with nothing to do) has content dedup on: the
    pages a run without it fetches are not in the index (meta ``content_gap``), which a later
    run with it on says (a warning: its duplicates of those pages are not found)."""
    if not enabled:
        if fetching:
            put_meta(db, content_gap="1")
    elif get_meta(db, "content_gap"):
        log.warning(
            "%s: content dedup was off for part of this crawl: the pages fetched then are not "
            "in its index, so a page repeating one of them (or one answered 304 now) is not "
            "found a duplicate; --fresh starts over with it on", directory,
        )  # fmt: skip


def put_meta(db: sqlite3.Connection, **values: str) -> None:
    db.executemany("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", list(values.items()))


def restore_sieve(db: sqlite3.Connection, directory: Path, new: SeenFilter) -> SeenFilter:
    """The URL-seen filter of the state's last snapshot (else `new`, of the same kind: the kind
    is part of the crawl's locked settings) without the keys forgotten since (``forgotten``),
    plus every key journaled after it."""
    row = db.execute("SELECT upto, data FROM sieve WHERE id = 0").fetchone()
    sieve, upto = new, 0
    if row is not None:
        try:
            sieve = filter_from_bytes(row[1])
        except SieveFormatError as exc:
            raise StateError(f"{directory}: the Sieve snapshot is corrupt: {exc}") from None
        upto = int(row[0])
        if sieve.supports_remove:  # (only a kind that deletes can have forgotten a key)
            for (key,) in db.execute("SELECT key FROM forgotten WHERE id <= ?", (upto,)):
                sieve.remove(key)
    replayed = 0
    for (key,) in db.execute("SELECT key FROM urls WHERE id > ? ORDER BY id", (upto,)):
        sieve.add(key)
        replayed += 1
    log.info("state: Sieve restored (%d keys replayed after the snapshot)", replayed)
    return sieve


def _check_existing(db: sqlite3.Connection, path: Path, settings: dict[str, Any]) -> None:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"meta", "urls", "seen", "sieve"} <= tables:
        raise StateError(f"{path}: not a crawl state database (tables missing)")
    meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
    if meta.get("format") != str(FORMAT):
        raise StateError(f"{path}: state format {meta.get('format')!r}, expected {FORMAT}")
    try:
        saved = json.loads(meta["settings"])
    except (KeyError, ValueError):
        raise StateError(f"{path}: the saved settings are missing or corrupt") from None
    # a limit's value may change; whether max_pages is one at all tells a focused crawl
    changed = sorted(
        k
        for k in set(saved) | set(settings)
        if saved.get(k) != settings.get(k) and not (k in LIMITS and k in saved and k in settings)
    )
    if changed:
        # a focused crawl keeps no max_pages (a budget, free to change): one only on one side
        # means the focus was dropped or added, not max_pages changed
        focus = ""
        if "crawl.max_pages" in settings and "crawl.max_pages" not in saved:
            focus = ": it is a focused crawl, give its --focus or [focus] keywords again"
        elif "crawl.max_pages" in saved and "crawl.max_pages" not in settings:
            focus = ": it is not a focused crawl, run it without --focus"
        raise StateError(
            f"{path.parent}: the crawl was started with other settings ({', '.join(changed)}"
            f"{focus}): {_was(changed, saved, settings)}; resume with the same config, or use "
            "--fresh to start over"
        )


def _was(changed: list[str], saved: dict[str, Any], settings: dict[str, Any]) -> str:
    """What each changed setting was and is now (`sieve.kind 'cuckoo', now 'counting'`), the
    first few, each value cut at 60 characters."""

    def shown(values: dict[str, Any], name: str) -> str:
        if name not in values:
            return "unset"
        text = repr(values[name])
        return text if len(text) <= 60 else f"{text[:57]}..."

    said = [f"{name} {shown(saved, name)}, now {shown(settings, name)}" for name in changed[:5]]
    return "; ".join(said) + ("; ..." if len(changed) > 5 else "")


def _migrate(db: sqlite3.Connection) -> None:
    """Bring a state written by an older version up to date (same FORMAT: additions only)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(urls)")}
    if "priority" not in columns:  # before best-first crawling: every URL had priority 0
        db.execute("ALTER TABLE urls ADD COLUMN priority REAL NOT NULL DEFAULT 0")
        log.info("state: added the priority column to an older state database")
    if "etag" not in columns:  # before recrawls: no validators were kept
        db.execute("ALTER TABLE urls ADD COLUMN etag TEXT")
        db.execute("ALTER TABLE urls ADD COLUMN last_modified TEXT")
        log.info("state: added the validator columns to an older state database")
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'kept'").fetchone() is None:
        db.execute(_KEPT_SCHEMA)  # before limits could change: no refused link was kept
        log.info("state: added the table of links kept for a larger limit to an older state")
    db.execute(_FORGOTTEN_SCHEMA)  # before forget held across a resume: nothing to remove


def lock_directory(directory: Path) -> int:
    """Take the state directory's lock (`LOCKNAME`, flock) and write our pid in it; a
    StateError naming the holder when another process has it."""
    fd = os.open(directory / LOCKNAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise StateError(
            f"{directory}: in use by another crawl (process {holder}); wait for it to end or "
            "stop it (Ctrl-C), or give this crawl another --state directory"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except BaseException:  # (a full disk): the lock must not outlive the failed open
        os.close(fd)
        raise
    return fd
