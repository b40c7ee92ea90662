"""Choosing a page's main content: the element its paragraphs crowd into.

Readability's scoring (Arc90, Mozilla's Readability.js), on lexbor's tree:

- Every paragraph-like element (p, pre, td, blockquote, and a div, section or article holding
  text but no block of its own) with at least 25 characters scores 1 + its commas + one point
  a 100 characters (at most 3); so does the text loose between a container's blocks (scored as
  the container's own paragraph, as readability wraps such runs). Its parent gets the score,
  its grandparent half, and the three next ancestors a third, a quarter, a fifth: the element
  the article's paragraphs share gathers the most.
- An ancestor starts from its tag's prior (div +5, article +8; lists and headings less) and
  its class weight (`crawler.parse.extract.clean.Names`), and its score is scaled by 1 - its
  link density (the share of its text inside links): a menu's or a related-stories list's
  paragraphs are links. Only the best unscaled candidates are scaled.
- A page marking its article body once (schema.org `itemprop=articleBody`) is read there.
  Otherwise the best element is corrected as readability does (an ancestor holding three close
  runners-up: an article in chunks; a parent scoring more), and its siblings join it when they
  score at least a fifth of it, are paragraphs of at least 80 characters with few links, or
  are the list, table or code a chosen sibling leads to.

The main content is returned as the list of elements to read, in document order. A page where
nothing scores (a short page, a list of links) gives its body.
"""

from __future__ import annotations

from selectolax.lexbor import LexborNode

from crawler.parse.extract.clean import BLOCKS, link_density

__all__ = ["choose"]

_PARAGRAPHS = "p, pre, td, blockquote, div, section, article"
_WRAPPERS = frozenset(("div", "section", "article"))  # paragraphs when no block inside
_PRIOR = {
    "div": 5, "article": 8, "main": 5, "section": 3, "pre": 3, "td": 3, "blockquote": 3,
    "address": -3, "ol": -3, "ul": -3, "dl": -3, "dd": -3, "dt": -3, "li": -3, "form": -3,
    "h1": -5, "h2": -5, "h3": -5, "h4": -5, "h5": -5, "h6": -5, "th": -5,
}  # fmt: skip
_ANCESTORS = 5  # levels an element's score reaches
_MIN_CHARS = 25
_SIBLING_SHARE = 0.2


def choose(body: LexborNode, weights: dict[int, int]) -> list[LexborNode]:
    """The elements of `body` that make its main content, in document order (`[body]` when
    no element stands out); `weights`: class weights by `mem_id` (`clean.Names`)."""
    scores: dict[int, float] = {}
    nodes: dict[int, LexborNode] = {}
    for para in body.css(_PARAGRAPHS):
        ancestor = para.parent
        if para.tag in _WRAPPERS:
            has_block, loose = _children(para)
            if has_block:  # scored through the blocks inside it, and its own loose text:
                text = loose.strip()  # readability wraps such runs in paragraphs
                ancestor = para
            else:
                text = para.text(deep=True).strip()
        else:
            text = para.text(deep=True).strip()
        if len(text) < _MIN_CHARS:
            continue
        score = 1.0 + text.count(",") + min(len(text) / 100, 3.0)
        level = 0
        while ancestor is not None and level < _ANCESTORS:
            key = ancestor.mem_id
            if key not in scores:
                if ancestor.tag in ("html", "#document", None):
                    break
                nodes[key] = ancestor
                scores[key] = _PRIOR.get(ancestor.tag or "", 0) + weights.get(key, 0)
            scores[key] += score / (1 if level == 0 else 2 if level == 1 else level * 3)
            ancestor = ancestor.parent
            level += 1
    if not scores:
        return [body]
    # scaling by 1 - link density only lowers a score: read the link density of the best
    # unscaled candidates only, until the next cannot beat the best scaled one
    best_key, best_score = body.mem_id, float("-inf")
    for key in sorted(scores, key=scores.__getitem__, reverse=True):
        score = scores[key]
        if score <= best_score:
            break
        scaled = score * (1 - link_density(nodes[key]))
        scores[key] = scaled
        if scaled > best_score:
            best_key, best_score = key, scaled
    marked = _marked(body)
    if marked is not None:
        return [marked]
    best = nodes.get(best_key, body)
    while best.tag in _ITEM_PARTS and best.parent is not None:  # a definition's description,
        best = best.parent  # a list item, a cell: read with its list or table (its terms)
        best_score = scores.get(best.mem_id, best_score)  # widened from there on
    best, best_score = _widen(best, best_score, scores)
    return _with_siblings(best, best_score, scores)


_ITEM_PARTS = frozenset(("dd", "dt", "li", "td", "th", "tr", "tbody", "thead", "tfoot"))
_MARKED_CSS = "[itemprop~=articleBody i]"  # schema.org's article body (microdata)
_MARKED_MIN_CHARS = 100


def _marked(body: LexborNode) -> LexborNode | None:
    """The one element the page marks as its article's body (schema.org microdata), when it
    holds text that is not mostly links."""
    marked = body.css(_MARKED_CSS)
    if len(marked) != 1:
        return None
    text = marked[0].text(deep=True).strip()
    if len(text) < _MARKED_MIN_CHARS or link_density(marked[0], len(text)) > 0.5:
        return None
    return marked[0]


_ALTERNATIVES = 3  # readability: this many close runners-up under one ancestor make it the best
_CLOSE = 0.75


def _widen(
    best: LexborNode, best_score: float, scores: dict[int, float]
) -> tuple[LexborNode, float]:
    """readability's two corrections of the best element: an ancestor that holds several of
    its close runners-up (an article in several chunks), and a parent that scores more."""
    runners = [
        key for key, score in scores.items()
        if key != best.mem_id and score >= _CLOSE * best_score
    ]  # fmt: skip
    if len(runners) >= _ALTERNATIVES:
        wanted = set(runners)
        ancestor = best.parent
        while ancestor is not None and ancestor.tag not in ("body", "html"):
            inside = sum(1 for node in ancestor.css(_PARAGRAPHS) if node.mem_id in wanted)
            if inside >= _ALTERNATIVES:
                best = ancestor
                best_score = max(best_score, scores.get(ancestor.mem_id, best_score))
                break
            ancestor = ancestor.parent
    last = best_score
    parent = best.parent
    while parent is not None and parent.tag not in ("body", "html"):
        score = scores.get(parent.mem_id)
        if score is not None:
            if score < last / 3:
                break
            if score > last:
                return parent, score
            last = score
        parent = parent.parent
    return best, best_score


def _children(node: LexborNode) -> tuple[bool, str]:
    """Whether one of `node`'s children is a block (lexbor's css() would match `node` too), and
    the text of its text children (the loose text between its blocks)."""
    has_block = False
    loose: list[str] = []
    child = node.child
    while child is not None:
        tag = child.tag
        if tag == "-text":
            loose.append(child.text_content or "")
        elif tag in BLOCKS:
            has_block = True
        child = child.next
    return has_block, " ".join(loose)


def _with_siblings(
    best: LexborNode, best_score: float, scores: dict[int, float]
) -> list[LexborNode]:
    """`best` and the siblings that belong with it, in document order."""
    parent = best.parent
    if parent is None or best.tag == "body":
        return [best]
    threshold = max(10.0, best_score * _SIBLING_SHARE)
    best_names = best.attributes.get("class")
    chosen: list[LexborNode] = []
    follows = False  # whether the element sibling before this one was chosen
    sibling = parent.child
    while sibling is not None:
        if sibling.is_element_node:
            if sibling.mem_id == best.mem_id or _belongs(sibling, threshold, scores, best_names):
                chosen.append(sibling)
                follows = True
            elif follows and sibling.tag in _FOLLOWERS and link_density(sibling) < 0.5:
                chosen.append(sibling)  # the list, table or code a chosen paragraph leads to
            else:
                follows = False
        sibling = sibling.next
    return _with_headings(chosen)


_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6", "hgroup"))
_HEADING_MAX_CHARS = 300


def _with_headings(chosen: list[LexborNode]) -> list[LexborNode]:
    """`chosen` with the headings right before each of its runs (a page's or a section's
    heading is its content's, though outside the element its paragraphs crowd into)."""
    picked = {node.mem_id for node in chosen}
    out: list[LexborNode] = []
    for node in chosen:
        leading: list[LexborNode] = []
        sibling = node.prev
        while sibling is not None and sibling.mem_id not in picked:
            if sibling.is_element_node:
                if not _is_heading(sibling):
                    break
                leading.append(sibling)
                picked.add(sibling.mem_id)
            elif (sibling.text_content or "").strip():
                break
            sibling = sibling.prev
        out += reversed(leading)
        out.append(node)
    return out


def _is_heading(node: LexborNode) -> bool:
    """A heading, or a wrapper holding only headings (a title block)."""
    if node.tag in _HEADINGS:
        return True
    if node.tag not in ("div", "header"):
        return False
    text = " ".join(node.text(deep=True).split())
    if not text or len(text) > _HEADING_MAX_CHARS:
        return False
    headings = node.css("h1, h2, h3, h4, h5, h6")
    return (
        bool(headings)
        and len(text) == sum(len(" ".join(h.text(deep=True).split())) + 1 for h in headings) - 1
    )


_FOLLOWERS = frozenset(("ul", "ol", "dl", "table", "pre", "blockquote"))


def _belongs(
    sibling: LexborNode, threshold: float, scores: dict[int, float], best_names: str | None
) -> bool:
    bonus = 0.2 * threshold if best_names and sibling.attributes.get("class") == best_names else 0
    if scores.get(sibling.mem_id, float("-inf")) + bonus >= threshold:
        return True
    if sibling.tag != "p":
        return False
    text = sibling.text(deep=True).strip()
    density = link_density(sibling, len(text))
    if len(text) >= 80:
        return density < 0.25
    return len(text) > 0 and density == 0 and text.endswith((".", "!", "?", ":", '"', "”"))
