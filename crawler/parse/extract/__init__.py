"""A page's main content as plain text and as markdown (work in progress: the body's text)."""

from __future__ import annotations

from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser

from crawler.parse.markup import parse_tree, prepare

__all__ = ["PageText", "extract", "page_text"]


@dataclass(frozen=True, slots=True)
class PageText:
    """`text`: the main content as plain text; `markdown`: as CommonMark (None unless asked)."""

    text: str
    markdown: str | None = None


def extract(tree: LexborHTMLParser, url: str, *, markdown: bool = False) -> PageText:
    """The main content of a parsed page (`url` makes its links absolute)."""
    body = tree.body or tree.root
    text = body.text(deep=True, separator=" ") if body is not None else ""
    return PageText(text, text if markdown else None)


def page_text(
    body: bytes, url: str, content_type: str | None = None, *, markdown: bool = False
) -> PageText | None:
    """The main content of a response body; None when it is not HTML."""
    prepared = prepare(body, url, content_type)
    if prepared is None:
        return None
    tree = parse_tree(prepared[1], url)
    if tree is None:
        return PageText("", "" if markdown else None)
    return extract(tree, url, markdown=markdown)
