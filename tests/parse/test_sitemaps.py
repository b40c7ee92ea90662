"""Sitemaps: parsing (safely) and seeding a crawl from robots.txt Sitemap: lines."""

from __future__ import annotations

import gzip

import pytest

from crawler.engine.crawler import Crawler
from crawler.parse.sitemaps import MAX_URLS, SitemapError, parse_sitemap
from crawler.testing.fixture import FixtureSite
from tests.support.server import site_config
from tests.support.sitemaps import parse_traced

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str) -> bytes:
    items = "".join(f"<url><loc> {loc} </loc><lastmod>2026-01-01</lastmod></url>" for loc in locs)
    return f'<?xml version="1.0"?><urlset {NS}>{items}</urlset>'.encode()


def test_urlset() -> None:
    sitemap = parse_sitemap(urlset("http://a.test/1", "http://a.test/2"))
    assert not sitemap.is_index
    assert sitemap.locs == ("http://a.test/1", "http://a.test/2")
    assert not sitemap.truncated


def test_index_and_gzip() -> None:
    index = (
        f"<sitemapindex {NS}><sitemap><loc>http://a.test/s1.xml.gz</loc></sitemap></sitemapindex>"
    )
    sitemap = parse_sitemap(gzip.compress(index.encode()))
    assert sitemap.is_index
    assert sitemap.locs == ("http://a.test/s1.xml.gz",)


def test_without_namespace_and_empty_locs() -> None:
    body = b"<urlset><url><loc>http://a.test/x</loc></url><url><loc>  </loc></url><other/></urlset>"
    assert parse_sitemap(body).locs == ("http://a.test/x",)


def test_cap_at_protocol_limit() -> None:
    sitemap = parse_sitemap(urlset(*(f"http://a.test/{i}" for i in range(MAX_URLS + 5))))
    assert len(sitemap.locs) == MAX_URLS
    assert sitemap.truncated


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"<html><body>not xml", "not a sitemap"),
        (b"<html></html>", "root element <html>"),
        (b"", "not a sitemap"),
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            b'<!ENTITY lol2 "&lol;&lol;&lol;">]><urlset><url><loc>&lol2;</loc></url></urlset>',
            "not a sitemap",
        ),
        (b"\x1f\x8b\x08\x00garbage", "bad gzip data"),
        # an encoding Python does not know: a LookupError, and an "internal" record
        (b"<?xml version='1.0' encoding='klingon'?><urlset/>", "unknown encoding: klingon"),
        (b"<?xml version='1.0' encoding='base64'?><urlset/>", "not a sitemap"),
        (b"<?xml version='1.0' encoding='utf-7'?><urlset/>", "not a sitemap"),
    ],
)
def test_bad_bodies(body: bytes, needle: str) -> None:
    with pytest.raises(SitemapError, match=needle):
        parse_sitemap(body)


def test_gzip_bomb_stops_at_the_cap() -> None:
    bomb = gzip.compress(b"<urlset>" + b" " * (20 * 1024 * 1024) + b"</urlset>")
    with pytest.raises(SitemapError, match="inflates past the cap"):
        parse_sitemap(bomb, max_bytes=1024 * 1024)


def test_a_text_sitemap_of_junk_lines_is_read_as_a_stream() -> None:
    # a line is looked at only if it starts as a URL: 4 MiB of short lines (a body the cap lets
    # in, 4 KB gzipped) took ~20x their size (a str of the body, a list of 1.4M lines)
    body = b"ab\n" * (4 * 1024 * 1024 // 3) + b"http://a.test/1\n"
    sitemap, peak = parse_traced(body)
    assert sitemap.locs == ("http://a.test/1",)
    assert peak < len(body) // 4, f"{peak:,} bytes for a body of {len(body):,}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("head", "tail"),
    [(b"<urlset><url>", b"</url></urlset>"), (b"<rss>", b"</rss>")],
    ids=["elements-in-one-url", "rss-elements-beside-channel"],
)
def test_a_sitemap_of_many_small_elements_is_read_as_a_stream(head: bytes, tail: bytes) -> None:
    # every element is dropped once read: those of one entry, or beside an RSS feed's <channel>,
    # were kept until its end (~20x the body: 80 MB for 4 MB of "<x/>")
    body = head + b"<x/>" * 250_000 + tail
    sitemap, peak = parse_traced(body)
    assert sitemap.locs == ()
    assert peak < len(body), f"{peak:,} bytes for a body of {len(body):,}"


@pytest.mark.slow
async def test_crawl_seeded_from_robots_sitemaps(site: FixtureSite) -> None:
    config = site_config(site).override("scope", use_sitemaps=True)
    async with Crawler(config) as crawler:
        results = [r async for r in crawler.crawl(site.seeds)]
    keys = [r.key for r in results]
    assert len(keys) == len(set(keys))
    assert set(keys) == site.expected(sitemaps=True) | site.refused()
    by_key = {r.key: r for r in results}
    pages = by_key[site.url("site-a.test", "/sitemap-pages.xml.gz")]
    assert pages.links == 3
    assert pages.new_links == 1  # /about was already known, /private/secret too
    assert by_key[site.url("site-a.test", "/from-sitemap")].depth == 1


@pytest.mark.slow
async def test_sitemaps_are_off_by_default(site: FixtureSite) -> None:
    async with Crawler(site_config(site)) as crawler:
        keys = {r.key async for r in crawler.crawl(site.seeds)}
    assert site.url("site-a.test", "/sitemap.xml") not in keys
    assert not [r for r in site.requests if "sitemap" in r.path]


def test_sitemaps_without_robots_say_they_read_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """The Sitemap: lines are read from robots.txt: with respect_robots off none is fetched, and
    use_sitemaps did nothing without a word."""
    from crawler.config.load import Config

    config = Config().override("scope", use_sitemaps=True)
    Crawler(config.override("politeness", respect_robots=False))
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("use_sitemaps" in m and "respect_robots = false" in m for m in warned), warned
    caplog.clear()
    Crawler(config)  # with robots.txt: sitemaps are read, nothing to say
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
