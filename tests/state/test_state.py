"""The state database: journal, resume, snapshots, refusal of bad or changed state."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from crawler.cli.main import repair_jsonl
from crawler.frontier import Entry, Frontier
from crawler.frontier.settings import Politeness
from crawler.sieve import Sieve, fingerprint
from crawler.sieve.seen import SeenStore
from crawler.state.crawlstate import CrawlState
from crawler.state.db import FILENAME, StateError
from crawler.testing.simtime import SimulatedLoop

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
    with pytest.raises(StateError, match=r"other settings \(scope.include\).*--fresh"):
        CrawlState.open(tmp_path / "s", {**SETTINGS, "scope.include": ["x"], "crawl.max_depth": 3})


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
        (b'{"url":"a"}\n', b'{"url":"a"}\n'),
        (b'{"url":"a"}\n{"url":"b', b'{"url":"a"}\n'),
        (b'{"url":"b"', b""),
        (b'{"url":"a"}\n{"u', b'{"url":"a"}\n'),  # cut within the first bytes
        (b'{"url":"a"}\n' * 20000 + b'{"url":"' + b"x" * 70000, b'{"url":"a"}\n' * 20000),
    ],
)
def test_repair_jsonl(tmp_path: Path, before: bytes, after: bytes) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(before)
    repair_jsonl(path)
    assert path.read_bytes() == after


# -- best-first priorities survive a resume --------------------------------------------------


async def hand_out(frontier: Frontier, limit: int | None = None) -> list[Entry]:
    got: list[Entry] = []
    while (limit is None or len(got) < limit) and (e := await frontier.get()) is not None:
        got.append(e)
        frontier.done(e)
    return got


def test_resume_keeps_priorities_and_the_order(tmp_path: Path) -> None:
    rng = random.Random(4)
    entries = [
        Entry(url=f"http://h{i % 3}.test/{i}", key=f"http://h{i % 3}.test/{i}",
              priority=rng.choice([0.0, 0.5, 2.0, -1.0]))
        for i in range(60)
    ]  # fmt: skip

    def run(main: Callable[[], Coroutine[Any, Any, list[Entry]]]) -> list[Entry]:
        with asyncio.Runner(loop_factory=SimulatedLoop) as runner:
            return runner.run(main())

    async def uninterrupted() -> list[Entry]:
        frontier = Frontier(Politeness(respect_robots=False))
        for e in entries:
            frontier.put(e)
        return await hand_out(frontier)

    async def interrupted() -> list[Entry]:
        state = CrawlState.open(tmp_path / "s", SETTINGS)
        frontier = Frontier(Politeness(respect_robots=False))
        for e in entries:
            frontier.put(e)
            state.admitted(e)
        first = await hand_out(frontier, 20)
        for e in first:
            state.completed(e.key)
        state.abandon()  # a crash: the frontier is gone, the journal stays
        again = CrawlState.open(tmp_path / "s", SETTINGS)
        resumed = Frontier(Politeness(respect_robots=False))
        for e in again.pending():
            resumed.put(e)
        again.abandon()
        return first + await hand_out(resumed)

    expected = run(uninterrupted)
    assert [e.priority for e in expected[:3]] == [2.0, 2.0, 2.0]  # best first on every host
    assert run(interrupted) == expected


OLD_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE urls (
    id INTEGER PRIMARY KEY, fp INTEGER NOT NULL UNIQUE, key TEXT NOT NULL, url TEXT,
    depth INTEGER NOT NULL, parent TEXT, redirects INTEGER NOT NULL,
    sitemap INTEGER NOT NULL DEFAULT 0, done INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX urls_pending ON urls (done, id);
CREATE TABLE seen (fp INTEGER PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE sieve (id INTEGER PRIMARY KEY CHECK (id = 0), upto INTEGER NOT NULL,
                    data BLOB NOT NULL);
"""  # the state of a crawl started before best-first crawling (no priority column)


def test_a_state_without_priorities_still_resumes(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    db = sqlite3.connect(tmp_path / "s" / FILENAME)
    db.executescript(OLD_SCHEMA)
    meta = {"format": "1", "settings": json.dumps(SETTINGS, sort_keys=True), "status": "running"}
    db.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
    rows = [(fingerprint(entry(i).key), entry(i).key, entry(i).url, 1, "http://a.test/", 0, 0)
            for i in range(3)]  # fmt: skip
    db.executemany(
        "INSERT INTO urls (fp, key, url, depth, parent, redirects, sitemap) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.commit()
    db.close()
    state = CrawlState.open(tmp_path / "s", SETTINGS)
    assert state.resumed
    assert list(state.pending()) == [entry(i) for i in range(3)]  # priority 0.0
    scored = Entry(url="http://a.test/new", key="http://a.test/new", priority=1.5)
    state.admitted(scored)
    state.completed(entry(0).key)
    state.abandon()
    again = CrawlState.open(tmp_path / "s", SETTINGS)
    assert list(again.pending()) == [entry(1), entry(2), scored]
    again.abandon()
