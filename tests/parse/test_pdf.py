"""PDFs (`[parse] pdf`): read in bounded worker processes, their links followed by a crawl."""

from __future__ import annotations

import contextlib

import pytest
from aiohttp import web

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from crawler.parse.pdf.page import pdf_markdown, pdf_text
from crawler.parse.pdf.pool import PdfPool
from crawler.parse.sniff import is_html, is_pdf
from tests.support.pdfs import deflate_zeros, make_pdf
from tests.support.server import serve

GOOD = make_pdf(
    ["Hello first page", "Second page words"],
    title="The Title",
    links=["http://site.test/after.html", "rel/y.html"],
)


def _kind(error: str | None) -> str | None:
    return None if error is None else error.split(":", 1)[0]


async def test_reads_text_pages_title_and_links() -> None:
    pool = PdfPool(workers=1)
    try:
        read = await pool.read(GOOD)
    finally:
        await pool.close()
    assert read.error is None and read.doc is not None
    doc = read.doc
    assert (doc.title, doc.pages, doc.truncated) == ("The Title", 2, False)
    assert doc.links == ("http://site.test/after.html", "rel/y.html")
    assert pdf_text(doc) == "Hello first page\fSecond page words"
    assert pdf_markdown(doc) == "Hello first page\n\n<!-- page 2 -->\n\nSecond page words"


async def test_title_falls_back_to_the_first_line() -> None:
    pool = PdfPool(workers=1)
    try:
        read = await pool.read(make_pdf(["  Only   line here", "more"]))
    finally:
        await pool.close()
    assert read.doc is not None and read.doc.title == "Only line here"


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (GOOD[: len(GOOD) * 2 // 3], "pdf_truncated"),
        (make_pdf(["secret"], encrypt=True), "pdf_encrypted"),
        (b"<!DOCTYPE html><html><body>a page</body></html>", "not_pdf"),
        (GOOD.replace(b"/Pages 2 0 R", b"/Pages " + b"[" * 50_000 + b"]" * 50_000), "pdf_broken"),
    ],
    ids=["truncated", "encrypted", "html", "nested"],
)
async def test_a_bad_pdf_gives_an_error_kind(body: bytes, kind: str) -> None:
    pool = PdfPool(workers=1)
    try:
        read = await pool.read(body)
        assert read.doc is None and _kind(read.error) == kind
        assert (await pool.read(GOOD)).error is None  # the worker goes on
    finally:
        await pool.close()


async def test_a_huge_page_count_is_read_up_to_max_pages() -> None:
    pool = PdfPool(workers=1, max_pages=30)
    try:
        read = await pool.read(make_pdf(["p"], kids_repeat=200_000))
    finally:
        await pool.close()
    assert read.doc is not None and read.doc.pages == 200_000
    assert len(read.doc.texts) == 30 and read.doc.truncated


@pytest.mark.slow
async def test_a_decompression_bomb_stays_within_the_memory_bound() -> None:
    bomb = make_pdf(["p"], content=deflate_zeros(768 << 20))  # 768 MiB of content, ~750 KB
    pool = PdfPool(workers=1, memory=256 << 20)
    try:
        read = await pool.read(bomb)
        assert read.doc is None and _kind(read.error) in ("pdf_crashed", "pdf_memory")
        assert (await pool.read(GOOD)).error is None  # a new worker took the dead one's place
    finally:
        await pool.close()


async def test_a_pdf_over_time_is_abandoned_and_the_worker_replaced() -> None:
    pool = PdfPool(workers=1, timeout=1e-6)
    try:
        read = await pool.read(GOOD)
        assert _kind(read.error) == "pdf_timeout"
        pool.timeout = 60.0
        assert (await pool.read(GOOD)).error is None
    finally:
        await pool.close()


def test_sniffing_tells_pdfs() -> None:
    assert is_pdf("application/pdf", b"<html>")  # read, to say it is not a PDF
    assert is_pdf("application/octet-stream", GOOD) and is_pdf(None, GOOD)
    assert is_pdf("text/html; charset=utf-8", GOOD) and not is_html("text/html", GOOD)
    assert not is_pdf("text/html", b"<html>") and not is_pdf("image/png", GOOD)


HOME = (
    b'<html><title>Home</title><a href="/doc.pdf">doc</a><a href="/bad.pdf">bad</a>'
    b'<a href="/locked.pdf">locked</a><a href="/fake.pdf">fake</a></html>'
)


def _site(base: str) -> dict[str, tuple[str, bytes]]:
    """A site whose home links PDFs: one linking on to HTML pages, and a bad one of each kind."""
    doc = make_pdf(
        ["Hello first page", "Second page words"],
        title="The Title",
        links=[f"{base}/after.html", "rel/y.html", "http://elsewhere.test/"],
    )
    return {
        "/": ("text/html", HOME),
        "/doc.pdf": ("application/pdf", doc),
        "/bad.pdf": ("application/pdf", doc[: len(doc) // 2]),
        "/locked.pdf": ("application/pdf", make_pdf(["x"], encrypt=True)),
        "/fake.pdf": ("application/pdf", b"<!doctype html><html><a href=/y.html>y</a></html>"),
        "/after.html": ("text/html", b'<html><title>After</title><a href="/end.html">e</a>'),
        "/rel/y.html": ("text/html", b"<html><title>Y</title></html>"),
        "/end.html": ("text/html", b"<html><title>End</title></html>"),
    }


async def _crawl(pdf: bool) -> dict[str, CrawlResult]:
    pages: dict[str, tuple[str, bytes]] = {}

    async def handler(request: web.Request) -> web.Response:
        if request.path not in pages:
            return web.Response(status=404)
        content_type, body = pages[request.path]
        return web.Response(body=body, headers={"Content-Type": content_type})

    async with serve(handler) as port:
        base = f"http://site.test:{port}"
        pages.update(_site(base))
        config = Config().override("fetch", resolve={"site.test": "127.0.0.1"})
        config = config.override("politeness", delay=0.0, respect_robots=False)
        config = config.override("output", text=True, markdown=True)
        config = config.override("parse", pdf=pdf)
        results: dict[str, CrawlResult] = {}
        async with (
            Crawler(config) as crawler,
            contextlib.aclosing(crawler.crawl([f"{base}/"])) as crawl,
        ):
            async for result in crawl:
                results[result.url.removeprefix(base)] = result
        return results


@pytest.mark.slow
async def test_a_crawl_goes_on_through_a_pdf() -> None:
    results = await _crawl(pdf=True)
    doc = results["/doc.pdf"]
    assert doc.error is None and (doc.title, doc.pages) == ("The Title", 2)
    assert doc.text == "Hello first page\fSecond page words"
    assert doc.markdown is not None and "<!-- page 2 -->" in doc.markdown
    assert (doc.links, doc.new_links) == (3, 2)  # elsewhere.test: out of scope
    assert doc.to_dict()["pages"] == 2
    for path in ("/after.html", "/rel/y.html", "/end.html"):
        assert results[path].ok, path
    assert {
        path: _kind(results[path].error) for path in ("/bad.pdf", "/locked.pdf", "/fake.pdf")
    } == {
        "/bad.pdf": "pdf_truncated",
        "/locked.pdf": "pdf_encrypted",
        "/fake.pdf": "not_pdf",
    }
    assert "/y.html" not in results  # an HTML page served as a PDF is not read as HTML


async def test_without_pdf_pdfs_are_skipped_by_extension() -> None:
    results = await _crawl(pdf=False)
    assert "/doc.pdf" not in results and "/after.html" not in results
    assert "pages" not in results["/"].to_dict()
