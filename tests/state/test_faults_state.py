"""Faults of the crawl state directory (second fault audit): a second crawl on a state in use,
and writes that fail (a full disk: SQLite's SQLITE_FULL, forced with `max_page_count`)."""

from __future__ import annotations

import contextlib
import io
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli.run import run
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.frontier.entries import Entry
from crawler.sieve import Sieve
from crawler.state.crawlstate import CrawlState
from crawler.state.db import FILENAME, LOCKNAME, StateError
from crawler.testing.fixture import FixtureSite
from tests.support.server import serve, site_config

SETTINGS = {"max_depth": 3}


def test_a_state_in_use_is_refused_and_fresh_removes_nothing(tmp_path: Path) -> None:
    """Before: a second crawl opened the same state and both wrote to it (exit 0 each)."""
    first = CrawlState.open(tmp_path, SETTINGS)
    first.admitted(Entry(url="http://a.test/", key="http://a.test/", depth=0))
    first.commit()
    with pytest.raises(StateError, match=r"in use by another crawl \(process \d+\)"):
        CrawlState.open(tmp_path, SETTINGS)
    with pytest.raises(StateError, match="in use by another crawl"):
        CrawlState.open(tmp_path, SETTINGS, fresh=True)
    assert first.counts() == (1, 0)  # --fresh removed nothing under it
    first.abandon()
    again = CrawlState.open(tmp_path, SETTINGS)  # released on close
    assert again.counts() == (1, 0)
    again.abandon()


def test_a_state_held_by_another_process_is_refused(tmp_path: Path) -> None:
    held = CrawlState.open(tmp_path, SETTINGS)
    probe = (
        "import sys; from crawler.state.crawlstate import CrawlState\n"
        "try:\n    CrawlState.open(sys.argv[1], {'max_depth': 3})\n"
        "except Exception as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    held.abandon()
    assert "in use by another crawl" in done.stdout, done.stdout + done.stderr


def test_the_lock_file_does_not_make_a_directory_foreign(tmp_path: Path) -> None:
    (tmp_path / LOCKNAME).write_text("12345\n")  # left by a crawl killed before its database
    CrawlState.open(tmp_path, SETTINGS).abandon()
    assert (tmp_path / FILENAME).exists()


def full(state: CrawlState) -> None:
    """Make every further page the database needs fail, as a full disk does."""
    db: sqlite3.Connection = state._db  # the fault is injected underneath
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")


def test_a_failed_write_is_a_state_error_and_close_keeps_what_was_committed(
    tmp_path: Path,
) -> None:
    """Before: sqlite3.OperationalError ('database or disk is full') and a traceback."""
    state = CrawlState.open(tmp_path, SETTINGS)
    state.admitted(Entry(url="http://a.test/", key="http://a.test/", depth=0))
    state.commit()
    full(state)
    for i in range(3000):
        state.admitted(Entry(url=f"http://a.test/{i}", key=f"http://a.test/{i}", depth=1))
    with pytest.raises(StateError, match="cannot write the crawl state: database or disk is full"):
        state.completed("http://a.test/")
    with pytest.raises(StateError):  # nothing is written after a failure
        state.commit()
    state.close(Sieve(capacity=1000, error_rate=0.01), {}, "interrupted")  # does not raise
    again = CrawlState.open(tmp_path, SETTINGS)
    assert again.counts() == (1, 0)  # the seed is still pending: it will be fetched again
    again.abandon()


async def test_a_full_disk_under_the_state_ends_the_crawl_with_a_state_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def page(request: web.Request) -> web.Response:
        links = "".join(f'<a href="/p{i}-{"x" * 200}">p</a>' for i in range(300))
        return web.Response(text=f"<title>t</title>{links}", content_type="text/html")

    opened = CrawlState.open

    def open_full(*args: object, **kwargs: object) -> CrawlState:
        state = opened(*args, **kwargs)  # type: ignore[arg-type]
        full(state)
        return state

    monkeypatch.setattr(CrawlState, "open", open_full)
    config = (
        Config()
        .override("politeness", delay=0.0, ip_delay=0.0)
        .override("state", dir=str(tmp_path))
    )
    out = io.StringIO()
    async with serve(page) as port:
        with pytest.raises(StateError, match="run the same command to resume"):
            await run(config, [f"http://127.0.0.1:{port}/"], out, quiet=True)
    monkeypatch.undo()
    state = CrawlState.open(tmp_path, settings(config))  # closed and released, readable
    state.abandon()


def test_a_lock_whose_pid_cannot_be_written_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the failed pid write (a full disk) kept the lock's descriptor open, so the state
    stayed "in use by another crawl" for this process after the error."""
    import errno

    import crawler.state.db

    def no_space(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(crawler.state.db.os, "pwrite", no_space)
        with pytest.raises(StateError, match="No space left on device"):
            CrawlState.open(tmp_path, SETTINGS)
    CrawlState.open(tmp_path, SETTINGS).abandon()  # the lock went with the error


async def test_a_crawl_refused_after_its_state_opened_releases_it(tmp_path: Path) -> None:
    """Before: run() opened the state (taking its lock, --fresh removing the old one) and only
    then refused a --warc file that is not a WARC, or --state with --redis: the lock stayed
    held by the failed call, so the state was "in use by another crawl" in this process."""
    from crawler.errors import ConfigError, OutputError

    directory = tmp_path / "state"
    config = Config().override("state", dir=str(directory))
    previous = CrawlState.open(directory, settings(config))
    previous.admitted(Entry(url="http://a.test/", key="http://a.test/", depth=0))
    previous.abandon()
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(OutputError, match="not a gzipped WARC file"):
        await run(config.override("output", warc=str(notes)), ["http://a.test/"], io.StringIO(),
                  quiet=True, fresh=True)  # fmt: skip
    shared = config.override("cluster", redis="redis://127.0.0.1:1/0")
    with pytest.raises(ConfigError, match="--state"):
        await run(shared, ["http://a.test/"], io.StringIO(), quiet=True)
    state = CrawlState.open(directory, settings(config))  # not held by either failed run
    assert state.counts() == (1, 0)  # and the refused --fresh removed nothing
    state.abandon()
    assert notes.read_text() == "my notes\n"


def _open_files(name: str) -> list[str]:
    """This process's open files whose path ends with `name` (Linux: /proc/self/fd)."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:  # closed since it was listed
            continue
        if target.endswith(name):
            found.append(target)
    return found


@pytest.mark.parametrize("garbage", [False, True], ids=["other-settings", "not-a-database"])
def test_a_refused_state_leaves_no_database_open(tmp_path: Path, garbage: bool) -> None:
    CrawlState.open(tmp_path, SETTINGS).abandon()
    if garbage:
        (tmp_path / FILENAME).write_bytes(b"not sqlite at all" * 100)
    # this test's files only: another test's leaked connection may be collected meanwhile
    before = _open_files(str(tmp_path / FILENAME))
    for _ in range(3):
        with pytest.raises(StateError):
            CrawlState.open(tmp_path, {"max_depth": 4} if not garbage else SETTINGS)
    assert _open_files(str(tmp_path / FILENAME)) == before  # nothing left open by the refusals
    assert _open_files(str(tmp_path / LOCKNAME)) == []


async def test_a_crash_keeps_the_stats_of_every_completed_url(
    site: FixtureSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the stats were saved only at checkpoints (every 30 s) and at the end; after a
    `kill -9` the resumed crawl counted from the last checkpoint, so its stats lost every URL
    done since then, and a max_pages crawl (its cap counts `admitted` from them) admitted up
    to max_pages more URLs on each crash."""
    config = site_config(site, max_pages=12, concurrency=2)
    state = CrawlState.open(tmp_path / "s", settings(config))
    with monkeypatch.context() as patch:  # the process dies after its 5th completion
        patch.setattr(CrawlState, "close", lambda self, *_: self._release())
        async with (
            Crawler(config, state=state) as crawler,
            contextlib.aclosing(crawler.crawl(site.seeds)) as results,
        ):
            taken = 0
            async for _ in results:
                if taken == 5:
                    break
                taken += 1
    state = CrawlState.open(tmp_path / "s", settings(config))
    saved = state.stats()
    admitted, done = state.counts()
    assert saved is not None and (saved["pages"], saved["admitted"]) == (done, admitted) == (5, 12)
    async with Crawler(config, state=state) as crawler:
        rest = [r async for r in crawler.crawl(site.seeds)]
    assert crawler.complete and len(rest) == 12 - 5
    assert crawler.stats.pages == 12 and crawler.stats.admitted == 12


@pytest.mark.parametrize("enabled", [False, True], ids=["dedup-off", "dedup-on"])
def test_noting_the_dedup_setting_that_cannot_be_done_is_a_state_error(
    tmp_path: Path, enabled: bool
) -> None:
    """The mark of a run without content dedup (meta ``content_gap``), written when a crawl
    starts: before, a write that failed there (an I/O error, a read-only file) escaped as a bare
    sqlite3.OperationalError and a traceback, the only state write not turned into a
    StateError."""
    state = CrawlState.open(tmp_path, SETTINGS)
    state.dedup(False)  # a run without dedup: the gap is noted
    state._db.execute("PRAGMA query_only = 1")  # every further write fails
    if enabled:  # reading the mark back is not a write: a run with dedup on only warns
        state.dedup(True)
    else:
        with pytest.raises(StateError, match="cannot write the crawl state: attempt to write"):
            state.dedup(False)
    state.abandon()


def test_every_write_of_a_crawl_start_that_fails_is_a_state_error(tmp_path: Path) -> None:
    """The seed hosts noted and a recrawl begun, written when a crawl starts: as the dedup mark,
    a failed write there was a bare sqlite3.OperationalError."""
    state = CrawlState.open(tmp_path, SETTINGS)
    state.close(Sieve(capacity=1000, error_rate=0.01), {}, "finished")
    for write in (lambda s: s.seed_hosts({"a.test"}), CrawlState.start_recrawl):
        state = CrawlState.open(tmp_path, SETTINGS)
        state._db.execute("PRAGMA query_only = 1")
        with pytest.raises(StateError, match="cannot write the crawl state: attempt to write"):
            write(state)
        state.abandon()


def test_a_state_whose_creation_filled_the_disk_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the schema was committed table by table; a full disk at the meta left a state
    that no run could open ("state format None, expected 1")."""
    import crawler.state.db as db

    def full(*args: object, **kwargs: object) -> None:
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
        raise error

    with monkeypatch.context() as patch:
        patch.setattr(db, "put_meta", full)
        with pytest.raises(StateError, match=r"cannot write: database or disk is full \(ENOSPC\)"):
            CrawlState.open(tmp_path / "s", SETTINGS)
    assert (tmp_path / "s" / FILENAME).exists()  # the half-made file is left...
    state = CrawlState.open(tmp_path / "s", SETTINGS)  # ...and made again: nothing was in it
    assert not state.resumed and state.counts() == (0, 0)
    state.abandon()
    again = CrawlState.open(tmp_path / "s", SETTINGS)  # and resumed from then on
    assert again.resumed
    again.abandon()
