"""crawler.engine.gctune: the collector's young threshold during a crawl, and the command's exit."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from crawler.engine.gctune import YOUNG_THRESHOLD, young_threshold


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    yield saved
    gc.set_threshold(*saved)


def test_the_threshold_is_raised_then_restored(thresholds: tuple[int, int, int]) -> None:
    gc.set_threshold(700, 10, 10)
    with young_threshold():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_is_never_lowered() -> None:
    gc.set_threshold(50_000, 5, 5)
    with young_threshold(10_000):
        assert gc.get_threshold() == (50_000, 5, 5)
    assert gc.get_threshold() == (50_000, 5, 5)


def test_a_change_made_meanwhile_is_kept() -> None:
    gc.set_threshold(700, 10, 10)
    with young_threshold(10_000):
        gc.set_threshold(2_000, 10, 10)  # someone else's setting: not undone
    assert gc.get_threshold() == (2_000, 10, 10)


def test_nested_uses_restore_the_first_setting() -> None:
    gc.set_threshold(700, 10, 10)
    with young_threshold(10_000):
        with young_threshold(10_000):  # already that high: left alone
            assert gc.get_threshold() == (10_000, 10, 10)
        assert gc.get_threshold() == (10_000, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_command_exits_with_its_status_and_no_last_collection() -> None:
    # `crawl` = crawler.cli.main:entry: main()'s status, and every object frozen out of the
    # collection interpreter shutdown runs (atexit handlers still run)
    code = (
        "import atexit, gc, sys\n"
        "import crawler.cli.main as cli\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "cli.main = lambda **kw: 7\n"
        "cli.entry()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 7
    assert out.stdout.strip() == "frozen True"
