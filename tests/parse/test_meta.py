"""Page metadata (`crawler.parse.yields.meta`): schema.org's and OGP's documented examples read
as extruct reads them, and every bound: broken, huge and deep JSON-LD, floods of meta tags,
deep and numerous microdata items."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crawler.parse.markup import parse_markup
from crawler.parse.yields import Yields
from crawler.parse.yields import jsonld as jsonld_module
from crawler.parse.yields import microdata as microdata_module

PAGES = Path(__file__).parent / "meta_pages"
URL = "https://example.com/dir/page.html"
META = Yields(meta=True)


def meta_of(html: str | bytes, url: str = URL) -> dict[str, Any]:
    body = html.encode() if isinstance(html, str) else html
    markup = parse_markup(body, url, "text/html", main="text", yields=META)
    assert markup.meta is not None
    return markup.meta


def page(name: str) -> dict[str, Any]:
    return meta_of((PAGES / name).read_bytes())


def head(inner: str) -> str:
    return f"<html><head>{inner}</head><body><p>x</p></body></html>"


def ld(block: str) -> str:
    return f'<script type="application/ld+json">{block}</script>'


def test_article_jsonld_and_opengraph() -> None:
    meta = page("article.html")
    assert meta["description"] == "A most wonderful article about a thing."
    assert meta["language"] == "en"
    assert meta["author"] == "Jane Doe"  # JSON-LD's first author before <meta name=author>
    assert meta["published"] == "2015-02-05T08:00:00+08:00"
    assert meta["modified"] == "2015-02-05T09:20:00+08:00"
    og = meta["opengraph"]
    assert og["og:image"] == "https://example.com/photos/1x1/photo.jpg"  # the first of two
    assert og["article:tag"] == "things" and og["twitter:card"] == "summary_large_image"
    [item] = meta["jsonld"]
    assert item["@type"] == "NewsArticle" and len(item["image"]) == 3
    assert meta["microdata"] == [] and meta["skipped"] == {}


def test_product_microdata_with_nested_items() -> None:
    meta = page("product.html")
    assert meta["language"] == "en-US"  # http-equiv Content-Language
    [product] = meta["microdata"]
    assert product["type"] == "https://schema.org/Product"
    props = product["properties"]
    assert props["name"] == 'Kenmore White 17" Microwave'
    assert props["image"] == "https://example.com/dir/kenmore-microwave-17in.jpg"
    assert props["aggregateRating"]["properties"] == {"ratingValue": "3.5", "reviewCount": "11"}
    offer = props["offers"]["properties"]
    assert offer["availability"] == "https://schema.org/InStock"  # a <link>'s href
    assert offer["price"] == "1000.00"  # a <span content>: its machine-readable value
    assert offer["priceCurrency"] == "USD"
    first, second = props["review"]
    assert first["properties"]["author"]["properties"] == {"name": "Ellie"}
    assert first["properties"]["reviewRating"]["properties"]["worstRating"] == "1"
    assert second["properties"]["datePublished"] == "2011-03-25"
    assert meta["published"] == "2011-04-01"  # microdata, when nothing else states a date


def test_event_and_recipe() -> None:
    event = page("event.html")
    [item] = event["jsonld"]
    assert item["location"]["address"]["postalCode"] == "19019"
    assert event["opengraph"]["twitter:title"] == "Kira and Morrison, live"
    assert event["published"] is None and event["description"] is None
    recipe = page("recipe.html")
    [item] = recipe["microdata"]
    props = item["properties"]
    assert props["recipeIngredient"] == [
        "3 or 4 ripe bananas, smashed", "1 egg", "3/4 cup of sugar",
    ]  # fmt: skip
    assert props["prepTime"] == "PT15M" and props["nutrition"]["properties"]["calories"]
    assert props["suitableForDiet"] == "https://schema.org/LowFatDiet"
    assert recipe["published"] == "2009-05-08"


def test_breadcrumbs_in_jsonld_and_microdata() -> None:
    meta = page("breadcrumbs.html")
    [jsonld] = meta["jsonld"]
    assert [e["name"] for e in jsonld["itemListElement"]] == [
        "Books", "Science Fiction", "Award Winners",
    ]  # fmt: skip
    [crumbs] = meta["microdata"]
    items = crumbs["properties"]["itemListElement"]
    assert [i["properties"]["position"] for i in items] == ["1", "2", "3"]
    assert items[0]["properties"]["item"] == "https://example.com/books"
    page_item = items[1]["properties"]["item"]  # an <a itemscope>: an item, not a URL
    assert page_item["id"] == "https://example.com/books/sciencefiction"
    assert page_item["properties"] == {"name": "Science Fiction"}


def test_ogp_movie_first_values() -> None:
    meta = page("ogp_movie.html")
    og = meta["opengraph"]
    assert og["og:image"] == "https://ia.media-imdb.com/images/rock.jpg"
    assert og["og:locale:alternate"] == "fr_FR"
    assert og["video:release_date"] == "1996-06-07"
    assert meta["description"] and meta["description"].startswith("Sean Connery")
    assert meta["language"] is None  # og:locale is not the page's language tag


def test_a_non_iso_date_is_passed_over() -> None:
    meta = meta_of(head(
        '<meta name="date" content="March 3, 2020">'
        '<meta name="dcterms.modified" content="2020-03-04">'
        '<meta property="article:modified_time" content="yesterday">'
        '<meta name="dc.date" content="2020-03-03">'
    ))  # fmt: skip
    assert meta["published"] == "2020-03-03" and meta["modified"] == "2020-03-04"


def test_a_broken_jsonld_block_is_skipped_and_counted() -> None:
    meta = meta_of(head(
        ld('{"@type": "A",}') + ld("<!-- {\"@type\": \"B\"} -->") + ld('{"a": NaN}')
        + ld("[1, 2") + ld('[{"@type": "C"}, {"@type": "D"}]')
    ))  # fmt: skip
    assert [item["@type"] for item in meta["jsonld"]] == ["B", "C", "D"]
    assert meta["skipped"] == {"jsonld_broken": 3}
    json.dumps(meta, allow_nan=False)


def test_a_huge_jsonld_block_is_skipped_unparsed() -> None:
    big = '{"@type": "Big", "x": "' + "a" * (10 * 1024 * 1024) + '"}'
    meta = meta_of(head(ld(big) + ld('{"@type": "Small"}')))
    assert meta["jsonld"] == [{"@type": "Small"}]
    assert meta["skipped"] == {"jsonld_too_big": 1}


def test_the_page_budget_of_jsonld(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonld_module, "MAX_PAGE_CHARS", 50)
    block = ld('{"@type": "T", "pad": "' + "p" * 20 + '"}')
    meta = meta_of(head(block * 3))
    assert len(meta["jsonld"]) == 1 and meta["skipped"] == {"jsonld_too_big": 2}


def test_too_many_jsonld_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonld_module, "MAX_BLOCKS", 3)
    meta = meta_of(head(ld("{}") * 5))
    assert len(meta["jsonld"]) == 3 and meta["skipped"] == {"jsonld_over": 2}


@pytest.mark.parametrize("depth", [65, 100_000])
def test_deep_jsonld_is_skipped(depth: int) -> None:
    meta = meta_of(head(ld("[" * depth + "]" * depth) + ld('{"@type": "Kept"}')))
    assert meta["jsonld"] == [{"@type": "Kept"}]
    assert meta["skipped"] == {"jsonld_too_deep": 1}


def test_jsonld_at_the_depth_limit_is_kept() -> None:
    nested = '{"a":' * 63 + "1" + "}" * 63
    meta = meta_of(head(ld(f"[{nested}]")))
    assert len(meta["jsonld"]) == 1 and meta["skipped"] == {}


def test_a_lone_surrogate_is_mended() -> None:
    meta = meta_of(head(ld('{"name": "a\\ud800b", "\\udfffk": "\\ud83d\\ude00"}')))
    assert meta["jsonld"] == [{"name": "a\ufffdb", "\ufffdk": "\U0001f600"}]
    json.dumps(meta, ensure_ascii=False).encode()  # writable as UTF-8


def test_a_flood_of_meta_tags_is_bounded() -> None:
    flood = "".join(f'<meta name="n{i}" content="v">' for i in range(100_000))
    meta = meta_of(head('<meta name="description" content="first">' + flood))
    assert meta["description"] == "first"
    assert meta["skipped"] == {"meta_over": 100_001 - 10_000}


def test_deep_microdata_is_cut() -> None:
    depth = 40
    html = ('<div itemscope itemtype="T">' + '<div itemprop="child" itemscope>' * depth
            + '<span itemprop="leaf">x</span>' + "</div>" * (depth + 1))  # fmt: skip
    [item] = meta_of(f"<body>{html}</body>")["microdata"]
    levels = 0
    while isinstance(item, dict):
        item = item["properties"]["child"]
        levels += 1
    assert levels == microdata_module.MAX_DEPTH
    assert meta_of(f"<body>{html}</body>")["skipped"] == {"microdata_too_deep": 1}


def test_too_many_microdata_items(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(microdata_module, "MAX_ITEMS", 2)
    monkeypatch.setattr(microdata_module, "MAX_PROPERTIES", 3)
    item = '<p itemscope><b itemprop="a">1</b><b itemprop="b">2</b></p>'
    meta = meta_of(f"<body>{item * 4}</body>")
    assert [i["properties"] for i in meta["microdata"]] == [{"a": "1", "b": "2"}, {"a": "1"}]
    assert meta["skipped"] == {"microdata_over": 3}  # 2 items, 1 property


def test_meta_is_none_unless_asked_and_for_what_is_not_html() -> None:
    html = (PAGES / "article.html").read_bytes()
    assert parse_markup(html, URL, "text/html").meta is None
    assert parse_markup(b'{"a": 1}', URL, "application/json", yields=META).meta is None


@pytest.mark.parametrize("text", [False, True])
def test_the_crawls_pass_finds_the_metadata_and_its_links_once(text: bool) -> None:
    html = (
        "<html><head><meta name=description content=d><link rel=next href=/n itemscope>"
        + ld('{"@type": "A"}') + "</head><body>"
        "<a href='/x' itemscope itemtype='T'><span itemprop=name>n</span></a>"
        "<h2 itemscope itemtype='H'><i itemprop=k>v</i></h2><img src=i.png itemscope>"
        "<div itemscope itemtype='D'><a itemprop=u href='/y'>y</a></div></body></html>"
    )  # fmt: skip
    plain = parse_markup(html.encode(), URL, "text/html", text=text)
    markup = parse_markup(html.encode(), URL, "text/html", text=text, yields=META)
    assert markup.hrefs == plain.hrefs == ("/x", "/y") and markup.text == plain.text
    assert markup.metas == plain.metas
    meta = markup.meta
    assert meta is not None and meta["description"] == "d" and meta["jsonld"] == [{"@type": "A"}]
    assert [item.get("type") for item in meta["microdata"]] == [None, "T", "H", "D"]
    assert meta["microdata"][3]["properties"] == {"u": "https://example.com/y"}


def test_a_microdata_text_value_leaves_out_scripts_and_styles() -> None:
    # a news page's articleBody holds its share widget's script: the text, not the code
    body = (
        '<div itemscope itemtype="https://schema.org/NewsArticle"><div itemprop="articleBody">'
        "<p>The council approved the plan.</p><script>var addthis_config = {pubid: 'ra-1'};"
        "</script><style>.x { color: red }</style><p>Works begin in spring.</p></div></div>"
    )
    item = meta_of(f"<html><body>{body}</body></html>")["microdata"][0]
    assert item["properties"]["articleBody"] == (
        "The council approved the plan.Works begin in spring."
    )


def test_facebook_and_product_properties_are_opengraph() -> None:
    # the namespaces extruct reads beside OGP's own: fb: (app and page ids), product: (prices)
    tags = (
        '<meta property="fb:app_id" content="115982828429116">'
        '<meta property="product:price:amount" content="12.50">'
        '<meta property="og:title" content="A title">'
    )
    assert meta_of(head(tags))["opengraph"] == {
        "fb:app_id": "115982828429116",
        "product:price:amount": "12.50",
        "og:title": "A title",
    }
