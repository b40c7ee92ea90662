"""What a focused crawl reads from a page: each link's anchor, rel and context; the PageText."""

from __future__ import annotations

import pytest

from crawler.parse import anchors
from crawler.parse.anchors import ANCHOR_MAX_CHARS, CONTEXT_CLIMB, CONTEXT_MAX_CHARS
from crawler.parse.links import extract
from crawler.parse.markup import BODY_MAX_CHARS, parse_markup
from crawler.parse.thread import THREAD_PARSE_BYTES, Parser
from crawler.urls.syntax import cut_fragment

PAGE = b"""<html><head><title> Replication   guide </title><script>var nav = 1;</script>
<style>p { color: red }</style></head><body>
<header><h1>Site  name</h1><a href=/home>Home</a></header>
<nav><ul><li><a href=/docs>Docs</a></li></ul></nav>
<main><h2>Streaming <em>replication</em></h2>
<p>Set up a standby with <a href="/standby#x" rel=" Next   me">the <b>standby</b>
  guide</a> before failover.</p>
<div><a href=/pic><img src=p.png alt="  Diagram of   WAL "></a></div>
<table><tr><td>cell text <a href=/cell>in a cell</a></td></tr></table>
<noscript>enable js</noscript></main>
<a href=/bare>bare link</a>
<footer>Copyright <a href=/legal>legal</a></footer></body></html>"""


def test_links_get_anchor_rel_and_context() -> None:
    doc = parse_markup(PAGE, "http://t/", "text/html", anchors=True)
    details = doc.anchors  # per href, its fragment cut
    assert set(details) == {cut_fragment(href) for href in doc.hrefs}
    assert details["/standby#"] == (
        "the standby guide",
        "Next me",
        "Set up a standby with the standby guide before failover.",
    )
    assert details["/pic"] == ("Diagram of WAL", "", "")  # img alt; the div has no text
    assert details["/cell"] == ("in a cell", "", "cell text in a cell")  # <td> is a block
    assert details["/docs"] == ("Docs", "", "Docs")  # the <li>
    assert details["/bare"] == ("bare link", "", "")  # no block below <body>: no context


def test_page_text_leaves_out_hidden_parts() -> None:
    doc = parse_markup(PAGE, "http://t/", "text/html", text=True)
    assert doc.text is not None
    headings, body = doc.text
    assert headings == "Site name Streaming replication"  # h1 in <header> counts as a heading
    assert "Set up a standby with the standby guide before failover." in body
    assert "cell text in a cell" in body  # the main content's text (issue 33)...
    assert "bare link" not in body  # ... so not a link outside <main>
    for hidden in ("var nav", "color: red", "Home", "Docs", "Copyright", "enable js"):
        assert hidden not in body, hidden


NAVIGATION = b"""<html><body><nav role=navigation><a href=/a>menu</a></nav>
<h2 role="Navigation">Site map</h2><h2>Real heading</h2>
<p>Body words <a href=/b role=navigation>jump</a> <a href=/c>stay</a></p>
<main><div role=navigation>crumbs</div>main words</main></body></html>"""


def test_an_element_matching_two_selectors_is_read_once() -> None:
    # lexbor lists an element once per selector of a list it matches: a role=navigation link or
    # heading (or nav) matched both "its own" selector and the role selector
    plain = parse_markup(NAVIGATION, "http://t/", "text/html")
    doc = parse_markup(NAVIGATION, "http://t/", "text/html", anchors=True, text=True, content=True)
    assert doc.hrefs == plain.hrefs == ("/a", "/b", "/c")
    assert doc.text is not None
    headings, body = doc.text
    assert headings == "Site map Real heading"  # every heading counts for focus, each once
    assert body == "main words" == doc.content  # the main content, less its role=navigation div
    # without a main element the content is the body's text, the same with or without `text`
    bare = NAVIGATION.replace(b"main>", b"div>")
    alone = parse_markup(bare, "http://t/", "text/html", content=True).content
    assert alone is not None
    assert " ".join(alone.split()) == "Real heading Body words stay main words"
    assert parse_markup(bare, "http://t/", "text/html", text=True, content=True).content == alone


def test_nothing_extra_is_read_unless_asked() -> None:
    doc = parse_markup(PAGE, "http://t/", "text/html")
    assert doc.anchors == {} and doc.text is None
    assert doc.hrefs == parse_markup(PAGE, "http://t/", "text/html", anchors=True).hrefs


def test_long_texts_are_capped_and_the_context_centred_on_the_anchor() -> None:
    filler = " ".join(f"w{i}" for i in range(2000))
    long_anchor = "x" * (ANCHOR_MAX_CHARS * 3)
    body = (
        f"<p>{filler} <a href=/mid>middle link</a> {filler}</p><p><a href=/long>{long_anchor}</a>"
        f"</p><div>{filler * 40}</div>"
    ).encode()
    doc = parse_markup(body, "http://t/", "text/html", anchors=True, text=True)
    (anchor, _, context), (long_text, _, _) = doc.anchors["/mid"], doc.anchors["/long"]
    assert anchor == "middle link"
    assert len(context) <= CONTEXT_MAX_CHARS and "w1999 middle link w0" in context
    assert long_text == "x" * ANCHOR_MAX_CHARS
    assert doc.text is not None  # capped (a space at the cut is stripped)
    assert BODY_MAX_CHARS - 1 <= len(doc.text[1]) <= BODY_MAX_CHARS


def test_a_repeated_href_keeps_its_first_anchor_text() -> None:
    body = (
        b"<p><a href=/a#top><img src=x></a> first</p><p><a href=/a#x>Alpha</a> second</p>"
        b"<p><a href=/a>Again</a> third</p><a href=/b>Beta</a><a href=/b#y>Bis</a>"
    )
    doc = parse_markup(body, "http://t/", "text/html", anchors=True)
    assert doc.hrefs == ("/a#top", "/a#x", "/a", "/b", "/b#y")
    assert doc.anchors == {  # "/a#" had no text the first time: its second occurrence's
        "/a#": ("Alpha", "", "Alpha second"),
        "/a": ("Again", "", "Again third"),
        "/b": ("Beta", "", ""),
        "/b#": ("Bis", "", ""),
    }


def test_page_carries_anchors_and_builds_page_text() -> None:
    body = (
        b"<title>T</title><h3>Topic</h3><p><a href=/a>A</a> <a href=/n rel=nofollow>N</a> "
        b"<a href=/b>B</a> <a href=/c>C</a></p>"
    )
    page = extract(body, "http://t/x", content_type="text/html", max_links=2, anchors=True,
                   text=True)  # fmt: skip
    assert page.links == ("/a", "/b")  # the nofollow link is skipped, then the list cut
    assert page.anchors["/a"][0] == "A" and page.anchors["/n"][1] == "nofollow"
    assert page.text is not None
    assert (page.text.url, page.text.title, page.text.headings) == ("http://t/x", "T", "Topic")
    assert page.text.body == "Topic A N B C"
    plain = extract(body, "http://t/x", content_type="text/html")
    assert plain.anchors == {} and plain.text is None


def test_not_html_has_no_text_and_an_empty_page_an_empty_one() -> None:
    assert parse_markup(b"\x89PNG\r\n\x1a\n", "http://t/", "text/html", text=True).text is None
    page = extract(b"<p>", "http://t/", content_type="text/html", text=True)
    assert page.text is not None and page.text.body == ""


async def test_the_parse_thread_reads_the_same() -> None:
    body = PAGE + b"<p>" + b"filler " * 5000 + b"</p>"
    assert len(body) > THREAD_PARSE_BYTES  # lexbor runs in a parse thread
    parser = Parser(threads=1)
    try:
        threaded = await parser.parse(body, "http://t/", "text/html", anchors=True, text=True)
    finally:
        await parser.close()
    assert threaded == parse_markup(body, "http://t/", "text/html", anchors=True, text=True)
    assert threaded.anchors and threaded.text is not None


def test_in_a_long_block_the_context_is_the_text_next_to_the_link() -> None:
    # The same anchor text twice in one long block: each link gets its own neighbours.
    words = " ".join(f"w{i}" for i in range(400))
    body = f"<p>{words} <a href=/1>same</a> alpha beta {words} <a href=/2>same</a> gamma</p>"
    doc = parse_markup(body.encode(), "http://t/", "text/html", anchors=True)
    first, second = doc.anchors["/1"][2], doc.anchors["/2"][2]
    assert "w398 w399 same alpha beta w0 w1" in first
    assert second.endswith("w398 w399 same gamma")
    assert len(first) <= CONTEXT_MAX_CHARS and len(second) <= CONTEXT_MAX_CHARS


def test_contexts_are_bounded_on_pages_built_against_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deep = (
        "<span>" * (CONTEXT_CLIMB + 1) + "<a href=/deep>deep</a>" + "</span>" * (CONTEXT_CLIMB + 1)
    )
    body = f"<p>intro {deep}</p><p>one <a href=/1>1</a></p><p>two <a href=/2>2</a></p>"
    doc = parse_markup(body.encode(), "http://t/", "text/html", anchors=True)
    assert doc.anchors["/deep"] == ("deep", "", "")  # no block within CONTEXT_CLIMB ancestors
    assert doc.anchors["/2"][2] == "two 2"
    monkeypatch.setattr(anchors, "CONTEXT_BUDGET_CHARS", 5)  # "one 1": the first block only
    doc = parse_markup(body.encode(), "http://t/", "text/html", anchors=True)
    assert (doc.anchors["/1"][2], doc.anchors["/2"][2]) == ("one 1", "")


def test_an_iframe_with_a_navigation_role_is_one_link() -> None:
    """`iframe[src]` and the navigation role are both in the text pass's selectors: the frame's
    src is read once."""
    from crawler.parse.links import extract

    body = b"<p>text</p><iframe role=navigation src=menu.html></iframe><a href=a>a</a>"
    page = extract(body, "http://site.test/", content_type="text/html", anchors=True, text=True)
    assert page.links == ("menu.html", "a")


# A navigation role where ARIA in HTML allows none: on <html> or <body> (a stray fragment's
# <html role=navigation> is merged into the root by the parser), or on the main content itself.
# The first ended a focused crawl's page in "internal: SelectolaxError: Decomposing the root
# node is not allowed"; a hidden main content was removed and then read (freed memory).
ROLE_MISPLACED = {
    "html": b"<html role=navigation><body><p>page words</p></body></html>",
    "stray-html": b"<html><body><p>page words</p><html role='menu Navigation'></body></html>",
    "html-href": b"<html href=/x role=navigation><body><p>page words</p></body></html>",
    "body": b"<html><body role=navigation><p>page words</p></body></html>",
    "main": b"<html><body><main role=navigation><p>nav</p></main><p>page words</p></body></html>",
    "nav-as-main": b"<html><body><nav role=main><p>nav</p></nav><p>page words</p></body></html>",
}


@pytest.mark.parametrize("html", ROLE_MISPLACED.values(), ids=ROLE_MISPLACED.keys())
def test_a_navigation_role_on_the_root_or_the_main_content(html: bytes) -> None:
    doc = parse_markup(html, "http://t/", "text/html", anchors=True, text=True, content=True)
    assert doc.text == ("", "page words")
    assert doc.content == "page words"
    alone = parse_markup(html, "http://t/", "text/html", content=True)  # content dedup only
    assert alone.content is not None and alone.content.split() == ["page", "words"]
