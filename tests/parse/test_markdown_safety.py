"""The markdown of a hostile page says what the page said and nothing more, and is bounded.

Every output is parsed back with markdown-it-py (CommonMark, raw HTML enabled, tables on, as a
renderer downstream would read it): no raw HTML, no link to a scheme off the allow-list, code
blocks holding exactly the page's <pre> text, the words of `text` all there. Pages built to make
the output huge give output within `limit_for` the page, the cut reported.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from crawler.output.results import CrawlResult
from crawler.parse.extract import limit_for, page_text
from crawler.parse.extract.markdown import MAX_LEVELS

URL = "http://site.test/docs/page"
ALLOWED = {"http", "https", "mailto", "ftp"}
LEAD = (
    "<p>This opening paragraph says enough, with commas, clauses, and words, to be read as "
    "the main content of the page, which it is, as a reader would expect it to be.</p>"
)
_PARSER = MarkdownIt("commonmark", {"html": True}).enable("table")


def tokens(markdown: str) -> Iterator[Token]:
    for token in _PARSER.parse(markdown):
        yield token
        yield from token.children or ()


def check(markdown: str) -> None:
    """No raw HTML, and only allowed schemes, in what markdown-it reads of `markdown`."""
    for token in tokens(markdown):
        assert not token.type.startswith("html"), (token.content, markdown)
        if token.type in ("link_open", "image"):
            href = str(token.attrs.get("href" if token.type == "link_open" else "src", ""))
            assert urlsplit(href).scheme.lower() in ALLOWED, (href, markdown)


def read(body: str, url: str = URL) -> tuple[str, str, bool]:
    found = page_text(body.encode(), url, "text/html", markdown=True)
    assert found is not None and found.markdown is not None
    return found.text, found.markdown, found.truncated


def article(inner: str) -> str:
    return f"<html><head><title>T</title></head><body><article>{LEAD}{inner}</article></body>"


def test_four_backticks_in_pre_do_not_close_the_fence() -> None:
    code = "a\n````\n[fence broke](http://injected.example/) <img src=x onerror=alert(3)>\n````\nb"
    _, markdown, _ = read(article(f"<pre>{html.escape(code)}</pre>"))
    check(markdown)
    fences = [t.content for t in tokens(markdown) if t.type == "fence"]
    assert fences == [code + "\n"]
    assert not [t for t in tokens(markdown) if t.type == "link_open"]


@pytest.mark.parametrize(
    "href",
    ["JavaScript:alert(1)", "vbscript:msgbox(1)", "DATA:text/html,<script>x</script>",
     "java\tscript:alert(1)", "java\nscript:alert(1)", " \x01javascript:alert(1)",
     "jAvAsCrIpT&#58;alert(1)", "file:///etc/passwd"],
)  # fmt: skip
def test_links_off_the_allow_list_are_text(href: str) -> None:
    attr = href if "&#" in href else html.escape(href)
    _, markdown, _ = read(article(f'<p>See <a href="{attr}">the trap</a> here, and more.</p>'))
    check(markdown)
    assert "the trap" in markdown and "](" not in markdown.split("the trap")[1][:3]


def test_a_destination_cannot_break_out() -> None:
    hrefs = ["/a b)(<c>'\"x", "/q?`x`|y", "/p/&lt;q", "/e\\"]
    links = "".join(
        f'<a href="{html.escape(href)}">link{n}</a> and ' for n, href in enumerate(hrefs)
    )
    _, markdown, _ = read(article(f"<p>Go {links} more.</p>"))
    check(markdown)
    found = [t.attrs["href"] for t in tokens(markdown) if t.type == "link_open"]
    assert found == [
        "http://site.test/a%20b%29%28%3Cc%3E%27%22x",
        "http://site.test/q?%60x%60%7Cy",
        "http://site.test/p/&lt;q",  # not read as an entity: the URL the page gave
        "http://site.test/e%5C",
    ]


def test_code_open_across_a_block_stays_code() -> None:
    inner = "x<div>[y](javascript:alert(1)) &lt;img src=x onerror=alert(1)&gt;</div>z"
    _, markdown, _ = read(article(f"<div>Some <code>{inner}</code> end.</div>"))
    check(markdown)
    assert "\0" not in markdown and not [t for t in tokens(markdown) if t.type == "link_open"]
    codes = [t.content for t in tokens(markdown) if t.type == "code_inline"]
    assert codes == ["x", "[y](javascript:alert(1)) <img src=x onerror=alert(1)>", "z"]


def test_a_pipe_in_code_in_a_cell_does_not_split_it() -> None:
    cell = "<code>|&lt;img src=x onerror=alert(1)&gt;</code>"
    _, markdown, _ = read(article(f"<table><tr><td>{cell}</td><td>b</td></tr></table>"))
    check(markdown)
    cells = [t.children[0].content for t in tokens(markdown) if t.type == "inline"]
    assert "|<img src=x onerror=alert(1)>" in [c for c in cells if c]


# The fuzz: pages of every kind of block, their text made of what markdown reads as markup.
_PIECES = st.sampled_from([
    "`", "``", "```", "````", "~~~", "~", "[", "]", "(", ")", "![", "](", "<img src=x>",
    "<!-- c -->", "<http://auto.example/>", "&lt;", "&amp;", "&#60;", "*", "_", "**", "#",
    "|", "\\", "!", "- ", "+ ", "1. ", "2) ", "> ", "=", "---", "javascript:alert(1)",
    "word", "x_y", "Text", " ", "  ", "\n", "\t", "é",
])  # fmt: skip
_TEXTS = st.lists(_PIECES, min_size=1, max_size=8).map("".join)
_HREFS = st.sampled_from([
    "javascript:alert(1)", "JavaScript:alert(1)", "java\tscript:x", " javascript:x",
    "\x01javascript:x", "vbscript:x", "VBScript:x", "DATA:text/html,x", "data:x", "file:///x",
    "http://ok.example/a)b", "https://ok.example/<x>", "mailto:a@b.example", "/rel path",
    "rel(1)", "#frag", "ftp://f.example/", "HTTP://UP.example/", "http://x/&lt;", "",
    "//proto.example/x", "?q=`x`", "a\\b",
])  # fmt: skip


def _inline(draw: Any) -> str:
    kind = draw(st.sampled_from(["text", "a", "code", "b", "em"]))
    text = html.escape(draw(_TEXTS), quote=False)
    if kind == "a":
        return f'<a href="{html.escape(draw(_HREFS))}">{text}</a>'
    return text if kind == "text" else f"<{kind}>{text}</{kind}>"


@st.composite
def _inlines(draw: Any) -> str:
    return "".join(_inline(draw) for _ in range(draw(st.integers(1, 4))))


@st.composite
def _list(draw: Any, depth: int = 0) -> str:
    tag = draw(st.sampled_from(["ul", "ol"]))
    items = []
    for _ in range(draw(st.integers(1, 3))):
        nested = draw(_list(depth + 1)) if depth < 3 and draw(st.booleans()) else ""
        items.append(f"<li>{draw(_inlines())}{nested}</li>")
    return f"<{tag}>{''.join(items)}</{tag}>"


@st.composite
def _block(draw: Any) -> tuple[str, str | None]:
    """A block's HTML, and the text of a <pre>."""
    kind = draw(st.sampled_from(["p", "h2", "h3", "list", "pre", "blockquote", "table"]))
    if kind == "pre":
        code = draw(_TEXTS).replace("\r", "")
        return f"<pre>{html.escape(code, quote=False)}</pre>", code.strip("\n")
    if kind == "list":
        return draw(_list()), None
    if kind == "table":
        rows = draw(st.lists(st.lists(_inlines(), min_size=1, max_size=3), min_size=1, max_size=3))
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table>{body}</table>", None
    return f"<{kind}>{draw(_inlines())}</{kind}>", None


def _plain(markdown: str) -> str:
    """The text markdown-it reads in `markdown`: inline text, code and fenced code."""
    parts = []
    for token in _PARSER.parse(markdown):
        if token.type in ("fence", "code_block"):
            parts.append(token.content)
        for child in token.children or ():
            if child.type in ("text", "code_inline"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
        parts.append(" ")
    return "".join(parts)


@pytest.mark.slow
@settings(
    max_examples=400, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck)
)
@given(st.lists(_block(), min_size=1, max_size=6))
def test_fuzzed_pages_give_markdown_that_holds_the_text_and_nothing_more(
    blocks: list[tuple[str, str | None]],
) -> None:
    text, markdown, truncated = read(article("".join(block for block, _ in blocks)))
    assert not truncated
    check(markdown)
    pres = {code for _, code in blocks if code is not None and code.strip()}
    for token in tokens(markdown):
        assert token.type != "code_block", markdown  # no indented code from the page's text
        if token.type == "fence":
            assert token.content[:-1] in pres, (token.content, markdown)
    # the words all there (emphasis CommonMark cannot read next to punctuation stays as its
    # asterisks: markup that failed, not text lost or added)
    assert _plain(markdown).replace("*", "").split() == text.replace("*", "").split()


# The size bounds: pages built to make the output much longer than the page.


def _nested_list(items: int, item: str) -> str:
    """A list 250 deep (500 elements: as deep as the defused tree goes), then `items` items."""
    return f"<html><body>{'<ul><li>x' * 250}{f'<li>{item}</li>' * items}</body></html>"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "cut"),
    [
        (_nested_list(100_000, "a"), False),  # 1 MB: 75 MB of markdown before, now flattened
        (_nested_list(60_000, "b" * 150), True),  # 9.5 MB: 100 MB of markdown before
        # relative links made long by a page's long URL: 2 KB of markdown for 12 bytes each
        ("<p>words and <a href=x>y</a> more words, " * 20_000, True),
        (article("<ul>" + "<li>an item of the list, a few words long" * 2_000 + "</ul>"), False),
    ],
)  # fmt: skip
def test_hostile_pages_give_bounded_output_and_say_so(body: str, cut: bool) -> None:
    text, markdown, truncated = read(body, "http://site.test/" + "d/" * 1000)
    bound = limit_for(len(body.encode()))
    assert len(text) <= bound and len(markdown) <= bound
    assert truncated is cut
    indents = [len(line) - len(line.lstrip(" ")) for line in markdown.splitlines()]
    assert max(indents) <= 12 * MAX_LEVELS
    result = CrawlResult(
        URL, URL, 200, 0, None, "", text=text, markdown=markdown, text_truncated=truncated
    )
    line = result.to_json(text=True, markdown=True)
    assert len(line.encode()) <= 4 * bound + 4096
    assert json.loads(line)["text_truncated"] is cut
    check(markdown[:200_000])


def test_deep_lists_are_flattened_at_the_last_level() -> None:
    nested = "".join(f"<ul><li>level{n}" for n in range(20))
    _, markdown, truncated = read(article(nested + "</li></ul>" * 20))
    assert not truncated
    items = [line for line in markdown.splitlines() if "level" in line]
    assert [line.strip() for line in items] == [f"- level{n}" for n in range(20)]
    assert len({len(line) - len(line.lstrip()) for line in items}) == MAX_LEVELS
