"""The `crawl` command end to end, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CRAWL = [sys.executable, "-m", "crawler.cli"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CRAWL, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "crawl"
    assert script.exists()
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "--demo" in proc.stdout
    assert "3 not one seed got an HTTP response" in " ".join(proc.stdout.split())


@pytest.mark.slow
def test_demo_crawls_fixture_and_matches_ground_truth(tmp_path: Path) -> None:
    stats = tmp_path / "stats.json"
    proc = run("--demo", "--stats", str(stats))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) > 30
    for record in lines:
        assert {
            "url",
            "status",
            "depth",
            "parent",
            "content_type",
            "size",
            "elapsed_ms",
            "fetched_at",
            "title",
            "links",
            "new_links",
            "location",
            "error",
        } <= set(record)
        assert record["fetched_at"].endswith("Z")
    assert "equals the fixture's ground truth" in proc.stderr
    assert "crawl summary" in proc.stderr
    data = json.loads(stats.read_text())
    assert data["pages"] == len(lines)
    assert data["status_classes"]["2xx"] == sum(1 for r in lines if (r["status"] or 0) // 100 == 2)


@pytest.mark.slow
def test_output_file_and_quiet(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    proc = run("--demo", "-q", "-o", str(out), "--max-depth", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == ""  # -q: not even the demo's lines
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and max(r["depth"] for r in records) <= 1


@pytest.mark.slow
def test_demo_cut_by_max_pages_says_its_set_is_a_part_of_the_truth() -> None:
    # it said "5 results; the crawled set equals the fixture's ground truth (43 URLs)"
    proc = run("--demo", "--max-pages", "5", "-o", "/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert "demo: 5 results; the crawled set is a part of the fixture's ground truth" in proc.stderr


@pytest.mark.slow
def test_no_seeds_is_a_usage_error() -> None:
    proc = run()
    assert proc.returncode == 2
    assert "no seeds given" in proc.stderr


@pytest.mark.slow
def test_bad_seed_line_is_reported_by_line_number(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# comment\n\nhttp://127.0.0.1:9/ok\nftp://example.invalid/\n")
    proc = run(str(seeds))
    assert proc.returncode == 2
    why = "not a crawlable http(s) URL: the scheme is ftp:, not http(s)"
    assert f"{seeds}:4: {why}: 'ftp://example.invalid/'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_missing_seeds_file(tmp_path: Path) -> None:
    proc = run(str(tmp_path / "nope.txt"))
    assert proc.returncode == 2
    assert "nope.txt: neither a seeds file nor a URL (no such file)" in proc.stderr
    assert "did you mean" not in proc.stderr  # a file name, not a host name


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[crawl]\nworkers = 3\n", "unknown key 'workers'"),
        ("[crawl]\nmax_depth = 'x'\n", "max_depth"),
        ("delay = 2\n", "top-level key 'delay' must be inside a section, e.g. [politeness]"),
        ("[crawl]\nmax_pages = 1\n[politeness]\n[nope]\nx = 1\n", "unknown section [nope]"),
    ],
)
def test_bad_config_is_a_usage_error(tmp_path: Path, text: str, needle: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text(text)
    proc = run("--config", str(config), "--demo")
    assert proc.returncode == 2
    assert needle in proc.stderr and str(config) in proc.stderr


@pytest.mark.parametrize(
    ("flag", "suggestion"), [("--maxpages", "--max-pages"), ("--dealy=2", "--delay")]
)
def test_a_mistyped_flag_gets_a_suggestion(flag: str, suggestion: str) -> None:
    proc = run(flag, "5", "http://127.0.0.1:9/")
    assert proc.returncode == 2
    assert f"unrecognized arguments: {flag}" in proc.stderr
    assert f"(did you mean {suggestion}?)" in proc.stderr


def test_crawl_id_without_redis_is_refused() -> None:
    # it was ignored: the process crawled on its own, sharing nothing
    proc = run("--crawl-id", "docs", "http://127.0.0.1:9/")
    assert proc.returncode == 2
    assert "crawl: error: --crawl-id names a shared crawl: give --redis URL" in proc.stderr


@pytest.mark.parametrize("words", ["", "  "])
def test_focus_without_words_is_refused(words: str) -> None:
    # an empty --focus ran an unfocused crawl without a word
    proc = run("--focus", words, "http://127.0.0.1:9/")
    assert proc.returncode == 2
    assert "crawl: error: --focus: no topic words given" in proc.stderr


def test_demo_with_seeds_is_refused() -> None:
    proc = run("--demo", "http://127.0.0.1:9/")
    assert proc.returncode == 2
    assert "--demo" in proc.stderr


def test_bundled_seeds_file_parses() -> None:
    from crawler.cli.main import read_seeds

    text = (Path(__file__).resolve().parents[2] / "seeds.txt").read_text()
    seeds = read_seeds("seeds.txt", iter(text.splitlines()))
    assert len(seeds) >= 3 and all(s.startswith("https://") for s in seeds)


def test_run_loop_falls_back_to_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from crawler.cli.main import run_loop

    async def loop_name() -> str:
        return type(asyncio.get_running_loop()).__module__

    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if not installed
    assert run_loop(loop_name()).startswith("asyncio")


def test_stats_onto_a_directory_fails_before_the_crawl(tmp_path: Path) -> None:
    proc = run("--demo", "--stats", str(tmp_path))
    assert proc.returncode == 2
    assert f"crawl: error: --stats {tmp_path}: is a directory" in proc.stderr
    assert proc.stdout == "" and "demo:" not in proc.stderr  # nothing crawled, nothing lost
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_outputs_into_missing_directories_are_created(tmp_path: Path) -> None:
    stats, out = tmp_path / "new" / "stats.json", tmp_path / "other" / "out.jsonl"
    proc = run("--demo", "-q", "--max-depth", "1", "--stats", str(stats), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(stats.read_text())["pages"] == len(out.read_text().splitlines()) > 0


@pytest.mark.slow
def test_unreachable_seed_exits_3(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run(f"http://127.0.0.1:{port}/", "-o", str(tmp_path / "out.jsonl"))
    assert proc.returncode == 3, proc.stderr
    last = proc.stderr.rstrip().splitlines()[-2:]  # after the summary
    assert last[0] == "crawl: error: no seed could be fetched:"
    assert last[1].startswith(f"  http://127.0.0.1:{port}/: connect: ")


def test_host_name_instead_of_url(tmp_path: Path) -> None:
    proc = run("example.net", cwd=tmp_path)
    assert proc.returncode == 2
    assert "example.net: neither a seeds file nor a URL" in proc.stderr
    assert "did you mean http://example.net/?" in proc.stderr


def test_empty_seeds_file(tmp_path: Path) -> None:
    (tmp_path / "seeds.txt").write_text("# to do\n")
    proc = run("seeds.txt", cwd=tmp_path)
    assert proc.returncode == 2
    assert "crawl: error: no seeds in seeds.txt" in proc.stderr


def test_docs_document_exit_codes_and_default_delay() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs"
    quick_start = (docs / "quickstart.md").read_text()
    first_crawl = quick_start.split("## A first crawl", 1)[1].split("\n## ", 1)[0]
    assert "1 s" in first_crawl and "--delay" in first_crawl
    cli = (docs / "cli.md").read_text()
    exit_text = cli.split("\n## Exit status\n", 1)[1].split("\n## ", 1)[0]
    for code in ("0", "1", "2", "3", "130/143", "141"):
        assert f" {code} " in exit_text
        assert f"\n| {code} | " in exit_text  # a row of the table
