"""Tests for crawler.urls.canonical: one table per canonicalization rule, RFC 3986 5.4,
properties."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.provisional import urls as hyp_urls
from yarl import URL

from crawler.urls.canonical import (
    DEFAULT_SESSION_PARAMS,
    DEFAULT_TRACKING_PARAMS,
    UrlNormalizer,
    canonicalize,
    normalize,
)

RFC_BASE = "http://a/b/c/d;p?q"

# RFC 3986 section 5.4.1 and 5.4.2, with the fragment removed (rule 9) and an empty path written
# "/" (rule 6). "g:h" is not http(s), so it is not crawlable. "http:g" takes the backward-compatible
# reading the RFC allows (and browsers use): same scheme as the base, so relative.
RFC_EXAMPLES = [
    ("g:h", None),
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/"),
    ("/g", "http://a/g"),
    ("//g", "http://g/"),
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q"),
    ("g#s", "http://a/b/c/g"),
    ("g?y#s", "http://a/b/c/g?y"),
    (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y"),
    ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/"),
    ("./", "http://a/b/c/"),
    ("..", "http://a/b/"),
    ("../", "http://a/b/"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
    # abnormal examples
    ("../../../g", "http://a/g"),
    ("../../../../g", "http://a/g"),
    ("/./g", "http://a/g"),
    ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("g?y/../x", "http://a/b/c/g?y/../x"),
    ("g#s/./x", "http://a/b/c/g"),
    ("g#s/../x", "http://a/b/c/g"),
    ("http:g", "http://a/b/c/g"),
]


@pytest.mark.parametrize(("ref", "expected"), RFC_EXAMPLES)
def test_rfc3986_examples(ref: str, expected: str | None) -> None:
    assert canonicalize(ref, RFC_BASE) == expected
    assert normalize(ref, RFC_BASE) == expected  # no session/tracking/order changes here


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  http://a.com/x  ", "http://a.com/x"),
        ("\x00\x1f http://a.com/x\x7f", "http://a.com/x%7F"),  # DEL is not C0: encoded
        ("http://a.com/\tx\ny\rz", "http://a.com/xyz"),
        ("ht\ntp://a.\tcom/", "http://a.com/"),
        ("\t/x", "http://b.com/x"),
        ("x\u00a0", "http://b.com/d/x%C2%A0"),  # NBSP is not stripped, only encoded
    ],
)
def test_rule1_whitespace_and_controls(raw: str, expected: str) -> None:
    assert canonicalize(raw, "http://b.com/d/page") == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://a.com/", "http://a.com/"),
        ("HtTpS://a.com/", "https://a.com/"),
        ("javascript:alert(1)", None),
        ("mailto:a@b.com", None),
        ("data:text/html,hi", None),
        ("tel:+123", None),
        ("ftp://a.com/", None),
        ("", None),
        ("   ", None),
        ("http://", None),
        ("http:///", None),
        # browsers skip any run of slashes after "http:" (WHATWG "special authority")
        ("http:///x", "http://x/"),
        ("http:g", "http://g/"),  # relative only against an http base (see below)
        ("https:/g/h", "https://g/h"),
        ("/relative", None),
        ("relative.html", None),
        ("//a.com/x", None),
    ],
)
def test_rule3_scheme_without_base(raw: str, expected: str | None) -> None:
    assert canonicalize(raw) == expected


def test_rule3_scheme_without_slashes_is_relative_only_to_the_same_scheme() -> None:
    # what browsers do (WHATWG "special relative or authority" / "special authority slashes")
    assert canonicalize("http:g", "http://a/b/c") == "http://a/b/g"
    assert canonicalize("http:/g", "http://a/b/c") == "http://a/g"
    assert canonicalize("https:g", "http://a/b/c") == "https://g/"
    assert canonicalize("https:/g/h?q", "http://a/b/c") == "https://g/h?q"
    assert canonicalize("https:", "http://a/b/c") is None
    assert canonicalize("//x.com/y", "https://a/b") == "https://x.com/y"
    assert canonicalize("////x.com/y", "https://a/b") == "https://x.com/y"
    assert canonicalize("\\/\\x.com\\y", "https://a/b") == "https://x.com/y"
    assert canonicalize("///?q", "https://a/b") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://EXAMPLE.Com/", "http://example.com/"),
        ("http://bücher.de/", "http://xn--bcher-kva.de/"),
        ("http://BÜCHER.de/", "http://xn--bcher-kva.de/"),
        ("http://Faß.de/", "http://xn--fa-hia.de/"),  # UTS #46 non-transitional
        ("http://ａｂｃ．com/", "http://abc.com/"),  # full-width letters and dot mapped
        ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
        ("http://a.com./x", "http://a.com/x"),
        ("http://a.com.:8080/", "http://a.com:8080/"),
        ("http://%65xample.com/", "http://example.com/"),
        ("http://user:pw@a.com/", "http://a.com/"),
        ("http://u@v@a.com/", "http://a.com/"),
        ("http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://127.0.0.1/", "http://127.0.0.1/"),
        # IPv4 hosts as browsers read them (WHATWG IPv4 parser): one key per address
        ("http://127.1/", "http://127.0.0.1/"),
        ("http://0x7F.1:8080/", "http://127.0.0.1:8080/"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0177.0.0.01/", "http://127.0.0.1/"),
        ("http://0300.0250.0x0.1/", "http://192.168.0.1/"),
        ("http://1.2.3.4./", "http://1.2.3.4/"),
        ("http://%31%32%37.1/", "http://127.0.0.1/"),
        ("http://１２７.１/", "http://127.0.0.1/"),  # full-width digits map to ASCII first
        ("http://0x/", "http://0.0.0.0/"),
        ("http://1.2.3.256/", None),  # a host ending in a number must be an IPv4 address
        ("http://1.2.3.4.5/", None),
        ("http://4294967296/", None),
        ("http://08.1/", None),
        ("http://a.test.123/", None),
        ("http://a.0x1f/", None),
        ("http://1..2/", None),
        ("http://" + "9" * 5000 + "/", None),
        ("http://a.123x/", "http://a.123x/"),  # not a number: a name
        ("http://0xg.com/", "http://0xg.com/"),
        ("http://a b.com/", None),
        ("http://a<b.com/", None),
        ("http://[::1/", None),
        ("http://[not-ip]/", None),
        ("http://[1.2.3.4]/", None),
        ("http://[fe80::1%25eth0]/", None),
        ("http://a%2fb.com/", None),
        ("http://e\u200bvil.com/", "http://evil.com/"),  # UTS #46 maps it to nothing, as
        ("http://e\u00advil.com/", "http://evil.com/"),  # browsers do (what the link leads to)
        ("http://x\u2024y.com/", None),  # UTS #46 disallowed (IDNA 2003 read it as "x.y.com")
        ("http://./", None),
    ],
)
def test_rule4_host(raw: str, expected: str | None) -> None:
    assert canonicalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://a.com:80/", "http://a.com/"),
        ("https://a.com:443/", "https://a.com/"),
        ("http://a.com:443/", "http://a.com:443/"),
        ("https://a.com:80/", "https://a.com:80/"),
        ("http://a.com:0080/", "http://a.com/"),
        ("http://a.com:08080/", "http://a.com:8080/"),
        ("http://a.com:/", "http://a.com/"),
        ("http://a.com:65535/", "http://a.com:65535/"),
        ("http://a.com:65536/", None),
        ("http://a.com:0/", None),
        ("http://a.com:-1/", None),
        ("http://a.com:8o/", None),
        ("http://a.com:٨٠/", None),  # non-ASCII digits
        ("http://a.com:1:2/", None),
        ("http://a.com:" + "9" * 5000 + "/", None),
    ],
)
def test_rule5_port(raw: str, expected: str | None) -> None:
    assert canonicalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://a.com", "http://a.com/"),
        ("http://a.com?x", "http://a.com/?x"),
        ("http://a.com/a/./b/../c", "http://a.com/a/c"),
        ("http://a.com/a/%2e%2E/b", "http://a.com/b"),  # encoded dots are dots
        ("http://a.com/a?b/../c/./d", "http://a.com/a?b/../c/./d"),  # not in the query
        ("http://a.com/%7e%41%5f%2d%2e", "http://a.com/~A_-."),  # unreserved decoded
        ("http://a.com/%3b%3d%2c", "http://a.com/%3B%3D%2C"),  # reserved kept, hex uppercased
        ("http://a.com/a%2fb%2Fc", "http://a.com/a%2Fb%2Fc"),  # encoded "/" stays
        ("http://a.com/100%25", "http://a.com/100%25"),  # encoded "%" stays
        ("http://a.com/100%", "http://a.com/100%25"),
        ("http://a.com/%zz%4", "http://a.com/%25zz%254"),
        ('http://a.com/a b"<>^`{|}', "http://a.com/a%20b%22%3C%3E%5E%60%7B%7C%7D"),
        ("http://a.com/ä/€", "http://a.com/%C3%A4/%E2%82%AC"),
        ("http://a.com/%c3%a4", "http://a.com/%C3%A4"),
        ("http://a.com/\ud800", "http://a.com/%EF%BF%BD"),  # lone surrogate -> U+FFFD
        ("http://a.com/[x]", "http://a.com/%5Bx%5D"),
        ("http://a.com/:@!$&'()*+,;=", "http://a.com/:@!$&'()*+,;="),
        ("http://a.com/?q=ä ö", "http://a.com/?q=%C3%A4%20%C3%B6"),
        ("http://a.com/'a'?q='b'", "http://a.com/'a'?q=%27b%27"),  # "'" encoded in a query
        ("http://a.com/?q=%27", "http://a.com/?q=%27"),
        ("http://a.com/?a=%7e&b=%2f", "http://a.com/?a=~&b=%2F"),
        ("http:\\\\a.com\\x\\..\\y?z\\w", "http://a.com/y?z%5Cw"),  # "\" is "/" before "?"
    ],
)
def test_rule6_path_and_percent_encoding(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://a.com/x;jsessionid=A1B2", "http://a.com/x"),
        ("http://a.com/x;JSESSIONID=A1B2?y=1", "http://a.com/x?y=1"),
        ("http://a.com/x;jsessionid=1/y;v=2", "http://a.com/x/y;v=2"),
        ("http://a.com/x;v=2", "http://a.com/x;v=2"),
        ("http://a.com/x/..;jsessionid=1/y", "http://a.com/y"),  # stays idempotent
        ("http://a.com/x?PHPSESSID=abc", "http://a.com/x"),
        ("http://a.com/x?sid=1&b=2&SessionId=3&session_id=4", "http://a.com/x?b=2"),
        ("http://a.com/x?ASPSESSIONIDQA=1&cfid=2&CFTOKEN=3&k", "http://a.com/x?k"),
        ("http://a.com/x?utm_source=a&UTM_Medium=b&gclid=c&fbclid=d&msclkid=e", "http://a.com/x"),
        ("http://a.com/x?utm_source", "http://a.com/x"),
        ("http://a.com/x?sidebar=1&utm=2&sid_x=3", "http://a.com/x?sid_x=3&sidebar=1&utm=2"),
        ("http://a.com/x?", "http://a.com/x"),
        ("http://a.com/x?&&", "http://a.com/x"),
    ],
)
def test_rule7_session_and_tracking_parameters(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected


def test_rule7_normalize_keeps_parameters_as_written() -> None:
    raw = "http://a.com/x;jsessionid=1?utm_source=z&b=2&a=1&&sid=3"
    assert normalize(raw) == raw
    assert normalize("http://a.com/x?") == "http://a.com/x?"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://a.com/?b=1&a=2", "http://a.com/?a=2&b=1"),
        ("http://a.com/?b=1&a=3&a=2&a=1", "http://a.com/?a=3&a=2&a=1&b=1"),  # stable
        ("http://a.com/?b&a=&a", "http://a.com/?a=&a&b"),  # "a" and "a=" kept as written
        ("http://a.com/?q=a+b&p=a%20b", "http://a.com/?p=a%20b&q=a+b"),
        ("http://a.com/?x=%3D%26&w=1", "http://a.com/?w=1&x=%3D%26"),
        ("http://a.com/?a=1?b=2", "http://a.com/?a=1?b=2"),
    ],
)
def test_rule8_query_order(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected


def test_rule9_fragment_removed() -> None:
    assert canonicalize("http://a.com/x#frag") == "http://a.com/x"
    assert normalize("http://a.com/x?y#frag") == "http://a.com/x?y"
    assert canonicalize("#top", "http://a.com/p?q=1#old") == "http://a.com/p?q=1"


def test_knobs() -> None:
    plain = UrlNormalizer(session_params=[], tracking_params=[], sort_query=False)
    raw = "http://a.com/x;jsessionid=1?utm_source=z&b=2&a=1"
    assert plain.canonicalize(raw) == raw
    custom = UrlNormalizer(session_params=["token*"], tracking_params=["ref"], strip_www=True)
    assert custom.canonicalize("http://WWW.a.com/p;TokenX=1?ref=2&sid=3&tokenABC=4") == (
        "http://a.com/p?sid=3"
    )
    assert custom.normalize("http://WWW.a.com/p") == "http://www.a.com/p"  # fetch keeps www
    assert custom.canonicalize("http://www.com/") == "http://www.com/"  # not a bare TLD
    assert canonicalize("http://www.a.com/") == "http://www.a.com/"  # off by default
    assert {"jsessionid", "phpsessid", "aspsessionid*"} <= set(DEFAULT_SESSION_PARAMS)
    assert "utm_*" in DEFAULT_TRACKING_PARAMS


def test_max_length() -> None:
    norm = UrlNormalizer(max_length=20)
    assert norm.canonicalize("http://a.com/123456") == "http://a.com/123456"  # 19 chars
    assert norm.canonicalize("http://a.com/1234567?x") is None
    assert norm.resolve("/" + "x" * 30, "http://a.com/") is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memo_size": -1}, "memo_size"),
        ({"max_length": 0}, "max_length"),
        ({"session_params": "sid"}, "session_params"),
        ({"tracking_params": ["a=b"]}, "tracking_params"),
        ({"tracking_params": ["a**"]}, "tracking_params"),
        ({"tracking_params": [""]}, "tracking_params"),
    ],
)
def test_bad_config_is_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UrlNormalizer(**kwargs)  # type: ignore[arg-type]


def test_resolve_matches_normalize_and_canonicalize() -> None:
    norm = UrlNormalizer()
    base = "http://Example.com/dir/page.html?x=1"
    for href in ["b?z=1&a=2&utm_source=x", "../up#f", "//other.org", "?q", "#f", "mailto:x"]:
        expected = (norm.normalize(href, base), norm.canonicalize(href, base))
        assert norm.resolve(href, base) == (None if expected[0] is None else expected)


def test_memo_hits_nav_links_across_pages_of_a_directory() -> None:
    norm = UrlNormalizer()
    pages = [f"http://s.com/lib/p{i}.html" for i in range(20)]
    nav = ["index.html", "../genindex.html", "/about", "https://x.org/", "#top", "p3.html#s"]
    for page in pages:
        for href in nav:
            norm.resolve(href, page)
    # "#top" depends on the page itself; every other nav link is computed once.
    assert norm.memo_misses == (len(nav) - 1) + len(pages)
    assert norm.memo_hits == len(pages) * len(nav) - norm.memo_misses
    assert norm.memo_hit_rate == pytest.approx(norm.memo_hits / (len(pages) * len(nav)))
    assert "hits=" in repr(norm)
    norm.clear_memo()
    assert (norm.memo_hits, norm.memo_misses, norm.memo_hit_rate) == (0, 0, 0.0)


def test_memo_keys_on_what_each_kind_of_href_depends_on() -> None:
    norm = UrlNormalizer()
    cases = [
        ("?y", "http://a.com/d/p1?q", "http://a.com/d/p1?y"),
        ("?y", "http://a.com/d/p2?q", "http://a.com/d/p2?y"),
        ("", "http://a.com/d/p2?r", "http://a.com/d/p2?r"),
        ("x", "http://a.com/d/p2?r", "http://a.com/d/x"),
        ("x", "http://a.com/e/p2?r", "http://a.com/e/x"),
        ("/x", "http://b.com/e/p2", "http://b.com/x"),
        ("//c.com/x", "https://b.com/", "https://c.com/x"),
        ("http:?z", "http://a.com/d/p1?q", "http://a.com/d/p1?z"),
        ("http:?z", "http://a.com/d/p2?q", "http://a.com/d/p2?z"),
        (" ?z", "http://a.com/d/p1", "http://a.com/d/p1?z"),
        (" ?z", "http://a.com/d/p2", "http://a.com/d/p2?z"),
    ]
    for href, base, expected in cases:
        assert norm.canonicalize(href, base) == expected, (href, base)
    assert norm.memo_hits == 0


def test_memo_is_bounded() -> None:
    norm = UrlNormalizer(memo_size=10)
    for i in range(100):
        norm.resolve(f"p{i}.html", "http://s.com/")
    assert norm.memo_misses == 100
    norm.resolve("p99.html", "http://s.com/")
    norm.resolve("p0.html", "http://s.com/")
    assert (norm.memo_hits, norm.memo_misses) == (1, 101)
    assert int(re.search(r"memo=(\d+)/", repr(norm)).group(1)) <= 10  # type: ignore[union-attr]


# -- properties ----------------------------------------------------------------------------------

_VALID = re.compile(
    r"https?://(?:[a-z0-9\-._~!$&'()*+,;=]+|\[[0-9a-f:.]+\])(?::[1-9][0-9]{0,4})?"
    r"/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})*"
    r"(?:\?(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})*)?"
)

# URL-ish text: the characters that matter to the parser, plus some that must be encoded.
_TOKENS = [";jsessionid=1", "utm_source=x", "sid", "..", ".", "%2e", "%2F", "www.", "&", "=", ":80"]
_urlish = st.lists(
    st.sampled_from(_TOKENS) | st.text(alphabet="aA.-_~%2fF:/?#@[]\\; \t=&+ä\x00", max_size=4),
    max_size=8,
).map("".join)
_schemes = st.sampled_from(
    ["", "http://", "HTTPS://", "http:", "//", "mailto:", "/", "?", "#", "../", " ", "\\"]
)
_refs = st.builds(lambda s, r: s + r, _schemes, _urlish) | st.text(max_size=40) | hyp_urls()
_bases = st.sampled_from(
    ["http://a.com/b/c?q", "https://a.com/b/", "http://a.com", "https://x.org/b/d?r#f", "g:h"]
) | st.builds(lambda r: "http://h.com/" + r, _urlish)

# Bases that share a scheme, origin or directory, so memo contexts collide.
_sibling_bases = st.sampled_from(
    ["http://a.com/b/c?q", "http://a.com/b/c?r", "http://a.com/b/d", "https://a.com/b/c?q",
     "http://A.com:80/b/c", "http://a.com/x/c?q", "http://www.a.com/b/"]
)  # fmt: skip


def _check_output(url: str | None) -> None:
    if url is not None:
        assert _VALID.fullmatch(url), url
        parsed = URL(url, encoded=True)
        assert parsed.scheme in ("http", "https")
        assert parsed.raw_host
        assert "/" + url.partition("?")[0].split("/", 3)[3] == parsed.raw_path


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ref=_refs, base=st.none() | _bases)
def test_property_never_raises_valid_and_idempotent(ref: str, base: str | None) -> None:
    key = canonicalize(ref, base)
    fetch = normalize(ref, base)
    assert (key is None) == (fetch is None)
    _check_output(key)
    _check_output(fetch)
    if key is not None and fetch is not None:
        assert canonicalize(key) == key
        assert normalize(fetch) == fetch
        assert canonicalize(fetch) == key


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_property_arbitrary_text_never_raises(ref: str, base: str) -> None:
    _check_output(canonicalize(ref, base))
    _check_output(normalize(ref))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_refs, _bases | _sibling_bases), min_size=1, max_size=30))
def test_property_memo_returns_what_a_cold_computation_would(pairs: list[tuple[str, str]]) -> None:
    memo, cold = UrlNormalizer(memo_size=8), UrlNormalizer(memo_size=0)
    for href, base in pairs * 2:
        assert memo.resolve(href, base) == cold.resolve(href, base), (href, base)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.lists(_refs, max_size=12), _bases | _sibling_bases), max_size=8),
    st.sampled_from([0, 4, 1000]),
)
def test_property_resolve_all_is_resolve_for_each_link(
    pages: list[tuple[list[str], str]], memo_size: int
) -> None:
    batch, single = UrlNormalizer(memo_size=memo_size), UrlNormalizer(memo_size=0)
    for hrefs, base in pages * 2:  # the second pass hits the memo
        assert batch.resolve_all(hrefs, base) == [single.resolve(h, base) for h in hrefs]


def test_resolve_all_handles_no_base_and_overlong_ones() -> None:
    norm = UrlNormalizer()
    long_base = "http://a.com/" + "d/" * 300
    assert norm.resolve_all(["x", "http://b.com/y#z"], None) == [
        None,
        ("http://b.com/y", "http://b.com/y"),
    ]
    assert norm.resolve_all(["x"], long_base) == [(long_base + "x", long_base + "x")]
    assert norm.memo_hits + norm.memo_misses == 2  # the overlong base bypassed the memo
