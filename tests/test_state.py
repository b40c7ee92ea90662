"""The state database: journal, resume, snapshots, refusal of bad or changed state."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crawler.cli import repair_jsonl
from crawler.frontier import Entry
from crawler.sieve import Sieve, fingerprint
from crawler.state import FILENAME, CrawlState, SeenStore, StateError

SETTINGS = {"scope.include": [], "crawl.max_depth": 16}


def entry(i: int, depth: int = 1) -> Entry:
    key = f"http://a.test/p{i}"
    return Entry(url=key + "?raw", key=key, depth=depth, parent="http://a.test/")


def test_new_state_journals_and_resumes_pending_in_order(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", SETTINGS)
    assert not state.resumed
    for i in range(6):
        state.admitted(entry(i))
    state.completed("http://a.test/p1")
    state.completed("http://a.test/p4")
    state.abandon()  # as after a crash: no final snapshot
    again = CrawlState.open(tmp_path / "s", SETTINGS)
    assert again.resumed
    pending = list(again.pending())
    assert [e.key for e in pending] == [f"http://a.test/p{i}" for i in (0, 2, 3, 5)]
    assert pending[0] == entry(0)
    assert again.counts() == (6, 2)


def test_uncommitted_admissions_are_lost_only_with_their_parent(tmp_path: Path) -> None:
    # Children are committed with the next completion; a crash before it loses them, but then
    # the parent is not done either, so fetching it again finds them again.
    path = tmp_path / "s"
    state = CrawlState.open(path, SETTINGS)
    state.admitted(entry(0))
    state.completed("http://a.test/p0")
    state.admitted(entry(1))  # a child of some page still in flight: not committed yet
    db = sqlite3.connect(path / FILENAME)  # what another process would see after a kill -9
    keys = [k for (k,) in db.execute("SELECT key FROM urls")]
    db.close()
    assert keys == ["http://a.test/p0"]
    state.abandon()


def test_sieve_snapshot_plus_replay(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", SETTINGS)
    sieve = Sieve(capacity=1000, error_rate=0.001)
    for i in range(10):
        sieve.add(entry(i).key)
        state.admitted(entry(i))
    state.checkpoint(sieve, {"pages": 10})
    for i in range(10, 15):  # admitted after the snapshot: replayed from the journal
        state.admitted(entry(i))
        state.completed(entry(i).key)
    state.abandon()
    again = CrawlState.open(tmp_path / "s", SETTINGS)
    restored = again.restore_sieve(Sieve(capacity=1000, error_rate=0.001))
    assert all(entry(i).key in restored for i in range(15))
    assert again.stats() == {"pages": 10}


def test_changed_settings_are_refused(tmp_path: Path) -> None:
    CrawlState.open(tmp_path / "s", SETTINGS).abandon()
    with pytest.raises(StateError, match=r"other settings \(crawl.max_depth\).*--fresh"):
        CrawlState.open(tmp_path / "s", {**SETTINGS, "crawl.max_depth": 3})


def test_fresh_starts_over(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", SETTINGS)
    state.admitted(entry(0))
    state.completed(entry(0).key)
    state.abandon()
    fresh = CrawlState.open(tmp_path / "s", {**SETTINGS, "crawl.max_depth": 3}, fresh=True)
    assert not fresh.resumed
    assert fresh.counts() == (0, 0)


def test_corrupt_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / FILENAME).write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StateError, match="corrupt or not a crawl state database"):
        CrawlState.open(tmp_path / "s", SETTINGS)


def test_truncated_file_is_a_clear_error(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", SETTINGS)
    for i in range(2000):
        state.admitted(entry(i))
    state.checkpoint(Sieve(capacity=100_000, error_rate=0.001), {})
    state.close(Sieve(capacity=100_000, error_rate=0.001), {}, "interrupted")
    path = tmp_path / "s" / FILENAME
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(StateError, match="corrupt"):
        CrawlState.open(tmp_path / "s", SETTINGS)


def test_corrupt_sieve_snapshot_is_a_clear_error(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", SETTINGS)
    state.checkpoint(Sieve(capacity=1000, error_rate=0.01), {})
    state.abandon()
    db = sqlite3.connect(tmp_path / "s" / FILENAME)
    db.execute("UPDATE sieve SET data = substr(data, 1, 40)")
    db.commit()
    db.close()
    again = CrawlState.open(tmp_path / "s", SETTINGS)
    with pytest.raises(StateError, match="Sieve snapshot is corrupt"):
        again.restore_sieve(Sieve(capacity=1000, error_rate=0.01))


def test_foreign_database_and_busy_directory(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    db = sqlite3.connect(tmp_path / "s" / FILENAME)
    db.execute("CREATE TABLE t (x)")
    db.close()
    with pytest.raises(StateError, match="tables missing"):
        CrawlState.open(tmp_path / "s", SETTINGS)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(StateError, match="not empty"):
        CrawlState.open(tmp_path / "other", SETTINGS)


@pytest.mark.parametrize("in_db", [False, True])
def test_seen_store(tmp_path: Path, in_db: bool) -> None:
    store = SeenStore(sqlite3.connect(tmp_path / "x.db") if in_db else None)
    if in_db:
        store._db.execute("CREATE TABLE seen (fp INTEGER PRIMARY KEY) WITHOUT ROWID")  # type: ignore[union-attr]
    fp = fingerprint("http://a.test/")
    assert fp not in store
    store.add(fp)
    store.add(fp)
    assert fp in store
    assert fingerprint("http://a.test/x") not in store


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"", b""),
        (b'{"a":1}\n', b'{"a":1}\n'),
        (b'{"a":1}\n{"b":', b'{"a":1}\n'),
        (b'{"b":', b""),
        (b'{"a":1}\n' * 20000 + b"x" * 70000, b'{"a":1}\n' * 20000),
    ],
)
def test_repair_jsonl(tmp_path: Path, before: bytes, after: bytes) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(before)
    repair_jsonl(path)
    assert path.read_bytes() == after
