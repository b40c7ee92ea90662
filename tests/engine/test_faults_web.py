"""What real web servers and sites send a crawler that has never seen them (third fault audit):
header quirks browsers read past (Content-Type headers joined or repeated, Content-Encoding
tokens that name no compression), redirects, error pages and robots.txt files whose body cannot
be decoded or passes the cap, XHTML served as XML, and sitemaps in the protocol's other formats
(text, RSS, Atom, whitespace before the XML declaration); next to them, the quirks found read
right. Each runs against a loopback server; the faults of the earlier audits are in
tests/test_faults.py and tests/test_faults_inputs.py."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from multidict import CIMultiDict

from crawler.config.load import Config
from crawler.engine.crawler import Crawler
from crawler.errors import DecodingError
from crawler.fetch.bodies import Decoder
from crawler.fetch.headers import content_coding, content_type
from crawler.output.results import CrawlResult
from crawler.parse.sitemaps import MAX_URLS, SitemapError, parse_sitemap
from crawler.parse.sniff import is_html
from tests.support.faults import HOST, FaultServer, fault_config, record
from tests.support.server import serve

HTML = b"<html><head><title>T</title></head><body><a href='/ok'>ok</a></body></html>"
RU = "/\u043f\u0440\u0438\u0432\u0435\u0442"  # /привет
XHTML = b"""<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN"
 "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en"><head><title>T</title></head>
<body><p><a href="/ok">ok</a></p></body></html>"""
BIG = HTML + b"<p>filler</p>" * 8000  # over the 64 KiB cap of these tests
CYRILLIC = f"<html><head><title>T</title></head><a href='{RU}'>x</a></html>".encode("cp1251")


def _response(status: bytes, headers: bytes, body: bytes = HTML) -> bytes:
    length = b"Content-Length: %d\r\n" % len(body)
    return b"HTTP/1.1 " + status + b"\r\n" + headers + length + b"Connection: close\r\n\r\n" + body


def _page(headers: bytes, body: bytes = HTML) -> bytes:
    return _response(b"200 OK", headers, body)


WEB_PAGES = {
    # Content-Type: the Fetch standard's "extract a MIME type" (a proxy joins two headers into
    # one with a comma; an application and a server each send one)
    "/content-type-joined": _page(b"Content-Type: text/html, text/html\r\n"),  # was: not HTML
    "/content-type-charset-in-second": _page(
        b"Content-Type: text/html\r\nContent-Type: text/html; charset=windows-1251\r\n", CYRILLIC
    ),  # was: the link read as UTF-8, a URL of U+FFFD
    "/content-type-last-wins": _page(
        b"Content-Type: application/json\r\nContent-Type: text/html\r\n"
    ),
    "/content-type-any-ignored": _page(b"Content-Type: text/html, */*\r\n"),
    # Content-Encoding tokens that name no compression: no coding, as Chromium reads them
    "/coding-none": _page(b"Content-Type: text/html\r\nContent-Encoding: none\r\n"),
    "/coding-utf-8": _page(b"Content-Type: text/html\r\nContent-Encoding: UTF-8\r\n"),
    "/coding-binary": _page(b"Content-Type: text/html\r\nContent-Encoding: binary\r\n"),
    "/coding-gzip-none": _page(
        b"Content-Type: text/html\r\nContent-Encoding: gzip, none\r\n", gzip.compress(HTML)
    ),
    # a compression we cannot undo still fails the page: never a body passed on still encoded
    "/coding-compress": _page(b"Content-Type: text/html\r\nContent-Encoding: compress\r\n"),
    # a redirect's or an error page's status counts, not its body (was: a decoding error, the
    # redirect target never fetched, a 503's Retry-After never seen)
    "/redirect-gzip-plain": _response(
        b"301 Moved", b"Location: /moved\r\nContent-Encoding: gzip\r\n", b"Moved to /moved"
    ),
    "/redirect-br": _response(
        b"302 Found", b"Location: /moved-br\r\nContent-Encoding: br\r\n", b"\x1b\x0e\x00\xf8"
    ),
    "/not-found-gzip-plain": _response(
        b"404 Not Found", b"Content-Type: text/html\r\nContent-Encoding: gzip\r\n"
    ),
    "/busy-br": _response(
        b"503 Busy", b"Retry-After: 120\r\nContent-Encoding: br\r\n", b"\x1b\x0e\x00\xf8"
    ),
    "/redirect-gzip": _response(
        b"301 Moved", b"Location: /moved-gzip\r\nContent-Encoding: gzip\r\n", gzip.compress(b"x")
    ),
    # XHTML served as XML, or with no type and its XML declaration first: browsers render it
    # (was: not HTML, no links)
    "/xhtml-as-text-xml": _page(b"Content-Type: text/xml\r\n", XHTML),
    "/xhtml-as-application-xml": _page(b"Content-Type: application/xml; charset=utf-8\r\n", XHTML),
    "/xhtml-without-type": _page(b"", XHTML),
    "/feed-as-text-xml": _page(b"Content-Type: text/xml\r\n", b"<rss><channel><link>/ok</link>"),
    # past the cap (64 KiB here): a redirect or an error page is cut there, its status kept
    # (was: "too_large", the redirect target never fetched); a page still fails
    "/redirect-big-body": _response(b"302 Found", b"Location: /moved-big\r\n", BIG),
    "/not-found-big-body": _response(b"404 Not Found", b"Content-Type: text/html\r\n", BIG),
    "/page-big-body": _page(b"Content-Type: text/html\r\n", BIG),
    # found right: recorded as they should be (no code changed)
    "/charset-utf-8-semicolon": _page(b"Content-Type: text/html; charset=UTF-8;\r\n"),
    "/charset-quoted": _page(b'Content-Type: text/html; charset="windows-1251"\r\n', CYRILLIC),
    "/charset-alias-latin1": _page(b"Content-Type: text/html; charset=latin1\r\n"),
    "/charset-alias-x-sjis": _page(b"Content-Type: text/html; charset=x-sjis\r\n"),
    "/empty": _page(b"Content-Type: text/html\r\n", b""),
    "/whitespace": _page(b"Content-Type: text/html\r\n", b" \r\n\t\n"),
    "/gzip-empty": _page(b"Content-Type: text/html\r\nContent-Encoding: gzip\r\n", b""),
    "/204": b"HTTP/1.1 204 No Content\r\nContent-Encoding: gzip\r\n\r\n",
    "/chunk-extension": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: "
    b"chunked\r\n\r\n%x;name=value\r\n" % len(HTML) + HTML + b"\r\n0\r\nX-Trailer: 1\r\n\r\n",
    "/location-protocol-relative": _response(b"301 Moved", b"Location: //faults.test:PORT/pr\r\n"),
    "/sub/location-dot-dot": _response(b"301 Moved", b"Location: ../dd\r\n"),
    "/location-to-itself": _response(b"301 Moved", b"Location: /location-to-itself\r\n"),
    "/location-two": _response(b"302 Found", b"Location: /first\r\nLocation: /second\r\n"),
    # left alone: llhttp refuses them (RFC 9110 8.6 allows either); browsers read them
    "/content-length-twice": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
    "/space-before-colon": b"HTTP/1.1 200 OK\r\nContent-Type : text/html\r\nContent-Length: 2\r\n"
    b"\r\nok",
}
EXPECTED: dict[str, int | str] = {
    "/content-type-joined": 200,
    "/content-type-charset-in-second": 200,
    "/content-type-last-wins": 200,
    "/content-type-any-ignored": 200,
    "/coding-none": 200,  # was "decoding"
    "/coding-utf-8": 200,  # was "decoding"
    "/coding-binary": 200,  # was "decoding"
    "/coding-gzip-none": 200,  # was "decoding"
    "/coding-compress": "decoding",
    "/redirect-gzip-plain": 301,  # was "decoding"
    "/redirect-br": 302,  # was "decoding"
    "/not-found-gzip-plain": 404,  # was "decoding"
    "/busy-br": 503,  # was "decoding"
    "/redirect-gzip": 301,
    "/xhtml-as-text-xml": 200,
    "/xhtml-as-application-xml": 200,
    "/xhtml-without-type": 200,
    "/feed-as-text-xml": 200,
    "/redirect-big-body": 302,  # was "too_large"
    "/not-found-big-body": 404,  # was "too_large"
    "/page-big-body": "too_large",
    "/charset-utf-8-semicolon": 200,
    "/charset-quoted": 200,
    "/charset-alias-latin1": 200,
    "/charset-alias-x-sjis": 200,
    "/empty": 200,
    "/whitespace": 200,
    "/gzip-empty": 200,
    "/204": 204,
    "/chunk-extension": 200,
    "/location-protocol-relative": 301,
    "/sub/location-dot-dot": 301,
    "/location-to-itself": 301,
    "/location-two": 302,
    "/content-length-twice": "protocol",
    "/space-before-colon": "protocol",
}
# Pages read as the HTML they are: title "T", one link.
READ = ["/content-type-joined", "/content-type-charset-in-second", "/content-type-last-wins",
        "/content-type-any-ignored", "/coding-none", "/coding-utf-8", "/coding-binary",
        "/coding-gzip-none", "/charset-utf-8-semicolon", "/charset-quoted",
        "/charset-alias-latin1", "/charset-alias-x-sjis", "/chunk-extension",
        "/xhtml-as-text-xml", "/xhtml-as-application-xml", "/xhtml-without-type"]  # fmt: skip
# Where each redirect leads: fetched once, as a page of its own.
TARGETS = {"/redirect-gzip-plain": "/moved", "/redirect-br": "/moved-br",
           "/redirect-gzip": "/moved-gzip", "/location-protocol-relative": "/pr",
           "/sub/location-dot-dot": "/dd", "/location-two": "/first",
           "/redirect-big-body": "/moved-big"}  # fmt: skip


# robots.txt of <name>.quirks.test; every other path of those hosts is a page linking /private/x
ROBOTS = {
    # an error page or redirect whose body cannot be decoded: its status counts (RFC 9309: 4xx
    # allows everything); was a "decoding" error, so "unreachable": every page refused
    "gzip-404": _response(b"404 Not Found", b"Content-Encoding: gzip\r\n", b"<h1>Not found"),
    "br-403": _response(b"403 Forbidden", b"Content-Encoding: br\r\n", b"\x1b\x0e\x00\xf8"),
    "gzip-301": _response(
        b"301 Moved", b"Location: /rules.txt\r\nContent-Encoding: gzip\r\n", b"moved"
    ),
    "coding-none": _response(
        b"200 OK", b"Content-Encoding: none\r\n", b"User-agent: *\nDisallow: /private/\n"
    ),
    # found right: old Mac line ends, an HTML Content-Type, a gzipped file with a BOM, a relative
    # redirect
    "cr-only": _response(b"200 OK", b"", b"User-agent: *\rDisallow: /private/\rCrawl-delay: 0\r"),
    "html-type": _response(
        b"200 OK", b"Content-Type: text/html\r\n", b"User-agent: *\nDisallow: /private/\n"
    ),
    "gzip-bom": _response(
        b"200 OK",
        b"Content-Encoding: gzip\r\n",
        gzip.compress(b"\xef\xbb\xbfUser-agent: *\nDisallow: /private/\n"),
    ),
    "relative-redirect": _response(b"302 Found", b"Location: rules.txt\r\n", b""),
}
RULES = _response(b"200 OK", b"Content-Type: text/plain\r\n", b"User-agent: *\nDisallow: /private/")


def quirks_host(name: str) -> str:
    return f"{name}.quirks.test"


class WebServer(FaultServer):
    """tests/faults.py's raw server with this module's pages on faults.test (its robots.txt:
    404) and the `ROBOTS` hosts."""

    @property
    def resolve(self) -> dict[str, str]:
        return {name: self.address for name in (HOST, *map(quirks_host, ROBOTS))}

    def _bytes(self, host: str, path: str) -> bytes:
        if host.endswith(".quirks.test"):
            if path in ("/robots.txt", "/rules.txt"):
                return ROBOTS[host.split(".")[0]] if path == "/robots.txt" else RULES
            return _page(b"Content-Type: text/html\r\n", b"<a href='/private/x'>p</a>")
        if path == "/robots.txt":
            return _response(b"404 Not Found", b"", b"")
        return WEB_PAGES.get(path) or _page(b"Content-Type: text/html\r\n", b"<html>a page</html>")


@pytest.fixture
async def server() -> AsyncIterator[WebServer]:
    async with WebServer() as s:
        yield s


async def crawl(server: WebServer, paths: list[str]) -> dict[str, CrawlResult]:
    config = fault_config(server, crawl={"concurrency": 8, "max_depth": 1},
                          fetch={"max_body": 64 * 1024})  # fmt: skip
    async with asyncio.timeout(20), Crawler(config) as crawler:
        results = [r async for r in crawler.crawl([server.url(p) for p in paths])]
    by_url = {r.url: r for r in results}
    assert len(by_url) == len(results), "a URL has two records"
    assert not [r.error for r in results if (r.error or "").startswith("internal")]
    prefix = server.url("")
    return {url.removeprefix(prefix): result for url, result in by_url.items()}


async def test_every_web_quirk_gets_its_record(server: WebServer) -> None:
    assert set(EXPECTED) == set(WEB_PAGES)
    results = await crawl(server, list(WEB_PAGES))
    assert {path: record(results[path]) for path in EXPECTED} == EXPECTED
    for path in READ:
        assert (results[path].title, results[path].links) == ("T", 1), (path, results[path])
    for path, target in TARGETS.items():
        assert record(results[target]) == 200, path
        assert server.requests[(HOST, target)] == 1
    assert server.requests[(HOST, "/location-to-itself")] == 1  # not fetched again
    assert results["/coding-compress"].error == "decoding: unsupported Content-Encoding 'compress'"
    assert results["/not-found-big-body"].size == 64 * 1024
    assert (results["/feed-as-text-xml"].title, results["/feed-as-text-xml"].links) == (None, 0)


async def test_content_type_headers_are_read_as_browsers_read_them(server: WebServer) -> None:
    results = await crawl(server, ["/content-type-charset-in-second", "/content-type-joined"])
    page = results["/content-type-charset-in-second"]
    assert page.content_type == "text/html; charset=windows-1251"
    assert server.requests[(HOST, "/%D0%BF%D1%80%D0%B8%D0%B2%D0%B5%D1%82")] == 1  # /привет
    assert results["/content-type-joined"].content_type == "text/html"


async def test_an_error_page_whose_body_cannot_be_decoded_keeps_its_status(
    server: WebServer,
) -> None:
    results = await crawl(server, ["/busy-br", "/not-found-gzip-plain"])
    busy = results["/busy-br"]
    # the 503 and its Retry-After reach the host's politeness (it was a "decoding" error)
    assert (busy.status, busy.size, busy.error) == (503, 0, None)
    assert ("Retry-After", "120") in busy.headers
    assert (results["/not-found-gzip-plain"].status, results["/not-found-gzip-plain"].size) == (
        404,
        0,
    )


async def test_a_robots_txt_whose_body_cannot_be_decoded_keeps_its_status(
    server: WebServer,
) -> None:
    config = fault_config(server, crawl={"concurrency": 8, "max_depth": 1})
    async with asyncio.timeout(20), Crawler(config) as crawler:
        seeds = [server.url("/", quirks_host(name)) for name in ROBOTS]
        results = {r.url: r async for r in crawler.crawl(seeds)}
    seeds_read = {name: record(results[server.url("/", quirks_host(name))]) for name in ROBOTS}
    assert seeds_read == dict.fromkeys(ROBOTS, 200)  # the first 4: "robots" (unreachable)
    private = {
        name: record(results[server.url("/private/x", quirks_host(name))]) for name in ROBOTS
    }
    # 4xx: everything allowed; the others: their rules (the redirects': their target's)
    assert private == {"gzip-404": 200, "br-403": 200, **dict.fromkeys(list(ROBOTS)[2:], "robots")}
    assert results[server.url("/private/x", quirks_host("gzip-301"))].error == (
        "robots: disallowed by robots.txt"
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["text/html; charset=utf-8"], "text/html; charset=utf-8"),  # as it is
        (["text/html, text/html"], "text/html"),
        (["text/html", "text/html; charset=koi8-r"], "text/html; charset=koi8-r"),
        (["text/html; charset=koi8-r", "text/html"], "text/html; charset=koi8-r"),
        (["text/html; charset=koi8-r", "text/plain"], "text/plain"),  # another type: its own
        # Fetch keeps the type's first charset: a later one is the value's own, not inherited
        (
            ["text/html; charset=koi8-r", "text/html; charset=utf-8", "text/html"],
            "text/html; charset=koi8-r",
        ),
        (["text/html", "text/html; charset=koi8-r", "text/html"], "text/html"),
        (["application/json", "text/html"], "text/html"),
        (["text/html", "*/*", "nonsense"], "text/html"),
        (['text/html; charset="a,b"', "bogus"], 'text/html; charset="a,b"'),
        (["nonsense, more"], "nonsense, more"),  # nothing valid: as sent (the body is sniffed)
        ([], None),
        ([""], None),  # an empty header: no type (was "" in the results)
        ([" "], None),
    ],
)
def test_content_type_extracts_the_mime_type(values: list[str], expected: str | None) -> None:
    assert content_type(values) == expected


@pytest.mark.parametrize(
    ("mime", "body", "expected"),
    [
        ("text/xml", XHTML, True),
        (
            "application/xml",
            b"<?xml version='1.0'?><!-- c --><HTML lang=en XMLNS='http://www.w3.org/1999/xhtml'>",
            True,
        ),
        (None, XHTML, True),
        ("text/plain", b"<?xml version='1.0'?>\n<html>", True),
        (
            "text/xml",
            b"<feed><content type='xhtml'><html xmlns='http://www.w3.org/1999/xhtml'>",
            False,
        ),  # XHTML inside a feed: the feed is no page
        ("application/xml", b"<html><body>no XHTML namespace</body></html>", False),
        ("text/plain", b"<?xml version='1.0'?><note>", False),
        ("application/rss+xml", XHTML, False),
    ],
)
def test_xhtml_is_sniffed_as_browsers_render_it(
    mime: str | None, body: bytes, expected: bool
) -> None:
    assert is_html(mime, body) is expected


@pytest.mark.parametrize(
    ("headers", "coding"),
    [
        ([("Content-Encoding", "none")], ""),
        ([("Content-Encoding", "UTF-8")], ""),
        ([("Content-Encoding", "gzip, binary")], "gzip"),
        ([("Content-Encoding", "X-Gzip"), ("Content-Encoding", "text")], "x-gzip"),
        ([("Content-Encoding", "br")], "br"),  # refused by Decoder.make
        ([("Content-Encoding", "gzip, compress")], DecodingError),  # stacked
    ],
)
def test_only_compressions_are_content_codings(
    headers: list[tuple[str, str]], coding: str | type[Exception]
) -> None:
    if isinstance(coding, str):
        assert content_coding(CIMultiDict(headers)) == coding
    else:
        with pytest.raises(coding):
            content_coding(CIMultiDict(headers))


def test_a_lenient_decoder_yields_nothing_once_the_body_cannot_be_decoded() -> None:
    strict = Decoder.make("gzip")
    assert strict is not None
    with pytest.raises(zlib.error):
        strict.feed(b"plain text, not gzip", 100)
    lenient = Decoder.make("gzip", lenient=True)
    assert lenient is not None
    assert (lenient.feed(b"plain text, not gzip", 100), lenient.failed) == (b"", True)
    assert lenient.feed(gzip.compress(b"later"), 100) == b""
    good = Decoder.make("gzip", lenient=True)
    assert good is not None and good.feed(gzip.compress(b"fine"), 100) == b"fine"
    unsupported = Decoder.make("br", lenient=True)
    assert unsupported is not None and unsupported.failed
    with pytest.raises(DecodingError, match="'br'"):
        Decoder.make("br")


# -- sitemaps in the protocol's other formats ----------------------------------------------------

URLSET = b"<urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'><url><loc>http://a.test/1"
URLSET += b"</loc></url></urlset>"
RSS = b"""<?xml version="1.0"?><rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">
<channel><title>x</title><link>http://a.test/</link>
<atom:link href="http://a.test/feed" rel="self"/>
<item><title>a</title><link> http://a.test/1 </link><guid>http://a.test/g</guid></item>
<item><title>no link</title></item>
<item><atom:link href="http://a.test/self" rel="self"/><link>http://a.test/2</link></item>
</channel></rss>"""
ATOM = b"""<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">
<title>x</title><link href="http://a.test/"/>
<entry><title>a</title><link rel="edit" href="http://a.test/edit"/>
<link href="http://a.test/1"/><link rel="alternate" href="http://a.test/other"/></entry>
<entry><link rel="alternate" type="text/html" href="http://a.test/2"/></entry>
<entry><title>none</title></entry></feed>"""


@pytest.mark.parametrize(
    ("body", "locs"),
    [
        (b"http://a.test/1\n\thttp://a.test/2\r\n\n  http://a.test/3  \n", ("1", "2", "3")),
        (b"\xef\xbb\xbfhttp://a.test/1\n# a comment\nnot a URL\nftp://a.test/x\n", ("1",)),
        (gzip.compress(b"http://a.test/1\n"), ("1",)),
        (b"\n\n  <?xml version='1.0' encoding='UTF-8'?>" + URLSET, ("1",)),  # was an error
        (b"\xef\xbb\xbf\r\n<?xml version='1.0'?>" + URLSET, ("1",)),
        (RSS, ("1", "2")),
        (ATOM, ("1", "2")),
    ],
    ids=["text", "text-bom-and-junk", "text-gzip", "whitespace", "bom-whitespace", "rss", "atom"],
)
def test_sitemap_formats(body: bytes, locs: tuple[str, ...]) -> None:
    sitemap = parse_sitemap(body)
    assert (sitemap.is_index, sitemap.locs) == (False, tuple(f"http://a.test/{n}" for n in locs))


@pytest.mark.parametrize(
    "body", [b"Not Found", b"   ", b"\xef\xbb\xbf", b"<rdf:RDF></rdf:RDF>", b"\x00\x01\x02"]
)
def test_what_is_no_sitemap_still_says_so(body: bytes) -> None:
    with pytest.raises(SitemapError, match="not a sitemap"):
        parse_sitemap(body)


def test_a_text_sitemap_stops_at_the_protocol_limit() -> None:
    body = "".join(f"http://a.test/{i}\n" for i in range(MAX_URLS + 3)).encode()
    sitemap = parse_sitemap(body)
    assert (len(sitemap.locs), sitemap.truncated, sitemap.locs[-1]) == (
        MAX_URLS,
        True,
        f"http://a.test/{MAX_URLS - 1}",
    )


def test_a_feed_of_many_items_is_read_as_a_stream() -> None:
    items = b"".join(b"<item><link>http://a.test/%d</link></item>" % i for i in range(60_000))
    sitemap = parse_sitemap(b"<rss><channel>" + items + b"</channel></rss>")
    assert (len(sitemap.locs), sitemap.truncated) == (MAX_URLS, True)


async def test_a_crawl_reads_text_and_feed_sitemaps() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        site = f"http://{request.host}"
        bodies: dict[str, Any] = {
            "/robots.txt": f"Sitemap: {site}/urls.txt\nSitemap: {site}/feed\n"
            f"Sitemap: {site}/spaced.xml\n",
            "/urls.txt": f"{site}/from-text\n",
            "/feed": f"<rss><channel><item><link>{site}/from-feed</link></item></channel></rss>",
            "/spaced.xml": f"\n<?xml version='1.0'?><urlset><url><loc>{site}/from-xml</loc>"
            "</url></urlset>",
        }
        kind = "text/html" if request.path == "/" else "text/plain"
        return web.Response(text=bodies.get(request.path, "<html>a page</html>"), content_type=kind)

    config = (
        Config()
        .override("politeness", delay=0.0, ip_delay=0.0)
        .override("scope", use_sitemaps=True)
    )
    async with serve(handler) as port:
        site = f"http://127.0.0.1:{port}"
        async with asyncio.timeout(20), Crawler(config) as crawler:
            results = {r.url: r async for r in crawler.crawl([f"{site}/"])}
    for sitemap in ("/urls.txt", "/feed", "/spaced.xml"):
        assert (results[site + sitemap].error, results[site + sitemap].links) == (None, 1)
    for page in ("/from-text", "/from-feed", "/from-xml"):
        assert results[site + page].status == 200  # was: three "sitemap: not a sitemap" errors


async def test_a_page_repeating_its_links_past_the_cap_keeps_its_distinct_links(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """javadoc's index pages repeat their links (25,000 hrefs to 2,700 URLs): the cap of links
    per page counted every href, and the URLs first linked after the 10,000th were never seen
    from there (a third of them). It counts distinct links now, and a page over it is logged."""
    repeated = "".join(f"<a href='/p{i % 3}#m{i}'>m</a>" for i in range(60))
    pages = {"/": f"<html>{repeated}<a href='/late'>late</a></html>"}

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(
            text=pages.get(request.path, "<html>leaf</html>"), content_type="text/html"
        )

    config = (
        Config()
        .override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
        .override("scope", max_links_per_page=10)
    )
    async with serve(handler) as port:
        site = f"http://127.0.0.1:{port}"
        async with asyncio.timeout(20), Crawler(config) as crawler:
            results = {r.url: r async for r in crawler.crawl([f"{site}/"])}
    assert results[f"{site}/late"].status == 200  # was: never found (the 61st href of 10)
    assert results[f"{site}/"].links == 61
    assert "distinct links" not in caplog.text
    config = config.override("scope", max_links_per_page=2)
    async with serve(handler) as port:
        site = f"http://127.0.0.1:{port}"
        async with asyncio.timeout(20), Crawler(config) as crawler:
            results = {r.url: r async for r in crawler.crawl([f"{site}/"])}
    assert sorted(results) == [f"{site}/", f"{site}/p0", f"{site}/p1"]
    assert f"{site}/: 4 distinct links, the first 2 taken" in caplog.text
