from __future__ import annotations

import codecs
import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from crawler.parse import markup
from crawler.parse.links import TITLE_MAX_CHARS, Page, extract, is_html
from crawler.parse.markup import DEPTH_LIMIT, refresh_url
from crawler.urls.canonical import normalize

URL = "http://site.test/dir/page.html"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR<html><a href=x>"
GZIP = b"\x1f\x8b\x08\x00\x00\x00\x00\x00<html>"


def page(body: bytes | str, **kwargs: object) -> Page:
    raw = body.encode() if isinstance(body, str) else body
    kwargs.setdefault("content_type", "text/html")
    return extract(raw, URL, **kwargs)  # type: ignore[arg-type]


# --- is_html -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        ("text/html", b"<p>hi", True),
        ("text/html; charset=utf-8", b"", True),
        (" TEXT/HTML ;charset=x", b"plain words", True),  # the header is believed...
        ("application/xhtml+xml", b'<?xml version="1.0"?><html>', True),
        ("text/html", PNG, False),  # ...unless the body is a known binary format
        ("text/html", GZIP, False),
        ("text/html", b"%PDF-1.7\n", False),
        (None, b"<!DOCTYPE html><p>", True),
        (None, b"\xef\xbb\xbf \n <html lang=en>", True),
        (None, b"<htmlx>", False),  # the tag name must end
        (None, b"<a href=x>", True),
        (None, b"", False),
        ("", b"<title>t</title>", True),
        ("text/plain", b"<HTML><BODY>", True),
        ("text/plain; charset=utf-8", b"just some text <a href=x>", False),
        ("application/octet-stream", b"  <!-- c --> <p>", True),
        ("application/octet-stream", PNG, False),
        ("nonsense", b"<html>", True),  # unparseable type: sniff
        ("image/png", b"<html>", False),
        ("application/json", b'<html>{"a": 1}', False),
        ("text/css", b"<style>", False),
    ],
)
def test_is_html(content_type: str | None, body: bytes, expected: bool) -> None:
    assert is_html(content_type, body) is expected


def test_non_html_keeps_its_record() -> None:
    p = extract(PNG, URL, content_type="text/html", x_robots_tag="noindex")
    assert p == Page(False, None, None, URL, None, (), 0, 0, False, True, False)


# --- links, rel=nofollow, cap ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kwargs", "links", "found", "skipped", "truncated"),
    [
        ('<a href="a">1</a><area href=b><a href="c">', {}, ("a", "b", "c"), 3, 0, False),
        (
            '<area href=1><a href=2><map><area href=3></map><a HREF="4">',
            {},
            ("1", "2", "3", "4"),
            4,
            0,
            False,
        ),
        ("<a>no href</a><a name=x>", {}, (), 0, 0, False),
        ("<a href> <a href=''>", {}, ("", ""), 2, 0, False),
        ('<a href=" \t\n/x \r\n">', {}, ("/x",), 1, 0, False),
        ('<a href="\xa0/x">', {}, ("\xa0/x",), 1, 0, False),  # only ASCII whitespace is stripped
        ('<a href="/a?x=1&amp;y=2">', {}, ("/a?x=1&y=2",), 1, 0, False),
        ('<a rel="nofollow" href=a><a href=b>', {}, ("b",), 2, 1, False),
        ('<a rel="external NoFollow ugc" href=a><area rel=nofollow href=b>', {}, (), 2, 2, False),
        ('<a rel="nofollower" href=a><a rel=follow href=b>', {}, ("a", "b"), 2, 0, False),
        (
            '<a rel="nofollow" href=a><a href=b>',
            {"respect_nofollow": False},
            ("a", "b"),
            2,
            0,
            False,
        ),
        ("<a href=1><a href=2><a href=3>", {"max_links": 2}, ("1", "2"), 3, 0, True),
        ("<a href=1><a href=2>", {"max_links": 2}, ("1", "2"), 2, 0, False),
        ("<a href=1><a rel=nofollow href=2><a href=3>", {"max_links": 1}, ("1",), 3, 1, True),
        ("<a href=1>", {"max_links": 0}, (), 1, 0, True),
        # the cap counts distinct links: a repeat, or the same URL with another #fragment, is
        # one link (javadoc's index pages: ~25,000 hrefs to ~2,700 URLs lost a third of them)
        (
            "<a href=a><a href=a#x><a href=b><a href=a>",
            {"max_links": 2},
            ("a", "a#x", "b", "a"),
            4,
            0,
            False,
        ),
        (
            "<a href=a><a href=a><a href=b><a href=c><a href=a>",
            {"max_links": 2},
            ("a", "a", "b", "a"),
            5,
            0,
            True,
        ),
        (
            "<!-- <a href=c> --><script>'<a href=s>'</script><template><a href=t></template>",
            {},
            (),
            0,
            0,
            False,
        ),
        ("<svg><a href=s></a></svg><link href=l><img src=i>", {}, ("s",), 1, 0, False),
        # a meta refresh's target is a link of the page (a reload of the page itself is not)
        (
            "<meta http-equiv=Refresh content='0; URL=/moved'><a href=a>a</a>"
            "<meta http-equiv=refresh content=30><meta name=x http-equiv=refresh content='0;u'>",
            {},
            ("/moved", "a", "u"),
            3,
            0,
            False,
        ),
        # a frameset's pages are reached through its frames; an iframe's page is a link too
        (
            "<frameset><frame src=top.html><frame><frame src=' m.html '></frameset>",
            {},
            ("top.html", "m.html"),
            2,
            0,
            False,
        ),
        (
            "<a href=a>a</a><iframe src=f.html></iframe><iframe srcdoc='<a href=x>'></iframe>",
            {},
            ("a", "f.html"),
            2,
            0,
            False,
        ),
        # a frameset's <noframes> (raw text to the parser) links a page for frameless clients:
        # old javadoc's "Non-frame version", gettext-doc's javadoc2/index.html; after the frames
        (
            "<HTML><HEAD><TITLE>t</TITLE></HEAD><FRAMESET cols='20%,80%'><FRAME src=all.html>"
            "<FRAME src=c/R.html></FRAMESET><NOFRAMES><H2>Frame Alert</H2><P>Link to <A "
            "HREF='c/R.html'>Non-frame version.</A> <a href=o.html rel=nofollow>o</a> "
            "<svg><a xlink:href=s.html></a></svg><area href=m.html></NOFRAMES></HTML>",
            {},
            ("all.html", "c/R.html", "c/R.html", "s.html", "m.html"),
            6,
            1,
            False,
        ),
        # a page without frames: its <noframes> is shown to nobody, and not read
        ("<body><noframes><a href=x>x</a></noframes><a href=a>a</a>", {}, ("a",), 1, 0, False),
    ],
)
def test_links(
    body: str,
    kwargs: dict[str, object],
    links: tuple[str, ...],
    found: int,
    skipped: int,
    truncated: bool,
) -> None:
    p = page(body, **kwargs)
    assert (p.links, p.links_found, p.nofollow_skipped, p.truncated) == (
        links,
        found,
        skipped,
        truncated,
    )


def test_cap_keeps_document_order_on_big_pages() -> None:
    body = "".join(f"<a href=/p{i}>x</a>" for i in range(25_000))
    p = page(body)
    assert p.links == tuple(f"/p{i}" for i in range(10_000))
    assert (p.links_found, p.truncated) == (25_000, True)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_max_links_must_be_a_non_negative_int(bad: object) -> None:
    with pytest.raises(ValueError, match="max_links"):
        extract(b"<a href=x>", URL, max_links=bad)  # type: ignore[arg-type]


def test_body_must_be_bytes() -> None:
    with pytest.raises(ValueError, match="body must be bytes"):
        extract("<a href=x>", URL)  # type: ignore[arg-type]
    assert extract(bytearray(b"<a href=x>"), URL).links == ("x",)  # type: ignore[arg-type]


# --- base, canonical, title -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "base"),
    [
        ("", URL),
        ("<base href='/root/'>", "http://site.test/root/"),
        ("<base href='sub/'>", "http://site.test/dir/sub/"),
        ("<base href='https://cdn.test/x/'>", "https://cdn.test/x/"),
        ("<base href='//other.test/'>", "http://other.test/"),
        ("<base target=_blank><base href='/second/'>", "http://site.test/second/"),
        ("<base href='/first/'><base href='/second/'>", "http://site.test/first/"),
        # another scheme is a base in browsers too: relative links then lead nowhere
        ("<base href='javascript:alert(1)'>", "javascript:alert(1)"),
        ("<base href=' Data:text/html,x'>", "Data:text/html,x"),
        ("<base href='http://[::1'>", URL),  # unparsable: the page's URL
        ("<base href='https://[::1'>", URL),
        ("<base href=' \n/spaced/ '>", "http://site.test/spaced/"),
        # resolved as links are (WHATWG): "\" is "/", tabs and newlines dropped, host normalized
        ("<base href='\\\\Other.test\\s\\'>", "http://other.test/s/"),
        ("<base href='/a\tb/\n'>", "http://site.test/ab/"),
        ("<base href='HTTPS://CDN.test:443/x/#f'>", "https://cdn.test/x/"),
        ("<base href='http:///h.test/x/'>", "http://h.test/x/"),
    ],
)
def test_base(head: str, base: str) -> None:
    assert page(f"<html><head>{head}</head><a href=x>").base == base


@pytest.mark.parametrize(
    ("html", "canonical"),
    [
        ("<p>", None),
        ("<link rel=canonical href='/c'>", "http://site.test/c"),
        ("<link rel='Canonical' href='c2'>", "http://site.test/dir/c2"),
        ("<link rel='alternate canonical' href='https://x.test/'>", "https://x.test/"),
        ("<base href='/b/'><link rel=canonical href='c'>", "http://site.test/b/c"),
        ("<link rel=canonical href=''>", None),
        ("<link rel=canonical>", None),
        ("<link rel=canonical href='http://[::1'>", None),
        ("<link rel=canonical href='/" + "c" * 2047 + "'>", None),  # 2,066 characters once joined
        ("<link rel=canonical href='/" + "c" * 2000 + "'>", "http://site.test/" + "c" * 2000),
        (
            "<link rel=stylesheet href=s.css><link rel=canonical href=/1>"
            "<link rel=canonical href=/2>",
            "http://site.test/1",
        ),
    ],
)
def test_canonical(html: str, canonical: str | None) -> None:
    assert page(f"<html><head>{html}</head>").canonical == canonical


@pytest.mark.parametrize(
    ("html", "title"),
    [
        ("<p>", None),
        ("<title></title>", None),
        ("<title> \n\t </title>", None),
        ("<title>  Hello\n   big\tworld </title>", "Hello big world"),
        ("<title>Fish &amp; Chips &lt;3</title>", "Fish & Chips <3"),
        ("<title>First</title><title>Second</title>", "First"),
        ("<title>Caf\u00e9 \u2014 \u65e5\u672c</title>", "Caf\u00e9 \u2014 \u65e5\u672c"),
    ],
)
def test_title(html: str, title: str | None) -> None:
    assert page(html).title == title


def test_title_is_capped() -> None:
    p = page("<title>" + " ".join(["word"] * 2000) + "</title>")
    assert p.title is not None
    assert len(p.title) <= TITLE_MAX_CHARS
    assert p.title.startswith("word word") and not p.title.endswith(" ")


def test_unclosed_title_swallowing_the_page_is_capped() -> None:
    p = page("<title>" + "\n" * 10_000 + "x " * 500_000)
    assert p.title is not None and len(p.title) <= TITLE_MAX_CHARS


# --- robots directives ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "meta", "ua", "noindex", "nofollow"),
    [
        (None, "", None, False, False),
        ("noindex", "", None, True, False),
        ("NoFollow", "", None, False, True),
        ("noindex, nofollow", "", None, True, True),
        ("none", "", None, True, True),
        ("all", "", None, False, False),
        ("googlebot: nofollow", "", None, False, False),
        ("googlebot: nofollow", "", "googlebot", False, True),
        ("GoogleBot: noindex, nofollow", "", "Googlebot/2.1", True, True),
        ("otherbot: noindex, nofollow", "", "sievebot", False, False),
        ("nofollow, otherbot: noindex", "", "sievebot", False, True),
        ("otherbot: noindex, sievebot: nofollow", "", "sievebot", False, True),
        ("*: noindex", "", "sievebot", True, False),
        ("max-snippet: 20, noindex", "", None, True, False),
        ("unavailable_after: Wednesday, 03-Nov-2021 15:00:00 PST, nofollow", "", None, False, True),
        (["googlebot: noindex", "nofollow"], "", "sievebot", False, True),
        (None, '<meta name="robots" content="noindex, nofollow">', None, True, True),
        (None, '<meta name="ROBOTS" content=" NONE ">', None, True, True),
        (None, '<meta name="robots" content="max-snippet:-1, nofollow">', None, False, True),
        (None, '<meta name="robots" content="index, follow">', None, False, False),
        (None, '<meta name="sievebot" content="noindex">', "SieveBot", True, False),
        (None, '<meta name="sievebot" content="noindex">', None, False, False),
        (None, '<meta name="googlebot" content="noindex">', "sievebot", False, False),
        (None, '<meta name="description" content="noindex nofollow">', None, False, False),
        (None, '<meta name="robots">', None, False, False),
        ("noindex", '<meta name="robots" content="nofollow">', None, True, True),
    ],
)
def test_robots(
    header: str | list[str] | None,
    meta: str,
    ua: str | None,
    noindex: bool,
    nofollow: bool,
) -> None:
    p = page(f"<head>{meta}</head><a href=x>", x_robots_tag=header, user_agent_token=ua)
    assert (p.noindex, p.nofollow) == (noindex, nofollow)
    assert p.links == (() if nofollow else ("x",))


def test_nofollow_page_counts_every_link_as_skipped_unless_ignored() -> None:
    body = "<meta name=robots content=nofollow><a href=a><a href=b rel=nofollow><a href=c>"
    p = page(body, max_links=1)
    assert (p.links, p.links_found, p.nofollow_skipped, p.truncated) == ((), 3, 3, False)
    p = page(body, respect_nofollow=False)
    assert (p.links, p.nofollow, p.nofollow_skipped) == (("a", "b", "c"), True, 0)


# --- charsets -------------------------------------------------------------------------------------

RU = "/\u043f\u0440\u0438\u0432\u0435\u0442"  # /привет
HTTP_EQUIV_KOI8R = (
    f'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><a href={RU}>'
)


@pytest.mark.parametrize(
    ("body", "content_type", "charset", "link"),
    [
        (f"<a href={RU}>".encode(), None, "utf-8", RU),
        (f"<a href={RU}>".encode("cp1251"), "text/html; charset=windows-1251", "cp1251", RU),
        (f"<meta charset=windows-1251><a href={RU}>".encode("cp1251"), None, "cp1251", RU),
        (
            HTTP_EQUIV_KOI8R.encode("koi8-r"),
            "text/html",
            "koi8-r",
            RU,
        ),
        # The header beats the meta declaration; a BOM beats both.
        (
            f"<meta charset=utf-8><a href={RU}>".encode("cp1251"),
            "text/html; charset=cp1251",
            "cp1251",
            RU,
        ),
        (codecs.BOM_UTF8 + f"<a href={RU}>".encode(), "text/html; charset=cp1251", "utf-8", RU),
        (codecs.BOM_UTF16_LE + f"<a href={RU}>".encode("utf-16-le"), None, "utf-16-le", RU),
        (codecs.BOM_UTF16_BE + f"<a href={RU}>".encode("utf-16-be"), "text/html", "utf-16-be", RU),
        # latin-1 and ascii labels mean windows-1252 on the web.
        (b"<a href=/\x80\xe9>", "text/html; charset=iso-8859-1", "cp1252", "/\u20ac\u00e9"),
        # Unknown, non-text and refused codecs fall back to UTF-8.
        (b"<a href=/\xc3\xa9>", "text/html; charset=x-no-such-charset", "utf-8", "/\u00e9"),
        (b"<a href=/\xc3\xa9>", "text/html; charset=base64", "utf-8", "/\u00e9"),
        (b"<a href=/\xc3\xa9>", "text/html; charset=rot13", "utf-8", "/\u00e9"),
        (b"<a href=/\xc3\xa9>", "text/html; charset=utf-7", "utf-8", "/\u00e9"),
        (b"<meta charset=bogus><a href=/\xc3\xa9>", None, "utf-8", "/\u00e9"),
        # A body that can read its own meta as ASCII cannot be UTF-16.
        (b"<meta charset=utf-16><a href=/\xc3\xa9>", None, "utf-8", "/\u00e9"),
        # Invalid UTF-8 becomes U+FFFD instead of failing.
        (b"<a href=/\xff\xfe\xc3>", "text/html; charset=utf-8", "utf-8", "/\ufffd\ufffd\ufffd"),
        (b"<a href=/\xc3\xa9\x00x>", None, "utf-8", "/\u00e9\ufffdx"),
    ],
)
def test_charset(body: bytes, content_type: str | None, charset: str, link: str) -> None:
    p = extract(body, URL, content_type=content_type)
    assert (p.is_html, p.charset, p.links) == (True, charset, (link,))


def test_charset_decodes_title_too() -> None:
    body = "<title>\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439</title>"
    p = extract(body.encode("cp1251"), URL, content_type="text/html; charset=cp1251")
    assert p.title == "\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439"


@pytest.mark.parametrize(
    ("href", "charset", "link"),
    [
        # as browsers do: a link's query in the page's charset, its path and fragment in UTF-8
        ("/é?q=café&x=€#é", "windows-1252", "/é?q=caf%E9&x=%80#é"),
        (f"{RU}?q={RU[1:]}", "windows-1251", f"{RU}?q=%EF%F0%E8%E2%E5%F2"),
        ("?q=日本", "shift_jis", "?q=%93%FA%96{"),  # ASCII bytes outside the set stay
        ("?q=日x€", "windows-1252", "?q=%26%2326085%3Bx%80"),  # not in the charset: "&#N;"
        ("?q=\"'<>", "windows-1252", "?q=\"'<>"),  # ASCII: the normalizer's business
        ("#?é", "windows-1252", "#?é"),  # a "?" in the fragment starts no query
        ("?q=é", "utf-8", "?q=é"),
    ],
)
def test_legacy_charset_query(href: str, charset: str, link: str) -> None:
    # a character the charset lacks is written as a character reference, as an editor would
    body = f"<a href='{html.escape(href)}'>x</a>".encode(charset, "xmlcharrefreplace")
    p = extract(body, URL, content_type=f"text/html; charset={charset}", anchors=True)
    assert p.links == (link,)
    assert list(p.anchors) == [link.partition("#")[0] + "#" * ("#" in link)]


def test_legacy_charset_query_reaches_the_fetched_url_and_base() -> None:
    body = "<base href='/b/?x=é'><a href='?q=é ü'><a href=''><a href='d/é'>".encode("cp1252")
    p = extract(body, URL, content_type="text/html; charset=windows-1252")
    assert p.base == "http://site.test/b/?x=%E9"
    assert [normalize(h, p.base) for h in p.links] == [
        "http://site.test/b/?q=%E9%20%FC",
        "http://site.test/b/?x=%E9",
        "http://site.test/b/d/%C3%A9",
    ]


# --- hostile input --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "wrap",
    [
        lambda n, inner: "<div>" * n + inner + "</div>" * n,
        lambda n, inner: "<span>" * n + inner + "</div>" * n,
        lambda n, inner: "<ul><li>" * n + inner,
        lambda n, inner: "".join(f"<b id={i}>" for i in range(n)) + "<p>x" * 1000 + inner,
    ],
)
def test_deep_nesting_does_not_crash_or_hang(wrap: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # The work is bounded, not timed: lexbor's tree builder is quadratic in the depth of the
    # stack of open elements (undefended, the first shape takes it ~20 s), so the defence is
    # that every tree handed to lexbor is at most DEPTH_LIMIT elements deep.
    inner = (
        '<title>Deep &amp; down</title><a href="/deep?a=1&amp;b=2">d</a>'
        '<a rel=nofollow href="/nf">n</a>'
    )
    body = wrap(100_000, inner)  # type: ignore[operator]
    trees: list[LexborHTMLParser] = []

    def parse(data: bytes) -> LexborHTMLParser:
        trees.append(LexborHTMLParser(data))
        return trees[-1]

    monkeypatch.setattr(markup, "LexborHTMLParser", parse)
    p = page("<html><head><base href=/b/><link rel=canonical href=/c></head><body>" + body)
    assert p.links == ("/deep?a=1&b=2",)
    assert (p.links_found, p.nofollow_skipped) == (2, 1)
    assert (p.title, p.base, p.canonical) == (
        "Deep & down",
        "http://site.test/b/",
        "http://site.test/c",
    )
    assert trees, "the page was not parsed"
    assert max(tree_depth(t) for t in trees) <= DEPTH_LIMIT + 4  # html, body and a few more


def tree_depth(tree: LexborHTMLParser) -> int:
    """The deepest element's depth in `tree` (iterative: a deep tree must not overflow)."""
    deepest = 0
    stack = [(tree.root, 1)] if tree.root is not None else []
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        child = node.child
        while child is not None:
            if child.tag not in ("-text", "_comment"):
                stack.append((child, depth + 1))
            child = child.next
    return deepest


def test_depth_limit_keeps_shallow_structure_untouched() -> None:
    # Nesting below the limit is parsed as is (no escaping: the text stays empty).
    n = DEPTH_LIMIT - 10
    p = page("<div>" * n + "<title>t</title><a href=x>" + "</div>" * n)
    assert (p.links, p.title) == (("x",), "t")


CONTENT_TYPES = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "text/html",
            "text/html; charset=utf-8",
            "text/html; charset=utf-16",
            "text/html; charset=idna",
            "text/html; charset=base64",
            'text/html; charset="cp1251"',
            "text/plain",
            "application/octet-stream",
            "image/png",
            "text/html; charset=",
        ]
    ),
    st.text(max_size=60),
)
HTMLISH = st.lists(
    st.sampled_from(
        [
            b"<a href=x>",
            b"<a rel=nofollow href='y'>",
            b"<area href=",
            b"<base href=http://[::1>",
            b"<base href=//h/>",
            b"<meta charset=utf-16>",
            b"<meta name=robots content=none>",
            b"<link rel=canonical href=",
            b"<title>",
            b"</title>",
            b"<div>",
            b"</div>",
            b"<!--",
            b"<script>",
            b"<template>",
            b"\xef\xbb\xbf",
            b"\xff\xfe",
            b"\x00",
            b"\xc3",
            b"&amp;",
            b"&#x110000;",
        ]
    )
    | st.binary(max_size=8),
    max_size=40,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(max_size=512) | HTMLISH,
    content_type=CONTENT_TYPES,
    header=st.none() | st.text(max_size=40),
    ua=st.none() | st.text(max_size=12),
    max_links=st.integers(0, 3),
)
def test_fuzz_extract_never_raises(
    body: bytes, content_type: str | None, header: str | None, ua: str | None, max_links: int
) -> None:
    p = extract(
        body,
        URL,
        content_type=content_type,
        x_robots_tag=header,
        user_agent_token=ua,
        max_links=max_links,
    )
    assert p.is_html == is_html(content_type, body)
    distinct = {h.partition("#")[0] for h in p.links}
    assert len(distinct) <= max_links
    assert p.nofollow_skipped + len(p.links) <= p.links_found
    assert not p.truncated or len(distinct) == max_links
    assert (p.links_found - p.nofollow_skipped > max_links and not p.nofollow) or not p.truncated
    if p.title is not None:
        assert p.title == " ".join(p.title.split()) and len(p.title) <= TITLE_MAX_CHARS
    if not p.is_html:
        assert (p.charset, p.links_found, p.base) == (None, 0, URL)


def test_head_elements_outside_the_head() -> None:
    # The first <base href> and <title> anywhere count (HTML spec); a rel=canonical in the body
    # is ignored, as search engines ignore it.
    body = (
        "<html><head><meta charset=utf-8></head><body><p>text</p>"
        "<base href=/elsewhere/><title>Late title</title><link rel=canonical href=/c>"
        "<a href=x>x</a></body></html>"
    )
    p = page(body)
    assert p.base == "http://site.test/elsewhere/"
    assert p.title == "Late title"
    assert p.canonical is None
    assert p.links == ("x",)


@pytest.mark.parametrize(
    ("content", "url"),
    [
        ("0; url=/next", "/next"),
        ("5 ; URL='/x y' and more", "/x y"),  # quoted: up to the closing quote
        ("5 url=/x", "/x"),  # whitespace separates too
        ("3,http://a.test/", "http://a.test/"),  # a comma, no "url="
        ('  1.5;  "q.html"  ', "q.html"),
        ("0", None),  # a reload of the same page
        ("0;", None),
        ("url=/x", None),  # no time: not a refresh
        ("0x;url=/b", None),
    ],
)
def test_refresh_url(content: str, url: str | None) -> None:
    assert refresh_url(content) == url


def test_noframes_markup_is_defused() -> None:
    # the <noframes> markup is parsed on its own: absurd nesting in it is defused as a body's
    deep = "<div>" * 200_000 + "<a href=deep.html>d</a>"
    body = f"<frameset><frame src=f.html></frameset><noframes>{deep}</noframes>".encode()
    page = extract(body, "http://a.test/", content_type="text/html")
    assert page.links[0] == "f.html"
