"""Limits across a resume (`crawler.state.limits`): `crawl --state` grown step by step with
--max-pages and max_depth, against the fixture site, as a user runs it (a subprocess)."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crawler.cli.run import run
from crawler.frontier.entries import Entry
from crawler.sieve import fingerprint
from crawler.state.crawlstate import CrawlState
from crawler.state.db import FILENAME, StateError
from crawler.state.limits import LimitChange, limit_changes
from crawler.testing.fixture import FixtureSite
from crawler.urls.canonical import canonicalize
from tests.support.server import site_config


@pytest.fixture
async def site() -> AsyncIterator[FixtureSite]:
    async with FixtureSite(crawl_delay=0.0, slow=0.05) as site:
        yield site


def write_config(site: FixtureSite, tmp: Path, **crawl: int) -> Path:
    """One worker: each page's links are admitted in the order a single crawl finds them."""
    resolve = ", ".join(f'"{h}" = "127.0.0.1"' for h in site.resolve)
    extra = "".join(f"{k} = {v}\n" for k, v in crawl.items())
    path = tmp / "c.toml"
    path.write_text(
        f"[crawl]\nconcurrency = 1\n{extra}"
        "[politeness]\ndelay = 0.0\nip_delay = 0.0\nbackoff_base = 0.05\n"
        f"[fetch]\nresolve = {{ {resolve} }}\n"
        "[output]\nprogress_interval = 0.0\n"
    )
    return path


def crawl_args(site: FixtureSite, tmp: Path, state: str, out: str, *extra: str) -> list[str]:
    seeds = [site.url("site-a.test", "/")]
    return [*seeds, "--config", str(tmp / "c.toml"), "--state", str(tmp / state),
            "-o", str(tmp / out), *extra]  # fmt: skip


async def start(site: FixtureSite, tmp: Path, *extra: str, state: str = "state",
                out: str = "out.jsonl", seeds: int = 1) -> asyncio.subprocess.Process:  # fmt: skip
    args = crawl_args(site, tmp, state, out, *extra)
    if seeds == 2:
        args.insert(1, site.url("site-b.test", "/"))
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawler.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def crawl(site: FixtureSite, tmp: Path, *extra: str, state: str = "state",
                out: str = "out.jsonl", seeds: int = 1) -> tuple[int, str]:  # fmt: skip
    proc = await start(site, tmp, *extra, state=state, out=out, seeds=seeds)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


def keys(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        key = canonicalize(json.loads(line)["url"])
        assert key is not None
        out.append(key)
    return out


def limit_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("crawl: resuming with ")]


@pytest.mark.slow
async def test_a_10_page_crawl_resumed_with_max_pages_20_equals_a_20_page_crawl(
    site: FixtureSite, tmp_path: Path
) -> None:
    write_config(site, tmp_path)
    code, err = await crawl(site, tmp_path, "--max-pages", "10")
    assert code == 0, err
    assert len(keys(tmp_path / "out.jsonl")) == 10
    code, err = await crawl(site, tmp_path, "--max-pages", "20")
    assert code == 0, err
    assert "started with other settings" not in err
    (line,) = limit_lines(err)
    assert line.startswith("crawl: resuming with max_pages 10 -> 20 (10 URLs admitted so far, "
                           "up to 10 more); it was reached: ")  # fmt: skip
    assert "links kept for it are offered again" in line
    grown = keys(tmp_path / "out.jsonl")
    assert len(grown) == len(set(grown)) == 20  # nothing fetched twice
    code, err = await crawl(site, tmp_path, "--max-pages", "20", state="s20", out="o20.jsonl")
    assert code == 0, err
    assert set(grown) == set(keys(tmp_path / "o20.jsonl"))


def journal(tmp: Path, state: str = "state") -> list[str]:
    db = sqlite3.connect(tmp / state / FILENAME)
    try:
        return [key for (key,) in db.execute("SELECT key FROM urls ORDER BY id")]
    finally:
        db.close()


@pytest.mark.slow
async def test_an_unlimited_crawl_interrupted_then_resumed_with_a_limit(tmp_path: Path) -> None:
    # Ctrl-C on a crawl without a limit, then the same command with --max-pages 30: accepted
    # (it was refused: "started with other settings (crawl.max_pages)"), said, and the result is
    # the 30-page crawl's: the URLs admitted before the stop, then new ones up to 30
    async with FixtureSite(crawl_delay=0.1, slow=0.05) as site:
        write_config(site, tmp_path)
        proc = await start(site, tmp_path)
        out = tmp_path / "out.jsonl"
        async with asyncio.timeout(30):
            while not out.exists() or out.read_text().count("\n") < 3:
                assert proc.returncode is None, "the crawl ended before it could be interrupted"
                await asyncio.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 130, err.decode()
        admitted = len(journal(tmp_path))
        assert 3 <= admitted < 30
        code, text = await crawl(site, tmp_path, "--max-pages", "30")
        assert code == 0, text
        (line,) = limit_lines(text)
        assert line == (f"crawl: resuming with max_pages 0 (none) -> 30 ({admitted} URLs "
                        f"admitted so far, up to {30 - admitted} more)")  # fmt: skip
        resumed = keys(out)
        assert len(resumed) == len(set(resumed)) == 30
        code, text = await crawl(site, tmp_path, "--max-pages", "30", state="s30", out="o30")
        assert code == 0, text
        assert set(resumed) == set(keys(tmp_path / "o30"))


@pytest.mark.slow
async def test_a_lowered_max_pages_admits_nothing_more_and_loses_nothing(
    site: FixtureSite, tmp_path: Path
) -> None:
    write_config(site, tmp_path)
    assert (await crawl(site, tmp_path, "--max-pages", "20"))[0] == 0
    code, err = await crawl(site, tmp_path, "--max-pages", "10")
    assert code == 0, err
    assert limit_lines(err) == [
        "crawl: resuming with max_pages 20 -> 10: 20 URLs were admitted already, so no more is; "
        "those not fetched yet still are"
    ]
    assert "already complete: nothing to do" in err
    assert len(keys(tmp_path / "out.jsonl")) == 20
    # the links kept at 20 are still there for a larger limit
    code, err = await crawl(site, tmp_path, "--max-pages", "30")
    assert code == 0, err
    (line,) = limit_lines(err)
    assert line.startswith("crawl: resuming with max_pages 10 -> 30 (20 URLs admitted so far, "
                           "up to 10 more); it was reached: ")  # fmt: skip
    grown = keys(tmp_path / "out.jsonl")
    assert len(grown) == len(set(grown)) == 30
    assert (await crawl(site, tmp_path, "--max-pages", "30", state="s30", out="o30"))[0] == 0
    assert set(grown) == set(keys(tmp_path / "o30"))


@pytest.mark.slow
async def test_max_depth_raised_then_lowered_crawls_what_a_deeper_crawl_would(
    site: FixtureSite, tmp_path: Path
) -> None:
    # the calendar is endless but for max_depth: each month links the next, one level deeper
    write_config(site, tmp_path, max_depth=1)
    code, err = await crawl(site, tmp_path, seeds=2)
    assert code == 0, err
    assert set(keys(tmp_path / "out.jsonl")) == site.expected(1) | site.refused()
    write_config(site, tmp_path, max_depth=3)
    code, err = await crawl(site, tmp_path, seeds=2)
    assert code == 0, err
    # depth 2: the docs' two pages, /sniffed and the calendar's second month
    assert limit_lines(err) == [
        "crawl: resuming with max_depth 1 -> 3: 4 links found deeper than 1 are offered again"
    ]
    out = keys(tmp_path / "out.jsonl")
    assert len(out) == len(set(out))
    assert set(out) == site.expected(3) | site.refused()
    write_config(site, tmp_path, max_depth=6)
    code, err = await crawl(site, tmp_path, seeds=2)
    assert code == 0, err
    assert limit_lines(err) == [
        "crawl: resuming with max_depth 3 -> 6: 1 links found deeper than 3 are offered again"
    ]
    assert set(keys(tmp_path / "out.jsonl")) == site.expected(6) | site.refused()
    # and lowered: nothing more, said
    write_config(site, tmp_path, max_depth=2)
    code, err = await crawl(site, tmp_path, seeds=2)
    assert code == 0, err
    assert limit_lines(err) == [
        "crawl: resuming with max_depth 6 -> 2: links deeper than 2 are refused from now "
        "on (kept for a larger limit); URLs deeper already admitted are still fetched"
    ]


@pytest.mark.slow
async def test_a_focused_crawl_scores_the_links_its_depth_refused(
    site: FixtureSite, tmp_path: Path
) -> None:
    # a focused crawl's depth refusals come before scoring: they are scored when offered again
    config = site_config(site, max_depth=2, concurrency=1).override("focus", keywords=("calendar",))
    config = config.override("state", dir=str(tmp_path / "state"))
    assert (await run(config, site.seeds, io.StringIO(), quiet=True)).status == 0
    out = io.StringIO()
    deeper = config.override("crawl", max_depth=4)
    assert (await run(deeper, site.seeds, out, quiet=True)).status == 0
    got = {canonicalize(json.loads(line)["url"]) for line in out.getvalue().splitlines()}
    assert got == site.expected(4) - site.expected(2)  # months 3 and 4


# -- the kept table and the limits, as a program sees them ---------------------------------

SETTINGS = {"scope.include": [], "crawl.max_depth": 2, "crawl.max_pages": 10}


def link(i: int, depth: int = 3) -> Entry:
    key = f"http://a.test/p{i}"
    return Entry(url=key + "?raw", key=key, depth=depth, parent="http://a.test/")


def test_limit_changes_and_what_grows() -> None:
    assert limit_changes(SETTINGS, SETTINGS) == []
    changes = limit_changes(SETTINGS, {**SETTINGS, "crawl.max_depth": 0, "crawl.max_pages": 5})
    assert changes == [LimitChange("max_pages", 10, 5), LimitChange("max_depth", 2, 0)]
    assert [c.grows for c in changes] == [False, True]
    assert str(changes[1]) == "max_depth 2 -> 0 (none)"
    assert not LimitChange("max_pages", 0, 40).grows and LimitChange("max_pages", 40, 80).grows
    # a focused crawl keeps no max_pages: not a change of value (statedb refuses it by name)
    assert limit_changes({"crawl.max_depth": 2}, {"crawl.max_pages": 5, "crawl.max_depth": 2}) == []


def test_limits_may_change_the_identity_may_not(tmp_path: Path) -> None:
    CrawlState.open(tmp_path / "s", SETTINGS).abandon()
    state = CrawlState.open(tmp_path / "s", {**SETTINGS, "crawl.max_pages": 20})
    assert state.limit_changes == [LimitChange("max_pages", 10, 20)]
    state.abandon()
    again = CrawlState.open(tmp_path / "s", {**SETTINGS, "crawl.max_pages": 20})
    assert again.limit_changes == []  # compared with the previous run's, saved
    again.abandon()
    with pytest.raises(StateError, match=r"other settings \(scope.include\)"):
        CrawlState.open(tmp_path / "s", {**SETTINGS, "scope.include": ["x"]})
    unfocused = {k: v for k, v in SETTINGS.items() if k != "crawl.max_pages"}
    with pytest.raises(StateError, match=r"not a focused crawl, run it without --focus"):
        CrawlState.open(tmp_path / "s", unfocused)


def test_kept_links_once_each_in_order_written_with_the_journal(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", SETTINGS)
    for i in (3, 1, 3, 2):
        state.kept.keep(link(i))
    state.kept.keep(link(4, depth=5), scored=False)
    db = sqlite3.connect(tmp_path / "s" / FILENAME)
    assert db.execute("SELECT COUNT(*) FROM kept").fetchone() == (0,)  # not before a commit
    state.admitted(link(1, depth=1))  # admitted since (found again at a smaller depth)
    state.completed(link(1).key)
    rows = db.execute("SELECT fp, key, url, depth, priority FROM kept ORDER BY id").fetchall()
    assert [r[1] for r in rows] == [link(i).key for i in (3, 1, 2, 4)]
    assert rows[0] == (fingerprint(link(3).key), link(3).key, link(3).url, 3, 0.0)
    assert rows[3][4] is None  # to be scored
    db.close()
    (batch,) = state.kept.waiting(0)
    assert [(e.key, scored) for e, scored in batch] == [
        (link(3).key, True), (link(2).key, True), (link(4).key, False)
    ]  # fmt: skip
    assert batch[0][0] == link(3)
    assert [e.key for e, _ in next(state.kept.waiting(4))] == [link(3).key, link(2).key]
    assert state.kept.count(0) == 3 and state.kept.count(0, deeper=3) == 1 and len(state.kept) == 4
    state.abandon()


def test_an_older_state_gets_the_kept_table(tmp_path: Path) -> None:
    CrawlState.open(tmp_path / "s", SETTINGS).abandon()
    db = sqlite3.connect(tmp_path / "s" / FILENAME)
    db.execute("DROP TABLE kept")  # as written before limits could change
    db.commit()
    db.close()
    state = CrawlState.open(tmp_path / "s", {**SETTINGS, "crawl.max_depth": 4})
    assert state.limit_changes == [LimitChange("max_depth", 2, 4)]
    state.kept.keep(link(0))
    state.commit()
    assert len(state.kept) == 1
    state.abandon()
