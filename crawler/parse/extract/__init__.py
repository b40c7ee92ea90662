"""A page's main content as plain text and as markdown.

`extract` chooses the main content of a parsed page (`crawler.parse.extract.choose`: the
element the page's paragraphs crowd into, after `crawler.parse.extract.clean` removed what is
never content), reads it into blocks (`crawler.parse.extract.blocks`) and writes them out:

- `text`: paragraphs separated by blank lines; headings, list items and table rows on lines of
  their own (a list's items one under the other); whitespace collapsed except in code blocks;
- `markdown`: the same blocks as CommonMark: `#` headings, `-` / `1.` list items indented by
  nesting, links with absolute URLs, `*emphasis*`, `**strong**`, inline and fenced code,
  `>` quotes, and tables as pipe tables.

A page without a main content (no paragraph of 25 characters) gives its visible body text; a
page of links only, its links' text. Both are bounded: at most twice the page's HTML in
characters (64 Ki at least, 8 Mi at most, `limit_for`), list nesting at most eight levels
deep; `PageText.truncated` says when they were cut. `extract` changes the tree (it removes
scripts and boilerplate): read links before. How the main content is chosen, and how well it
does against trafilatura, readability-lxml and jusText: docs/page-text.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.parse.extract.markdown import as_markdown
    from crawler.parse.extract.page import MAX_CHARS, PageText, as_text, extract, limit_for
    from crawler.parse.extract.response import page_text

__all__ = [
    "MAX_CHARS",
    "PageText",
    "as_markdown",
    "as_text",
    "extract",
    "limit_for",
    "page_text",
]

__getattr__ = lazy(
    __name__,
    {
        "MAX_CHARS": "page",
        "PageText": "page",
        "as_markdown": "markdown",
        "as_text": "page",
        "extract": "page",
        "limit_for": "page",
        "page_text": "response",
    },
)
