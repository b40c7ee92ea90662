"""Page text on documentation pages: a page's own content (headings, intro, definition terms,
tables) kept, its navigation bars left out by their structure, boilerplate words matched as
name parts, tables well-formed; one small page a generator's pattern, no site's class names."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler.parse.extract import page_text
from crawler.parse.extract.navbars import is_nav_bar, strip_nav_bars

ISSUE_PAGE = b"""<html><head><title>T</title></head><body>
<div class="header"><p>Next: <a href="/b">B</a>, Previous: <a href="/a">A</a> [<a href="/c">Contents</a>]</p></div>
<h2>Chapter 21: Matrices</h2>
<div class="section" id="Integrating-Differential-Equations"><h4>1.2.5 Integrating Differential Equations</h4>
<p>The library has built-in functions for solving nonlinear differential equations of the form shown below, with
many words to make it a real paragraph of content.</p></div>
<dl><dt>m = Map (keys, vals)</dt><dd><p>Create an object of the Map class that stores
key value pairs, with a long description.</p></dd></dl>
<table><tr><th>Mixed Operation</th><th>Result</th><th></th></tr><tr><td>double OP single</td><td>single</td><td></td></tr></table>
</body></html>"""  # noqa: E501

PROSE = (
    "The function reads the whole input, checks every record against the schema, and returns"
    " the records that match, in the order they were read, with their line numbers."
)


def text_of(page: bytes | str, title: str = "Manual") -> str:
    body = page if isinstance(page, bytes) else _html(page, title)
    result = page_text(body, "http://docs.test/manual/page.html", "text/html")
    assert result is not None
    return result.text


def markdown_of(page: bytes | str) -> str:
    body = page if isinstance(page, bytes) else _html(page, "Manual")
    result = page_text(body, "http://docs.test/manual/page.html", "text/html", markdown=True)
    assert result is not None and result.markdown is not None
    return result.markdown


def _html(body: str, title: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode()


def test_the_issue_page_gives_its_content_not_its_navigation_bar() -> None:
    text = text_of(ISSUE_PAGE)
    assert "Next" not in text and "Previous" not in text
    for kept in (
        "Chapter 21: Matrices",
        "1.2.5 Integrating Differential Equations",
        "solving nonlinear differential equations",
        "m = Map (keys, vals)",
        "Create an object of the Map class",
        "Mixed Operation\tResult\t\ndouble OP single\tsingle\t",
    ):
        assert kept in text


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ('id="Integrating-Differential-Equations"', True),
        ('id="Generating-Reports"', True),
        ('class="unrelated-work"', True),
        ('class="star-rating"', False),
        ('class="ratingBox"', False),
        ('class="rating2"', False),
        ('class="commentList"', False),
        ('class="ad-slot"', False),
    ],
)
def test_boilerplate_words_are_matched_as_name_parts(name: str, kept: bool) -> None:
    page = (
        f"<div><p>{PROSE}</p><div {name}><p>Words of the named section, long enough to be a"
        f" paragraph.</p></div><p>{PROSE}</p></div>"
    )
    assert ("Words of the named section" in text_of(page)) is kept


@pytest.mark.parametrize(
    "wrapper",
    [
        '<div class="page-frame\n    is-continuous\n    logged-out\n  ">',  # one class a line
        '<div class="' + "\u0130" * 40 + '">',  # "\u0130" lowercased is two characters
    ],
)
def test_each_element_s_names_are_matched_on_that_element(wrapper: str) -> None:
    # a news site's wrapper writes its classes one a line, a Turkish one names it with dotted
    # capital Is: the names after it are still matched on their own elements, not shifted
    # onto the element after (nor past the last one)
    comments = "<div class='comments'><p>Reader 3 says: the plan, like the last, is late.</p></div>"
    text = text_of(f"{wrapper}<div class='body'><p>{PROSE}</p><p>{PROSE}</p></div>{comments}</div>")
    assert PROSE in text and "Reader 3" not in text


TEXINFO_NAV = (
    '<div class="nav-panel"><p>Next: <a href="n.html">Sets</a>, Previous: <a href="p.html">'
    'Ranges</a>, Up: <a href="u.html">Containers</a> &nbsp; [<a href="c.html">Contents</a>]'
    '[<a href="i.html">Index</a>]</p></div>'
)


def test_texinfo_definitions_keep_their_signatures_heading_and_intro() -> None:
    description = "".join(f"<p>{PROSE} Part {n}.</p>" for n in range(10))
    page = (
        f'{TEXINFO_NAV}<div class="section-level-extent" id="Maps"><h3>6.4 Maps</h3>'
        "<p>A map stores values by key.</p>"
        '<dl class="first-deftypefn"><dt class="deftypefn" id="index-map"><a id="m1"></a>'
        "<strong>m</strong> = <code>containers.Map</code> (<var>keys</var>, <var>vals</var>)"
        f"</dt><dt>m = containers.Map ()</dt><dd>{description}</dd></dl></div>"
        f"<hr>{TEXINFO_NAV}"
    )
    text = text_of(page)
    assert text.startswith("6.4 Maps\n\nA map stores values by key.\n\n")
    assert "m = containers.Map (keys, vals)\n\nm = containers.Map ()" in text
    assert "Part 9." in text
    assert "Next" not in text and "Contents" not in text


def test_a_chapter_page_keeps_its_heading_and_intro_not_its_bar() -> None:
    page = (
        f"{TEXINFO_NAV}<h2>21 Containers</h2><p>Octave includes support for three different"
        " mechanisms to contain arbitrary data types in the same variable.</p>"
        '<ul class="mini-toc"><li><a href="m.html">Maps</a></li><li><a href="s.html">Structures'
        '</a></li><li><a href="c.html">Cell Arrays</a></li></ul>'
    )
    text = text_of(page)
    assert text.startswith("21 Containers\n\nOctave includes support")
    assert "Next" not in text


def test_docbook_prev_up_next_tables_are_left_out() -> None:
    bar = (
        '<div class="navheader"><table><tr><th colspan="3">8.3. Character Types</th></tr><tr>'
        '<td><a accesskey="p" href="p.html">Prev</a></td><td><a href="u.html">Up</a></td>'
        '<th>Chapter 8. Data Types</th><td><a href="n.html">Next</a></td></tr></table></div>'
    )
    page = (
        f'{bar}<div class="sect1"><div class="titlepage"><h2 class="title">8.3. Character Types'
        f"</h2></div><p>{PROSE}</p><p>{PROSE}</p></div>"
        f'<div class="navfooter"><table><tr><td><a href="p.html">Prev</a></td><td>'
        '<a href="u.html">Up</a></td><td><a href="n.html">Next</a></td></tr><tr><td>8.2. '
        'Monetary Types</td><td><a href="i.html">Home</a></td><td>8.4. Binary Data Types</td>'
        "</tr></table></div>"
    )
    text = text_of(page, "8.3. Character Types")
    assert "Prev" not in text and "Monetary" not in text and "Binary" not in text
    assert text.startswith("The function reads")


def test_a_breadcrumb_and_a_previous_next_row_are_left_out() -> None:
    page = (
        '<div class="wrap"><ul class="crumbs"><li><a href="/">Docs</a> &raquo;</li><li><a href='
        '"/guide/">User Guide</a> &raquo;</li><li>Writing your docs</li></ul>'
        f"<h1>Writing your docs</h1><p>{PROSE}</p><h2>File layout</h2><p>{PROSE}</p>"
        '<div class="row"><a href="/a/">&laquo; Previous</a> <a href="/b/">Next &raquo;</a>'
        "</div></div>"
    )
    text = text_of(page, "Writing your docs - MkDocs")
    assert "Previous" not in text and "User Guide" not in text
    assert "File layout" in text


def test_a_doxygen_member_keeps_its_signature() -> None:
    member = (
        '<div class="memitem"><div class="memproto"><table class="memname"><tr>'
        '<td class="memname">void std::vector::push_back</td><td>(</td>'
        '<td class="paramtype">const value_type &amp;</td><td class="paramname">x</td>'
        "<td>)</td></tr></table></div>"
        f'<div class="memdoc"><p>{PROSE}</p><p>{PROSE}</p></div></div>'
    )
    page = (
        '<div class="navpath"><ul><li><a href="a.html">std</a></li><li><a href="b.html">'
        'vector</a></li></ul></div><div class="contents"><h2 class="memtitle">push_back()'
        f"</h2>{member}</div>"
    )
    text = text_of(page, "std::vector Class Template Reference")
    assert "push_back()" in text
    assert "void std::vector::push_back\t(\tconst value_type &\tx\t)" in text
    assert not text.startswith("std")


def test_a_navigation_like_line_inside_the_text_stays() -> None:
    middle = '<p>Next: <a href="/b">B</a>, Previous: <a href="/a">A</a></p>'
    page = f"<div><p>{PROSE}</p>{middle}<p>{PROSE} Two.</p><p>{PROSE} Three.</p></div>"
    assert "Next: B, Previous: A" in text_of(page)


def test_tables_are_well_formed_pipe_tables_and_tab_separated_text() -> None:
    rows = (
        "<tr><th>Operation</th><th>Result</th><th></th></tr>"
        "<tr><td>double OP single</td><td>single</td><td></td></tr>"
        "<tr><td></td><td>only the middle</td></tr>"
        "<tr><td>a | pipe</td><td>wide</td><td>three</td><td>four</td></tr>"
    )
    page = f"<div><p>{PROSE}</p><table>{rows}</table></div>"
    md = markdown_of(page)
    lines = [line for line in md.splitlines() if line.startswith("|")]
    assert len(lines) == 5
    assert {line.replace("\\|", "").count("|") for line in lines} == {5}
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    kinds = [token.type for token in tokens]
    assert kinds.count("table_open") == 1
    assert kinds.count("th_open") == 4 and kinds.count("td_open") == 12
    cells = [t.content for t in tokens if t.type == "inline"]
    assert "a | pipe" in cells and "only the middle" in cells
    text = text_of(page)
    assert "Operation\tResult\t\ndouble OP single\tsingle\t\n\tonly the middle\n" in text
    assert "a | pipe\twide\tthree\tfour" in text


def _bars_by_definition(scope: LexborNode, title: str) -> set[int]:
    """The navigation bars as the module defines them, every block looked at (the oracle)."""

    def beside(node: LexborNode, before: bool) -> int:
        total = 0
        while node.mem_id != scope.mem_id and node.parent is not None:
            sibling = node.prev if before else node.next
            while sibling is not None:
                if sibling.tag not in ("-comment", "script", "style", "template"):
                    total += len(" ".join(sibling.text(deep=True).split()))
                sibling = sibling.prev if before else sibling.next
            node = node.parent
        return total

    words = frozenset(re.findall(r"\w+", title.lower()))
    shown = len(" ".join(scope.text(deep=True).split()))
    return {
        node.mem_id
        for node in scope.css(_BLOCKS)
        if node.mem_id != scope.mem_id
        and is_nav_bar(node, words)
        and (beside(node, before=True) < 100 or beside(node, before=False) < 100)
        and len(" ".join(node.text(deep=True).split())) < 0.5 * shown
    }


_BLOCKS = "p, div, table, ul, ol, center, section"
_GAP = st.sampled_from(["", " ", "\n   \n", "  \t ", " " * 150])
_WORDS = st.sampled_from(["Next", "Up", "Contents", "Manual", "reads it", "x" * 33, "y" * 49])


@st.composite
def _fragment(draw: st.DrawFn, depth: int = 0) -> str:
    gap, words = draw(_GAP), draw(_WORDS)
    kind = draw(st.sampled_from(["text", "link", "p", "div", "ul"] if depth < 3 else ["text"]))
    if kind == "text":
        return f"{gap}{words}{gap}"
    if kind == "link":
        return f'{gap}<a href="/{len(words)}">{words}</a>{gap}'
    inner = "".join(draw(st.lists(_fragment(depth + 1), max_size=4)))
    return f"<ul><li>{inner}</li></ul>" if kind == "ul" else f"<{kind}>{gap}{inner}</{kind}>"


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(_fragment(), min_size=1, max_size=6))
def test_the_bars_found_at_the_edges_are_those_the_definition_finds(parts: list[str]) -> None:
    # the walk reads only the page's edges, and only the first characters of a long text:
    # whitespace split over many text nodes and long texts are counted as the definition says
    body = LexborHTMLParser(f"<html><body>{''.join(parts)}</body></html>").body
    assert body is not None
    bars = _bars_by_definition(body, "Manual")
    blocks = body.css(_BLOCKS)
    going = set()
    for node in blocks:
        up: LexborNode | None = node
        while up is not None and up.mem_id not in bars:
            up = up.parent
        if up is not None:
            going.add(node.mem_id)  # a bar, or inside one
    strip_nav_bars(body, "Manual")
    assert {node.mem_id for node in blocks} - {node.mem_id for node in body.css(_BLOCKS)} == going
