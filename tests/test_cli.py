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


def test_output_file_and_quiet(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    proc = run("--demo", "-q", "-o", str(out), "--max-depth", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and max(r["depth"] for r in records) <= 1


def test_no_seeds_is_a_usage_error() -> None:
    proc = run()
    assert proc.returncode == 2
    assert "no seeds given" in proc.stderr


def test_bad_seed_line_is_reported_by_line_number(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# comment\n\nhttp://127.0.0.1:9/ok\nftp://example.invalid/\n")
    proc = run(str(seeds))
    assert proc.returncode == 2
    assert f"{seeds}:4: not a crawlable http(s) URL: 'ftp://example.invalid/'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_seeds_file(tmp_path: Path) -> None:
    proc = run(str(tmp_path / "nope.txt"))
    assert proc.returncode == 2
    assert "nope.txt: neither a seeds file nor a URL (no such file)" in proc.stderr
    assert "did you mean" not in proc.stderr  # a file name, not a host name


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[crawl]\nworkers = 3\n", "unknown key 'workers'"),
        ("[crawl]\nmax_depth = 'x'\n", "max_depth"),
    ],
)
def test_bad_config_is_a_usage_error(tmp_path: Path, text: str, needle: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text(text)
    proc = run("--config", str(config), "--demo")
    assert proc.returncode == 2
    assert needle in proc.stderr and str(config) in proc.stderr


def test_demo_with_seeds_is_refused() -> None:
    proc = run("--demo", "http://127.0.0.1:9/")
    assert proc.returncode == 2
    assert "--demo" in proc.stderr


def test_bundled_seeds_file_parses() -> None:
    from crawler.cli import read_seeds

    text = (Path(__file__).resolve().parent.parent / "seeds.txt").read_text()
    seeds = read_seeds("seeds.txt", iter(text.splitlines()))
    assert len(seeds) >= 3 and all(s.startswith("https://") for s in seeds)


def test_run_loop_falls_back_to_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from crawler.cli import run_loop

    async def loop_name() -> str:
        return type(asyncio.get_running_loop()).__module__

    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if not installed
    assert run_loop(loop_name()).startswith("asyncio")
