"""Steering in whole crawls on loopback virtual hosts: credentials stay with their host and out of
every output; per-host delays from [[hosts]] measured server-side, a Crawl-delay above them wins."""

from __future__ import annotations

import asyncio
import base64
import gzip
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from crawler.config.load import load_config
from crawler.engine.crawler import Crawler
from tests.support.server import serve
from tests.support.spacing import assert_spaced

PASSWORD = "pw-secret-1"
API_KEY = "key-secret-2"
TAG = "tag-secret-3"
TOKEN = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
SECRETS = (PASSWORD, API_KEY, TAG, TOKEN)
PAGES = 6


@dataclass
class Sites:
    """Virtual hosts a.test, b.test and c.test on one loopback port, logging every request."""

    port: int = 0
    log: list[tuple[float, str, str, dict[str, str]]] = field(default_factory=list)

    def headers(self, host: str) -> list[dict[str, str]]:
        return [h for _, name, _, h in self.log if name == host]

    def paths(self, host: str) -> list[str]:
        return [p for _, name, p, _ in self.log if name == host]

    def gaps(self, host: str) -> list[float]:
        starts = sorted(t for t, name, _, _ in self.log if name == host)
        return [b - a for a, b in itertools.pairwise(starts)]

    def assert_spaced(self, host: str, delay: float) -> None:
        assert_spaced((t for t, name, _, _ in self.log if name == host), delay, host)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        host = request.host.partition(":")[0]
        self.log.append((time.monotonic(), host, request.path, dict(request.headers)))
        if request.path == "/robots.txt":
            delay = "Crawl-delay: 0.3\n" if host == "c.test" else ""
            return web.Response(text=f"User-agent: *\n{delay}Disallow:\n")
        if request.path == "/go-b":
            return web.Response(status=302, headers={"Location": f"{self.origin('b.test')}/land"})
        links = "".join(f'<a href="/p{i}">p{i}</a>' for i in range(PAGES))
        if host == "a.test" and request.path == "/":
            links += f'<a href="/go-b">b</a><a href="{self.origin("b.test")}/">b</a>'
        response = web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        if request.path == "/":
            response.set_cookie("sid", f"session-of-{host}", path="/")
        return response

    def origin(self, host: str) -> str:
        return f"http://{host}:{self.port}"


@pytest.fixture
async def sites() -> AsyncIterator[Sites]:
    s = Sites()
    async with serve(s.handle) as port:
        s.port = port
        yield s


def write_config(tmp_path: Path, sites: Sites, extra: str) -> Path:
    resolve = ", ".join(f'"{h}.test" = "127.0.0.1"' for h in "abc")
    path = tmp_path / "crawl.toml"
    path.write_text(
        f"""
[crawl]
concurrency = 4
[politeness]
delay = 0.0
ip_delay = 0.0
[scope]
allowed_domains = ["a.test", "b.test", "c.test"]
[output]
progress_interval = 0.0
[fetch]
resolve = {{ {resolve} }}
{extra}
"""
    )
    return path


async def test_credentials_stay_with_their_host_and_out_of_all_output(
    sites: Sites, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path,
        sites,
        f"""headers = {{ "X-Crawl-Tag" = "{TAG}" }}
cookies = true
[[hosts]]
match = "a.test"
auth = ["alice", "{PASSWORD}"]
headers = {{ "X-Api-Key" = "{API_KEY}" }}
""",
    )
    out, stats, warc = tmp_path / "out.jsonl", tmp_path / "stats.json", tmp_path / "c.warc.gz"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawler.cli", "--config", str(config), "-o", str(out),
        "--stats", str(stats), "--warc", str(warc), "--state", str(tmp_path / "state"), "-vv",
        f"{sites.origin('a.test')}/",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, stderr.decode()

    # server side: A's credentials reached A only, the redirect target and B's pages got none
    a, b = sites.headers("a.test"), sites.headers("b.test")
    assert len(a) == PAGES + 3 and len(b) == PAGES + 3  # robots.txt, "/", pages (+ /go-b, /land)
    assert "/land" in sites.paths("b.test")
    assert all(h["Authorization"] == f"Basic {TOKEN}" and h["X-Api-Key"] == API_KEY for h in a)
    assert not any("Authorization" in h or "X-Api-Key" in h for h in b)
    assert all(h["X-Crawl-Tag"] == TAG for h in a + b)
    # one cookie jar: A's session cookie went back to A only
    assert any(h.get("Cookie") == "sid=session-of-a.test" for h in a)
    assert not any("session-of-a.test" in h.get("Cookie", "") for h in b)

    # nothing written holds a secret: results, stats, logs (at debug level), the WARC
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == len(a) + len(b) - 2  # every fetch but the two robots.txt
    written = out.read_text() + stats.read_text() + stdout.decode() + stderr.decode()
    archived = gzip.decompress(warc.read_bytes()).decode("latin-1")
    state = [p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file()]
    assert state  # the crawl kept a state directory
    for secret in SECRETS:
        assert secret not in written
        assert secret not in archived
        assert not any(secret.encode() in blob for blob in state)
    requests = _warc_requests(warc)
    to_a = [h for url, h in requests if url.startswith(sites.origin("a.test"))]
    to_b = [h for url, h in requests if url.startswith(sites.origin("b.test"))]
    assert len(to_a) == len(a) and len(to_b) == len(b)
    for headers in to_a:
        assert headers["Authorization"] == "[redacted]" and headers["X-Api-Key"] == "[redacted]"
    assert all("Authorization" not in h and h["X-Crawl-Tag"] == "[redacted]" for h in to_b)
    assert any(h.get("Cookie") == "[redacted]" for h in to_a)


def _warc_requests(path: Path) -> list[tuple[str, dict[str, str]]]:
    out = []
    with path.open("rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type == "request":
                url = record.rec_headers.get_header("WARC-Target-URI")
                out.append((url, dict(record.http_headers.headers)))
    return out


@pytest.mark.slow
async def test_host_rule_delay_measured_server_side(sites: Sites, tmp_path: Path) -> None:
    """Real time on purpose: the [[hosts]] delays must reach a real server's ears."""
    # a.test: rule delay 0.2 s; b.test: no rule (global delay 0); c.test: rule delay 0.1 s,
    # but its robots.txt asks for Crawl-delay 0.3, which wins.
    path = write_config(
        tmp_path,
        sites,
        """[[hosts]]
match = "a.test"
delay = 0.2
[[hosts]]
match = "c.test"
delay = 0.1
""",
    )
    config = load_config(path)
    async with Crawler(config) as crawler:
        seeds = [f"{sites.origin(h)}/" for h in ("a.test", "b.test", "c.test")]
        results = [r async for r in crawler.crawl(seeds)]
    assert len(results) == 3 * (PAGES + 1) + 2  # a.test also links /go-b, and b's /land
    a, b, c = sites.gaps("a.test"), sites.gaps("b.test"), sites.gaps("c.test")
    assert len(a) >= PAGES and len(c) >= PAGES
    # a real server's arrival times: no tight gap (tests/support/spacing.py); the exact gaps of
    # a rule's delay and a Crawl-delay above it are asserted in simulated time by
    # tests/frontier/test_frontier_rules.py::test_crawl_delay_raises_a_rule_delay_never_lowers_it
    sites.assert_spaced("a.test", 0.2)
    sites.assert_spaced("c.test", 0.3)
    assert min(b) < 0.2  # no rule: b.test is not held to a.test's delay
