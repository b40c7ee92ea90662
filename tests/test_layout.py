"""The package's layout holds: one folder per concern, layered, with no import circles.

Every import counts, wherever it is (module level, inside a function, under TYPE_CHECKING): a
module that names another's types depends on it. ``from package import module`` is an import of
that module, not of the package's ``__init__``.
"""

from __future__ import annotations

import ast
import importlib
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "crawler"

# Each folder may import from folders of lower layers only (and from its own). Lowest first.
LAYERS: list[set[str]] = [
    {"errors", "_exports"},
    {"urls", "testing"},  # URL syntax and keys; the fixture site and the simulated clock
    {"sieve", "content", "focus"},  # the seen test, page dedup, scoring: pure structures
    {"fetch", "parse"},  # a request and its response; a response's markup
    {"frontier", "output", "render"},  # where a URL waits; results, JSON Lines, WARC; a browser
    {"config", "state"},  # the typed config and its checks; the crawl's state on disk
    {"cluster"},  # one crawl shared by several processes through Redis
    {"admission"},  # what enters the frontier (in memory, or shared)
    {"engine"},  # the crawl: workers, pages, stats
    {"observe"},  # metrics and the report: they read every component's figures
    {"cli"},  # the `crawl` command
]
LAYER = {folder: i for i, folder_set in enumerate(LAYERS) for folder in folder_set}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the crawler modules it imports (anywhere in its source)."""
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the package
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                subs = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods}
                found.update(subs if len(subs) == len(node.names) else {base, *subs})
        graph[name] = {m for m in found if m in mods and m != name}
    return graph


def folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_folder_has_a_layer_and_the_top_level_holds_a_handful_of_files() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders | {"errors", "_exports"} == set(LAYER), "a folder and its layer, one each"
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "_exports.py", "errors.py"]


def test_no_import_circles_between_modules() -> None:
    graph = imports(modules())
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        pytest.fail(f"an import circle: {' -> '.join(exc.args[1])}")


def test_no_folder_imports_one_of_a_higher_layer() -> None:
    upward = []
    for module, targets in imports(modules()).items():
        here = folder(module)
        if not here:  # crawler/__init__: the public API, re-exported from every folder
            continue
        for target in targets:
            there = folder(target)
            assert there, f"{module} imports the top-level package (its public API)"
            if there != here and LAYER[there] >= LAYER[here]:
                upward.append(f"{module} -> {target}")
    assert not upward, "imports of a folder of the same or a higher layer:\n" + "\n".join(upward)


def test_the_checks_see_a_circle_and_an_upward_import(tmp_path: Path) -> None:
    # the walk itself: a function-level and a TYPE_CHECKING import both count
    (tmp_path / "a.py").write_text("def f():\n    from crawler.b import x\n")
    (tmp_path / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from crawler.a import f\n"
    )
    graph = imports({"crawler.a": tmp_path / "a.py", "crawler.b": tmp_path / "b.py"})
    assert graph == {"crawler.a": {"crawler.b"}, "crawler.b": {"crawler.a"}}
    with pytest.raises(CycleError):
        tuple(TopologicalSorter(graph).static_order())


@pytest.mark.parametrize(
    "folder", sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
)
def test_each_folder_exports_what_it_lists(folder: str) -> None:
    package = importlib.import_module(f"crawler.{folder}")
    assert (package.__doc__ or "").strip(), "a folder says what its modules hold"
    for name in package.__all__:
        assert getattr(package, name) is not None, f"crawler.{folder}.{name}"
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018 - the lazy lookup refuses what it does not list


MAX_FUNCTION_LINES = 80  # a function reads on one screen


def long_functions(path: Path) -> list[str]:
    """The functions (and methods) of `path` over MAX_FUNCTION_LINES lines, decorators apart."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_no_function_is_over_80_lines() -> None:
    found = [line for path in modules().values() for line in long_functions(path)]
    assert not found, "split these functions into named steps:\n" + "\n".join(found)


def test_the_length_check_sees_a_long_method(tmp_path: Path) -> None:
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "m.py").write_text(f"class C:\n    def f(self):\n{body}\n    def g(self):\n"
                                   "        pass\n")  # fmt: skip
    assert [line.split()[1] for line in long_functions(tmp_path / "m.py")] == ["f"]


MAX_INIT_PARAMETERS = 10  # a component is built from a few settings objects, not field by field


def wide_constructors(path: Path) -> list[str]:
    """The ``__init__`` methods of `path` over MAX_INIT_PARAMETERS parameters (`self` apart;
    ``*args`` and ``**kwargs`` count one each)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                a = node.args
                count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) - 1
                count += (a.vararg is not None) + (a.kwarg is not None)
                if count > MAX_INIT_PARAMETERS:
                    found.append(f"{path}:{node.lineno} {cls.name} ({count} parameters)")
    return found


@pytest.mark.slow
def test_no_constructor_takes_over_10_parameters() -> None:
    found = [line for path in modules().values() for line in wide_constructors(path)]
    assert not found, "pass these the parts they need as one object:\n" + "\n".join(found)


def test_the_width_check_sees_a_wide_constructor(tmp_path: Path) -> None:
    wide = ", ".join(f"a{i}" for i in range(MAX_INIT_PARAMETERS - 1))
    (tmp_path / "m.py").write_text(
        f"class Wide:\n    def __init__(self, {wide}, *, b, **more):\n        pass\n"
        f"class Fits:\n    def __init__(self, {wide}, b):\n        pass\n"
        "def __init__(a, b, c, d, e, f, g, h, i, j, k, l):\n    pass\n"
    )
    assert [line.split()[1] for line in wide_constructors(tmp_path / "m.py")] == ["Wide"]
