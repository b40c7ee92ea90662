"""`--report FILE` and `crawl report OUT.jsonl`: one self-contained HTML file, made from a running
crawl (at its end, and when it is interrupted) or from an output streamed line by line; opened in
the real Chromium the render tests use."""

from __future__ import annotations

import io
import json
import os
import re
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from crawler.cli.main import main
from crawler.cli.run import run
from crawler.observe import Digest, report_from_jsonl
from crawler.observe.digest import MAX_BUCKETS, TOP
from crawler.testing.fixture import FixtureSite
from tests.support.render import requires_browser
from tests.support.server import site_config

START = datetime(2026, 1, 1, tzinfo=UTC)
STATS = {"pages": 5000, "elapsed_s": 100.0, "harvest_threshold": 0.5,
         "sieve": {"kind": "scalable", "count": 6000, "approx_items": 6010, "stages": 1,
                   "size_in_bytes": 14_377, "false_positive_bound": 1e-4,
                   "false_positive_estimate": 2e-5}}  # fmt: skip


def record(i: int, *, seconds: float = 0.0, **fields: object) -> dict[str, object]:
    """A JSON Lines result, as the crawler writes it."""
    when = (START + timedelta(seconds=seconds)).isoformat()
    return {
        "url": f"https://host{i % 7}.test/page/{i}", "status": 200, "depth": i % 4,
        "parent": None, "content_type": "text/html; charset=utf-8", "size": 1000 + i,
        "elapsed_ms": float(i % 500), "fetched_at": when,
        "title": None, "links": 3, "new_links": 1, "rendered": False, "location": None,
        "canonical": None, "error": None, "content_hash": None, "duplicate_of": None,
        "simhash": None, "near_duplicate_of": None, "relevance": None, "unchanged": False,
        **fields,
    }  # fmt: skip


def test_the_digest_counts_and_keeps_the_top_rows() -> None:
    digest = Digest()
    for i in range(1000):
        fields: dict[str, object] = {}
        if i % 10 == 0:
            fields = {"status": None, "error": "timeout: read_timeout 30 s"}
        elif i % 10 == 1:
            fields = {"status": 404}
        elif i % 10 == 2:
            fields = {"duplicate_of": "https://host0.test/page/0"}
        digest.add(record(i, seconds=i / 10, **fields))
    assert digest.pages == 1000
    assert digest.statuses == {"200": 800, "404": 100, "error": 100}
    assert digest.errors == {"timeout": 100}
    assert digest.exact == 100 and digest.copied["https://host0.test/page/0"] == 100
    assert sum(digest.host_pages.values()) == 1000 and len(digest.host_pages) == 7
    assert sorted(digest.largest, reverse=True)[0] == (1999, "https://host5.test/page/999")
    assert len(digest.slowest) == TOP and max(digest.slowest)[0] == 499.0
    assert sum(slot.pages for _, slot in digest.timeline()) == 1000
    assert sum(slot.errors for _, slot in digest.timeline()) == 100


def test_a_long_crawls_timeline_stays_bounded() -> None:
    digest = Digest()
    for i in range(20_000):  # one result every 7 s: 39 hours
        digest.add(record(i, seconds=7 * i))
    assert len(digest.slots) <= MAX_BUCKETS and digest.width > 1
    line = digest.timeline()
    assert sum(slot.pages for _, slot in line) == 20_000
    assert line[-1][0] <= 7 * 20_000 < line[-1][0] + digest.width


def write_jsonl(path: Path, n: int) -> None:
    with path.open("w") as out:
        for i in range(n):
            fields: dict[str, object] = {"relevance": (i % 10) / 10} if i % 2 else {}
            if i % 17 == 0:
                fields = {"status": None, "error": ("timeout", "connect", "robots")[i % 3] + ": x"}
            elif i % 13 == 0:
                fields = {"status": (404, 301, 503)[i % 3]}
            elif i % 11 == 0:
                fields = {"duplicate_of": f"https://host1.test/page/{i % 5}"}
            out.write(json.dumps(record(i, seconds=i / 50 + (i // 700) * 5, **fields)) + "\n")
        out.write('{"url": "https://torn.test/", "sta')  # a torn last line


def test_crawl_report_makes_a_self_contained_page_from_an_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, stats, html = tmp_path / "out.jsonl", tmp_path / "stats.json", tmp_path / "r.html"
    write_jsonl(results, 5000)
    stats.write_text(json.dumps(STATS))
    status = main(["report", str(results), "--stats", str(stats), "-o", str(html)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "5,000 results" in err and "1 lines that were not results skipped" in err
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page
    assert "default-src 'none'" in page
    assert not re.search(r"<script|https?://(?!www\.w3\.org/2000/svg)", page.split("<main>")[1]
                         .replace("https://host", "")), "nothing loaded, nothing run"  # fmt: skip
    assert not re.search(r"\sstyle=", page), "no inline style attribute (the CSP forbids them)"
    for heading in ("Results over time", "Statuses", "Errors by kind", "Depth",
                    "Top hosts by pages", "Top hosts by time", "Slowest pages", "Largest pages",
                    "Duplicates", "The Sieve", "Focus: harvest"):  # fmt: skip
        assert f"<h2>{heading}</h2>" in page
    assert "6,010" in page  # the Sieve's estimate, from --stats
    assert page.count("<tr>") < 200, "top rows only"


def test_crawl_report_refuses_what_it_cannot_read_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "out.jsonl"
    write_jsonl(results, 3)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    for args, message in (
        ([str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "r.html")], "cannot read"),
        ([str(results), "--stats", str(bad), "-o", str(tmp_path / "r.html")], "not a crawl's"),
        ([str(results), "-o", str(results)], "that is an input"),
        ([str(results), "-o", str(tmp_path / "no" / "dir" / "r.html")], "cannot write"),
    ):
        assert main(["report", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("crawl report: error: ") and message in err, err
        assert len(err.splitlines()) == 1
    assert json.loads(results.read_text().splitlines()[0])["url"]  # the input untouched


class Interrupting(io.StringIO):
    """An output that sends this process a SIGINT after its 5th line (the crawl's handler
    stops the crawl: fetches in flight finish)."""

    def write(self, text: str) -> int:
        n = super().write(text)
        if self.getvalue().count("\n") == 5 and text.endswith("\n"):
            os.kill(os.getpid(), signal.SIGINT)
        return n


async def test_the_live_report_is_written_at_the_end_and_when_interrupted(
    site: FixtureSite, tmp_path: Path
) -> None:
    done, stopped = tmp_path / "done.html", tmp_path / "stopped.html"
    config = site_config(site).override("output", progress_interval=0.0, report=str(done))
    out = io.StringIO()
    outcome = await run(config, site.seeds, out, quiet=True)
    assert outcome.status == 0
    lines = out.getvalue().count("\n")
    page = done.read_text()
    assert "<title>Crawl report</title>" in page and f"{lines} results" in page
    assert oct(done.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    config = config.override("output", report=str(stopped))
    outcome = await run(config, site.seeds, Interrupting(), quiet=True)
    assert outcome.status == 128 + signal.SIGINT
    assert "<title>Crawl report (interrupted)</title>" in stopped.read_text()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@requires_browser
async def test_the_report_reads_well_in_chromium(tmp_path: Path) -> None:
    """Opened from a file in the Chromium the render tests use: no console message, no failed
    or blocked request, every chart drawn; a screenshot kept in the test's directory."""
    from playwright.async_api import async_playwright

    from crawler.render import find_browser

    results, html = tmp_path / "out.jsonl", tmp_path / "report.html"
    write_jsonl(results, 3000)
    report_from_jsonl(str(results), str(html), STATS)
    problems: list[str] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=find_browser(), args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1100, "height": 900})
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}"))
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            await page.goto(html.as_uri())
            charts = await page.locator("svg").count()
            drawn = await page.locator("svg rect").count()
            await page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            await browser.close()
    assert not problems, problems
    assert requests == [html.as_uri()], "the page alone: nothing else requested"
    assert charts >= 10 and drawn > 100, (charts, drawn)
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_the_report_path_is_checked_with_the_other_outputs_before_the_crawl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    for extra, message in (
        (["--report", str(out)], "-o and --report name the same path"),
        (["--report", "-"], "--report -: the report is a file"),
        (["--report", str(tmp_path / "state" / "r.html"), "--state", str(tmp_path / "state")],
         "inside the --state directory"),
    ):  # fmt: skip
        status = main(["http://127.0.0.1:9/", "-q", "-o", str(out), *extra])
        err = capsys.readouterr().err
        assert status == 2 and message in err and len(err.splitlines()) == 1, err
