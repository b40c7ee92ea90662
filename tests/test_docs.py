"""The docs hold together: every relative link in README.md, CHANGELOG.md and docs/*.md leads to
a file that exists (and to a heading of it when it names one), every docs page is in the index,
every flag of `crawl --help` has its row in docs/cli.md, every key of config.toml its row in
docs/configuration.md (under its section, with config.toml's default), and the Python examples
compile and import only what `crawler` exports."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *DOCS.glob("*.md")])
OWN_PAGES = [p for p in PAGES if p.name not in ("BENCHMARKS.md", "DESIGN.md")]

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def prose(text: str) -> str:
    """`text` without its fenced code blocks (a `# comment` in a shell block is no heading)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercased, punctuation dropped, blanks to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    result: set[str] = set()
    for heading in HEADING.findall(prose(page.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def links(page: Path) -> list[str]:
    return [t for t in LINK.findall(prose(page.read_text())) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_the_slugs_are_githubs() -> None:
    assert slug("`max_pages` is a fetch budget") == "max_pages-is-a-fetch-budget"
    assert slug("Per-host rules (`[[hosts]]`)") == "per-host-rules-hosts"
    assert slug("The Sieve: have I seen this URL?") == "the-sieve-have-i-seen-this-url"
    assert slug("robots.txt") == "robotstxt"


def test_every_page_is_in_the_index() -> None:
    index = {(DOCS / t.partition("#")[0]).resolve() for t in links(DOCS / "README.md")}
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p not in index]
    assert not missing
    readme = {(ROOT / t.partition("#")[0]).resolve() for t in links(ROOT / "README.md")}
    assert (DOCS / "README.md").resolve() in readme
    assert (ROOT / "CHANGELOG.md").resolve() in readme


def test_the_readmes_documentation_index_names_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    index = section(readme, "## Documentation")
    named = {(ROOT / t.partition("#")[0]).resolve() for t in LINK.findall(index)}
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p not in named]
    assert not missing


def test_the_quickstart_says_what_make_test_installs_and_how_long_it_takes() -> None:
    setup = section((DOCS / "quickstart.md").read_text(), "## Set up")
    assert "`redis-server` and `chromium`" in setup and "a few minutes" in setup


def test_the_readme_is_a_guide() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "make demo" in readme and "make test" in readme  # .ci/run calls `make test`
    assert "from crawler import Config, Crawler" in readme


def section(text: str, heading: str) -> str:
    """The text under `heading` (a line of its own) up to the next heading of its level."""
    level = heading.split(" ", 1)[0]
    after = text.split(f"\n{heading}\n", 1)[1]
    return re.split(rf"\n{level} ", after, maxsplit=1)[0]


def first_cells(text: str) -> list[str]:
    """The first cell of each table row of `text` (header and rule rows left out)."""
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    return [row.split(" | ", 1)[0][2:] for row in rows[2:]] if rows else []


def help_flags() -> set[str]:
    crawl = Path(sys.executable).parent / "crawl"
    proc = subprocess.run([str(crawl), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    options = proc.stdout.split("\noptions:", 1)[1]
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", options))


def test_every_flag_has_one_row_in_the_cli_page() -> None:
    cli = (DOCS / "cli.md").read_text()
    rows = first_cells(section(cli, "## Flags").split("\n### ", 1)[0])
    documented = [flag for cell in rows for flag in re.findall(r"`(--?[A-Za-z][\w-]*)", cell)]
    flags = help_flags()
    assert {"--max-pages", "-o", "--overwrite-output", "-s", "--version"} <= flags
    assert flags - set(documented) == set(), "flags of crawl --help missing from docs/cli.md"
    assert sorted(documented) == sorted(set(documented)), "a flag documented twice"
    assert set(documented) - flags == set(), "docs/cli.md documents a flag crawl does not have"


def config_keys() -> dict[str, dict[str, Any]]:
    """config.toml's sections and their keys with their defaults, [[hosts]] from its example."""
    text = (ROOT / "config.toml").read_text()
    sections: dict[str, dict[str, Any]] = tomllib.loads(text)
    example = text.split("# [[hosts]]\n", 1)[1]
    hosts = [line[2:] for line in example.splitlines() if re.match(r"# \w+ = ", line)]
    sections["hosts"] = dict.fromkeys(tomllib.loads("\n".join(hosts)))
    return sections


def test_every_config_key_has_one_row_with_its_default() -> None:
    page = (DOCS / "configuration.md").read_text()
    sections = config_keys()
    assert {"crawl", "politeness", "fetch", "scope", "sieve", "hosts"} <= set(sections)
    for name, keys in sections.items():
        heading = f"## [[{name}]]" if name == "hosts" else f"## [{name}]"
        table = section(page, heading)
        rows = {
            cells[0].strip("`"): cells[1]
            for line in table.splitlines()
            if line.startswith("| `")
            for cells in [line[2:].split(" | ")]
        }
        documented = first_cells(table)
        assert sorted(documented) == sorted(set(documented)), f"{heading}: a key twice"
        assert set(rows) == set(keys), f"{heading}: keys differ from config.toml's"
        for key, default in keys.items():
            cell = rows[key]
            if default is not None and re.fullmatch(r"`[^`]+`", cell):
                literal = tomllib.loads(f"v = {cell.strip('`')}")["v"]
                assert literal == default, f"[{name}] {key}: {cell} is not config.toml's"
    # the reference is one page: no other page has a table of keys and defaults
    for other in OWN_PAGES:
        if other.name != "configuration.md":
            assert "| key | default |" not in other.read_text(), other.name


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.MULTILINE | re.DOTALL)


def test_the_python_examples_compile_and_import_what_crawler_exports() -> None:
    import crawler

    blocks = [(p, code) for p in OWN_PAGES for code in python_blocks(p)]
    assert any(p.name == "README.md" for p, _ in blocks)
    for page, code in blocks:
        tree = ast.parse(code, filename=str(page))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "crawler":
                for alias in node.names:
                    assert hasattr(crawler, alias.name), f"{page.name}: crawler.{alias.name}"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("crawler."):
                module = __import__(node.module or "", fromlist=["_"])
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{page.name}: {node.module}.{alias.name}"
