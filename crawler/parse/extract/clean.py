"""What is never a page's main content, and how an element's class and id lean.

`strip_junk` removes, in place, what no reader reads as the page's words: scripts, styles,
forms' controls, embedded objects, hidden elements, and the landmarks a site's pages share
(navigation, asides, footers, page headers, dialogs, search). `Names` reads the class and id of
every block element as readability does: words that name boilerplate (comment, share, sidebar,
related, cookie, newsletter...) count against it, words that name content (article, body,
content, entry, post, story, text) for it; `strip_unlikely` removes those leaning to
boilerplate. `strip_link_lists` removes the containers of the chosen content that are mostly
links. All are site-agnostic: no rule names a site.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from typing import Any

from selectolax.lexbor import LexborNode

__all__ = [
    "BLOCKS",
    "Names",
    "is_junk",
    "link_density",
    "strip_junk",
    "strip_link_lists",
    "strip_unlikely",
    "unlikely_share",
]

_JUNK_TAGS = (
    "script", "style", "noscript", "template", "svg", "math", "iframe", "frame", "object",
    "embed", "canvas", "video", "audio", "button", "input", "select", "textarea", "option",
    "nav", "aside", "footer", "header", "dialog", "menu", "head", "link", "meta", "figcaption",
)  # fmt: skip
# Landmark roles of what a site's pages share, and what is not shown.
_JUNK_ROLES = frozenset((
    "navigation", "banner", "contentinfo", "complementary", "search", "dialog", "alertdialog",
    "menu", "menubar", "toolbar", "tablist",
))  # fmt: skip
_JUNK_TAG_SET = frozenset(_JUNK_TAGS)
# one selector of tags and attributes, the attributes' values judged in Python: lexbor
# matching [role~=x i] and [style*=y i] alternatives on every element cost ~3x more
_JUNK_CSS = f"{', '.join(_JUNK_TAGS)}, [role], [hidden], [aria-hidden], [style]"
_NOT_SHOWN = ("display:none", "visibility:hidden")
_KEEP_HEADER_CSS = "header p"  # a <header> holding paragraphs holds content (a blog's post)

# readability's lists, grown with the boilerplate of today's pages (consent, newsletters),
# matched against the parts of a class or id name (split on anything not a letter and at
# camelCase: "star-rating", "ratingBox", "rating2" name a rating; "Integrating-Equations", a
# documentation section's id, does not). A word matches a part it starts ("comments",
# "sharebar", "subscribe"); one of _GLUED also a part it ends ("postcomments", "mainmenu"):
# words that no English word ends with ("rating", "related", "modal", "respond" are left out:
# "generating", "unrelated", "multimodal", "correspond"); one of _WHOLE only a whole part ("ad"
# is not "address"). Words with a space are runs of parts ("side bar", "read more").
_NEGATIVE = (
    "comment", "disqus", "reply", "replies", "respond", "share", "sharing", "social", "sidebar",
    "side bar", "widget", "related", "recommend", "promo", "sponsor", "advert", "banner",
    "cookie", "consent", "gdpr", "newsletter", "subscri", "signup", "sign up", "popup", "modal",
    "overlay", "breadcrumb", "pagination", "pager", "footer", "masthead", "menu", "navbar",
    "toolbar", "skip", "hidden", "byline", "tags", "keywords", "caption", "credit", "rating",
    "read more", "readmore", "more stories", "outbrain", "taboola", "trending", "popular",
    "jump", "tagline", "slogan", "author", "profile", "komment", "teaser",
)  # fmt: skip
_WHOLE = ("ad", "ads", "bio")
_GLUED = (
    "comment", "comments", "disqus", "share", "sharing", "social", "sidebar", "widget",
    "widgets", "banner", "cookie", "cookies", "newsletter", "popup", "breadcrumb",
    "breadcrumbs", "pagination", "pager", "footer", "menu", "menus", "navbar", "toolbar",
    "byline", "readmore", "outbrain", "taboola", "teaser",
)  # fmt: skip
# words naming navigation whatever content word they are compounded with: "mainmenu",
# "main-nav", "page-breadcrumbs" (sqlite3-doc's menu was text, its "main" outweighing "menu")
_MENUS = ("menu", "navbar", "main nav", "mainnav", "breadcrumb")
_POSITIVE = (
    "article", "body", "content", "entry", "main", "page", "post", "story", "text", "blog",
    "prose", "paragraph",
)  # fmt: skip


class _PartsPatterns:
    """Finding words in names written as lowercase parts a space apart, as regexes the engine
    runs fast: each a leading space (it skips to the spaces) then the words as a trie (one
    branch a character, not one a word); the words ending a part are looked for in the
    reversed names, so that they start one."""

    __slots__ = ("ending", "starting")

    def __init__(
        self, words: tuple[str, ...], whole: tuple[str, ...] = (), glued: tuple[str, ...] = ()
    ) -> None:
        self.starting = re.compile(" " + _trie([*words, *(f"{word} " for word in whole)]))
        self.ending = re.compile(" " + _trie([word[::-1] for word in glued])) if glued else None

    def matched(self, parts: str, lines: list[int]) -> set[int]:
        """The indices of the names (lines of `parts`, ending at `lines`) holding a word."""
        found = {bisect_right(lines, match.start()) for match in self.starting.finditer(parts)}
        if self.ending is not None:
            last = len(parts) - 1
            backwards = parts[::-1]
            found.update(
                bisect_right(lines, last - m.start()) for m in self.ending.finditer(backwards)
            )
        return found


def _trie(words: list[str]) -> str:
    """A regex matching a prefix of a string that is one of `words` (a word another one
    starts with is the shorter one: a match is all that is asked, not its end)."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        if "" in node:
            return ""
        branches = [re.escape(char) + build(node[char]) for char in sorted(node)]
        return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"

    return build(tree)


_NEGATIVE_RE = _PartsPatterns(_NEGATIVE, _WHOLE, _GLUED)
_MENUS_RE = _PartsPatterns(_MENUS, glued=("menu", "menus", "navbar", "breadcrumb"))
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_NOT_LETTERS = re.compile(r"[^a-z\n]+")
_LINE = re.compile("\n")


def name_parts(names: str) -> str:
    """Class and id names (one element's a line) as their lowercase parts, each part between
    spaces: "starRating widget-2" gives " star rating widget "."""
    split = _NOT_LETTERS.sub(" ", _CAMEL.sub(" ", names).lower())
    return " " + split.replace("\n", " \n ") + " "


def strip_junk(root: LexborNode) -> None:
    """Remove from `root`'s subtree what is never main content (the last first: none is
    inside a removed one when it goes; `root` itself stays)."""
    root_id = root.mem_id
    for node in reversed(root.css(_JUNK_CSS)):
        if node.mem_id == root_id:
            continue
        tag = node.tag
        if tag in _JUNK_TAG_SET:
            if tag != "header" or node.css_first(_KEEP_HEADER_CSS) is None:
                node.decompose()
        elif tag not in ("html", "body") and _is_junk(node.attributes):
            node.decompose()


def is_junk(node: LexborNode) -> bool:
    """Whether `node` is never main content (its tag, role or hiding)."""
    return node.tag in _JUNK_TAG_SET or _is_junk(node.attributes)


def _is_junk(attrs: dict[str, str | None]) -> bool:
    """Whether an element's attributes hide it, or give it a role of what pages share."""
    role = attrs.get("role")
    if role and not _JUNK_ROLES.isdisjoint(role.lower().split()):
        return True
    if "hidden" in attrs or (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = attrs.get("style")
    if style:
        style = style.lower().replace(" ", "")
        return any(rule in style for rule in _NOT_SHOWN)
    return False


class Names:
    """The class and id leanings of a page's elements, read in one pass: `weights`, by lexbor
    node (`mem_id`), readability's class weight of each element whose class or id leans (-25
    naming boilerplate, +25 naming content, both can apply); `unlikely`, in document order, the
    elements that name boilerplate only (not body, article or main)."""

    __slots__ = ("lengths", "unlikely", "weights")

    def __init__(self, root: LexborNode) -> None:
        nodes = root.css(_NAMED_CSS)
        names = []
        for node in nodes:
            attrs = node.attrs
            name = f" {attrs.get('class') or ''} {attrs.get('id') or ''} "
            # one element's names a line (a class attribute may span lines)
            names.append(name.replace("\n", " ") if "\n" in name else name)
        # every word looked for at once in all the names (str.find for the content words, the
        # parts patterns for the others), not a regex an element: 0.5 ms a page instead of 6;
        # each name lowercased on its own, as lowercasing may lengthen a name ("\u0130" is two
        # characters lowercase) and `starts` must follow
        lowered = [name.lower() for name in names]
        joined = "\n".join(lowered)
        starts = list(accumulate((len(name) + 1 for name in lowered), initial=0))
        parts = name_parts("\n".join(names))
        lines = [found.start() for found in _LINE.finditer(parts)]
        negative = _NEGATIVE_RE.matched(parts, lines)
        positive = _holders(joined, starts, _POSITIVE)  # content words: anywhere in a name
        positive -= _MENUS_RE.matched(parts, lines)  # a main menu is a menu
        self.weights: dict[int, int] = {}
        self.unlikely: list[LexborNode] = []
        self.lengths: tuple[int, list[tuple[LexborNode, int]]] | None = None
        for index in sorted(negative | positive):
            node = nodes[index]
            weight = (-25 if index in negative else 0) + (25 if index in positive else 0)
            self.weights[node.mem_id] = weight
            if weight < 0 and node.tag not in _NEVER_UNLIKELY:
                self.unlikely.append(node)


def _holders(joined: str, starts: list[int], words: tuple[str, ...]) -> set[int]:
    """The indices of the names (starting at `starts` in `joined`) holding one of `words`."""
    found: set[int] = set()
    for word in words:
        at = joined.find(word)
        while at >= 0:
            index = bisect_right(starts, at) - 1
            found.add(index)
            at = joined.find(word, starts[index + 1])  # on from the next name
    return found


# the elements whose names count: blocks and containers (an inline element's class does not
# make its paragraph boilerplate, and there are many: 0.48 -> ~0.3 ms a page)
_NAMED_CSS = (
    ":is(div, section, article, aside, main, ul, ol, dl, table, td, form, p, li):is([class], [id])"
)
_NEVER_UNLIKELY = frozenset(("html", "body", "article", "main"))
_MOSTLY = 0.6  # an unlikely element holding this share of the body's text is kept


def _unlikely(body: LexborNode, names: Names) -> tuple[int, list[tuple[LexborNode, int]]]:
    """The body's text length, and the unlikely elements with their text lengths, but those
    that wrap blocks holding most of the text (a site that names its article's wrapper oddly;
    a single block named like boilerplate goes whatever it holds: a mirror's banner on a page
    of few words)."""
    if names.lengths is None:
        total = len(body.text(deep=True))
        found = [(node, len(node.text(deep=True))) for node in names.unlikely]
        names.lengths = (
            total,
            [(node, n) for node, n in found if n < _MOSTLY * total or not _has_blocks(node)],
        )
    return names.lengths


BLOCKS = frozenset((
    "p", "div", "section", "article", "table", "ul", "ol", "dl", "pre", "blockquote", "h1", "h2",
    "h3", "h4", "h5", "h6", "form", "figure", "main",
))  # fmt: skip
"""The blocks a container is scored through (and an element named like boilerplate that wraps
them is a wrapper, not a banner)."""


def _has_blocks(node: LexborNode) -> bool:
    """Whether `node` wraps blocks (a wrapper named oddly), rather than being one (a banner)."""
    child = node.child
    while child is not None:
        if child.tag in BLOCKS:
            return True
        child = child.next
    return False


def unlikely_share(body: LexborNode, names: Names) -> float:
    """An upper bound of the share of the body's text `strip_unlikely` removes (nested
    elements counted twice)."""
    total, kept = _unlikely(body, names)
    return sum(n for _, n in kept) / total if total else 0.0


def strip_unlikely(body: LexborNode, names: Names) -> None:
    """Remove the elements whose class or id names boilerplate (comments, share bars, related
    stories, cookie banners...), unless one holds most of the page's text, the last first."""
    for node, _ in reversed(_unlikely(body, names)[1]):
        node.decompose()


def link_density(node: LexborNode, text_length: int | None = None) -> float:
    """The share of `node`'s text inside links (0 for an element without text)."""
    length = len(node.text(deep=True).strip()) if text_length is None else text_length
    if length == 0:
        return 0.0
    if node.css_first("a") is None:  # most paragraphs: lexbor stops at the first link
        return 0.0
    linked = sum(len(link.text(deep=True).strip()) for link in node.css("a"))
    return min(1.0, linked / length)


_LISTS_CSS = "ul, ol, dl, table, div, section, form, figure, p"
_LINK_HEAVY = 0.5  # a container whose text is more than this share links is left out


_LIST_MAX_CHARS = 5000  # a longer container is not weighed (each weighing reads its links)
_LINK_PARAGRAPH = 0.8  # a paragraph that is links only ("Related: ...", "Read more ...")


def strip_link_lists(roots: list[LexborNode], selector: str = _LISTS_CSS) -> list[str]:
    """Remove from the main content the containers that are mostly links (a related-stories
    list, a tag cloud, a table of contents) and the paragraphs that are links only, the
    innermost first: a section whose list of links goes keeps its paragraphs. Returns the
    text removed, in document order (what a page made of links only has to say)."""
    removed: list[str] = []
    for root in roots:
        root_id = root.mem_id
        for node in reversed(root.css(selector)):
            limit = _LINK_PARAGRAPH if node.tag == "p" else _LINK_HEAVY
            if node.mem_id != root_id and node.css_first("a") is not None:
                length = len(node.text(deep=True).strip())
                if 0 < length <= _LIST_MAX_CHARS and link_density(node, length) > limit:
                    removed.append(node.text(deep=True, separator=" "))
                    node.decompose()
    removed.reverse()
    return removed
