"""What a focused crawl reads from a page: each link's anchor, rel and context; the PageText."""

from __future__ import annotations

from crawler.links import extract
from crawler.markup import ANCHOR_MAX_CHARS, BODY_MAX_CHARS, CONTEXT_MAX_CHARS, parse_markup
from crawler.parsing import THREAD_PARSE_BYTES, Parser

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
    details = dict(zip(doc.hrefs, doc.anchors, strict=True))
    assert details["/standby#x"] == (
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
    assert "cell text in a cell" in body and "bare link" in body
    for hidden in ("var nav", "color: red", "Home", "Docs", "Copyright", "enable js"):
        assert hidden not in body, hidden


def test_nothing_extra_is_read_unless_asked() -> None:
    doc = parse_markup(PAGE, "http://t/", "text/html")
    assert doc.anchors == () and doc.text is None
    assert doc.hrefs == parse_markup(PAGE, "http://t/", "text/html", anchors=True).hrefs


def test_long_texts_are_capped_and_the_context_centred_on_the_anchor() -> None:
    filler = " ".join(f"w{i}" for i in range(2000))
    long_anchor = "x" * (ANCHOR_MAX_CHARS * 3)
    body = (
        f"<p>{filler} <a href=/mid>middle link</a> {filler}</p><p><a href=/long>{long_anchor}</a>"
        f"</p><div>{filler * 40}</div>"
    ).encode()
    doc = parse_markup(body, "http://t/", "text/html", anchors=True, text=True)
    (anchor, _, context), (long_text, _, _) = doc.anchors
    assert anchor == "middle link"
    assert len(context) <= CONTEXT_MAX_CHARS and "w1999 middle link w0" in context
    assert long_text == "x" * ANCHOR_MAX_CHARS
    assert doc.text is not None and len(doc.text[1]) == BODY_MAX_CHARS


def test_page_keeps_anchors_in_step_with_links_and_builds_page_text() -> None:
    body = (
        b"<title>T</title><h3>Topic</h3><p><a href=/a>A</a> <a href=/n rel=nofollow>N</a> "
        b"<a href=/b>B</a> <a href=/c>C</a></p>"
    )
    page = extract(body, "http://t/x", content_type="text/html", max_links=2, anchors=True,
                   text=True)  # fmt: skip
    assert page.links == ("/a", "/b")  # the nofollow link is skipped, then the list cut
    assert [a[0] for a in page.anchors] == ["A", "B"]
    assert page.text is not None
    assert (page.text.url, page.text.title, page.text.headings) == ("http://t/x", "T", "Topic")
    assert page.text.body == "Topic A N B C"
    plain = extract(body, "http://t/x", content_type="text/html")
    assert plain.anchors == () and plain.text is None


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
