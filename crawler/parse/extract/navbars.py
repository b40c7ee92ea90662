"""Navigation bars at a page's edges: "Next: B, Previous: A [Contents]", "Prev Up Home Next".

Documentation generators put a bar of links to the neighbouring pages above and below each
page's text, marked by no landmark (texinfo's "Next: / Previous: / Up:" line, DocBook's
"Prev / Up / Next" table, breadcrumbs). `strip_nav_bars` finds them by their structure, the
same on every site, without any class name:

- a short block (at most `_MAX_WORDS` words and `_MAX_CHARS` characters) holding links,
- whose words outside its links are all sibling-navigation words (next, previous, up, home,
  contents, index...: the link texts being page titles) or words of the page's own title (a
  breadcrumb's last, unlinked step), or none (two links or more: a
  breadcrumb, a row of tabs), or whose links, two or more, say only such words (the text beside
  them being the neighbours' titles),
- at the top or bottom edge of the page: less than `_EDGE_CHARS` characters of other text
  between it and the start or the end of the body,
- and not most of the page (a page of a few links keeps them).
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

__all__ = ["is_nav_bar", "strip_nav_bars"]

_CANDIDATES = "p, div, table, ul, ol, center, section"
_WORD = re.compile(r"\w+")
NAV_WORDS = frozenset((
    "next", "previous", "prev", "up", "home", "top", "contents", "index", "back", "forward",
    "toc", "table", "of", "go", "to", "page", "start", "first", "last", "parent",
))  # fmt: skip
_MAX_WORDS = 40
_MAX_CHARS = 300
_EDGE_CHARS = 100
_MOST = 0.5  # a bar holding this share of the body's text is the page, not a bar


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def is_nav_bar(node: LexborNode, title: frozenset[str] = frozenset()) -> bool:
    """Whether `node` is a short block of links to neighbouring pages (wherever it is);
    `title`: the words of the page's title (a breadcrumb ends with it, unlinked)."""
    text = node.text(deep=True)
    if len(text) > _MAX_CHARS * 2 or len(" ".join(text.split())) > _MAX_CHARS:
        return False
    words = _words(text)
    if not words or len(words) > _MAX_WORDS:
        return False
    links = [_words(link.text(deep=True)) for link in node.css("a[href]")]
    if not any(links):
        return False
    outside = list(words)
    for link in links:
        for word in link:
            if word in outside:
                outside.remove(word)
    named = [link for link in links if link]
    if not outside:  # links only: a breadcrumb, a row of tabs
        return len(named) >= 2
    if all(word in NAV_WORDS or word in title for word in outside):
        return True  # "Next: B, Previous: A [Contents]": the titles are the links
    return len(named) >= 2 and all(word in NAV_WORDS for link in named for word in link)


def _text_beside(node: LexborNode, scope_id: int, before: bool) -> int:
    """The characters of text between `node` and the start (`before`) or end of the scope."""
    total = 0
    while node.mem_id != scope_id and node.parent is not None:
        sibling = node.prev if before else node.next
        while sibling is not None:
            if sibling.tag not in ("-comment", "script", "style", "template"):
                total += len(" ".join(sibling.text(deep=True).split()))
                if total >= _EDGE_CHARS:
                    return total
            sibling = sibling.prev if before else sibling.next
        node = node.parent
    return total


def strip_nav_bars(scope: LexborNode, title: str = "") -> None:
    """Remove the navigation bars at the top and bottom edges of `scope` (the outermost of
    nested ones; found before any is removed); `title`: the page's <title>."""
    scope_id = scope.mem_id
    title_words = frozenset(_words(title))
    bars: dict[int, LexborNode] = {}
    total: int | None = None
    for node in scope.css(_CANDIDATES):
        if node.mem_id == scope_id or not is_nav_bar(node, title_words):
            continue
        if (
            _text_beside(node, scope_id, before=True) >= _EDGE_CHARS
            and _text_beside(node, scope_id, before=False) >= _EDGE_CHARS
        ):
            continue
        if total is None:
            total = len(" ".join(scope.text(deep=True).split()))
        if len(" ".join(node.text(deep=True).split())) >= _MOST * total:
            continue
        bars[node.mem_id] = node
    outermost = []
    for node in bars.values():
        parent = node.parent
        while parent is not None and parent.mem_id != scope_id and parent.mem_id not in bars:
            parent = parent.parent
        if parent is None or parent.mem_id not in bars:
            outermost.append(node)
    for node in reversed(outermost):
        node.decompose()
