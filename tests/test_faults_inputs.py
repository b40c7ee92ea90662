"""What the web throws at the rest of the crawl (second fault audit), checked end to end on
loopback: redirects to credentials, other schemes and endless fresh URLs, a sitemap index that
lists itself, a meta refresh, and hrefs no URL can hold."""

from __future__ import annotations

from aiohttp import web

from crawler import Config, Crawler
from crawler.results import CrawlResult
from tests.conftest import serve


def fast() -> Config:
    return Config().override("politeness", delay=0.0)


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
    assert not any("refreshed" in u for u in urls)  # a meta refresh is not a link


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
