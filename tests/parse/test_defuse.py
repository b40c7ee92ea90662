"""crawler.parse.defuse: the byte-level guards, against reference implementations and lexbor."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from crawler.parse import defuse
from crawler.parse.defuse import MAX_ATTRIBUTES, MAX_TAGS, STRICT_MAX_TAGS, estimate
from crawler.parse.markup import parse_markup

URL = "http://site.test/"


def reference_profile(data: bytes) -> tuple[int, int]:
    """The depth estimate written out one byte at a time."""
    depth = peak = 0
    for i, byte in enumerate(data):
        if byte == ord("<"):
            depth = max(depth - 1 if data[i + 1 : i + 2] == b"/" else depth + 1, 0)
            peak = max(peak, depth)
    return data.count(b"<"), peak


tokens = st.lists(st.sampled_from([b"<", b"</", b"/", b"x", b"<a>", b"</a>", b"<br>"]))


@settings(max_examples=300, deadline=None)
@given(parts=tokens, block=st.sampled_from([1, 2, 3, 7, 64, 1 << 18]))
def test_tag_profile_matches_the_reference(parts: list[bytes], block: int) -> None:
    # small blocks: the running depth and a "</" split across blocks carry over
    data = b"".join(parts)
    assert estimate.tag_profile(data, block) == reference_profile(data)


def test_tag_profile_floors_the_depth_at_zero() -> None:
    # 5 closes (floored at 0), then 5 opens: the floored depth peaks at 5, the raw sum at 0
    assert estimate.tag_profile(b"</a>" * 5 + b"<p>" * 5) == (10, 5)
    assert estimate.tag_profile(b"") == (0, 0)


def test_deep_nesting_is_spotted() -> None:
    body = b"<div>" * 5000 + b"</div>" * 5000
    assert estimate.tag_profile(body) == (10_000, 5000)
    assert estimate.tag_profile(body, block=999) == (10_000, 5000)


def test_tag_flood_is_cut_at_max_tags(caplog: pytest.LogCaptureFixture) -> None:
    body = b"<a href=/x>" + b"<br>" * (MAX_TAGS + 10) + b"<a rel=nofollow href=/past>"
    with caplog.at_level(logging.WARNING, logger="crawler.parse.defuse"):
        kept = defuse.defuse(body, "http://site.test/")
    assert kept.startswith(b"<a href=/x>") and kept.split(b"-->")[0].count(b"<") == MAX_TAGS
    # past the cap, the links only (they were lost: javadoc's and Node's biggest pages)
    assert kept.endswith(b'<a href="/past" rel="nofollow"></a>')
    assert (
        "more than 200000 tags, the rest of the page is not parsed but for its links (1"
        in caplog.text
    )
    assert defuse.defuse(body, "http://site.test/", strict=True).count(b"/past") == 0


def test_the_links_past_the_cap_are_read_by_a_scan() -> None:
    from crawler.parse.defuse.tail import tail_links
    from crawler.parse.markup import parse_markup

    dropped = (
        b'<p><A HREF=\'/q?a=1&amp;b="2"\'>x</A> <area shape=rect href="/map">'
        b"<a title='href=/not-me' href=/me>a</a><a href=/me>again</a>"  # one href, once
        b"<abbr href=/no><a name=x><a\nhref = /spaced >"
    )
    assert tail_links(dropped) == (
        b"--></script></style></textarea></title>"
        b'<a href="/q?a=1&amp;b=&quot;2&quot;"></a><a href="/map"></a><a href="/me"></a>'
        b'<a href="/spaced"></a>'
    )
    assert tail_links(b"<p>no links</p>") == b""
    assert (
        tail_links(b"".join(b"<a href=/%d>" % i for i in range(50)), limit=20).count(b"<a ") == 20
    )
    # where the cap cut inside a script, the links still end up in the tree
    page = b"<html><body><script>var s = '" + tail_links(b"<a href=/in>") + b"</body></html>"
    assert parse_markup(page, "http://site.test/", "text/html").hrefs == ("/in",)


def attributes(n: int, template: bytes = b"a%d") -> bytes:
    return b" ".join(template % i for i in range(n))


def with_links(tag: bytes) -> bytes:
    # (bodies under 1 KiB are too small to hurt, and are left alone)
    return b"<p>" + b"filler " * 200 + b"<a href=/before>b</a>" + tag + b"<a href=/after>a</a>"


def most_attributes(data: bytes) -> int:
    """The most attributes lexbor gives one element of `data`."""
    tree = LexborHTMLParser(data)
    return max((len(node.attributes) for node in tree.css("*")), default=0)


FLOODS = [
    ("spaces", b"<div " + attributes(50_000) + b">x</div>"),
    ("quoted <, > and quotes", b"<div " + attributes(3_000, b'a%d="<a href=/in>\'"') + b">"),
    ("no separators", b"<div " + b"".join(b'a%d=""' % i for i in range(50_000)) + b">"),
    ("slashes", b"<div " + b"/".join(b"a%d" % i for i in range(50_000)) + b">"),
    ("end tag", b"</div " + attributes(50_000) + b">"),
    (
        "mixed quotes",
        b"<div " + b" ".join(b'x%d=\'"\' y%d=">"' % (i, i) for i in range(20_000)) + b">",
    ),
    # a scan that skipped a comment, a script or CDATA as lexbor does not would miss these
    ("after a fake tag in a comment", b"<!-- <i a='--> <div " + attributes(50_000) + b"> '>"),
    (
        "after a fake tag in a script",
        b"<script>'<i a=\"</script><div " + attributes(50_000) + b">\"'",
    ),
    ("in svg CDATA", b'<svg><![CDATA[> <i a="]]><g ' + attributes(50_000) + b'>">]]></svg>'),
]


@pytest.mark.parametrize(("name", "tag"), FLOODS, ids=[f[0] for f in FLOODS])
def test_strict_mode_turns_attribute_floods_into_text(name: str, tag: bytes) -> None:
    # lexbor checks every new attribute against the element's others: 50,000 take seconds
    body = with_links(tag)
    started = time.perf_counter()
    kept = defuse.defuse(body, URL, strict=True)
    page = parse_markup(kept, URL, "text/html")
    assert time.perf_counter() - started < 1.0
    assert page.hrefs[0] == "/before" and page.hrefs[-1] == "/after"
    assert most_attributes(kept) < MAX_ATTRIBUTES
    assert defuse.defuse(body, URL) == body  # not strict: left alone


def test_strict_mode_keeps_clean_tags_as_they_are() -> None:
    below = with_links(b"<div " + attributes(MAX_ATTRIBUTES - 1) + b">x</div>")
    assert defuse.defuse(below, URL, strict=True) == below
    tag = b"<div " + attributes(MAX_ATTRIBUTES) + b">x</div>"
    assert defuse.defuse(with_links(tag), URL, strict=True) == with_links(b"&lt;" + tag[1:])
    inside = b'<a href=/x title="a<b">x</a>'  # a "<" inside: not clean either
    assert defuse.defuse(with_links(inside), URL, strict=True) == with_links(b"&lt;" + inside[1:])
    unterminated = with_links(b"")[:-20] + b"<div " + attributes(MAX_ATTRIBUTES)
    assert defuse.defuse(unterminated, URL, strict=True) == with_links(b"")[
        :-20
    ] + b"&lt;div " + attributes(MAX_ATTRIBUTES)


soup_tokens = st.sampled_from(
    [b"<div ", b"<a ", b"</b ", b"<svg>", b"<math>", b"<script>", b"</script>", b"<style>",
     b"<textarea>", b"<!--", b"-->", b"<![CDATA[", b"]]>", b"<!", b"<", b">", b"/", b"=", b'"',
     b"'", b" ", b"\n", b"x", b"a b c d e f g h", b"'a'", b'"b"', b"=v"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.one_of(soup_tokens, st.integers(0, 90).map(lambda n: attributes(n, b"f%d "))),
        max_size=60,
    )
)
def test_strict_mode_leaves_lexbor_no_element_with_max_attributes(parts: list[bytes]) -> None:
    # whatever lexbor makes of the soup (comments, scripts, foreign content), no element it
    # builds from the screened bytes has MAX_ATTRIBUTES attributes
    body = b"<p>" + b"padding " * 150 + b"".join(parts)
    assert most_attributes(defuse.defuse(body, URL, strict=True)) < MAX_ATTRIBUTES


def test_strict_mode_keeps_fewer_tags(caplog: pytest.LogCaptureFixture) -> None:
    body = b"<br>" * (STRICT_MAX_TAGS + 10)
    with caplog.at_level(logging.WARNING, logger="crawler.parse.defuse"):
        assert defuse.defuse(body, URL, strict=True).count(b"<") == STRICT_MAX_TAGS
    assert f"more than {STRICT_MAX_TAGS} tags" in caplog.text
    assert defuse.defuse(body, URL) == body


def test_the_tag_scan_is_linear_on_nested_quotes() -> None:
    # every "<a" inside the values starts a candidate tag: the scan must not restart in them
    body = b'<a x="' * 100_000 + b"<a" * 200_000 + b">"
    started = time.perf_counter()
    defuse.defuse(body, URL, strict=True)
    assert time.perf_counter() - started < 2.0


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from([b"<div>", b"</div>", b"<br>", b"x", b"</", b"<"]),
                      max_size=3000))  # fmt: skip
def test_counting_shortcut_changes_no_answer(parts: list[bytes]) -> None:
    # A small body with no more "<" than the alarm depth skips the nesting estimate: it cannot
    # alarm it (the estimate never exceeds the number of "<"), so the answer is the same.
    data = b"".join(parts)
    tags, peak = estimate.tag_profile(data)
    assert peak <= tags
    shortcut = defuse.defuse(data, URL)
    saved = defuse._COUNT_BYTES
    try:
        defuse._COUNT_BYTES = -1  # every body goes through the estimate
        assert defuse.defuse(data, URL) == shortcut
    finally:
        defuse._COUNT_BYTES = saved


def test_small_pages_never_import_numpy() -> None:
    # numpy costs ~0.1 s of start-up: a page under the count limit with few tags skips it
    code = (
        "import sys; from crawler.parse.defuse import defuse; "
        "page = b'<html><body>' + b'<p><a href=x>link</a></p>' * 200 + b'</body></html>'; "
        "assert defuse(page, 'u') is page; print('numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
