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
from collections.abc import Iterator

from selectolax.lexbor import LexborNode

__all__ = ["is_nav_bar", "strip_nav_bars"]

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


_CANDIDATE_TAGS = frozenset(("p", "div", "table", "ul", "ol", "center", "section"))
_UNSEEN = frozenset(("-comment", "script", "style", "template"))


def _at_edges(scope: LexborNode) -> Iterator[LexborNode]:
    """The candidate elements inside `scope` at its top or bottom edge (less than
    `_EDGE_CHARS` characters of text between them and its start or end), in document order.
    The text before (after) an element is its parent's plus its earlier (later) siblings':
    an element not at an edge holds none that is, so only the edges are walked."""
    stack = [(scope, 0, 0)]
    while stack:
        node, before, after = stack.pop()
        if node.mem_id != scope.mem_id and node.tag in _CANDIDATE_TAGS:
            yield node
        stack.extend(reversed(_edge_children(node, before, after)))


def _edge_children(node: LexborNode, before: int, after: int) -> list[tuple[LexborNode, int, int]]:
    """`node`'s element children at an edge, in document order, each with the text before
    and after it (`_EDGE_CHARS` at most): the children read from either end until that much
    text is behind, not the ones between. A child's text is measured only when a sibling
    lies beyond it (a wrapper nested in a wrapper is not: the page's text is not read again
    at every level of a deep nest); one measured without text is not walked into."""
    shown: dict[int, int] = {}
    top: dict[int, tuple[LexborNode, int, int]] = {}
    child, seen = node.child, before
    while child is not None and seen < _EDGE_CHARS:
        length = -1
        if child.next is not None:
            length = shown[child.mem_id] = _shown(child)
        if child.is_element_node and length != 0:  # an element without text holds no bar
            top[child.mem_id] = (child, seen, _EDGE_CHARS)
        seen += max(0, length)
        child = child.next
    bottom = []
    child, seen = node.last_child, after
    while child is not None and seen < _EDGE_CHARS:
        length = -1
        if child.prev is not None:
            length = shown.get(child.mem_id, -1)
            length = _shown(child) if length < 0 else length
        if child.mem_id in top:
            top[child.mem_id] = (child, top[child.mem_id][1], seen)
        elif child.is_element_node and length != 0:
            bottom.append((child, _EDGE_CHARS, seen))
        seen += max(0, length)
        child = child.prev
    return [*top.values(), *reversed(bottom)]


def _shown(node: LexborNode) -> int:
    """The length of `node`'s text with its whitespace collapsed, `_EDGE_CHARS` at most (all
    an edge asks); 0 for what is not shown. The collapsed text of a prefix is a prefix of the
    whole's: prefixes four times longer each are collapsed until one says enough, not the
    whole text of a wrapper (lexbor gives it at C speed, splitting it is what costs)."""
    if node.tag in _UNSEEN:
        return 0
    text = node.text(deep=True) if node.tag != "-text" else node.text_content or ""
    size = _EDGE_READ
    while True:
        shown = len(" ".join(text[:size].split()))
        if shown >= _EDGE_CHARS or size >= len(text):
            return min(shown, _EDGE_CHARS)
        size *= 4


_EDGE_READ = 4 * _EDGE_CHARS  # the first prefix collapsed


def strip_nav_bars(scope: LexborNode, title: str = "") -> None:
    """Remove the navigation bars at the top and bottom edges of `scope` (the outermost of
    nested ones; found before any is removed); `title`: the page's <title>."""
    scope_id = scope.mem_id
    title_words = frozenset(_words(title))
    bars: dict[int, LexborNode] = {}
    total: int | None = None
    for node in _at_edges(scope):
        if not is_nav_bar(node, title_words):
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
