"""Outputs: WARC round trip, progress and summary rendering, stats."""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawler.cli.progress import ProgressReporter, print_summary, progress_line
from crawler.engine.crawler import Crawler
from crawler.output.warc import WarcOutput
from crawler.testing.fixture import FixtureSite
from tests.support.server import site_config


def read_warc(paths: list[Path]) -> list[tuple[str, str | None, bytes]]:
    records = []
    for path in paths:
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                records.append((record.rec_type, uri, record.content_stream().read()))
    return records


async def crawl_with_warc(site: FixtureSite, warc: WarcOutput) -> Crawler:
    async with Crawler(site_config(site), recorder=warc.write) as crawler:
        async for _ in crawler.crawl(site.seeds):
            pass
    warc.close()
    return crawler


@pytest.mark.slow
async def test_warc_round_trip(site: FixtureSite, tmp_path: Path) -> None:
    warc = WarcOutput(tmp_path / "crawl.warc.gz")
    await crawl_with_warc(site, warc)
    records = read_warc(warc.files)
    assert warc.files == [tmp_path / "crawl.warc.gz"]
    assert records[0][0] == "warcinfo"
    kinds = Counter(kind for kind, _, _ in records)
    # one request and one response record per HTTP exchange the server saw
    assert kinds == {"warcinfo": 1, "request": len(site.requests), "response": len(site.requests)}
    assert len(records) == warc.records
    # the payloads are byte-identical to what the server sent, URI by URI
    sent = Counter((site.url(r.host, r.path), r.body) for r in site.requests)
    archived = Counter((uri, body) for kind, uri, body in records if kind == "response")
    assert archived == sent


@pytest.mark.slow
async def test_warc_headers(site: FixtureSite, tmp_path: Path) -> None:
    warc = WarcOutput(tmp_path / "crawl.warc.gz")
    await crawl_with_warc(site, warc)
    with warc.files[0].open("rb") as fh:
        records = list(ArchiveIterator(fh))
    # ArchiveIterator consumes lazily; headers are still readable
    responses = [r for r in records if r.rec_type == "response"]
    for r in responses:
        assert r.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
        assert r.rec_headers.get_header("WARC-Payload-Digest", "").startswith("sha1:")
        assert r.rec_headers.get_header("WARC-Date")
    redirect = [r for r in responses if r.http_headers.get_statuscode() == "301"]
    assert len(redirect) == 1
    assert redirect[0].http_headers.get_header("Location") == "/redirect/2"


@pytest.mark.slow
async def test_warc_rotation(site: FixtureSite, tmp_path: Path) -> None:
    warc = WarcOutput(tmp_path / "crawl.warc.gz", max_size=4000)
    await crawl_with_warc(site, warc)
    assert len(warc.files) > 3
    assert warc.files[1] == tmp_path / "crawl-00001.warc.gz"
    records = read_warc(warc.files)
    kinds = Counter(kind for kind, _, _ in records)
    assert kinds["warcinfo"] == len(warc.files)
    assert kinds["response"] == len(site.requests)


def test_warc_rejects_bad_size(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_size"):
        WarcOutput(tmp_path / "x.warc.gz", max_size=0)


@pytest.mark.slow
async def test_progress_lines_when_not_a_terminal(site: FixtureSite) -> None:
    stream = io.StringIO()
    crawler = Crawler(site_config(site))
    async with crawler, ProgressReporter(crawler, stream, interval=0.05, tty=False):
        async for _ in crawler.crawl(site.seeds):
            pass
    lines = stream.getvalue().splitlines()
    assert lines, "no progress line was written"
    assert all(" progress: pages " in line for line in lines)
    assert "seen ~" in lines[-1] and "URLs (sieve, " in lines[-1]
    assert "\x1b[" not in stream.getvalue()  # no terminal control codes in a log


@pytest.mark.slow
async def test_summary_matches_stats(site: FixtureSite) -> None:
    async with Crawler(site_config(site)) as crawler:
        results = [r async for r in crawler.crawl(site.seeds)]
    stats = crawler.stats_dict()
    assert stats["pages"] == len(results)
    refused = [r for r in results if (r.error or "").startswith("robots")]
    assert stats["robots_refused"] == len(refused)
    assert sum(stats["status_classes"].values()) == sum(1 for r in results if r.status)
    assert stats["sieve"]["count"] >= len(results)
    stream = io.StringIO()
    print_summary(stats, stream)
    text = stream.getvalue()
    for label in ("pages (results)", "URLs not fetched: robots.txt", "links to URLs already seen",
                  "URLs admitted (seeds included)", "pages/s"):  # fmt: skip
        assert label in text
    # what a user acts on: the Sieve's internals and refusals that did not happen are left out
    for label in ("sieve", "memo hit rate", "URLs dropped: queue full", "max_pages reached",
                  "unchanged (304"):  # fmt: skip
        assert label not in text
    stream = io.StringIO()
    print_summary({**stats, "unchanged": 7, "over_limit": 3}, stream)
    assert re.search(r"unchanged \(304, recrawl\)\s*│\s*7\b", stream.getvalue())
    assert re.search(r"links not followed: max_pages reached\s*│\s*3\b", stream.getvalue())
    stream = io.StringIO()
    print_summary(stats, stream, verbose=True)  # crawl -v: the internals too
    verbose = stream.getvalue()
    for label in ("URLs dropped: queue full", "links not followed: max_pages reached",
                  "sieve: URLs seen", "sieve FPR bound", "memo hit rate", "retries"):  # fmt: skip
        assert label in verbose
    seen = f"~{stats['sieve']['approx_items']:,} est. / {stats['sieve']['count']:,} counted"
    assert seen in verbose
    assert f"{stats['pages']}" in text
    assert "pages " in progress_line(crawler)


@pytest.mark.slow
async def test_warc_appends_after_repairing_a_torn_record(
    site: FixtureSite, tmp_path: Path
) -> None:
    path = tmp_path / "crawl.warc.gz"
    first = WarcOutput(path)
    await crawl_with_warc(site, first)
    whole = len(read_warc([path]))
    with path.open("ab") as fh:  # a crash in the middle of writing the next record
        fh.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03torn")
    site.requests.clear()
    again = WarcOutput(path)
    async with Crawler(site_config(site, max_pages=2), recorder=again.write) as crawler:
        async for _ in crawler.crawl(site.seeds):
            pass
    again.close()
    records = read_warc([path])  # reads to the end: the torn bytes are gone
    assert len(records) == whole + 1 + 2 * len(site.requests)
    assert [kind for kind, _, _ in records].count("warcinfo") == 2


async def test_a_body_cut_at_the_cap_is_marked_truncated_in_the_warc(tmp_path: Path) -> None:
    """A 404 page past max_body is cut there (its status counts, not its body): its WARC record
    says so with WARC-Truncated; a whole body's record does not."""
    from aiohttp import web

    from crawler.config.load import Config
    from tests.support.server import serve

    big = b"<p>" + b"x" * 300_000

    async def handler(request: web.Request) -> web.Response:
        if request.path == "/":
            return web.Response(body=b"<a href='/missing'>m</a>", content_type="text/html")
        return web.Response(status=404, body=big, content_type="text/html")

    warc = WarcOutput(tmp_path / "crawl.warc.gz")
    async with serve(handler) as port:
        config = Config().override("fetch", resolve={"cut.test": "127.0.0.1"}, max_body=65_536)
        config = config.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
        async with Crawler(config, recorder=warc.write) as crawler:
            results = [r async for r in crawler.crawl([f"http://cut.test:{port}/"])]
    warc.close()
    assert sorted(r.status for r in results) == [200, 404]  # the 404 keeps its status
    with warc.files[0].open("rb") as fh:
        responses = {
            r.rec_headers.get_header("WARC-Target-URI").rsplit("/", 1)[1]: (
                r.rec_headers.get_header("WARC-Truncated"),
                len(r.content_stream().read()),
            )
            for r in ArchiveIterator(fh)
            if r.rec_type == "response"
        }
    assert responses[""] == (None, len(b"<a href='/missing'>m</a>"))
    truncated, size = responses["missing"]
    assert truncated == "length" and 65_536 <= size < len(big)


def test_a_status_of_fewer_digits_is_written_with_three(tmp_path: Path) -> None:
    # a server's "000" and "099" were archived as "HTTP/1.1 0 ..." and "HTTP/1.1 99 ...": a
    # status line WARC readers (RFC 9112's three digits) cannot read
    from crawler.fetch.response import Response

    warc = WarcOutput(tmp_path / "odd.warc.gz")
    for status in (0, 99, 999):
        warc.write(Response(url=f"http://odd.test/{status}", status=status, headers=(),
                            body=b"x", latency=0.0, elapsed=0.0, reason="Odd"))  # fmt: skip
    warc.close()
    with warc.files[0].open("rb") as fh:
        lines = [r.http_headers.statusline for r in ArchiveIterator(fh) if r.rec_type == "response"]
    assert lines == ["000 Odd", "099 Odd", "999 Odd"]
