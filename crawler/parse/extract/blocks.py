"""The chosen elements as blocks: paragraphs, headings, list items, code, quotes, table rows.

One walk over each chosen element's subtree (lexbor's child / next pointers, no recursion: the
defused tree can be 512 deep) reads its text into `Block`s, each with its plain text and, when
asked, its markdown (links made absolute against the page's URL, emphasis, inline code).
The lists of links inside the main content went before the walk
(`crawler.parse.extract.clean.strip_link_lists`); the walk leaves out images, comments and a
heading's permalink (a "¶" linking to the page itself), and reads a table cell's paragraphs and
lists into its row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin

from selectolax.lexbor import LexborNode

__all__ = ["Block", "escape", "read_blocks"]

_SPACES = re.compile(r"\s+")
_BACKTICKS = re.compile(r"`+")
# markdown's markup characters; "_" only at a word's edge (snake_case stays readable)
_MD_ESCAPE = re.compile(r"([\\`*\[\]<>#|]|(?<![^\W_])_|_(?![^\W_]))")

_BLOCK_TAGS = frozenset((
    "p", "div", "section", "article", "main", "address", "figure", "figcaption", "center",
    "form", "fieldset", "details", "summary", "hgroup", "dl", "dt", "dd", "ul", "ol", "table",
    "caption", "thead", "tbody", "tfoot", "body", "hr",
))  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# blocks read as part of a table cell's text (not the rows and cells of a table inside it)
_IN_CELL = (_BLOCK_TAGS | _HEADINGS.keys() | {"li", "pre", "blockquote", "br"}) - {
    "table",
    "thead",
    "tbody",
    "tfoot",
    "caption",
}
_SKIPPED = frozenset(("img", "picture", "source", "track", "map", "area", "wbr", "-comment"))
_EMPHASIS = {"em": "*", "i": "*", "strong": "**", "b": "**"}


@dataclass(slots=True)
class Block:
    """One block of the main content: `kind` is "p", "h1".."h6", "li", "pre", "quote" or
    "row"; `depth` a list item's nesting; `marker` its "-" or "1."; `text` plain, `markdown`
    inline markdown (empty unless asked)."""

    kind: str
    text: str
    markdown: str = ""
    depth: int = 0
    marker: str = "-"


class _Reader:
    """The walk's state: the open block's text and markdown pieces, and the blocks so far."""

    __slots__ = (
        "base", "blocks", "cells", "code", "kind", "lists", "markdown", "md", "quote", "text",
    )  # fmt: skip

    def __init__(self, base: str, markdown: bool) -> None:
        self.base = base
        self.markdown = markdown
        self.blocks: list[Block] = []
        self.text: list[str] = []
        self.md: list[str] = []
        self.kind = "p"
        self.lists: list[list[int]] = []  # per open list: [next number or 0 for bullets]
        self.quote = 0
        self.cells = 0  # open table cells: their blocks are read into the cell's line
        self.code = 0  # open inline <code> elements: their text is not escaped

    def flush(self, next_kind: str = "p") -> None:
        text = _SPACES.sub(" ", "".join(self.text)).strip()
        if text:
            markdown = _SPACES.sub(" ", "".join(self.md)).strip() if self.markdown else ""
            kind = "quote" if self.quote and self.kind == "p" else self.kind
            depth, marker = 0, "-"
            if kind == "li" and self.lists:
                depth = len(self.lists) - 1
                counter = self.lists[-1]
                if counter[0]:
                    marker = f"{counter[0]}."
                    counter[0] += 1
            self.blocks.append(Block(kind, text, markdown, depth, marker))
        self.text.clear()
        self.md.clear()
        self.kind = next_kind

    def add(self, text: str, markdown: str | None = None) -> None:
        self.text.append(text)
        if self.markdown:
            if markdown is None:
                markdown = text if self.code else escape(text)
            self.md.append(markdown)

    def pre(self, node: LexborNode) -> None:
        self.flush()
        code = node.text(deep=True).strip("\n")
        if code.strip():
            self.blocks.append(Block("pre", code, code if self.markdown else ""))

    def enter(self, node: LexborNode) -> bool:
        """Open `node`; whether to read what is inside it."""
        tag = node.tag or ""
        if tag == "-text":
            value = node.text_content
            if value:
                self.add(value)
            return False  # nothing inside, nothing to close
        if tag in _SKIPPED:
            return False
        if tag == "br":
            self.add("\n", "  \n" if self.markdown else None)  # a hard line break
            return False
        if self.cells and tag in _IN_CELL:
            if self.text:  # a paragraph, list or code inside a cell: part of the row's line
                self.add(" ")
            return True
        if tag == "pre":
            self.pre(node)
            return False
        if tag == "a" and _is_permalink(node):
            return False
        if tag == "p" and not self.markdown and not self.cells and node.css_first("br") is None:
            # a paragraph's text in one call: lexbor joins its inline elements' text as the
            # walk does (nothing in it to leave out: junk went before): python3.11-doc's
            # pages 2.0 -> 1.8 ms (the markdown walk: 6.4 ms)
            self.flush()
            self.add(node.text(deep=True))
            self.flush()
            return False
        if tag in _HEADINGS:
            self.flush(tag)
        elif tag == "li":
            self.flush("li")
        elif tag in ("ul", "ol"):
            self.flush()
            self.lists.append([_start(node) if tag == "ol" else 0])
        elif tag == "blockquote":
            self.flush()
            self.quote += 1
        elif tag in ("tr",):
            self.flush("row")
        elif tag in ("td", "th"):
            self.cells += 1
            if self.text:
                self.add("\t", " | " if self.markdown else None)
        elif tag in _BLOCK_TAGS:
            self.flush(self.kind if self.kind == "li" and not self.text else "p")
        elif self.markdown:
            self._open_inline(node, tag)
        return True

    def leave(self, node: LexborNode) -> None:
        """Close `node` (an element whose inside was read)."""
        tag = node.tag or ""
        if tag in ("td", "th"):
            self.cells = max(0, self.cells - 1)
            return
        if self.cells and tag in _IN_CELL:
            return
        if tag in _HEADINGS or tag == "li" or tag == "tr":
            self.flush()
        elif tag in ("ul", "ol"):
            self.flush()
            if self.lists:
                self.lists.pop()
        elif tag == "blockquote":
            self.flush()
            self.quote = max(0, self.quote - 1)
        elif tag in _BLOCK_TAGS:
            self.flush()
        elif self.markdown:
            self._close_inline(node, tag)

    def _open_inline(self, node: LexborNode, tag: str) -> None:
        if self.code and tag != "code":
            return  # a code span holds no markup
        if tag == "a" or tag in _EMPHASIS:
            self.md.append(f"\0{tag}")  # marks where the element's text starts
        elif tag == "code":
            self.md.append("\0code")
            self.code += 1

    def _close_inline(self, node: LexborNode, tag: str) -> None:
        if self.code and tag != "code":
            return
        if tag == "a":
            href = (node.attributes.get("href") or "").strip()
            url = _absolute(self.base, href)
            self._wrap(tag, lambda inner: f"[{inner}]({url})" if url else inner)
        elif tag in _EMPHASIS:
            mark = _EMPHASIS[tag]
            self._wrap(tag, lambda inner: f"{mark}{inner}{mark}")
        elif tag == "code":
            self.code = max(0, self.code - 1)
            self._wrap(tag, _code_span)

    def _wrap(self, tag: str, build: Callable[[str], str]) -> None:
        """Replace the markdown since `tag`'s mark with `build` of it, its whitespace moved
        outside (CommonMark reads "*x *" as text, not emphasis)."""
        start = _last_index(self.md, f"\0{tag}")
        if start < 0:
            return
        raw = "".join(self.md[start + 1 :])
        del self.md[start:]
        inner = raw.strip()
        if not inner:  # nothing inside: no markers
            self.md.append(raw)
            return
        lead, trail = raw[: len(raw) - len(raw.lstrip())], raw[len(raw.rstrip()) :]
        self.md.append(f"{lead}{build(inner)}{trail}")


def _code_span(inner: str) -> str:
    """A code span of `inner`, fenced by more backticks than it holds in a row."""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(inner)), default=0) + 1)
    pad = " " if inner.startswith("`") or inner.endswith("`") else ""
    return f"{fence}{pad}{inner}{pad}{fence}"


def read_blocks(roots: list[LexborNode], base: str, markdown: bool) -> list[Block]:
    """The blocks of `roots`' subtrees, in document order."""
    reader = _Reader(base, markdown)
    for root in roots:
        if root.tag == "pre":
            reader.pre(root)
            continue
        reader.enter(root)
        node = root.child
        parents: list[LexborNode] = []
        while True:
            if node is None:
                if not parents:
                    break
                node = parents.pop()
                reader.leave(node)
                node = node.next
                continue
            if reader.enter(node):
                if node.child is not None:
                    parents.append(node)
                    node = node.child
                    continue
                reader.leave(node)
            node = node.next
        reader.leave(root)
    reader.flush()
    return reader.blocks


def _is_permalink(link: LexborNode) -> bool:
    """A link to a place in its own page marked by a symbol (a heading's "¶" or "#")."""
    href = link.attrs.get("href") or ""
    return href.startswith("#") and not any(char.isalnum() for char in link.text(deep=True))


def escape(text: str) -> str:
    """`text` with the characters markdown would read as markup escaped."""
    return _MD_ESCAPE.sub(r"\\\1", text)


def _start(node: LexborNode) -> int:
    try:
        return max(1, int(node.attributes.get("start") or 1))
    except ValueError:
        return 1


def _last_index(items: list[str], value: str) -> int:
    for index in range(len(items) - 1, -1, -1):
        if items[index] == value:
            return index
    return -1


def _absolute(base: str, href: str) -> str | None:
    if not href or href.startswith(("javascript:", "#", "data:")):
        return None
    try:
        url = urljoin(base, href)
    except ValueError:
        return None
    return url.replace(" ", "%20").replace(")", "%29").replace("(", "%28")
