"""What the web throws at the rest of the crawl (second fault audit), checked end to end on
loopback: redirects to credentials, other schemes and endless fresh URLs, a sitemap index that
lists itself, a meta refresh (followed), and hrefs no URL can hold."""

from __future__ import annotations

import pytest
from aiohttp import web

from crawler import Config, Crawler
from crawler.output.results import CrawlResult
from crawler.parse.sitemaps import MAX_URLS, SitemapError, parse_sitemap
from tests.support.server import serve
from tests.support.sitemaps import parse_traced


def fast() -> Config:
    return Config().override("politeness", delay=0.0, ip_delay=0.0)


async def crawl(config: Config, seed: str) -> list[CrawlResult]:
    async with Crawler(config) as crawler:
        return [r async for r in crawler.crawl([seed])]


async def test_redirects_to_credentials_other_schemes_and_a_fresh_url_each_hop() -> None:
    def found(location: str) -> web.Response:
        return web.Response(status=302, headers={"Location": location})

    async def handler(request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/":
            hrefs = ["/cred", "/ftp", "/data", "/bad", "/loop"]
            return web.Response(text="".join(f'<a href="{h}">x</a>' for h in hrefs),
                                content_type="text/html")  # fmt: skip
        if path == "/cred":
            return found(f"http://user:s3cret@{request.host}/landing")
        if path == "/ftp":
            return found("ftp://127.0.0.1/file")
        if path == "/data":
            return found("data:text/html,<a href=/x>x</a>")
        if path == "/bad":
            return found("http://[bad")
        if path == "/loop":  # a new URL every hop
            return found(f"/loop?n={int(request.query.get('n', '0')) + 1}")
        return web.Response(text="ok", content_type="text/html")

    async with serve(handler) as port:
        results = await crawl(fast(), f"http://127.0.0.1:{port}/")
    by_path = {r.url.split(str(port), 1)[1]: r for r in results}
    assert all("s3cret" not in r.to_json() for r in results)  # never written, never sent
    assert by_path["/cred"].location == f"http://127.0.0.1:{port}/landing"
    assert by_path["/landing"].status == 200
    for path in ("/ftp", "/data", "/bad"):
        assert (by_path[path].error or "").startswith("redirect: bad Location"), path
    loops = sorted(p for p in by_path if p.startswith("/loop"))
    assert len(loops) == 6  # the redirect limit (5 hops) ends it
    assert by_path["/loop?n=5"].error == "redirect: more than 5 hops"


async def test_a_sitemap_index_listing_itself_is_fetched_once() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        site = f"http://{request.host}"
        if request.path == "/robots.txt":
            return web.Response(text=f"Sitemap: {site}/index.xml\n")
        if request.path == "/index.xml":
            return web.Response(
                text=f"<sitemapindex><sitemap><loc>{site}/index.xml</loc>"
                f"</sitemap><sitemap><loc>{site}/s.xml</loc></sitemap>"
                "</sitemapindex>",
                content_type="application/xml",
            )
        if request.path == "/s.xml":
            return web.Response(
                text=f"<urlset><url><loc>{site}/index.xml</loc></url>"
                f"<url><loc>http://other.test/</loc></url></urlset>",
                content_type="application/xml",
            )
        return web.Response(
            text='<meta http-equiv="refresh" content="0; url=/refreshed">',
            content_type="text/html",
        )

    config = fast().override("scope", use_sitemaps=True)
    async with serve(handler) as port:
        results = await crawl(config, f"http://127.0.0.1:{port}/")
    urls = [r.url for r in results]
    assert len(urls) == len(set(urls))  # the cycle is cut by the Sieve
    assert f"http://127.0.0.1:{port}/index.xml" in urls
    assert f"http://127.0.0.1:{port}/s.xml" in urls
    assert not any("other.test" in u for u in urls)  # a sitemap's other hosts: out of scope
    assert f"http://127.0.0.1:{port}/refreshed" in urls  # a meta refresh is a link


async def test_an_endless_chain_of_sitemap_indexes_is_cut_by_max_depth() -> None:
    # each index listed the next one and a sitemap: every index was admitted at the depth of
    # the one listing it (0), so max_depth never stopped the chain and the crawl never ended
    async def handler(request: web.Request) -> web.StreamResponse:
        site = f"http://{request.host}"
        if request.path == "/robots.txt":
            return web.Response(text=f"Sitemap: {site}/index?n=0\n")
        n = int(request.query.get("n", "0"))
        if request.path == "/index":
            body = (f"<sitemapindex><sitemap><loc>{site}/index?n={n + 1}</loc></sitemap>"
                    f"<sitemap><loc>{site}/urls?n={n}</loc></sitemap></sitemapindex>")  # fmt: skip
            return web.Response(text=body, content_type="application/xml")
        if request.path == "/urls":
            body = f"<urlset><url><loc>{site}/page?n={n}</loc></url></urlset>"
            return web.Response(text=body, content_type="application/xml")
        return web.Response(text="<html>a page</html>", content_type="text/html")

    config = fast().override("scope", use_sitemaps=True).override("crawl", max_depth=3)
    results: dict[str, CrawlResult] = {}
    async with serve(handler) as port, Crawler(config) as crawler:
        async for result in crawler.crawl([f"http://127.0.0.1:{port}/"]):
            results[result.url.split(str(port), 1)[1]] = result
            assert len(results) < 100, "the chain of sitemap indexes was not cut"
    # an index's sitemaps are one level deeper; a sitemap's pages at depth 1, as ever
    assert {path: r.depth for path, r in results.items() if path.startswith("/index")} == {
        f"/index?n={n}": n for n in range(4)
    }
    assert {path: r.depth for path, r in results.items() if path.startswith("/page")} == {
        f"/page?n={n}": 1 for n in range(3)
    }


async def test_a_refresh_header_is_followed_unless_the_page_is_nofollow() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/":
            body = "<a href=/plain>p</a><a href=/closed>c</a>"
            return web.Response(text=body, content_type="text/html")
        if request.path == "/plain":  # a PHP page's header("Refresh: 0; url=...")
            refresh = {"Refresh": "0; url=/target"}
            return web.Response(text="moving", content_type="text/html", headers=refresh)
        if request.path == "/closed":
            refresh = {"Refresh": "1;url=/hidden"}
            body = "<meta name=robots content=nofollow>"
            return web.Response(text=body, content_type="text/html", headers=refresh)
        return web.Response(text="leaf", content_type="text/html")

    async with serve(handler) as port:
        results = await crawl(fast(), f"http://127.0.0.1:{port}/")
    paths = {r.url.rsplit(str(port), 1)[1]: r for r in results}
    assert "/target" in paths and paths["/plain"].links == 1
    assert "/hidden" not in paths  # a nofollow page's links, the header's too, are not followed


async def test_hrefs_with_nul_surrogates_and_huge_hosts_cost_nothing() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path != "/":
            return web.Response(text="leaf", content_type="text/html")
        body = (
            '<a href="/nul\x00x">a</a><a href="/sur&#xD800;x">b</a>'
            f'<a href="/{"a" * 100_000}">c</a><a href="http://{"h" * 300}.test/">d</a>'
            '<a href="http://xn--a.test/">e</a><a href="http://[::1">f</a>'
        )
        return web.Response(text=body, content_type="text/html")

    async with serve(handler) as port:
        results = await crawl(fast(), f"http://127.0.0.1:{port}/")
    assert results[0].status == 200 and results[0].links == 6
    fetched = {r.url.split(str(port), 1)[1] for r in results[1:]}
    assert fetched == {"/nul%EF%BF%BDx", "/sur%EF%BF%BDx"}  # as browsers do: U+FFFD
    assert all(r.error is None for r in results)


@pytest.mark.slow
def test_a_sitemap_of_the_body_cap_is_read_as_a_stream() -> None:
    """A 10 MiB sitemap (~160,000 entries): before, a tree of the whole file (65 MiB at peak,
    ~0.75 s on the event loop); now the first 50,000 entries are read and each dropped."""
    entries = b"".join(
        b"<url><loc>http://a.test/p%d</loc><lastmod>2024-01-01</lastmod></url>" % i
        for i in range(160_000)
    )
    body = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + entries
    body += b"</urlset>"
    sitemap, peak = parse_traced(body)
    assert len(sitemap.locs) == MAX_URLS and sitemap.truncated
    assert sitemap.locs[-1] == f"http://a.test/p{MAX_URLS - 1}"
    assert peak < 16 * 2**20, peak  # the 50,000 URL strings and little more


@pytest.mark.parametrize(
    ("body", "locs"),
    [
        (b"<urlset><url><loc> http://a.test/ </loc><loc>http://b.test/</loc></url></urlset>",
         ("http://a.test/",)),  # an item's first <loc> only
        (b"<urlset><url><x><loc>http://n.test/</loc></x></url><foo><loc>http://f.test/</loc>"
         b"</foo><url><loc/><loc>http://c.test/</loc></url></urlset>", ("http://c.test/",)),
    ],
)  # fmt: skip
def test_only_each_items_first_loc_counts(body: bytes, locs: tuple[str, ...]) -> None:
    assert parse_sitemap(body).locs == locs


def test_a_sitemap_cut_short_is_refused() -> None:
    with pytest.raises(SitemapError, match="not a sitemap"):
        parse_sitemap(b"<urlset><url><loc>http://a.test/</loc></url><url><loc>http://b")
