"""Conditional recrawl (`--state DIR --recrawl`): validators stored with each 2xx, sent back as
If-None-Match / If-Modified-Since, 304 results unchanged, changed pages re-extracted, a page gone
reported as 404, an interrupted recrawl resumed (not a third generation)."""

from __future__ import annotations

import io
import json
import random
import sqlite3
import string
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli.main import main
from crawler.cli.run import run
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.frontier.entries import Entry
from crawler.output.results import CrawlResult
from crawler.state.crawlstate import CrawlState
from crawler.state.db import FILENAME, StateError
from tests.support.server import serve

LAST_MODIFIED = "Sat, 01 Nov 2025 10:00:00 GMT"


@dataclass
class Page:
    links: tuple[str, ...]
    etag: str | None = None
    modified: str | None = None
    text: str = "v1"
    body: str = ""

    def html(self) -> str:
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in self.links)
        return (
            f"<html><head><title>{self.text}</title></head>"
            f"<body><p>{self.body}</p>{anchors}</body></html>"
        )


@dataclass
class Site:
    """A site that honours conditional requests; pages can change or go between crawls."""

    pages: dict[str, Page]
    requests: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    port: int = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/robots.txt":
            return web.Response(status=404)
        inm, ims = request.headers.get("If-None-Match"), request.headers.get("If-Modified-Since")
        self.requests.append((path, inm, ims))
        page = self.pages.get(path)
        if page is None:
            return web.Response(status=404, text="gone")
        headers = {}
        if page.etag:
            headers["ETag"] = page.etag
        if page.modified:
            headers["Last-Modified"] = page.modified
        if (inm is not None and inm == page.etag) or (
            inm is None and ims is not None and ims == page.modified
        ):
            return web.Response(status=304, headers=headers)
        return web.Response(text=page.html(), content_type="text/html", headers=headers)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def sent(self, path: str) -> list[tuple[str | None, str | None]]:
        return [(inm, ims) for p, inm, ims in self.requests if p == path]


def make_site() -> Site:
    return Site(
        {
            "/": Page(("/a", "/b", "/c"), etag='"root-1"'),
            "/a": Page(("/d",), modified=LAST_MODIFIED),  # Last-Modified only
            "/b": Page((), etag='"b-1"', modified=LAST_MODIFIED),
            "/c": Page(("/",), etag='"c-1"'),
            "/d": Page(("/a",)),  # no validators: fetched unconditionally
        }
    )


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = make_site()
    async with serve(s.handle) as port:
        s.port = port
        yield s


def config(tmp: Path) -> Config:
    c = Config().override(
        "politeness", delay=0.0, ip_delay=0.0, backoff_base=0.01, backoff_max=0.05
    )
    return c.override("crawl", concurrency=2).override("state", dir=str(tmp / "state"))


async def crawl(cfg: Config, site: Site, *, recrawl: bool = False) -> list[CrawlResult]:
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    if recrawl:
        state.start_recrawl()
    async with Crawler(cfg, state=state) as crawler:
        results = [r async for r in crawler.crawl([site.url("/")])]
    assert crawler.complete
    return results


def by_path(site: Site, results: list[CrawlResult]) -> dict[str, CrawlResult]:
    out = {r.url.removeprefix(site.url("")): r for r in results}
    assert len(out) == len(results), "a URL was reported twice"
    return out


async def test_first_crawl_stores_validators(site: Site, tmp_path: Path) -> None:
    cfg = config(tmp_path)
    await crawl(cfg, site)
    assert all(inm is None and ims is None for _, inm, ims in site.requests)
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    try:
        assert state.validators(site.url("/")) == ('"root-1"', None)
        assert state.validators(site.url("/a")) == (None, LAST_MODIFIED)
        assert state.validators(site.url("/b")) == ('"b-1"', LAST_MODIFIED)
        assert state.validators(site.url("/d")) is None
        assert state.generation == 0 and state.previous_status == "finished"
    finally:
        state.abandon()


async def test_recrawl_304_changed_and_gone(site: Site, tmp_path: Path) -> None:
    cfg = config(tmp_path)
    first = by_path(site, await crawl(cfg, site))
    assert set(first) == {"/", "/a", "/b", "/c", "/d"}
    site.requests.clear()
    site.pages["/b"] = Page(("/e",), etag='"b-2"', text="v2")  # changed, with a new link
    site.pages["/e"] = Page((), etag='"e-1"')
    del site.pages["/c"]  # gone

    again = by_path(site, await crawl(cfg, site, recrawl=True))
    assert set(again) == {"/", "/a", "/b", "/c", "/d", "/e"}
    # the stored validators went back to the server
    assert site.sent("/") == [('"root-1"', None)]
    assert site.sent("/a") == [(None, LAST_MODIFIED)]
    assert site.sent("/b") == [('"b-1"', LAST_MODIFIED)]
    assert site.sent("/d") == [(None, None)] and site.sent("/e") == [(None, None)]
    for path in ("/", "/a"):
        r = again[path]
        assert (r.status, r.unchanged, r.size, r.links, r.new_links) == (304, True, 0, 0, 0)
        assert r.error is None and r.to_dict()["unchanged"] is True
    changed = again["/b"]
    assert (changed.status, changed.unchanged, changed.title) == (200, False, "v2")
    assert (changed.links, changed.new_links) == (1, 1)  # /e: admitted, it is new
    assert again["/e"].parent == site.url("/b") and again["/e"].status == 200
    assert again["/c"].status == 404 and not again["/c"].unchanged
    assert again["/d"].status == 200 and again["/d"].new_links == 0  # its links are known
    assert json.loads(again["/d"].to_json())["unchanged"] is False

    state = CrawlState.open(cfg.state.dir, settings(cfg))
    try:
        assert state.generation == 1 and state.previous_status == "finished"
        assert state.validators(site.url("/b")) == ('"b-2"', None)  # updated
        assert state.validators(site.url("/c")) is None  # cleared by the 404
        assert state.validators(site.url("/")) == ('"root-1"', None)  # kept by the 304
        assert state.stats() is not None and state.stats()["unchanged"] == 2  # type: ignore[index]
    finally:
        state.abandon()


async def test_interrupted_recrawl_resumes_every_url_once(site: Site, tmp_path: Path) -> None:
    extra = {f"/p{i}": Page((), etag=f'"p{i}"') for i in range(12)}
    site.pages.update(extra)
    site.pages["/"] = Page(("/a", "/b", "/c", *extra), etag='"root-1"')
    cfg = config(tmp_path)
    first = await crawl(cfg, site)
    assert len(first) == 17

    state = CrawlState.open(cfg.state.dir, settings(cfg))
    state.start_recrawl()
    seen: Counter[str] = Counter()
    async with Crawler(cfg, state=state) as crawler:
        async for result in crawler.crawl([site.url("/")]):
            seen[result.key] += 1
            if sum(seen.values()) == 3:
                crawler.stop()  # in-flight fetches finish; the rest stays pending
    assert not crawler.complete and 3 <= len(seen) < 17

    out = io.StringIO()  # the same command again: resumes the recrawl, no third generation
    outcome = await run(cfg, [site.url("/")], out, quiet=True, recrawl=True)
    assert outcome.status == 0 and outcome.crawler.complete
    resumed = [json.loads(line) for line in out.getvalue().splitlines()]
    for line in resumed:
        seen[line["url"]] += 1
    assert set(seen) == {site.url(p) for p in site.pages}
    assert set(seen.values()) == {1}, "every URL exactly once across the two runs"
    for line in resumed:  # /d has no validators: fetched again in full
        expected = (200, False) if line["url"] == site.url("/d") else (304, True)
        assert (line["status"], line["unchanged"]) == expected
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    try:
        assert state.generation == 1 and state.previous_status == "finished"
    finally:
        state.abandon()


async def test_recrawl_of_an_unfinished_or_missing_crawl_is_refused(
    site: Site, tmp_path: Path
) -> None:
    cfg = config(tmp_path)
    with pytest.raises(StateError, match="no crawl state to visit again"):
        await run(cfg, [site.url("/")], io.StringIO(), quiet=True, recrawl=True)
    assert not (tmp_path / "state").exists()
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    async with Crawler(cfg, state=state) as crawler:
        async for _ in crawler.crawl([site.url("/")]):
            crawler.stop()
    with pytest.raises(StateError, match="not finished"):
        await run(cfg, [site.url("/")], io.StringIO(), quiet=True, recrawl=True)
    state = CrawlState.open(cfg.state.dir, settings(cfg))  # still resumable, untouched
    try:
        assert state.generation == 0 and state.previous_status == "interrupted"
    finally:
        state.abandon()


async def test_changed_page_is_not_a_near_duplicate_of_itself(site: Site, tmp_path: Path) -> None:
    rng = random.Random(7)  # 1,500 random words: two more move the simhash by 1 bit
    words = " ".join("".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(1500))
    site.pages["/b"] = Page((), etag='"b-1"', body=words)
    cfg = config(tmp_path).override("dedup", enabled=True, follow_duplicates=False)
    first = by_path(site, await crawl(cfg, site))
    assert first["/b"].near_duplicate_of is None and first["/b"].content_hash is not None
    site.pages["/b"] = Page(("/e",), etag='"b-2"', body=words + " one more")
    site.pages["/e"] = Page((), etag='"e-1"')
    again = by_path(site, await crawl(cfg, site, recrawl=True))
    changed = again["/b"]
    assert changed.status == 200 and changed.content_hash != first["/b"].content_hash
    assert changed.duplicate_of is None and changed.near_duplicate_of is None
    assert changed.new_links == 1 and "/e" in again  # its links followed, not dropped


def test_recrawl_without_state_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["http://127.0.0.1:9/", "--recrawl"]) == 2
    assert "--recrawl needs a state directory" in capsys.readouterr().err


def test_a_state_from_before_validators_opens_and_recrawls(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    state.admitted(Entry(url="http://a.test/", key="http://a.test/", depth=0))
    state.completed("http://a.test/")
    state.abandon()
    db = sqlite3.connect(Path(cfg.state.dir) / FILENAME)
    db.execute("ALTER TABLE urls DROP COLUMN etag")  # as written before the recrawl existed
    db.execute("ALTER TABLE urls DROP COLUMN last_modified")
    db.execute("UPDATE meta SET value = 'finished' WHERE name = 'status'")
    db.commit()
    db.close()
    state = CrawlState.open(cfg.state.dir, settings(cfg))
    assert state.start_recrawl() == 1
    assert [e.key for e in state.pending()] == ["http://a.test/"]
    assert state.validators("http://a.test/") is None  # fetched unconditionally
    state.completed("http://a.test/", ('"x"', None), keep=False)
    assert state.validators("http://a.test/") == ('"x"', None)
    state.abandon()


async def test_a_finished_crawl_run_again_points_to_recrawl(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = config(tmp_path)
    args = [site.url("/"), "--state", cfg.state.dir]
    assert (await run(cfg, [site.url("/")], io.StringIO(), args=args)).status == 0
    capsys.readouterr()
    outcome = await run(cfg, [site.url("/")], io.StringIO(), args=args)
    assert outcome.status == 0 and not outcome.summary
    err = capsys.readouterr().err
    assert "already complete" in err and f"--state {cfg.state.dir} --recrawl" in err
    out = io.StringIO()
    assert (await run(cfg, [site.url("/")], out, recrawl=True)).status == 0
    assert len(out.getvalue().splitlines()) == 5  # the same five URLs, visited again
    err = capsys.readouterr().err  # a recrawl just started is said so, not "resuming"
    assert f"recrawl 1 of the crawl in {cfg.state.dir}: 5 URLs to visit again" in err
    assert "resuming" not in err
