"""Outputs reach the OS within a second: a crawl killed with SIGKILL keeps every older result.

`crawl` runs in a subprocess against a slow loopback site served by this test's event loop; the
site logs when it answered each page. After SIGKILL, every page answered more than KEPT_AFTER
seconds before the kill must be in the JSON Lines output (a file with `-o`, or stdout
redirected to a file) and in the WARC file.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from crawler.output.jsonl import FLUSH_INTERVAL, JsonlWriter
from crawler.output.results import CrawlResult
from crawler.output.warc import _complete_members_end
from tests.support.server import serve

KEPT_AFTER = 1.0  # the issue: every result older than ~1 s survives a SIGKILL
SLACK = 0.5  # the result is made just after the server answered; scheduling on a busy machine
# as in a user's shell: stdout block-buffered when it is not a terminal
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
PAGE_TIME = 0.1  # each page takes this long: ~9 pages/s, far below a buffer's worth per second


class SlowSite:
    """Pages /p/N linking to /p/2N+1 and /p/2N+2, each answered after PAGE_TIME."""

    __slots__ = ("answered",)

    def __init__(self) -> None:
        self.answered: list[tuple[float, str]] = []  # (monotonic time, path)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/robots.txt":
            raise web.HTTPNotFound()
        await asyncio.sleep(PAGE_TIME)
        n = int(request.path.rsplit("/", 1)[-1])
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2))
        self.answered.append((time.monotonic(), request.path))
        return web.Response(
            text=f"<html><title>{n}</title>{links}</html>", content_type="text/html"
        )


@pytest.fixture
async def slow_site() -> AsyncIterator[tuple[SlowSite, int]]:
    site = SlowSite()
    async with serve(site.handle) as port:
        yield site, port


async def crawl_then_kill(
    site: SlowSite, port: int, stdout: int | io.BufferedWriter, *extra: str
) -> float:
    """Start the crawl, SIGKILL it once 10 pages are KEPT_AFTER + SLACK old; the kill's time."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawler.cli", f"http://127.0.0.1:{port}/p/0",
        "--delay", "0", "--set", "politeness.ip_delay=0", "-q", *extra,
        stdout=stdout, stderr=asyncio.subprocess.DEVNULL, env=USER_ENV,
    )  # fmt: skip
    try:
        async with asyncio.timeout(60):
            while len(site.answered) < 10:
                assert proc.returncode is None, "the crawl ended early"
                await asyncio.sleep(0.02)
        await asyncio.sleep(KEPT_AFTER + SLACK + 0.2)
        assert proc.returncode is None, "the crawl ended before the kill"
        killed_at = time.monotonic()
        proc.kill()
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    return killed_at


def old_paths(site: SlowSite, killed_at: float) -> set[str]:
    paths = {path for at, path in site.answered if at < killed_at - KEPT_AFTER - SLACK}
    assert len(paths) >= 10
    return paths


def jsonl_paths(text: str) -> set[str]:
    lines = text.split("\n")[:-1]  # a torn last line (cut mid-write) is not a result
    return {urlsplit(json.loads(line)["url"]).path for line in lines}


@pytest.mark.slow
async def test_sigkill_keeps_jsonl_file_and_warc(
    slow_site: tuple[SlowSite, int], tmp_path: Path
) -> None:
    site, port = slow_site
    out, warc = tmp_path / "out.jsonl", tmp_path / "crawl.warc.gz"
    killed_at = await crawl_then_kill(
        site, port, asyncio.subprocess.DEVNULL, "-o", str(out), "--warc", str(warc)
    )
    expected = old_paths(site, killed_at)
    assert expected <= jsonl_paths(out.read_text())
    data = warc.read_bytes()
    whole = data[: _complete_members_end(io.BytesIO(data))]
    archived = {
        urlsplit(record.rec_headers.get_header("WARC-Target-URI")).path
        for record in ArchiveIterator(io.BytesIO(whole))
        if record.rec_type == "response"
    }
    assert expected <= archived


@pytest.mark.slow
async def test_sigkill_keeps_stdout_redirected_to_a_file(
    slow_site: tuple[SlowSite, int], tmp_path: Path
) -> None:
    site, port = slow_site
    out = tmp_path / "stdout.jsonl"
    with out.open("wb") as fh:
        killed_at = await crawl_then_kill(site, port, fh)
    assert old_paths(site, killed_at) <= jsonl_paths(out.read_text())


class Stream(io.StringIO):
    """A text stream that counts flushes (setting `flushed`) and can fail them."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.flushes = 0
        self.fail = fail
        self.flushed = asyncio.Event()

    def flush(self) -> None:
        self.flushes += 1
        self.flushed.set()
        if self.fail:
            raise BrokenPipeError("reader went away")


def result(n: int) -> CrawlResult:
    return CrawlResult(url=f"http://a.test/{n}", key=f"http://a.test/{n}", status=200, depth=0,
                       parent=None, fetched_at="2026-01-01T00:00:00.000Z")  # fmt: skip


async def test_writer_buffers_lines_and_flushes_on_its_timer() -> None:
    stream = Stream()
    async with JsonlWriter(stream, interval=0.01) as writer:
        for n in range(100):
            writer.write(result(n))
        assert stream.flushes == 0  # no flush per line on the hot path
        await asyncio.wait_for(stream.flushed.wait(), 5)  # the timer's
        assert stream.flushes == 1
        writer.flush()
        assert stream.flushes == 1  # nothing written since: no flush
        writer.write(result(100))
    assert stream.flushes == 2  # the last flush on leaving
    urls = [json.loads(line)["url"] for line in stream.getvalue().splitlines()]
    assert urls == [result(n).url for n in range(101)]
    assert FLUSH_INTERVAL <= KEPT_AFTER / 2


async def test_writer_with_state_flushes_every_line() -> None:
    stream = Stream()
    async with JsonlWriter(stream, sync=True) as writer:
        for n in range(3):
            writer.write(result(n))
            assert stream.flushes == n + 1


async def test_a_failed_flush_stops_the_crawl_and_is_raised() -> None:
    stopped = asyncio.Event()
    writer = JsonlWriter(Stream(fail=True), interval=0.01, on_error=stopped.set)
    await writer.__aenter__()
    writer.write(result(1))
    await asyncio.wait_for(stopped.wait(), 5)
    with pytest.raises(BrokenPipeError):
        writer.write(result(2))
    with pytest.raises(BrokenPipeError):
        await writer.__aexit__(None, None, None)
