"""crawler.parse.markup: what is read from a parsed body, and how a slow parse is reported."""

from __future__ import annotations

import logging

import pytest

from crawler.parse import markup
from crawler.parse.markup import Markup, parse_markup


def test_only_a_and_area_are_links() -> None:
    # The tree pass matches every [href]: <link>, <use>, <image>... are not links; an SVG 1.1
    # <a> with only xlink:href is one (an href, when both are there, wins as in browsers).
    body = (
        b"<html><head><link rel=stylesheet href=s.css></head><body><a href=1><a>no href</a>"
        b"<svg><use href=#u></use><image href=i.png></image><a xlink:href=2>x</a>"
        b"<a href=3 xlink:href=ignored>y</a></svg><base target=_top><a href='' rel=nofollow>"
    )
    doc = parse_markup(body, "http://t/", "text/html")
    assert (doc.hrefs, doc.nofollow, doc.base_href) == (("1", "2", "3", ""), (3,), None)


def test_a_slow_parse_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="crawler.parse.markup"):
        assert markup.parse_tree(b"<a href=x>", "http://t/") is not None
        assert "took" not in caplog.text  # a small page parses in well under a second
        monkeypatch.setattr(markup, "SLOW_PARSE_SECONDS", -1.0)
        assert markup.parse_tree(b"<div></b>" * 10, "http://t/slow") is not None
    assert "http://t/slow: parsing 90 bytes took" in caplog.text


def test_markup_holds_plain_values() -> None:
    doc = parse_markup(
        "<title>é</title>".encode("latin-1"), "http://t/", "text/html; charset=latin-1"
    )
    assert doc.is_html and doc.charset == "cp1252"  # WHATWG: latin-1 means windows-1252
    assert doc.title == "é"
    assert parse_markup(b"\x89PNG\r\n\x1a\n", "http://t/", "text/html") == Markup(is_html=False)
    body = (
        b"<html><head><meta name=Robots content=noindex><base href=/b/><title> a \n b </title>"
        b"<link rel='Canonical alternate' href=' /c '></head><body><a href=1 rel='x NoFollow'>"
        b"<area href=2><meta name=x content=y><a href=' 3 '><base href=/ignored/><svg><a href=4>"
    )
    doc = parse_markup(body, "http://t/", "text/html")
    assert doc == Markup(
        is_html=True,
        charset="utf-8",
        hrefs=("1", "2", "3", "4"),
        nofollow=(0,),
        metas=(("robots", "noindex"), ("x", "y")),
        base_href="/b/",
        canonical_href="/c",
        title="a b",
    )
