"""What a focused crawl reads about a link: its anchor text, its rel, and the text around it.

The text around a link is its enclosing block's (the nearest block element, at most
CONTEXT_CLIMB ancestors up), centred on the anchor when the block is long, or, in a very long
block, the text of the link's siblings next to it. Each block is read once per page and at most
CONTEXT_BUDGET_CHARS of text in all (`Contexts`). `crawler.parse.markup.read_tree` calls
`link_details` for each distinct href's first link (one with an anchor text, if any).
"""

from __future__ import annotations

from selectolax.lexbor import LexborNode

from crawler.parse.tags import tag_ids

__all__ = [
    "ANCHOR_MAX_CHARS",
    "CONTEXT_BUDGET_CHARS",
    "CONTEXT_CLIMB",
    "CONTEXT_MAX_CHARS",
    "SIBLINGS",
    "Contexts",
    "collapse",
    "link_details",
]  # fmt: skip

ANCHOR_MAX_CHARS = 256
"""Longest anchor text kept for a link (read only for a focused crawl, like the three below)."""
CONTEXT_MAX_CHARS = 200
"""Longest text around a link kept (its enclosing block's, centred on the anchor)."""
CONTEXT_CLIMB = 16
"""Ancestors of a link searched for its enclosing block (deeper in inline tags: no context)."""
CONTEXT_BUDGET_CHARS = 4_000_000
"""Text read for the links' contexts of one page at most (then links get none)."""
SIBLINGS = 8
"""Siblings read on each side of a link for its context in a long block."""
_SHORT_BLOCK = 4 * CONTEXT_MAX_CHARS  # a longer block: the text next to the link is its context

# The elements whose text is "the text around a link" (the nearest one enclosing it).
_BLOCKS = frozenset(tag_ids(
    "p", "li", "dd", "dt", "td", "th", "caption", "figcaption", "blockquote", "pre", "div",
    "section", "article", "aside", "main", "nav", "header", "footer", "form", "fieldset",
    "address", "details", "summary", "h1", "h2", "h3", "h4", "h5", "h6",
))  # fmt: skip


def collapse(text: str, limit: int) -> str:
    """`text` with whitespace runs made one space, at most `limit` characters."""
    return " ".join(text.lstrip()[: 4 * limit].split())[:limit].rstrip()


class Contexts:
    """The text of the block elements a page's links are in, read once per block, and at most
    CONTEXT_BUDGET_CHARS in all (nested blocks each hold their inner blocks' text: on a page
    built for it, reading them all could take minutes)."""

    __slots__ = ("left", "long", "texts")

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}  # block element -> its collapsed text (a short one)
        self.long: set[int] = set()  # block elements with a long text
        self.left = CONTEXT_BUDGET_CHARS

    def __repr__(self) -> str:
        return f"<Contexts blocks={len(self.texts)} left={self.left}>"


def link_details(node: LexborNode, rel: str | None, contexts: Contexts) -> tuple[str, str, str]:
    """(anchor text, rel, text around it) of one a/area element."""
    anchor = collapse(node.text(deep=True, separator=" "), ANCHOR_MAX_CHARS)
    if not anchor:
        image = node.css_first("img[alt]")
        alt = node.attributes.get("alt") if image is None else image.attributes.get("alt")
        anchor = collapse(alt or "", ANCHOR_MAX_CHARS)
    rel = " ".join((rel or "").split())
    block = node.parent
    for _ in range(CONTEXT_CLIMB):
        if block is None or block.tag_id in _BLOCKS:
            break
        block = block.parent
    else:
        block = None
    if block is None:  # directly in <body> (the body would be too much), or deep in inline tags
        return anchor, rel, ""
    key = block.mem_id
    around = contexts.texts.get(key)
    if around is None and key not in contexts.long:
        if contexts.left <= 0:
            return anchor, rel, ""
        raw = block.text(deep=True, separator=" ")
        contexts.left -= len(raw)
        around = " ".join(raw.split())
        if len(around) > _SHORT_BLOCK:  # not kept: the text next to each link is read instead
            contexts.long.add(key)
            around = None
        else:
            contexts.texts[key] = around
    if around is None:
        return anchor, rel, _next_to(node, anchor, contexts) if contexts.left > 0 else ""
    if len(around) > CONTEXT_MAX_CHARS:  # a window centred on the anchor (or the block's start)
        at = max(0, around.find(anchor)) if anchor else 0
        start = max(0, min(at + len(anchor) // 2 - CONTEXT_MAX_CHARS // 2,
                           len(around) - CONTEXT_MAX_CHARS))  # fmt: skip
        around = around[start : start + CONTEXT_MAX_CHARS].strip()
    return anchor, rel, around


def _next_to(node: LexborNode, anchor: str, contexts: Contexts) -> str:
    """The text of a link's siblings next to it (half of CONTEXT_MAX_CHARS on each side, from
    at most SIBLINGS siblings each way), around its anchor text: its context in a long block."""
    half = (CONTEXT_MAX_CHARS - len(anchor)) // 2
    before: list[str] = []
    after: list[str] = []
    for side, step in ((before, "prev"), (after, "next")):
        sibling, size = getattr(node, step), 0
        for _ in range(SIBLINGS):
            if sibling is None or size >= half:
                break
            raw = sibling.text(deep=True, separator=" ")
            contexts.left -= len(raw)
            side.append(raw)
            size += len(raw)
            sibling = getattr(sibling, step)
    left = " ".join(" ".join(reversed(before)).split())[-half:] if half > 0 else ""
    right = " ".join(" ".join(after).split())[:half] if half > 0 else ""
    return " ".join(part for part in (left, anchor, right) if part)[:CONTEXT_MAX_CHARS]
