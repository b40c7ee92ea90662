"""The visible text of a page, the input of its content fingerprint.

`visible_text` reads a lexbor tree: the text of the page's main content, its first <main> or
role=main element (what HTML marks as the page's own content, Sphinx's document body for
instance), else of <body>; with what is not the page's own content left out (scripts, styles,
templates, inline SVG, and the boilerplate that pages of one site share: <nav>, <header>,
<footer>, <aside> and any element with role=navigation, such as a Sphinx site's sidebar and
"next / previous" bars). A banner a mirror adds above the main content is thus not text. Text
nodes are joined with a space, so that markup alone (tags, attributes, comments, line breaks
between tags) never changes the result.
It detaches those elements from the tree: call it last, after everything else was read.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

__all__ = ["MAIN", "MAX_TEXT_CHARS", "STRIPPED", "visible_text"]

MAIN = "main, [role=main]"
"""The page's main content, when it marks it."""

STRIPPED = "script, style, noscript, template, svg, nav, header, footer, aside, [role=navigation]"
"""The elements left out of a page's text (with everything inside them)."""

MAX_TEXT_CHARS = 1_000_000
"""Longest text kept (the rest of a huge page does not change its fingerprint)."""


def visible_text(tree: LexborHTMLParser) -> str:
    """The text of the tree's `MAIN` element, else of its <body> (else the whole document),
    without `STRIPPED` elements, text nodes joined with a space, at most MAX_TEXT_CHARS;
    mutates the tree."""
    root = tree.css_first(MAIN) or tree.body or tree.root
    if root is None:
        return ""
    for node in root.css(STRIPPED):  # within the root only: a subtree walk
        node.decompose(recursive=False)  # detaches the subtree (nested matches: harmless)
    # skip_empty: whitespace-only text nodes (between tags) would only add separators
    return str(root.text(separator=" ", skip_empty=True))[:MAX_TEXT_CHARS]
