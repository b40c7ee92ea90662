"""``[[extract]]`` fields and the extract hook (`crawler.parse.yields`): what a rule takes, URLs
made absolute, the bounds, and every way a rule or a hook fails (reported on the page, the
other fields kept)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from crawler.config.sections import ExtractRule
from crawler.parse.markup import Markup, parse_markup
from crawler.parse.yields import ExtractPage, Yields
from crawler.parse.yields import fields as fields_module

URL = "https://example.com/shop/item.html"
HTML = """<html><head><title>Kettle</title><base href="/base/"></head><body>
<h1 class=title>  Steel   <i>kettle</i> </h1>
<ul><li><a href="a.html">A</a></li><li><a href=" /b.html ">B</a></li><li><a>none</a></li></ul>
<img src="k.png"><span class=price data-cents="999">$9.99</span>
<a rel=next href="https://other.example/p2">next</a></body></html>"""


def read(*rules: ExtractRule, hook: Any = None, html: str = HTML) -> Markup:
    yields = Yields.of(False, rules, hook)
    assert yields is not None
    return parse_markup(html.encode(), URL, "text/html", main="text",
                        yields=yields.at(200, (("Content-Type", "text/html"),)))  # fmt: skip


def test_text_html_and_attributes() -> None:
    m = read(
        ExtractRule("title", "h1.title"),
        ExtractRule("title_html", "h1", attr="html"),
        ExtractRule("cents", ".price", attr="data-cents"),
        ExtractRule("links", "li a", attr="href", all=True),
        ExtractRule("image", "img", attr="src"),
        ExtractRule("next", "a[rel=next]", attr="href"),
        ExtractRule("missing", "table"),
        ExtractRule("missing_all", "table td", all=True),
    )
    assert m.fields == {
        "title": "Steel kettle",
        "title_html": '<h1 class="title">  Steel   <i>kettle</i> </h1>',
        "cents": "999",
        # against the <base href>, stripped as links are; an <a> without href: None
        "links": ["https://example.com/base/a.html", "https://example.com/b.html", None],
        "image": "https://example.com/base/k.png",
        "next": "https://other.example/p2",
        "missing": None,
        "missing_all": [],
    }
    assert m.fields_error is None


def test_an_attribute_name_in_any_case() -> None:
    assert read(ExtractRule("cents", ".price", attr="DATA-CENTS")).fields == {"cents": "999"}


def test_a_bad_selector_at_run_time_fails_its_rule_only() -> None:
    m = read(ExtractRule("bad", "li[", all=True), ExtractRule("title", "h1"))
    assert m.fields == {"bad": [], "title": "Steel kettle"}
    assert m.fields_error is not None and m.fields_error.startswith("rule 'bad': ")


def test_the_hook_sees_the_page_and_adds_fields() -> None:
    seen: list[ExtractPage] = []

    def hook(page: ExtractPage) -> dict[str, Any]:
        seen.append(page)
        return {"items": len(page.tree.css("li")), "title": "replaced"}

    m = read(ExtractRule("title", "h1"), ExtractRule("cents", ".price", attr="data-cents"),
             hook=hook)  # fmt: skip
    assert m.fields == {"title": "replaced", "cents": "999", "items": 3}
    [page] = seen
    assert page.url == URL and page.base == "https://example.com/base/" and page.status == 200
    assert page.header("content-type") == "text/html" and page.header("x-none") is None
    assert page.fields == {"title": "Steel kettle", "cents": "999"} and page.meta is None


def hook_raising(page: ExtractPage) -> dict[str, Any]:
    raise KeyError("price")


@pytest.mark.parametrize(
    ("hook", "error"),
    [
        (hook_raising, "extract hook: KeyError: 'price'"),
        (lambda page: ["a"], "extract hook: returned list, not a dict"),
        (lambda page: {1: "a"}, "extract hook: returned a dict whose keys are not all strings"),
        (lambda page: {"s": {1, 2}}, "extract hook: returned a value JSON cannot hold"),
        (lambda page: {"x": math.nan}, "extract hook: returned a value JSON cannot hold"),
        (lambda page: {"x": "\ud800"}, "extract hook: returned a value JSON cannot hold"),
    ],
)
def test_a_failing_hook_is_reported_and_the_rules_kept(hook: Any, error: str) -> None:
    m = read(ExtractRule("title", "h1"), hook=hook)
    assert m.fields == {"title": "Steel kettle"}
    assert m.fields_error is not None and m.fields_error.startswith(error)
    assert m.main_text  # the page is read on


def test_a_long_error_is_cut() -> None:
    def hook(page: ExtractPage) -> dict[str, Any]:
        raise ValueError("x" * 10_000)

    m = read(hook=hook)
    assert m.fields == {} and m.fields_error is not None and len(m.fields_error) == 500


def test_many_matches_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fields_module, "MAX_MATCHES", 2)
    m = read(ExtractRule("links", "li a", attr="href", all=True))
    assert m.fields == {"links": ["https://example.com/base/a.html", "https://example.com/b.html"]}
    assert m.fields_error == "rule 'links': 3 matches, the first 2 kept"


def test_every_elements_html_is_bounded_by_the_page_budget() -> None:
    nested = "<div>" * 300 + "x" * 5000 + "</div>" * 300  # every <div>'s outer HTML: quadratic
    rules = ExtractRule("all", "div", attr="html", all=True), ExtractRule("after", "div", "html")
    m = read(*rules, html=f"<body>{nested}</body>")
    assert m.fields is not None
    kept = m.fields["all"]
    assert 0 < len(kept) < 300
    assert sum(len(v) for v in kept) <= fields_module.MAX_PAGE_CHARS
    assert m.fields["after"] is None  # the first <div>, the largest: nothing left for it
    assert m.fields_error is not None and "rule 'all': over the page's" in m.fields_error
    assert "rule 'after': over the page's" in m.fields_error


def test_a_long_value_is_cut() -> None:
    m = read(ExtractRule("p", "p"), html=f"<p>{'word ' * 100_000}</p>")
    assert m.fields is not None and len(m.fields["p"]) == fields_module.MAX_VALUE_CHARS


def test_no_fields_unless_asked() -> None:
    m = parse_markup(HTML.encode(), URL, "text/html")
    assert m.fields is None and m.fields_error is None
    only_meta = parse_markup(HTML.encode(), URL, "text/html", yields=Yields(meta=True))
    assert only_meta.fields is None and only_meta.meta is not None
