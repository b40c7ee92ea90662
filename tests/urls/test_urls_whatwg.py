"""The crawler's links against a browser's (ada, a WHATWG URL parser): what differs is listed.

Each case (page, <base href>, href) goes through both sides (see tests/whatwg_oracle.py); every
difference must be one of ALLOWED, the deliberate choices docs/urls-and-sieve.md names.
String comparison only: nothing is resolved or sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.urls.canonical import UrlNormalizer, document_base
from crawler.urls.syntax import ends_in_number, legacy_query, parse_ipv4
from tests.support.whatwg_oracle import (
    DOC_SITES,
    Case,
    browser,
    crawler,
    generated_cases,
    hand_cases,
    site_cases,
    split_keys,
    tally,
)

# class -> why the crawler differs from a browser there on purpose
ALLOWED = {
    "same": "no difference",
    "percent-encoding": "path and query in RFC 3986 normal form (unreserved %XX decoded, hex "
    "uppercased, characters a URI may not hold encoded): what servers decode alike",
    "userinfo": "user:password@ in a link is dropped, never sent",
    "trailing-dot": "a host's trailing dot is dropped ('a.test.' is 'a.test' in DNS)",
    "port-0": "a browser accepts port 0, where nothing can be fetched",
    "unusable-host": "hosts no DNS name can be ('.', '..', '{}') are not followed",
}


def _explained(classes: dict[str, list[Case]]) -> dict[str, list[Case]]:
    """The classes of `classes` that are not ALLOWED (alone or combined), a few cases each."""
    return {
        name: cases[:5]
        for name, cases in classes.items()
        if not all(part in ALLOWED for part in name.split("+"))
    }


def test_hand_written_cases_match_a_browser() -> None:
    classes = tally(hand_cases(), UrlNormalizer())
    assert _explained(classes) == {}
    assert len(classes["same"]) > 0.85 * sum(map(len, classes.values()))


def test_generated_cases_match_a_browser() -> None:
    cases = generated_cases(4000, seed=20261122)
    classes = tally(cases, UrlNormalizer())
    assert _explained(classes) == {}
    assert len(classes["same"]) > 0.5 * len(cases)


def test_a_browser_url_gets_one_dedup_key() -> None:
    cases = [*hand_cases(), *generated_cases(4000, seed=7)]
    assert split_keys(cases, UrlNormalizer()) == {}


def test_memo_does_not_change_the_comparison() -> None:
    cases = generated_cases(1000, seed=3)
    cold, warm = UrlNormalizer(memo_size=0), UrlNormalizer(memo_size=64)
    assert [crawler(c, cold) for c in cases] == [crawler(c, warm) for c in cases]


@pytest.mark.slow
@pytest.mark.parametrize(("package", "root", "site"), DOC_SITES, ids=[d[0] for d in DOC_SITES])
def test_doc_site_links_match_a_browser(package: str, root: Path, site: str) -> None:
    cases = list(site_cases(root, site)) if root.is_dir() else []
    if not cases:
        pytest.skip(f"{package} is not installed (python -m bench installs it)")
    classes = tally(cases, UrlNormalizer())
    assert _explained(classes) == {}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # the oracle's own reading of a few cases, so that a broken oracle shows
        (("http://a.test/d/p", None, "\\\\h.test\\x"), "http://h.test/x"),
        (("http://a.test/d/p", None, " ../../x\t#f"), "http://a.test/x"),
        (("http://a.test/d/p", "/b/", "x"), "http://a.test/b/x"),
        (("http://a.test/d/p", "javascript:0", "x"), None),
        (("http://a.test/d/p", "javascript:0", "//h.test/"), None),
        (("http://a.test/d/p", "javascript:0", "http://h.test/"), "http://h.test/"),
        (("http://a.test/d/p", None, "http://0x7f.1/"), "http://127.0.0.1/"),
        (("http://a.test/d/p", None, "mailto:x@y"), None),
    ],
)
def test_oracle_and_crawler_on_known_cases(case: Case, expected: str | None) -> None:
    assert browser(case) == expected
    got = crawler(case, UrlNormalizer())
    assert (None if got is None else got[0]) == expected


def test_links_under_a_base_of_another_scheme_lead_nowhere_but_absolute_ones() -> None:
    base = document_base("http://a.test/d/p", "javascript:void(0)")
    norm = UrlNormalizer()
    assert norm.resolve_all(["x", "/x", "//h.test/", "?q"], base) == [None] * 4
    assert norm.resolve("https://h.test/y", base) == ("https://h.test/y", "https://h.test/y")
    assert norm.resolve("http:y", base) == ("http://y/", "http://y/")
    assert document_base("http://a.test/d/p", "ftp://f.test/") == "ftp://f.test/"
    assert document_base("http://a.test/d/p", "http://[bad/") == "http://a.test/d/p"
    assert document_base("http://a.test/d/p", "../e/") == "http://a.test/e/"


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("1.2.3.4", "1.2.3.4"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0X7F.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("00", "0.0.0.0"),
        ("4294967295", "255.255.255.255"),
        ("1.16777215", "1.255.255.255"),
        ("1.16777216", None),
        ("256.1", None),
        ("4294967296", None),
        ("08", None),
        ("0x1g", None),
        ("1.2.3.4.5", None),
        ("1..2", None),
        ("1_0", None),  # int() would read it
        ("+1", None),
        ("0x" + "f" * 100, None),
    ],
)
def test_parse_ipv4(host: str, expected: str | None) -> None:
    assert parse_ipv4(host) == expected


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("a.1", True),
        ("a.0x", True),
        ("a.0x1F", True),
        ("1", True),
        ("a.1a", False),
        ("a.0xg", False),
        ("a", False),
        ("a.٣", False),  # non-ASCII digits are not a number
    ],
)
def test_ends_in_number(host: str, expected: bool) -> None:
    assert ends_in_number(host) is expected


@settings(max_examples=300, deadline=None)
@given(
    st.text(),
    st.sampled_from(["cp1252", "shift_jis", "koi8-r", "gb18030", "iso2022_jp", "big5", "ascii"]),
)
def test_legacy_query_touches_only_the_query_and_never_raises(href: str, charset: str) -> None:
    out = legacy_query(href, charset)
    q, h = href.find("?"), href.find("#")
    if q < 0 or 0 <= h < q:
        assert out == href
        return
    end = len(href) if h < 0 else h
    assert out[: q + 1] == href[: q + 1]
    assert out.endswith(href[end:])
    assert out[q + 1 : len(out) - (len(href) - end)].isascii()
