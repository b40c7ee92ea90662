"""The `crawl` command's run, in process: exit 3 when nothing could be fetched, finished and
resumed crawls said plainly, output paths checked before the crawl."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli.run import command_line, run
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError
from crawler.frontier.entries import Entry
from crawler.output.jsonl import check_output_paths
from crawler.output.results import CrawlResult
from crawler.state.crawlstate import CrawlState
from crawler.state.db import StateError
from crawler.testing.fixture import FixtureSite
from crawler.urls.canonical import canonicalize
from tests.support.server import serve, site_config


def fast(config: Config) -> Config:
    return config.override(
        "politeness", delay=0.0, ip_delay=0.0, backoff_base=0.01, backoff_max=0.05
    )


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- exit status 3 ---------------------------------------------------------------------------


async def test_unreachable_seed_exits_3_with_the_real_reason() -> None:
    seed = f"http://127.0.0.1:{closed_port()}/"
    outcome = await run(fast(Config()), [seed], io.StringIO(), quiet=True)
    assert outcome.status == 3
    assert outcome.error.startswith("no seed could be fetched:")
    assert f"{seed}: connect: " in outcome.error
    assert "fetching its host's robots.txt" in outcome.error


async def test_a_seed_answering_404_got_a_response() -> None:
    async def not_found(request: web.Request) -> web.Response:
        return web.Response(status=404, text="no")

    async with serve(not_found) as port:
        outcome = await run(
            fast(Config()), [f"http://127.0.0.1:{port}/"], io.StringIO(), quiet=True
        )
    assert outcome.status == 0 and outcome.error == ""


async def test_one_reachable_seed_is_enough() -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="<title>ok</title>", content_type="text/html")

    seeds = [f"http://127.0.0.1:{closed_port()}/"]
    async with serve(ok) as port:
        seeds.append(f"http://127.0.0.1:{port}/")
        outcome = await run(fast(Config()), seeds, io.StringIO(), quiet=True)
    assert outcome.status == 0


async def test_a_resumed_crawl_whose_pages_were_fetched_does_not_exit_3(tmp_path: Path) -> None:
    # the first run fetched a seed and stopped with the other seed still waiting for its host
    # (a server that never answers); the resumed run fetched the first seed's links, and the
    # other seed's host failed: "no seed could be fetched", exit 3, for a crawl that fetched
    # pages in both runs
    answer = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not answer.is_set():
            await reader.read()  # never answers; until the crawler hangs up
        writer.close()  # the second run: closed before any response

    async def site(request: web.Request) -> web.Response:
        links = "".join(f'<a href="/p{i}">p</a>' for i in range(3)) if request.path == "/" else ""
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    config = fast(Config()).override("state", dir=str(tmp_path / "state"))
    config = config.override("fetch", retries=0).override("politeness", robots_attempts=1)
    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    async with server, serve(site) as port:
        seeds = [f"http://127.0.0.1:{port}/",
                 f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"]  # fmt: skip
        state = CrawlState.open(config.state.dir, settings(config))
        async with Crawler(config, state=state) as crawler:
            taken: list[CrawlResult] = []
            async for result in crawler.crawl(seeds):  # a result is done once the next one is
                taken.append(result)  # asked for: the seed is, its first link is left pending
                if len(taken) == 2:
                    break
        assert [(r.url, r.status) for r in taken] == [(seeds[0], 200), (f"{seeds[0]}p0", 200)]
        answer.set()
        out = io.StringIO()
        outcome = await run(config, seeds, out, quiet=True)
    results = {r["url"]: r for r in map(json.loads, out.getvalue().splitlines())}
    assert results[seeds[1]]["error"].startswith("robots: robots.txt unreachable (reset: ")
    assert seeds[0] not in results
    assert [results[f"{seeds[0]}p{i}"]["status"] for i in range(3)] == [200] * 3
    assert outcome.status == 0 and outcome.error == ""


# -- state: finished and resumed crawls ------------------------------------------------------


@pytest.mark.slow
async def test_rerunning_a_finished_crawl_says_it_is_complete(
    site: FixtureSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = site_config(site).override("state", dir=str(tmp_path / "state"))
    out = io.StringIO()
    first = await run(config, site.seeds, out, args=["seeds.txt", "--state", "s"])
    assert first.status == 0 and first.summary and out.getvalue()
    capsys.readouterr()
    again = await run(config, site.seeds, io.StringIO(), args=["seeds.txt", "--state", "s"])
    assert again.status == 0 and not again.summary  # no old summary reprinted
    err = capsys.readouterr().err
    assert "is already complete: nothing to do" in err
    assert f"{command_line(['seeds.txt', '--state', 's', '--fresh'])}" in err


async def test_resuming_is_said_and_logged_at_info(
    site: FixtureSite,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = site_config(site, max_pages=1).override("state", dir=str(tmp_path / "state"))
    state = CrawlState.open(tmp_path / "state", settings(config))
    seed = site.seeds[0]
    key = canonicalize(seed)
    assert key is not None
    state.admitted(Entry(url=seed, key=key, depth=0))
    state.abandon()  # as after a crash: one URL admitted, not done
    with caplog.at_level(logging.INFO, logger="crawler"):
        outcome = await run(config, [seed], io.StringIO())
    assert outcome.status == 0
    assert (
        f"resuming the crawl in {tmp_path / 'state'} (0 of 1 URLs done)" in capsys.readouterr().err
    )
    resumed = [r for r in caplog.records if r.getMessage().startswith("resuming:")]
    assert resumed and all(r.levelno == logging.INFO for r in resumed)


@pytest.mark.slow
async def test_a_spent_fetch_budget_says_what_is_left_and_how_to_go_on(
    site: FixtureSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a focused crawl stopped by its budget, then resumed with the same one, fetched nothing
    # without a word: the URLs left and the way on are said
    config = site_config(site, max_pages=3).override("focus", keywords=("calendar",))
    outcome = await run(config, site.seeds, io.StringIO())
    assert outcome.status == 0
    err = capsys.readouterr().err
    assert "fetch budget of 3 pages (max_pages) spent; " in err
    assert "URLs not fetched (with --state DIR they would be kept" in err
    config = config.override("state", dir=str(tmp_path / "state"))
    for _ in range(2):  # the first run and its resume with the same budget
        assert (await run(config, site.seeds, io.StringIO())).status == 0
        err = capsys.readouterr().err
        assert f"URLs left pending in {tmp_path / 'state'}: run again with a larger" in err
    more = await run(config.override("crawl", max_pages=1000), site.seeds, io.StringIO())
    assert more.status == 0 and "fetch budget" not in capsys.readouterr().err


@pytest.mark.slow
async def test_a_seed_redirected_out_of_scope_is_said(
    site: FixtureSite, capsys: pytest.CaptureFixture[str]
) -> None:
    # `crawl http://example.org/` answered by a redirect to https://www.example.org/ (another
    # host): the target is out of the default scope, and the crawl ended after one result,
    # exit 0, without a word
    seed, target = site.url("site-a.test", "/to-b"), site.url("site-b.test", "/from-a")
    outcome = await run(site_config(site), [seed], io.StringIO())
    assert outcome.status == 0
    err = " ".join(capsys.readouterr().err.split())
    assert f"seed {seed} redirected to {target}, another site, outside the crawl's scope" in err
    assert "[scope] allowed_domains" in err
    # the same redirect with its target's host a seed's too: nothing to say
    outcome = await run(site_config(site), [seed, site.seeds[1]], io.StringIO())
    assert outcome.status == 0 and "redirected" not in capsys.readouterr().err


async def test_resuming_a_focused_crawl_without_its_focus_says_so(
    site: FixtureSite, tmp_path: Path
) -> None:
    # the refusal named "crawl.max_pages", which the user had not changed: a focused crawl's
    # max_pages is a budget free to change, so its state keeps none
    config = site_config(site, max_pages=3).override("state", dir=str(tmp_path / "state"))
    focused = config.override("focus", keywords=("calendar",))
    assert (await run(focused, site.seeds, io.StringIO(), quiet=True)).status == 0
    with pytest.raises(StateError, match=r"a focused crawl, give its --focus or \[focus\] "):
        await run(config, site.seeds, io.StringIO(), quiet=True)
    fresh = config.override("state", dir=str(tmp_path / "plain"))
    assert (await run(fresh, site.seeds, io.StringIO(), quiet=True)).status == 0
    with pytest.raises(StateError, match=r"not a focused crawl, run it without --focus"):
        await run(fresh.override("focus", keywords=("calendar",)), site.seeds, io.StringIO())


def test_the_summary_counts_duplicate_pages_only_when_content_dedup_is_on() -> None:
    from crawler.cli.progress import summary_rows
    from crawler.engine.crawler import Crawler

    def duplicates(config: Config) -> str | None:
        return dict(summary_rows(Crawler(config).stats_dict())).get("duplicate pages exact / near")

    assert duplicates(Config()) is None  # was "0 / 0", as if compared: no row when off
    assert duplicates(Config().override("dedup", enabled=True)) == "0 / 0"


# -- resume hint -----------------------------------------------------------------------------


def test_command_line_is_the_console_script_as_invoked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [".venv/bin/crawl", "seeds.txt", "--state", "my dir"])
    monkeypatch.setattr(sys, "orig_argv", [".venv/bin/python", ".venv/bin/crawl", "seeds.txt",
                                           "--state", "my dir"])  # fmt: skip
    assert command_line(["seeds.txt", "--state", "my dir"]) == (
        ".venv/bin/crawl seeds.txt --state 'my dir'"
    )


def test_command_line_keeps_python_dash_m(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/x/crawler/cli/__main__.py", "s.txt"])
    monkeypatch.setattr(sys, "orig_argv", ["python3", "-X", "dev", "-m", "crawler.cli", "s.txt"])
    assert command_line(["s.txt", "--fresh"]) == "python3 -X dev -m crawler.cli s.txt --fresh"


def test_command_line_otherwise_is_the_module_that_runs_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["/x/crawler/cli/__main__.py", "s.txt"])
    monkeypatch.setattr(sys, "orig_argv", [])  # (not known)
    line = command_line(["s.txt"])
    assert line == shlex.join([sys.executable, "-m", "crawler.cli", "s.txt"])
    version = subprocess.run([*shlex.split(line)[:-1], "--version"], capture_output=True,
                             text=True, timeout=60)  # fmt: skip
    assert version.returncode == 0 and version.stdout.startswith("crawl (sieve-crawler)")


# -- output paths ----------------------------------------------------------------------------


def test_missing_parent_directories_are_created_for_every_output(tmp_path: Path) -> None:
    files = {"-o": "a/out.jsonl", "--warc": "b/c/x.warc.gz", "--stats": "d/stats.json"}
    files = {k: str(tmp_path / v) for k, v in files.items()}
    check_output_paths(files, {"--state": str(tmp_path / "e/f/state")})
    for path in ("a", "b/c", "d", "e/f/state"):
        assert (tmp_path / path).is_dir()
    assert not (tmp_path / "d/stats.json").exists()  # nothing written before the crawl


@pytest.mark.parametrize(
    ("option", "make", "path", "needle"),
    [
        ("--stats", "dir", "x", "--stats {p}: is a directory; give a file name"),
        ("-o", "dir", "x", "-o {p}: is a directory; give a file name"),
        ("--warc", "file", "x/crawl.warc.gz", "--warc {p}: {t}/x is not a directory"),
        ("--stats", "file", "x/y/stats.json", "--stats {p}: {t}/x is not a directory"),
        ("--state", "file", "x", "--state {p}: not a directory"),
    ],
)
def test_a_bad_output_path_names_its_option(
    tmp_path: Path, option: str, make: str, path: str, needle: str
) -> None:
    target = tmp_path / "x"
    if make == "dir":
        target.mkdir()
    else:
        target.write_text("")
    p = str(tmp_path / path)
    directories = {option: p} if option == "--state" else {}
    files = {} if directories else {option: p}
    with pytest.raises(ConfigError) as caught:
        check_output_paths(files, directories)
    assert str(caught.value) == needle.format(p=p, t=tmp_path)


def test_two_options_naming_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "out.jsonl")
    with pytest.raises(ConfigError, match="-o and --stats name the same path"):
        check_output_paths({"-o": path, "--stats": path, "--warc": ""}, {})
    check_output_paths({"-o": "-", "--stats": "-"}, {})  # stdout is not a path


def test_a_file_option_ending_in_a_slash_names_a_directory(tmp_path: Path) -> None:
    missing = str(tmp_path / "stats") + "/"
    with pytest.raises(ConfigError, match=r"--stats .*names a directory; give a file name"):
        check_output_paths({"--stats": missing}, {})
    assert not (tmp_path / "stats").exists()  # refused before anything was created


def test_an_output_inside_the_state_directory(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "state" / "out.jsonl"
    with pytest.raises(ConfigError, match=r"^-o .*out\.jsonl: inside the --state directory"):
        check_output_paths({"-o": str(out)}, {"--state": str(state)})
    assert not state.exists()  # refused before anything was created
    check_output_paths({"-o": str(tmp_path / "out.jsonl")}, {"--state": str(state)})


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_directory_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match=r"--warc .*: cannot write in"):
            check_output_paths({"--warc": str(locked / "x.warc.gz")}, {})
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize(
    "given",
    [
        ["-O", "out.jsonl"],
        ["-Oout.jsonl"],
        ["-qO", "out.jsonl"],
        ["--overwrite-output", "out.jsonl"],
        ["--overwrite-output=out.jsonl"],
        ["--overwrite", "out.jsonl"],
    ],
)
def test_the_resume_command_of_a_crawl_started_with_dash_capital_o_appends(
    given: list[str],
) -> None:
    """-O empties its output and is refused on a resume: the printed command says -o."""
    from crawler.cli.args import build_parser
    from crawler.cli.run import without_fresh

    args = ["seeds.txt", "--state", "s", *given, "--fresh", "-s", "output.path=-O"]
    resumed = build_parser().parse_args(without_fresh(args))
    assert resumed.overwrite_output is None and resumed.output == "out.jsonl"
    assert not resumed.fresh and resumed.settings == ["output.path=-O"]
