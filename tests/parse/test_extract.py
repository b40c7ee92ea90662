"""Main-content extraction (`crawler.parse.extract`): what is kept, what is left out, and the
text and markdown it is written as."""

from __future__ import annotations

import random
import threading

import pytest

from crawler.parse.extract import page_text
from crawler.parse.markup import parse_markup

URL = "http://news.test/2026/11/story.html"

STORY = (
    "<p>The council approved the new harbour plan on Tuesday, after a debate that lasted most"
    " of the night, and the first works begin in spring.</p>"
    "<p>Residents had asked for the plan for years, says the mayor, who expects the quay to"
    " reopen by the end of next summer, weather permitting.</p>"
    "<p>Fishermen, who lost their moorings in the storm, will get temporary berths in the"
    " marina, free of charge, until the works are done.</p>"
)


def html(body: str, title: str = "Harbour plan approved - The Daily Test") -> bytes:
    head = f"<!doctype html><html><head><title>{title}</title></head>"
    return f"{head}<body>{body}</body></html>".encode()


def text_of(body: str, **kwargs: object) -> str:
    found = page_text(html(body), URL, "text/html")
    assert found is not None
    return found.text


def markdown_of(body: str) -> str:
    found = page_text(html(body), URL, "text/html", markdown=True)
    assert found is not None and found.markdown is not None
    return found.markdown


def boilerplate_page() -> str:
    related = "".join(
        f"<li><a href='/r{i}'>Another story number {i} to read</a></li>" for i in range(8)
    )
    comments = "".join(
        f"<div class='comment'><p>Reader {i} says: I have lived here for twenty years, and this"
        f" plan, like the last one, will never be finished on time.</p></div>"
        for i in range(6)
    )
    return (
        "<header><a href='/'>The Daily Test</a>"
        "<p>Your local paper since 1901, every day.</p></header>"
        "<nav><ul><li><a href='/news'>News</a></li><li><a href='/sport'>Sport</a></li></ul></nav>"
        "<div id='cookie-consent'><p>We use cookies to improve your experience on our site,"
        " to show you ads and to measure traffic. Accept all cookies?</p></div>"
        "<div class='newsletter-signup'><p>Get the best stories in your inbox, every morning,"
        " for free. Sign up to our newsletter now.</p></div>"
        "<div class='page'><article><h1>Harbour plan approved</h1>"
        f"<div class='story-body'>{STORY}</div>"
        f"<div class='related-stories'><h3>Related</h3><ul>{related}</ul></div></article>"
        f"<section id='comments'>{comments}</section>"
        "<aside><p>Most read: the weather, the roads, the council, the school, the market.</p>"
        "</aside></div>"
        "<footer><p>Copyright 2026 The Daily Test, all rights reserved, do not copy.</p></footer>"
    )


def test_the_story_is_kept_and_the_boilerplate_left_out() -> None:
    text = text_of(boilerplate_page())
    for sentence in ("council approved", "Residents had asked", "temporary berths"):
        assert sentence in text
    for junk in ("cookies", "newsletter", "Reader 3", "Another story", "Copyright", "Most read",
                 "local paper", "Sport"):  # fmt: skip
        assert junk not in text, junk
    assert text.count("\n\n") == 2  # three paragraphs, a blank line apart


def test_the_title_heading_is_left_to_the_title() -> None:
    page = (
        f"<article><h1>Harbour plan approved</h1>{STORY}"
        "<h2>What comes next</h2><p>More.</p></article>"
    )
    text = text_of(page)
    assert not text.startswith("Harbour plan approved")
    assert "What comes next" in text  # a heading that is not the title stays


def test_a_page_marking_its_main_content_is_read_there() -> None:
    banner = (
        "<div class='intro'><p>Welcome to the site of the Daily Test, the bay's paper.</p></div>"
    )
    text = text_of(
        f"{banner}<main><p>Main words of the page, the one thing to read here.</p></main>"
    )
    assert text == "Main words of the page, the one thing to read here."


def test_schema_org_article_body_wins() -> None:
    others = "".join(
        f"<div><p>Other news item {i}, with a comma, and some more words.</p></div>"
        for i in range(12)
    )
    page = f"<div class='list'>{others}</div><div itemprop='articleBody'>{STORY}</div>"
    text = text_of(page)
    assert text.startswith("The council approved") and "Other news" not in text


def test_a_page_without_paragraphs_gives_its_visible_text() -> None:
    assert text_of("<div>Short note.</div><script>var x = 'no';</script>") == "Short note."
    index = "<ul>" + "".join(f"<li><a href='/p{i}'>Page {i}</a></li>" for i in range(5)) + "</ul>"
    assert text_of(index) == "Page 0 Page 1 Page 2 Page 3 Page 4"  # links only: their text


def test_hidden_and_script_text_is_never_content() -> None:
    page = (
        f"<article>{STORY}<p hidden>Hidden words here.</p><div style='display: none'>Secret"
        " text.</div><p aria-hidden='true'>Decorative text.</p><noscript>Enable JS.</noscript>"
        "<template><p>Template text.</p></template><svg><text>Chart label</text></svg></article>"
    )
    text = text_of(page)
    for junk in ("Hidden", "Secret", "Decorative", "Enable JS", "Template", "Chart"):
        assert junk not in text


def test_text_layout_headings_lists_and_code() -> None:
    page = (
        f"<article>{STORY}<h2>Steps</h2><ul><li>First  step</li><li>Second\nstep</li></ul>"
        "<pre>  indented\n    code</pre></article>"
    )
    text = text_of(page)
    assert "\n\nSteps\n\nFirst step\nSecond step\n\n  indented\n    code" in text


def test_markdown_structure() -> None:
    page = (
        "<article><h1>Harbour plan approved</h1>"
        "<p>The <b>council</b> approved the <em>new</em> plan, see"
        " <a href='../plans/harbour.pdf'>the"
        " plan</a> and <code>x = 1</code>, after a long debate that lasted most of the night.</p>"
        "<h2>Steps</h2><ol><li>Dig</li><li>Build<ul><li>Quay</li></ul></li></ol>"
        "<blockquote><p>It is a good day for the bay, said the mayor, smiling.</p></blockquote>"
        "<pre>if x:\n    go()</pre>"
        "<table><tr><th>Year</th><th>Cost</th></tr><tr><td>2027</td><td>5M</td></tr></table>"
        "</article>"
    )
    md = markdown_of(page)
    assert (
        "The **council** approved the *new* plan, see [the plan](http://news.test/2026/plans/harbour.pdf)"
        in md
    )
    assert "and `x = 1`," in md
    assert "\n\n## Steps\n\n1. Dig\n2. Build\n   - Quay\n\n" in md
    assert "> It is a good day for the bay" in md
    assert "```\nif x:\n    go()\n```" in md
    assert "| Year | Cost |\n| --- | --- |\n| 2027 | 5M |" in md


def test_markdown_escapes_markup_characters_and_permalinks_go() -> None:
    page = (
        "<article><h2>Use *stars* and [brackets]<a href='#use' class='x'>¶</a></h2>"
        "<p>A snake_case name, a _lead underscore and a # sign stay text, as written here.</p>"
        "</article>"
    )
    md = markdown_of(page)
    assert "## Use \\*stars\\* and \\[brackets\\]" in md and "¶" not in md
    assert "snake_case name, a \\_lead underscore and a \\# sign" in md


def test_not_html_is_none_and_broken_markup_is_text() -> None:
    assert page_text(b"%PDF-1.7 binary", URL, "application/pdf") is None
    broken = (
        b"<html><body><article><p>Caf\xe9 cr\xe8me, <b>unclosed <i>tags and \xff bytes everywhere"
    )
    found = page_text(broken, URL, "text/html")
    assert found is not None and "Caf" in found.text and "unclosed tags" in found.text


@pytest.mark.slow
def test_deep_nesting_and_huge_text_are_bounded() -> None:
    deep = "<div>" * 100_000 + "<p>Deep words, in a deep page, still read.</p>" + "</div>" * 100_000
    huge = "<p>" + "word, " * 400_000 + "</p>"
    done: list[str] = []

    def run() -> None:  # a watchdog, not a timing assertion: a hang fails, slowness does not
        for page in (deep, huge):
            found = page_text(html(page), URL, "text/html", markdown=True)
            assert found is not None
            done.append(found.text)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(120)
    assert len(done) == 2, "extraction hung"
    assert "Deep words" in done[0] and done[1].count("word,") == 400_000


def test_random_markup_never_raises() -> None:
    rng = random.Random(7)
    tags = [
        "p",
        "div",
        "ul",
        "li",
        "a href='/x'",
        "pre",
        "table",
        "tr",
        "td",
        "h2",
        "b",
        "blockquote",
        "br",
    ]
    for _ in range(200):
        parts = []
        for _ in range(rng.randint(1, 60)):
            tag = rng.choice(tags)
            parts.append(
                rng.choice([f"<{tag}>", f"</{tag.split()[0]}>", "text, words. ", "<!-- c -->"])
            )
        found = page_text("".join(parts).encode(), URL, "text/html", markdown=True)
        assert found is not None and found.markdown is not None


def test_focus_and_dedup_read_the_same_main_content() -> None:
    page = html(boilerplate_page())
    markup = parse_markup(page, URL, "text/html", text=True, content=True, main="markdown")
    alone = parse_markup(page, URL, "text/html", content=True)  # dedup without --text
    assert markup.content is not None and markup.text is not None and markup.main_text is not None
    assert markup.content == alone.content  # the fingerprint does not depend on --text
    assert markup.text[1] == " ".join(markup.content.split())  # focus reads the same words
    assert set(markup.main_text.split()) <= set(markup.content.split())
    assert "cookies" not in markup.content and "Reader 3" not in markup.content
    assert "Harbour plan approved" in markup.text[0]  # the headings, for focus
    assert markup.hrefs and "/r3" in markup.hrefs  # links read before the tree is stripped
    assert markup.markdown is not None and "cookies" not in markup.markdown
    plain = parse_markup(page, URL, "text/html")
    assert plain.main_text is None and plain.markdown is None and plain.content is None


def test_code_spans_keep_their_text_and_dunders_are_escaped() -> None:
    page = (
        "<article><p>Open <a href='/src/__init__.py'>Lib/html/__init__.py</a> and write"
        " <code>&amp;#62; &lt;a&gt; <b>x</b> a_b</code>, then snake_case names, as the guide"
        " says, in a long enough paragraph.</p></article>"
    )
    md = markdown_of(page)
    assert "[Lib/html/\\_\\_init\\_\\_.py](http://news.test/src/__init__.py)" in md
    assert "`&#62; <a> x a_b`" in md and "snake_case" in md


def test_sections_named_like_boilerplate_are_read_when_they_are_the_page() -> None:
    # a documentation page whose sections' ids name cookies: readability's second try
    sections = "".join(
        f"<section id='cookie-{name}'><h2>{name} objects</h2><p>The {name} class handles"
        f" cookies, and stores them, as the policy says, until they expire.</p></section>"
        for name in ("jar", "policy", "file")
    )
    text = text_of(f"<div role='main'>{sections}</div>")
    assert text.count("class handles cookies") == 3 and "policy objects" in text
    banner = "<div class='cookie-banner'><p>We use cookies, to count visits, to show ads.</p></div>"
    assert "We use cookies" not in text_of(banner + f"<article>{STORY}</article>")


def test_an_index_page_gives_its_links_text_after_its_title() -> None:
    toc = "".join(f"<li><a href='/faq/{i}.html'>FAQ number {i}</a></li>" for i in range(4))
    page = f"<div role='main'><h1>Harbour plan approved</h1><ul>{toc}</ul></div>"
    assert text_of(page) == "FAQ number 0 FAQ number 1 FAQ number 2 FAQ number 3"


def test_a_site_tagline_is_not_content() -> None:
    tagline = "<div class='tagline'>Small. Fast. Reliable.<br>Choose any three.</div>"
    assert "Reliable" not in text_of(tagline + STORY)


def test_a_heading_left_with_nothing_under_it_goes() -> None:
    more = "".join(f"<li><a href='/s{i}'>Story number {i} of the week</a></li>" for i in range(5))
    page = f"<article>{STORY}<h3>More topics:</h3><ul>{more}</ul></article>"
    text = text_of(page)
    assert text.endswith("until the works are done.") and "More topics" not in text
    kept = text_of(f"<article><h2>Part one</h2><h3>First</h3>{STORY}</article>")
    assert kept.startswith("Part one\n\nFirst\n\nThe council")  # a section's heading stays


def test_author_boxes_and_teaser_lists_are_not_content() -> None:
    bio = "<p>Jane Doe is a reporter, who covers the harbour, the port and the bay.</p>"
    teasers = "<p>Read also: the storm of last winter, in pictures, all of them.</p>"
    bio, teasers = (
        f"<div class='author-box'>{bio}</div>",
        f"<div class='teaser-list'>{teasers}</div>",
    )
    text = text_of(f"<article>{STORY}{bio}{teasers}</article>")
    assert "Jane Doe" not in text and "Read also" not in text


def test_a_page_of_few_words_keeps_them_over_a_banner_or_a_tagline() -> None:
    # a syntax diagram's page: its words are a name and two references; a mirror put a banner
    # above it, and the site's tagline sits in its header: neither is the page's content
    def page(name: str) -> str:
        return (
            "<div class='mirror-banner'>You are reading a mirror of the docs hosted by"
            " mirror.example.net, last synchronized at noon, session 8f3a2c91d0.</div>"
            "<div class='nosearch'><div class='tagline'>Small. Fast. Reliable.<br>Choose any"
            f" three.</div></div><h1>{name}</h1><svg><text>{name} diagram</text></svg>"
            f"<p><b>Used by:</b> <a href='sql.html'>sql-stmt</a></p>"
        )

    first, second = text_of(page("begin-stmt")), text_of(page("vacuum-stmt"))
    assert first != second and "begin-stmt" in first and "vacuum-stmt" in second
    for junk in ("mirror", "Reliable", "diagram"):
        assert junk not in first


def test_text_loose_between_blocks_is_read_as_a_paragraph() -> None:
    # an article written straight into its container, after a title paragraph and a byline;
    # the only <p> of some length elsewhere is the site's address
    article = (
        "<div class='col'><p class='title'>Harbour plan approved</p><small>05/10/2018 - by"
        " the desk</small><br>The council approved the new harbour plan on Tuesday, after a"
        " debate that lasted most of the night, and the first works begin in spring.</div>"
    )
    address = "<div class='addr'><p>Town hall - 1 Quay Street - 89259-565 - Box 421</p></div>"
    text = text_of(f"{article}{address}")
    assert "council approved the new harbour plan" in text and "Town hall" not in text


def test_tables_with_paragraphs_in_cells_and_lists_after_a_paragraph() -> None:
    cells = "".join(
        f"<tr><td><p>{code}</p></td><td><p><code>{name}</code></p></td></tr>"
        for code, name in (("200", "OK"), ("404", "NOT_FOUND"))
    )
    page = (
        "<div role='main'><p>The module collects several parts, all of them useful, for working"
        " with the protocol:</p><ul class='simple'><li><a href='/client'>client</a> is a"
        " low-level client, for scripts</li><li><a href='/server'>server</a> holds basic"
        " server classes</li></ul><section><h2>Codes</h2><p>The codes it knows, as a table of"
        " codes and names, each of them an enum member:</p>"
        f"<table><tr><th><p>Code</p></th><th><p>Name</p></th></tr>{cells}</table></section>"
        "<p>A <em>word </em>stressed, and <code>a`b</code> as code.</p></div>"
    )
    md = markdown_of(page)
    assert "- [client](http://news.test/client) is a low-level client, for scripts" in md
    assert "| Code | Name |\n| --- | --- |\n| 200 | `OK` |\n| 404 | `NOT_FOUND` |" in md
    assert "A *word* stressed, and ``a`b`` as code." in md


def test_an_article_in_a_layout_table_cell_is_read_as_paragraphs() -> None:
    # an old news site lays its page out in a table: the cell holding the article (its body,
    # a source line and two boxes) outscores the article's own element, and is read as a
    # container of paragraphs, not as one cell of a row that never ends
    said = (
        "The council approved the new harbour plan on Tuesday, after a debate that lasted most"
        " of the night, and the first works begin in spring."
    )
    sidebar = "".join(f"<li><a href='/r{i}'>Another story number {i}</a></li>" for i in range(8))
    article = "".join(f"<p>{said} {i}</p>" for i in range(4))
    source = "<p>Source: the town hall, the harbour office, and the mayor, in a statement.</p>"
    boxes = "".join(
        f"<div><p>Box {i}, {said}</p><p>Box {i} again, {said}</p></div>" for i in (1, 2)
    )
    cell = f"<td><div><div class='article'>{article}</div>{source}</div>{boxes}</td>"
    page = f"<table><tr><td><ul>{sidebar}</ul></td>{cell}</tr></table>"
    text, md = text_of(page), markdown_of(page)
    for kept in (text, md):
        assert f"{said} 0" in kept and "Source: the town hall" in kept and "Box 2 again" in kept
    assert f"{said} 0\n\n{said} 1" in text  # each paragraph a paragraph
