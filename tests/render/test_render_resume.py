"""`crawl --render --state DIR`: interrupted, then run again, it ends with every URL of the
rendered ground truth once; a crawl killed (-9) leaves no browser behind."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crawler.render.browser import process_tree
from crawler.testing.fixture import FixtureSite
from tests.support.procs import output_keys, start, wait_for_lines, write_config
from tests.support.render import WATCHDOG, requires_browser

pytestmark = requires_browser

MARKER = b"--sieve-crawler-browser="


@pytest.fixture
async def app_site() -> AsyncIterator[FixtureSite]:
    async with FixtureSite(crawl_delay=0.05, slow=0.1, scripted=True) as site:
        yield site


def browsers(pids: set[int] | None = None) -> set[int]:
    """Chromium processes launched by a crawl (their marker switch), on this machine, of `pids`
    only when given (another test's crawl may run a browser meanwhile)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (pids is None or int(entry.name) in pids):
            with contextlib.suppress(OSError):
                if MARKER in (entry / "cmdline").read_bytes():
                    found.add(int(entry.name))
    return found


@pytest.mark.slow
async def test_an_interrupted_rendering_crawl_resumes_to_the_whole_ground_truth(
    app_site: FixtureSite, tmp_path: Path
) -> None:
    site = app_site
    write_config(site, tmp_path / "c.toml")
    expected = site.expected(rendered=True) | site.refused(rendered=True)
    proc = await start(site, tmp_path, "--render")
    await wait_for_lines(tmp_path, 6, proc)
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 130, err
    assert sum(output_keys(tmp_path).values()) < len(expected)
    proc = await start(site, tmp_path, "--render")
    _, err = await asyncio.wait_for(proc.communicate(), WATCHDOG)
    assert proc.returncode == 0, err
    keys = output_keys(tmp_path)
    assert set(keys) == expected
    assert max(keys.values()) == 1


@pytest.mark.slow
async def test_a_crawl_killed_leaves_no_browser_behind(
    app_site: FixtureSite, tmp_path: Path
) -> None:
    write_config(app_site, tmp_path / "c.toml")
    proc = await start(app_site, tmp_path, "--render")
    await wait_for_lines(tmp_path, 3, proc)
    mine = browsers(set(process_tree(proc.pid)))  # this crawl's, not another test's
    assert mine
    proc.kill()
    await proc.wait()
    async with asyncio.timeout(30):  # its pipe closed, the browser ends
        while browsers(mine):  # noqa: ASYNC110 - a process's end, polled: no event tells it
            await asyncio.sleep(0.1)
