"""The command line a newcomer reaches for: `-s SECTION.KEY=VALUE`, the common flags, `--version`,
`-o` that says it appends and `-O` that overwrites, and output paths that are all checked (and
nothing created) before anything is crawled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.cli.args import apply_overrides, build_parser
from crawler.cli.settings import parse_setting
from crawler.config.load import Config
from crawler.errors import ConfigError

CRAWL = [sys.executable, "-m", "crawler.cli"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CRAWL, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def configured(*argv: str) -> Config:
    return apply_overrides(Config(), build_parser().parse_args(["http://a.test/", *argv]))


# -- -s SECTION.KEY=VALUE ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dedup.enabled=true", ("dedup", "enabled", True)),
        ("crawl.max_pages=8", ("crawl", "max_pages", 8)),
        ("politeness.delay=0.5", ("politeness", "delay", 0.5)),
        ('scope.include=["/a/", "/b/"]', ("scope", "include", ["/a/", "/b/"])),
        ("crawl.user_agent=bot/1.0 (+http://x.test/)", ("crawl", "user_agent",
                                                          "bot/1.0 (+http://x.test/)")),
        ("output.path=a=b.jsonl", ("output", "path", "a=b.jsonl")),  # the first "=" splits
    ],
)  # fmt: skip
def test_a_setting_is_read_as_toml_else_as_a_string(text: str, expected: tuple[str, ...]) -> None:
    assert parse_setting(text) == expected


def test_settings_reach_every_section_and_flags_go_over_them() -> None:
    config = configured(
        "-s", "dedup.enabled=true", "-s", "dedup.near_distance=4", "-s", "crawl.max_pages=8",
        "-s", "scope.exclude=/private/", "-s", "crawl.user_agent=2.0", "-s", "sieve.ratio=0.5",
        "--max-pages", "9",
    )  # fmt: skip
    assert (config.dedup.enabled, config.dedup.near_distance) == (True, 4)
    assert config.crawl.max_pages == 9  # the dedicated flag wins
    assert config.scope.exclude == ("/private/",)  # one string: a one-item list
    assert config.crawl.user_agent == "2.0"  # a string key keeps the text written
    assert config.sieve.ratio == 0.5


def test_the_last_of_one_key_wins() -> None:
    assert configured("-s", "crawl.max_depth=3", "-s", "crawl.max_depth=5").crawl.max_depth == 5


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "crawl.maxpages=3",
            "-s crawl.maxpages=3: unknown key 'maxpages' in [crawl] (did you mean "
            "crawl.max_pages? known: ",
        ),
        ("crawl.zzz=3", "-s crawl.zzz=3: unknown key 'zzz' in [crawl] (known: "),
        (
            "crawler.max_pages=3",
            "-s crawler.max_pages=3: unknown section 'crawler' (did you mean [crawl]? known: ",
        ),
        ("crawl.max_pages=x", "-s crawl.max_pages=x: expected int, got str 'x'"),
        ("crawl.max_pages=-1", "-s crawl.max_pages=-1: must be >= 0"),
        ("dedup.enabled", "-s dedup.enabled: expected SECTION.KEY=VALUE"),
        # a key without its section: the full key when one section has it, or the closest
        (
            "max_pages=5",
            "-s max_pages=5: expected SECTION.KEY=VALUE (did you mean -s crawl.max_pages=5?)",
        ),
        (
            "max_page=5",
            "-s max_page=5: expected SECTION.KEY=VALUE (did you mean -s crawl.max_pages=5?)",
        ),
        (
            "enabled=true",
            "-s enabled=true: expected SECTION.KEY=VALUE ('enabled' is a key of [dedup], "
            "[render]: say which)",
        ),
        ("dedup.enabled=yes", "-s dedup.enabled=yes: expected true or false, got 'yes'"),
        ("dedup.enabled=1", "-s dedup.enabled=1: expected true or false, got 1"),
        ("hosts.match=x", "-s hosts.match=x: [[hosts]] rules are set in a --config file only"),
    ],
)
def test_a_bad_setting_is_refused_by_name(setting: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        configured("-s", setting)
    assert str(caught.value).startswith(message), caught.value


def test_a_bad_setting_exits_2_naming_it() -> None:
    proc = run("--demo", "-s", "crawl.maxpages=3")
    assert proc.returncode == 2
    assert proc.stderr.startswith("crawl: error: -s crawl.maxpages=3: unknown key 'maxpages'")
    assert proc.stdout == "" and "Traceback" not in proc.stderr


# -- the common flags -------------------------------------------------------------------------


def test_common_flags_set_their_keys() -> None:
    config = configured(
        "--user-agent", "mybot/2 (+http://me.test/)", "--per-host-concurrency", "4",
        "--allow-domain", "a.test", "--allow-domain", "b.test", "--include", "/docs/",
        "--exclude", r"\?print=", "--exclude", "/old/", "--dedup", "--sitemaps",
        "--ignore-robots",
    )  # fmt: skip
    assert config.crawl.user_agent == "mybot/2 (+http://me.test/)"
    assert config.politeness.per_host_concurrency == 4
    assert config.scope.allowed_domains == ("a.test", "b.test")
    assert (config.scope.include, config.scope.exclude) == (("/docs/",), (r"\?print=", "/old/"))
    assert (config.dedup.enabled, config.scope.use_sitemaps) == (True, True)
    assert config.politeness.respect_robots is False


def test_flags_not_given_leave_the_config_alone() -> None:
    assert configured() == Config()


def test_a_bad_common_flag_value_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"^--per-host-concurrency: must be >= 1"):
        configured("--per-host-concurrency", "0")


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("crawl (sieve-crawler) ") and proc.stdout.strip()[-1].isdigit()


def test_dedup_flag_reaches_the_crawl() -> None:
    proc = run("--demo", "-q", "--dedup", "--max-pages", "5")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert any(r["content_hash"] for r in records)  # null without content dedup


# -- -o appends (and says so), -O overwrites ---------------------------------------------------


@pytest.mark.slow
def test_o_says_it_appends_and_big_o_overwrites(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    first = run("--demo", "--max-pages", "5", "-o", str(out))
    assert first.returncode == 0 and "appending" not in first.stderr
    second = run("--demo", "--max-pages", "5", "-o", str(out))
    assert second.returncode == 0
    assert f"crawl: -o {out}: appending to its 5 results (-O PATH empties it first)" in (
        second.stderr
    )
    assert len(out.read_text().splitlines()) == 10
    third = run("--demo", "--max-pages", "5", "-O", str(out))
    assert third.returncode == 0 and "appending" not in third.stderr
    assert len(out.read_text().splitlines()) == 5


def test_big_o_is_refused_on_a_resume(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out.jsonl"
    assert (
        run("--demo", "-q", "--max-pages", "5", "--state", str(state), "-O", str(out)).returncode
        == 0
    )
    proc = run("--demo", "-q", "--state", str(state), "-O", str(out))
    assert proc.returncode == 2
    assert f"crawl: error: -O {out}: this crawl resumes the state in {state}" in proc.stderr
    assert len(out.read_text().splitlines()) == 5  # the first run's results are kept


def test_o_and_big_o_together_are_a_usage_error(tmp_path: Path) -> None:
    proc = run("--demo", "-o", str(tmp_path / "a"), "-O", str(tmp_path / "b"))
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr


# -- every output path checked before anything is created or crawled ---------------------------

needs_proc = pytest.mark.skipif(not Path("/proc/self").exists(), reason="Linux /proc")


@needs_proc
@pytest.mark.parametrize("option", ["--stats", "-o", "--warc"])
def test_an_output_nothing_can_be_created_in_is_refused_before_the_crawl(
    tmp_path: Path, option: str
) -> None:
    # /proc refuses new files even to root, for whom access() says every place is writable
    proc = run("--demo", option, "/proc/x.out", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"crawl: error: {option} /proc/x.out: cannot write: "), (
        proc.stderr
    )
    assert proc.stdout == "" and "demo:" not in proc.stderr  # nothing crawled


def test_a_refused_warc_leaves_no_output_created(tmp_path: Path) -> None:
    (tmp_path / "bad.warc.gz").write_text("not a WARC")
    proc = run("--demo", "-o", "new/out.jsonl", "--state", "st", "--warc", "bad.warc.gz",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("crawl: error: --warc bad.warc.gz: exists and is not a gzipped")
    assert sorted(os.listdir(tmp_path)) == ["bad.warc.gz"]  # no new/, no st/


def test_a_refused_output_leaves_no_directory_created(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("my notes\n")
    proc = run("--demo", "-o", "notes.txt", "--warc", "w/x.warc.gz", "--stats", "s/s.json",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("crawl: error: -o notes.txt: not a JSON Lines output")
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"


# -- the summary: what a user acts on; the internals with -v ------------------------------------


@pytest.mark.slow
def test_the_summary_leaves_the_internals_to_verbose() -> None:
    plain = run("--demo", "--max-pages", "8", "-o", "/dev/null")
    assert plain.returncode == 0
    summary = plain.stderr.split("crawl summary", 1)[1]
    assert "pages (results)" in summary and "URLs admitted (seeds included)" in summary
    assert "links not followed: max_pages reached" in summary  # the cut, named as links
    for internal in ("sieve", "memo hit rate", "URLs dropped: queue full"):
        assert internal not in summary
    verbose = run("--demo", "--max-pages", "8", "-o", "/dev/null", "-v")
    summary = verbose.stderr.split("crawl summary", 1)[1]
    for internal in ("sieve kind", "sieve bits", "sieve FPR bound", "memo hit rate"):
        assert internal in summary


def test_a_focused_crawls_harvest_rate_shows_its_threshold() -> None:
    proc = run("--demo", "--max-pages", "8", "-o", "/dev/null", "--focus", "calendar",
               "-s", "focus.threshold=0.3")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "harvest rate (relevance >= 0.3)" in proc.stderr


@pytest.mark.parametrize(
    ("flags", "ip_delay", "ip_concurrency"),
    [
        ([], 0.25, 4),  # the defaults
        (["--delay", "0"], 0.0, 4),  # your own site: not held to the address's pace
        (["--delay", "2"], 0.25, 4),  # a slower host: the address's own rule stays
        (["--per-host-concurrency", "8"], 0.25, 8),
        (["--per-host-concurrency", "2"], 0.25, 4),
        (["-s", "politeness.ip_concurrency=0", "--per-host-concurrency", "8"], 0.25, 0),
    ],
)
def test_delay_and_per_host_concurrency_never_leave_an_address_stricter_than_a_host(
    flags: list[str], ip_delay: float, ip_concurrency: int
) -> None:
    config = apply_overrides(Config(), build_parser().parse_args(["u", *flags]))
    assert (config.politeness.ip_delay, config.politeness.ip_concurrency) == (
        ip_delay,
        ip_concurrency,
    )
