"""The byte-level guards of crawler.markup, against direct reference implementations."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler import markup
from crawler.markup import MAX_TAGS, Markup, parse_markup


def reference_profile(data: bytes, chunk: int) -> tuple[int, int]:
    """The chunked depth estimate written out one byte at a time."""
    depth = peak = 0
    for start in range(0, len(data), chunk):
        net = 0
        for i in range(start, min(start + chunk, len(data))):
            if data[i] == ord("<"):
                net += 1
                if data[i + 1 : i + 2] == b"/":
                    net -= 2
        depth = max(depth + net, 0)
        peak = max(peak, depth)
    return data.count(b"<"), peak


tokens = st.lists(st.sampled_from([b"<", b"</", b"/", b"x", b"<a>", b"</a>", b"<br>"]))


@settings(max_examples=300, deadline=None)
@given(parts=tokens, chunk=st.sampled_from([1, 2, 3, 7, 64]))
def test_tag_profile_matches_the_reference(parts: list[bytes], chunk: int) -> None:
    data = b"".join(parts)
    assert markup._tag_profile(data, chunk) == reference_profile(data, chunk)


def test_tag_profile_floors_the_depth_at_zero() -> None:
    # 3 chunks: net -5 (floored to 0), +3, +2: the floored depth peaks at 5, the raw sum at 0
    chunk = markup._GUARD_CHUNK
    closes = b"</a>" * 5
    body = closes.ljust(chunk, b" ") + (b"<p>" * 3).ljust(chunk, b" ") + b"<p>" * 2
    assert markup._tag_profile(body) == (10, 5)


def test_deep_nesting_is_spotted_across_chunks() -> None:
    body = b"<div>" * 5000 + b"</div>" * 5000
    tags, peak = markup._tag_profile(body)
    assert tags == 10_000
    assert peak > 4000 > markup._DEPTH_ALARM  # per chunk: the peak chunk holds some closes


def test_tag_flood_is_cut_at_max_tags(caplog: pytest.LogCaptureFixture) -> None:
    body = b"<a href=/x>" + b"<br>" * (MAX_TAGS + 10) + b"<a href=/never>"
    with caplog.at_level(logging.WARNING, logger="crawler.markup"):
        kept = markup._defuse(body, "http://site.test/")
    assert kept.count(b"<") == MAX_TAGS
    assert kept.startswith(b"<a href=/x>") and b"/never" not in kept
    assert "more than 200000 tags" in caplog.text


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
