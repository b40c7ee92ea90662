"""The main content of a parsed page, written out as text and as markdown (see the package)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler.parse.extract.blocks import Block, read_blocks
from crawler.parse.extract.choose import choose
from crawler.parse.extract.clean import (
    Names,
    is_junk,
    strip_junk,
    strip_link_lists,
    strip_unlikely,
    unlikely_share,
)  # fmt: skip
from crawler.parse.extract.markdown import as_markdown, escape
from crawler.parse.extract.navbars import strip_nav_bars

__all__ = ["MAX_CHARS", "PageText", "as_markdown", "as_text", "extract", "limit_for"]

MAX_CHARS = 8 << 20
"""The most characters `text` and `markdown` hold, each (8 Mi)."""
_RATIO = 2  # and at most this many characters a byte of the page's HTML,
_FLOOR = 64 << 10  # but this many whatever the page's size


@dataclass(frozen=True, slots=True)
class PageText:
    """`text`: the main content as plain text; `markdown`: as CommonMark (None unless asked);
    `words`: the main content's text as lexbor reads it, every text node a space apart and no
    layout (what content dedup fingerprints and the focus scorer reads: the same whichever
    output was asked for); `truncated`: `text` and `markdown` stop before the main content's
    end, to stay within `limit_for` the page."""

    text: str
    markdown: str | None = None
    words: str = ""
    truncated: bool = False


def limit_for(size: int) -> int:
    """The most characters `text` and `markdown` hold for a page of `size` bytes of HTML."""
    return min(MAX_CHARS, max(_FLOOR, _RATIO * size))


def extract(
    tree: LexborHTMLParser, url: str, *, markdown: bool = False, layout: bool = True
) -> PageText:
    """The main content of a parsed page (`url` makes its links absolute); changes `tree`.
    `layout=False`: the main content's `words` only (`text` holds them too), without the walk
    that lays out its blocks nor the weighing of its link lists (dedup and focus need no
    more; on python3.11-doc's pages ~1.5 and ~1.9 ms less). `words` are read before the link
    lists go, so they are the same either way."""
    title = tree.css_first("title")
    title_text = title.text(deep=True) if title is not None else ""
    body = _scope(tree)
    if body is None:
        return PageText("", "" if markdown else None)
    strip_junk(body)
    strip_nav_bars(body, title_text)
    names = Names(body)
    # readability's second try: when the elements named like boilerplate hold half the page,
    # a copy of the tree is kept, and read whole if the page without them says little (a
    # documentation page whose sections are named "cookie-policy", "comments-api", ...)
    spare = tree.clone() if unlikely_share(body, names) >= _RISKY_SHARE else None
    strip_unlikely(body, names)
    roots = choose(body, names.weights)
    words = _words(roots)
    said = len(_collapse(words))
    if spare is not None and said < _SHORT_CHARS and (whole := _scope(spare)) is not None:
        strip_junk(whole)
        strip_nav_bars(whole, title_text)
        again = choose(whole, Names(whole).weights)
        again_words = _words(again)
        # the second try only when it says much more: a near-empty page's other short texts
        # (a site's tagline, a mirror's banner) are no better than what the first found
        if len(_collapse(again_words)) >= max(_SHORT_CHARS, 2 * said):
            roots, words = again, again_words
    if not layout:  # what dedup and focus read: the chosen elements' words, lists of links
        return PageText(words, None, words)  # included (a hub page's table of contents)
    # the containers' links weighed for the layout only (~1.9 ms on a big python3.11-doc page)
    links_only = strip_link_lists(roots)
    limit = limit_for(len(tree.raw_html))
    blocks, cut = read_blocks(roots, url, markdown, limit)
    if blocks and blocks[0].kind in ("h1", "h2") and _is_title(blocks[0].text, title_text):
        del blocks[0]  # the page's title, which the result carries as `title`
    _drop_orphan_headings(blocks)
    if not blocks and links_only:
        texts = [text for text in map(_collapse, links_only) if text]
        blocks = [Block("p", text, escape(text) if markdown else "") for text in texts]
    text, text_cut = as_text(blocks, limit)
    md, md_cut = as_markdown(blocks, limit) if markdown else (None, False)
    return PageText(text, md, words, cut or text_cut or md_cut)


_RISKY_SHARE = 0.5
_SHORT_CHARS = 200  # words under this, whitespace collapsed: the page said little


def _words(roots: list[LexborNode]) -> str:
    return " ".join(root.text(deep=True, separator=" ") for root in roots)


_MAIN_CSS = "main, [role~=main i]"


def _scope(tree: LexborHTMLParser) -> LexborNode | None:
    """Where the main content is chosen: the page's one <main> (or role=main) element when it
    marks one (the HTML standard's landmark; one that is hidden or a navigation does not
    count), else its body. Nothing outside it is read."""
    body = tree.body or tree.root
    if body is None:
        return None
    marked = body.css(_MAIN_CSS)
    if len(marked) == 1 and marked[0].tag not in ("body", "html") and not is_junk(marked[0]):
        return marked[0]
    return body


def _level(kind: str) -> int:
    """A heading block's level (1-6), 7 for any other block."""
    return int(kind[1]) if len(kind) == 2 and kind[0] == "h" else 7


def _drop_orphan_headings(blocks: list[Block]) -> None:
    """Remove the headings that introduce nothing: followed by a heading of their level or
    higher, or by the end (what they headed, a list of links, went as boilerplate)."""
    following = 0  # the level of the block after the one looked at (0: the end)
    for index in range(len(blocks) - 1, -1, -1):
        level = _level(blocks[index].kind)
        if level < 7 and following <= level:
            del blocks[index]
            continue
        following = level


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _is_title(heading: str, title: str) -> bool:
    """Whether a heading repeats the page's <title> (which often adds the site's name): the
    words of one a run of the other's (a title "T" is not in "Chapter 21")."""
    heading_words = _WORD.findall(heading.casefold())
    title_words = _WORD.findall(title.casefold())
    short, long = sorted((heading_words, title_words), key=len)
    if not short:
        return False
    return any(long[at : at + len(short)] == short for at in range(len(long) - len(short) + 1))


_WORD = re.compile(r"\w+")


_TIGHT = frozenset(("li", "row"))  # kinds whose runs are one line apart, not a blank line


def as_text(blocks: list[Block], limit: int | None = None) -> tuple[str, bool]:
    """Plain text: blocks a blank line apart, list items and rows a line apart; and whether it
    stopped before the last block to stay within `limit` characters."""
    parts: list[str] = []
    size = 0
    previous = ""
    for block in blocks:
        separator = ""
        if parts:
            separator = "\n" if block.kind in _TIGHT and block.kind == previous else "\n\n"
        size += len(separator) + len(block.text)
        if limit is not None and size > limit:
            return "".join(parts), True
        parts += (separator, block.text)
        previous = block.kind
    return "".join(parts), False
