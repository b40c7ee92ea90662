"""The main content of a response body: sniffed, decoded, defused and parsed as the crawl does."""

from __future__ import annotations

from crawler.parse.extract.page import PageText, extract
from crawler.parse.markup import parse_tree, prepare

__all__ = ["page_text"]


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
