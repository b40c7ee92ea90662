"""Start-up cost: what the `crawl` command and `import crawler` load before the first request.

Each check runs in a fresh interpreter (a subprocess), where sys.modules shows what an import
really pulled in.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest

import crawler

# Used by some crawls only: imported when first needed, never by `import crawler.cli.main`.
HEAVY = ("numpy", "rich", "warcio", "defusedxml", "crawler.testing.fixture", "crawler.content",
         "crawler.output.warc", "crawler.parse.sitemaps", "redis", "crawler.cluster")  # fmt: skip


def loaded_after(code: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of `modules` are in sys.modules after running `code` in a fresh interpreter."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(out.stdout.splitlines()[-1])
    return loaded


def test_the_crawl_command_imports_none_of_the_optional_parts() -> None:
    assert loaded_after("import crawler.cli.main") == []


def test_importing_the_package_imports_no_module_until_a_name_is_used() -> None:
    assert loaded_after("import crawler", ("crawler.engine.crawler", "aiohttp", *HEAVY)) == []
    assert loaded_after("from crawler import Crawler", ("crawler.engine.crawler",)) == [
        "crawler.engine.crawler"
    ]


def test_the_modules_come_when_a_crawl_uses_them() -> None:
    # the probe's own imports pull in what --warc, --demo and content dedup use
    code = (
        "import crawler.cli.main, crawler.output.warc, crawler.testing.fixture; "
        "from crawler.content import fingerprint"
    )
    assert loaded_after(code, ("warcio", "numpy", "crawler.testing.fixture")) == [
        "warcio", "numpy", "crawler.testing.fixture",
    ]  # fmt: skip


# What a crawl with rendering or page text uses: a default crawl never imports it.
PAGE_TEXT_AND_RENDER = ("crawler.parse.extract.page", "crawler.render.pool",
                        "crawler.render.page", "crawler.render.auto")  # fmt: skip
_PAGE = "b'<html><title>t</title><body><h1>A</h1><p>Some text.</p><a href=b>b</a></body></html>'"


@pytest.mark.slow
def test_a_default_crawl_imports_neither_page_text_nor_rendering() -> None:
    code = (
        "from crawler.engine.crawler import Crawler\n"
        "from crawler.parse.markup import parse_markup\n"
        f"Crawler()\nm = parse_markup({_PAGE}, 'http://a.test/', 'text/html')\n"
        "assert m.hrefs == ('b',) and m.title == 't', m"
    )
    assert loaded_after(code, PAGE_TEXT_AND_RENDER) == []


@pytest.mark.slow
def test_page_text_and_rendering_are_imported_by_the_crawls_that_use_them() -> None:
    text = (
        "from crawler.parse.markup import parse_markup\n"
        f"m = parse_markup({_PAGE}, 'http://a.test/', 'text/html', main='text')\n"
        "assert 'Some text.' in m.main_text, m.main_text"
    )
    assert loaded_after(text, PAGE_TEXT_AND_RENDER) == ["crawler.parse.extract.page"]
    render = (  # the browser starts at the first page rendered: building it launches nothing
        "from crawler import Config, Crawler\n"
        "c = Crawler(Config().override('render', enabled=True, mode='auto'))\n"
        "assert c.rendering is not None"
    )
    assert set(loaded_after(render, PAGE_TEXT_AND_RENDER)) >= {
        "crawler.render.pool", "crawler.render.page",
    }  # fmt: skip


def _threads_after_numpy(env: dict[str, str]) -> tuple[str | None, int]:
    """The crawl command's OPENBLAS_NUM_THREADS and the process's threads once numpy is loaded
    (`crawl --version` runs the command's entry, then numpy is imported as a crawl does)."""
    code = (
        "import os, sys\nsys.argv = ['crawl', '--version']\nfrom crawler.cli import command\n"
        "try:\n    command.entry()\nexcept SystemExit:\n    pass\nimport numpy\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')))"
    )
    env = {**{k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}, **env}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    value, threads = out.stdout.split()[-2:]
    return (None if value == "None" else value), int(threads)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads counted in /proc")
def test_the_crawl_command_starts_no_blas_threads() -> None:
    assert _threads_after_numpy({}) == ("1", 1)  # numpy's OpenBLAS pool would spin idle
    assert _threads_after_numpy({"OPENBLAS_NUM_THREADS": "2"})[0] == "2"  # the user's kept


def test_every_public_name_resolves_to_its_module_object() -> None:
    from crawler.engine.crawler import Crawler
    from crawler.urls.canonical import canonicalize

    for name in crawler.__all__:
        assert getattr(crawler, name) is not None, name
    assert crawler.Crawler is Crawler
    assert crawler.canonicalize is canonicalize
    assert set(crawler.__all__) <= set(dir(crawler))


def test_every_crawler_error_is_public() -> None:
    """A library user catches what `crawl()` raises from the package itself: every
    CrawlerError subclass (StateError, OutputError... were only in their modules)."""
    import crawler.cli.main  # every module a crawl loads, so that each subclass is defined
    import crawler.errors

    def subclasses(cls: type) -> set[type]:
        return {cls}.union(*(subclasses(sub) for sub in cls.__subclasses__()))

    errors = {c.__name__ for c in subclasses(crawler.errors.CrawlerError)} - {"_Slow"}
    assert errors >= {"StateError", "OutputError", "TooSlow", "CertificateError"}
    assert errors <= set(crawler.__all__)
    for name in errors:
        assert issubclass(getattr(crawler, name), crawler.CrawlerError), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Crawlr'"):
        crawler.Crawlr  # noqa: B018
    with pytest.raises(ImportError):
        from crawler import Crawlr  # type: ignore[attr-defined]  # noqa: F401


def test_the_sieve_imports_numpy_at_its_first_big_batch() -> None:
    code = (
        "from crawler.sieve import Sieve\nimport sys\ns = Sieve(1000, 0.01)\n"
        "s.add_many([f'k{i}' for i in range(10)])\nbefore = 'numpy' in sys.modules\n"
        "s.add_many([f'u{i}' for i in range(100)])\nassert not before, 'numpy before the batch'"
    )
    assert loaded_after(code, ("numpy",)) == ["numpy"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.slow
def test_the_summary_is_plain_text_off_a_terminal_and_a_rich_table_on_one() -> None:
    code = (
        "import io\nfrom crawler.engine.crawler import Crawler\n"
        "from crawler.cli.progress import print_summary\nstream = io.StringIO()\n"
        "print_summary(Crawler().stats_dict(), stream)\n"
        "assert 'pages (results)' in stream.getvalue()"
    )
    assert loaded_after(code, ("rich",)) == []
    from crawler.cli.progress import print_summary, summary_rows
    from crawler.engine.crawler import Crawler

    stats = Crawler().stats_dict()
    plain, terminal = io.StringIO(), _Terminal()
    print_summary(stats, plain)
    print_summary(stats, terminal)
    for name, value in summary_rows(stats):  # the same rows either way
        assert re.search(rf"{re.escape(name.strip())}\s*│\s*{re.escape(value)}", plain.getvalue())
        assert name.strip() in terminal.getvalue() and value in terminal.getvalue()
    assert "┌" not in plain.getvalue() and "┌" in terminal.getvalue()  # rich's box
