"""crawler.parse.defuse's nesting guard against lexbor's own tree: the ways real pages nest pass
untouched (their text stays text), markup built to nest deep is cut at DEPTH_LIMIT."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from crawler.parse.defuse import DEPTH_LIMIT, defuse
from crawler.parse.defuse.estimate import named_peak, tag_profile
from crawler.parse.defuse.model import escape_deep_nesting
from crawler.parse.markup import parse_markup

URL = "http://site.test/"
ALARM = 2 * DEPTH_LIMIT


def lexbor_depth(data: bytes) -> int:
    """How deep lexbor nests `data`'s elements, <body>'s children at 1."""
    root = LexborHTMLParser(data).root
    deepest, todo = 0, [(root, 0)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        child = node.child if node is not None else None
        while child is not None:
            if child.tag not in ("-text", "_comment", "-comment"):
                todo.append((child, depth + 1))
            child = child.next
    return deepest - 1  # <html> is the root


def page(body: bytes) -> bytes:
    end = b"<h2>End</h2><a href=/last>last</a></body></html>"
    return b"<!doctype html><html><body>" + body + end


ICONS = b"".join(
    b'<a href="/p%d"><svg viewBox="0 0 24 24"><title>icon</title><path d="M0 0h24"/>'
    b'<circle r="2"/></svg>page %d</a>\n' % (i, i)
    for i in range(800)
)
BENIGN = [
    ("a list without </li>", b"<ul>" + b"<li>item <a href=/x>x</a>\n" * 3000 + b"</ul>"),
    ("paragraphs without </p>", b"<p>text " * 3000),
    ("a table without end tags", b"<table>" + b"<tr><td>a<td>b<th>c\n" * 1500 + b"</table>"),
    ("definitions without end tags", b"<dl>" + b"<dt>term<dd>definition\n" * 2000 + b"</dl>"),
    ("void elements", b"<p>" + b"line<br>\n<img src=i.png>\n<input name=q>\n" * 1500),
    ("inline SVG icons", ICONS),
    (
        "an SVG diagram",
        b"<svg>"
        + b'<path d="M1 2L3 4"/><polygon points="1,2 3,4" /><text x=1>SELECT</text>\n' * 1500
        + b"</svg>",
    ),
    (
        "an SVG with unquoted values",  # "y=2 />": the "/" follows a value, it is not one
        b"<svg>" + b"<rect x=1 y=2 />\n<circle r=2\n/><path d=M0 />\n" * 1500 + b"</svg>",
    ),
    ("XHTML style", b"<div>" + b'<p>line<br/><img src="i.png" alt=""/></p>\n' * 1500 + b"</div>"),
    ("options without </option>", b"<select>" + b"<option value=x>country\n" * 3000),
]


@pytest.mark.parametrize(("name", "body"), BENIGN, ids=[b[0] for b in BENIGN])
def test_pages_that_only_look_deep_reach_lexbor_unchanged(name: str, body: bytes) -> None:
    data = page(body)
    assert tag_profile(data)[1] > ALARM  # counting tags alone would escape some
    assert lexbor_depth(data) < 10
    assert named_peak(data) < 20
    assert defuse(data, URL) == data
    assert escape_deep_nesting(data, DEPTH_LIMIT) == (data, 0)  # the model agrees


def test_a_page_of_icons_keeps_its_text_free_of_markup() -> None:
    # Counted as tags, the icons' 1,600 <path/> and <circle/> looked 800 deep, and the old
    # model turned those past 512 into text: "<path d=...>" showed in the page's text.
    markup = parse_markup(page(ICONS), URL, "text/html", text=True, content=True)
    assert markup.text is not None and markup.content is not None
    for text in (markup.text[1], markup.content):
        assert "path" not in text and "circle" not in text and "<" not in text
        assert "page 799" in text
    assert len(markup.hrefs) == 801


HOSTILE = [
    ("nested divs", b"<div>" * 5000),
    ("<li> and <dd> nesting through each other", b"<li><dd>" * 3000),
    ("nested svg groups", b"<svg>" + b"<g>" * 3000),
    ("<path/> after a tag that breaks out of svg", b"<svg><div>" + b"<path/>" * 3000),
    ("a '/' that ends an unquoted value", b"<svg>" + b"<g x=y/>" * 3000),
    ("a quoted '/>'", b"<svg>" + b'<g x="/>">' * 3000),
    ("a '/' that is an unquoted value", b"<svg>" + b"<g x= />" * 3000),
    ("a '/' that is an unquoted value after blanks", b"<svg>" + b"<g x= \n\t/>" * 3000),
    ("tables in list items", b"<li><table><td>" * 1000),
    ("paragraphs in tables", b"<p><table><td>" * 1000),
    ("formatting elements", b"<b><i><u>" * 1500),
]


@pytest.mark.parametrize(("name", "body"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_markup_built_to_nest_deep_is_cut_at_the_limit(name: str, body: bytes) -> None:
    data = page(body + b"<a href=/deep>deep</a>")
    assert lexbor_depth(data) > ALARM
    assert named_peak(data) > ALARM
    kept = defuse(data, URL)
    assert lexbor_depth(kept) <= DEPTH_LIMIT + 2  # (the tbody and tr a table implies)
    hrefs = parse_markup(kept, URL, "text/html").hrefs
    assert "/deep" in hrefs and "/last" in hrefs  # links are never escaped


def test_end_tags_that_close_nothing_are_seen_by_the_model() -> None:
    # They hide the nesting from both estimates (see crawler.parse.defuse.estimate: the crawl bounds
    # that otherwise); the model ignores them, as lexbor does, and cuts the nesting.
    data = page(b"<div></b>" * 3000)
    assert lexbor_depth(data) > ALARM
    assert named_peak(data) < ALARM
    kept, escaped = escape_deep_nesting(data, DEPTH_LIMIT)
    assert escaped > 0 and lexbor_depth(kept) <= DEPTH_LIMIT + 1  # the last link is kept


def test_comments_and_raw_text_hold_no_tags_for_the_model() -> None:
    hidden = b"<!-- <div><div> --!> <script>'<div>'</script><textarea><div></textarea>"
    data = page(b"<div>" * 10 + hidden * 2000 + b"<title><div></title>")
    assert escape_deep_nesting(data, 11) == (data, 0)  # ten <div>, the <h2> inside them
    kept, escaped = escape_deep_nesting(data, 10)
    assert escaped == 2 and b"&lt;h2>End&lt;/h2>" in kept


START_TAGS = [
    b"<div>", b"<li>", b"<ul>", b"<ol>", b"<p>", b"<dd>", b"<dt>", b"<dl>", b"<table>", b"<tr>",
    b"<td>", b"<th>", b"<tbody>", b"<b>", b"<i>", b"<span>", b"<svg>", b"<path/>",
    b"<path d='M0'/>", b"<g>", b"<g/>", b"<br>", b"<img>", b"<input>", b"<option>", b"<select>",
    b"<h2>", b"<form>", b"x", b"<!-- c -->", b"<button>", b"<nobr>", b"<blockquote>", b"<em>",
]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(START_TAGS), max_size=80))
def test_named_peak_is_never_below_lexbors_depth(tags: list[bytes]) -> None:
    # start tags of every kind the estimate reads (end tags that close nothing are its known
    # gap); lexbor's depth counts a void element's own level, the estimate does not
    data = b"<!doctype html><body>" + b"".join(tags)
    assert named_peak(data) >= lexbor_depth(data) - 1


SVG_TAGS = [
    b"<g>", b"<g/>", b"<g />", b'<g d="M0"/>', b"<g d='M0'/>", b"<g d=M0/>", b"<g d=M0 />",
    b'<g d="/>">', b"<g d='/>'>", b'<g a="x" b=\'y\'/>', b'<g a="\'"/>', b"<g a='\"'/>",
    b"<g a=/>", b"<g a= />", b"<g =/>", b'<g a="x"b/>', b"</g>", b"<div>", b"<svg>", b"x",
]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(SVG_TAGS), max_size=80))
def test_named_peak_reads_self_closing_tags_as_lexbor_does(tags: list[bytes]) -> None:
    # in foreign content "/>" closes a tag only where it is not part of a value: quotes, an
    # unquoted value ending in "/", a ">" inside quotes
    data = b"<!doctype html><body><svg>" + b"".join(tags)
    assert named_peak(data) >= lexbor_depth(data) - 1
    assert named_peak(data, 5) == named_peak(data)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(st.sampled_from([*START_TAGS, b"</div>", b"</li>", b"</svg>", b"</p>"]), max_size=80),
    st.sampled_from([1, 2, 3, 7, 64]),
)
def test_named_peak_reads_a_page_in_blocks_as_in_one(tags: list[bytes], block: int) -> None:
    # small blocks: the counts, the foreign-content events and names split across blocks
    # carry over
    data = b"<!doctype html><body>" + b"".join(tags)
    assert named_peak(data, block) == named_peak(data, 1 << 20)


def test_named_peak_memory_is_bounded_by_its_block() -> None:
    data = b"<ul>" + b"<li><a href=/x>x</a>" * 300_000  # 900,000 tags, 6 MB
    tracemalloc.start()
    try:
        assert named_peak(data) < 10
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(data) + (16 << 20)  # the page's copy, one block's arrays


FRAGMENTS = [
    b"<", b">", b"/", b"</", b"/>", b"<!--", b"-->", b"--!>", b"<!-->", b"'", b'"', b"=",
    b" ", b"\n", b"\x00", b"\xff", b"x", b"<div", b"<svg", b"<math", b"<li", b"<p", b"<td",
    b"<script>", b"</script>", b"<title>", b"<textarea", b"<plaintext>", b"<font color=1>",
    b"<table>", b"<path", b"</svg>", b"<foreignObject>", b"<br", b"<!x>", b"<?", b"&lt;",
]  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.binary(max_size=4), max_size=120))
def test_the_guard_takes_any_bytes(parts: list[bytes]) -> None:
    # no input makes the estimates or the model raise; what the model keeps differs from the
    # input only by "<" escaped as "&lt;"
    data = b"".join(parts)
    assert named_peak(data, 7) == named_peak(data)
    kept, escaped = escape_deep_nesting(data, 3)
    assert kept.replace(b"&lt;", b"<") == data.replace(b"&lt;", b"<")
    assert kept.count(b"&lt;") == data.count(b"&lt;") + escaped
