"""Page text on documentation sites: word recall and precision against each page's own body.

    python -m bench text --part docs           (BENCH_QUICK=1: 20 pages a site)

One site per documentation generator, each a Debian package (installed when missing and the
bench runs as root): Sphinx (python3.11-doc), DocBook (postgresql-doc-15), texinfo
(octave-doc: GNU Octave's manual), Doxygen (libstdc++-12-doc's API reference) and MkDocs
(mkdocs-doc). At most `PAGES` pages a site, a fixed sample (seed 33).

The reference is the page's body without its navigation, "navigation" defined by structure
only, the same for every site (no class name, no site's rule):

1. what is not shown: script, style, noscript, template, hidden elements;
2. the landmarks: nav, header, footer and aside elements, and the roles navigation, banner,
   contentinfo, search and complementary;
3. the link bars at the body's edges, peeled from the top and from the bottom: the first (last)
   element child that holds text is looked at; a *bar* (at most 60 words, a link in it, no
   heading, code block or definition list, and at least a quarter of its words in links or
   one of next, previous, prev, up, home, top, contents, index) is removed and the next one
   looked at; a longer element is entered (its first / last child looked at); anything else
   ends the peeling.

This definition is the bench's own (bench code, not the extractor's rule, though both follow the
same idea: short blocks of sibling links at the edges): what else a page holds (a sidebar
without a landmark, a footer without one, an in-page table of contents) counts as body text.
Per page, over lowercased \\w+ words as multisets: recall = words in common / reference words,
precision = words in common / the text's words. Per site: the median of each, and the share of
pages under 85% recall.
"""

from __future__ import annotations

import random
import re
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser, LexborNode

from bench.corpus import ensure_docs, ensure_postgres_docs

__all__ = ["DOC_GENERATORS", "PAGES", "DocsSite", "docs_part", "reference", "scores"]

PAGES = 500
QUICK_PAGES = 20
SEED = 33
LOW = 0.85
_WORD = re.compile(r"\w+")
_HIDDEN = (
    "script, style, noscript, template, [hidden], [aria-hidden=true], nav, header, footer, "
    "aside, [role=navigation], [role=banner], [role=contentinfo], [role=search], "
    "[role=complementary]"
)
_NAV_WORDS = frozenset(
    ("next", "previous", "prev", "up", "home", "top", "contents", "index")
)  # fmt: skip
_BAR_WORDS = 60
_BAR_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class DocsSite:
    """A generator's site on disk: `ensure` returns its root (installing it when it can)."""

    generator: str
    package: str
    ensure: Callable[[], Path]

    def pages(self, limit: int) -> list[tuple[str, bytes]]:
        root = self.ensure()
        paths = sorted(path for path in root.rglob("*.html") if path.is_file())
        if len(paths) > limit:
            paths = sorted(random.Random(SEED).sample(paths, limit))
        return [(path.relative_to(root).as_posix(), path.read_bytes()) for path in paths]


def _installed(package: str, root: Path) -> Callable[[], Path]:
    def ensure() -> Path:
        if not root.is_dir():
            raise SystemExit(f"benchmark corpus missing: install the Debian package {package}")
        return root

    return ensure


DOC_GENERATORS = (
    DocsSite("Sphinx", "python3.11-doc", ensure_docs),
    DocsSite("DocBook", "postgresql-doc-15", ensure_postgres_docs),
    DocsSite("texinfo", "octave-doc", _installed("octave-doc", Path("/usr/share/doc/octave"))),
    DocsSite(
        "Doxygen",
        "libstdc++-12-doc",
        _installed("libstdc++-12-doc", Path("/usr/share/doc/gcc-12-base/libstdc++/user")),
    ),
    DocsSite("MkDocs", "mkdocs-doc", _installed("mkdocs-doc", Path("/usr/share/doc/mkdocs/html"))),
)


def words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def _is_bar(node: LexborNode, found: list[str]) -> bool:
    if len(found) > _BAR_WORDS or node.css_first("a[href]") is None:
        return False
    if node.css_first("h1, h2, h3, h4, h5, h6, pre, dl") is not None:
        return False
    linked = sum(len(_WORD.findall(a.text(deep=True))) for a in node.css("a[href]"))
    navigating = sum(1 for word in found if word.lower() in _NAV_WORDS)
    return linked + navigating >= _BAR_SHARE * len(found)


def _edge_child(node: LexborNode, first: bool) -> LexborNode | None:
    """The first (last) element child of `node` holding a word."""
    child = node.child if first else node.last_child
    while child is not None:
        if child.is_element_node and _WORD.search(child.text(deep=True)):
            return child
        child = child.next if first else child.prev
    return None


def _peel(body: LexborNode, first: bool) -> None:
    node: LexborNode | None = body
    while node is not None:
        child = _edge_child(node, first)
        if child is None:
            return
        found = _WORD.findall(child.text(deep=True))
        if _is_bar(child, found):
            child.decompose()  # and look at the new edge of the same parent
        elif len(found) > _BAR_WORDS and child.child is not None:
            node = child
        else:
            return


def reference(body: bytes) -> str:
    """The page's body text without its navigation (the module's definition)."""
    tree = LexborHTMLParser(body.decode("utf-8", "replace"))
    root = tree.body
    if root is None:
        return ""
    for node in reversed(root.css(_HIDDEN)):
        node.decompose()
    _peel(root, first=True)
    _peel(root, first=False)
    return root.text(deep=True, separator=" ")


def scores(text: str, truth: Counter[str]) -> tuple[float, float]:
    """(recall, precision) of `text`'s words against the reference's."""
    got = words(text)
    common = sum((got & truth).values())
    total = sum(got.values())
    return common / sum(truth.values()), (common / total if total else 0.0)


def docs_part(extract: Callable[[bytes, str], str], quick: bool) -> None:
    """The per-site table: recall and precision of `extract`'s text against the reference."""
    print("\n### Documentation sites: recall and precision against the body without navigation\n")
    print(
        "| generator | package | pages | recall median | pages under 85% recall | "
        "precision median | worst pages (recall) |"
    )
    print("|---|---|--:|--:|--:|--:|---|")
    for site in DOC_GENERATORS:
        rows: dict[str, tuple[float, float]] = {}
        for rel, body in site.pages(QUICK_PAGES if quick else PAGES):
            truth = words(reference(body))
            if sum(truth.values()) == 0:
                continue
            rows[rel] = scores(extract(body, f"http://{site.package}.test/{rel}"), truth)
        recalls = [recall for recall, _ in rows.values()]
        under = sum(1 for value in recalls if value < LOW) / len(rows)
        worst = sorted(rows, key=lambda rel: rows[rel][0])[:3]
        print(
            f"| {site.generator} | {site.package} | {len(rows)} | "
            f"{statistics.median(recalls):.3f} | {under:.1%} | "
            f"{statistics.median(p for _, p in rows.values()):.3f} | "
            + ", ".join(f"{rel} {rows[rel][0]:.2f}" for rel in worst)
            + " |",
            flush=True,
        )
