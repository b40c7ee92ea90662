"""Pause, resume and crash safety, end to end: `crawl --state` in a subprocess, interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
from aiohttp import web

from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.output.results import CrawlResult
from crawler.state.crawlstate import CrawlState
from crawler.testing.fixture import FixtureSite
from tests.support.procs import CONCURRENCY, output_keys, start, wait_for_lines, write_config
from tests.support.server import serve, site_config


async def run_to_end(site: FixtureSite, tmp: Path, *extra: str) -> tuple[int, str]:
    proc = await start(site, tmp, *extra)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


@pytest.fixture
async def slow_site() -> object:
    async with FixtureSite(crawl_delay=0.1, slow=0.1) as site:
        yield site


@pytest.mark.slow
async def test_sigint_then_resume_equals_uninterrupted_crawl(
    slow_site: FixtureSite, tmp_path: Path
) -> None:
    site = slow_site
    write_config(site, tmp_path / "c.toml")
    proc = await start(site, tmp_path, quiet=False)
    await wait_for_lines(tmp_path, 8, proc)
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130, err
    # the command as invoked, ready to paste
    assert f"resume with: {sys.executable} -m crawler.cli " in err.decode()
    # said last, below the summary: on screen when the command ends
    last = err.decode().rstrip().splitlines()[-1]
    assert last.startswith("crawl: interrupted; state saved in") and "resume with:" in last
    assert "crawl summary" in err.decode()
    before = sum(output_keys(tmp_path).values())
    assert 8 <= before < len(site.expected() | site.refused())
    code, err2 = await run_to_end(site, tmp_path)
    assert code == 0, err2
    keys = output_keys(tmp_path)
    assert set(keys) == site.expected() | site.refused()
    assert max(keys.values()) == 1, "a URL was written twice after a graceful stop"


async def test_sigterm_exits_143(slow_site: FixtureSite, tmp_path: Path) -> None:
    write_config(slow_site, tmp_path / "c.toml")
    proc = await start(slow_site, tmp_path)
    await wait_for_lines(tmp_path, 3, proc)
    proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 143


@pytest.mark.slow
async def test_kill_9_at_random_points_loses_nothing(
    slow_site: FixtureSite, tmp_path: Path
) -> None:
    site = slow_site
    write_config(site, tmp_path / "c.toml")
    rng = random.Random(9)
    kills = 0
    for _ in range(3):
        proc = await start(site, tmp_path)
        await asyncio.sleep(rng.uniform(0.4, 1.6))
        if proc.returncode is not None:
            break
        proc.kill()
        await proc.wait()
        kills += 1
    assert kills >= 2
    code, err = await run_to_end(site, tmp_path)
    assert code == 0, err
    keys = output_keys(tmp_path)
    assert set(keys) == site.expected() | site.refused(), "an admitted URL was lost"
    repeats = sum(n - 1 for n in keys.values())
    # only fetches in flight at a crash may be repeated (workers x crashes, at most)
    assert repeats <= kills * CONCURRENCY


@pytest.mark.slow
async def test_changed_config_is_refused_then_fresh_starts_over(
    site: FixtureSite, tmp_path: Path
) -> None:
    write_config(site, tmp_path / "c.toml")
    code, err = await run_to_end(site, tmp_path, "--max-pages", "5")
    assert code == 0, err
    db = sqlite3.connect(tmp_path / "state" / "state.sqlite")
    assert db.execute("SELECT value FROM meta WHERE name = 'status'").fetchone() == ("finished",)
    db.close()
    config = tmp_path / "c.toml"  # a limit may change (tests/test_limits.py), the scope not
    config.write_text(config.read_text() + "[scope]\nmax_url_length = 1000\n")
    code, err = await run_to_end(site, tmp_path, "--max-pages", "5")
    assert code == 2
    assert "scope.max_url_length" in err
    assert "--fresh" in err
    code, err = await run_to_end(site, tmp_path, "--max-pages", "9", "--fresh")
    assert code == 0, err


async def test_corrupt_state_is_an_error_not_a_fresh_start(
    site: FixtureSite, tmp_path: Path
) -> None:
    write_config(site, tmp_path / "c.toml")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "state.sqlite").write_bytes(b"\0garbage" * 512)
    code, err = await run_to_end(site, tmp_path)
    assert code == 2
    assert "corrupt" in err
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()


def saturate(crawler: Crawler) -> None:
    """Every bit of the Sieve's only stage set: it answers "seen" for every key."""
    for stage in crawler.sieve._stages:
        stage.bits.setall(1)
    assert "http://never.test/" in crawler.sieve


@pytest.mark.slow
async def test_exact_tier_rescues_false_positives_of_a_saturated_sieve(
    site: FixtureSite,
) -> None:
    config = site_config(site).override("sieve", capacity=1000, error_rate=0.01, confirm="exact")
    async with Crawler(config) as crawler:
        saturate(crawler)
        keys = {r.key async for r in crawler.crawl(site.seeds)}
    assert keys == site.expected() | site.refused()
    stats = crawler.stats_dict()["sieve"]
    assert stats["confirm"] == "exact"
    # every URL taken in was a false positive of the saturated filter, and rescued
    assert stats["rescued_false_positives"] >= len(keys)
    assert stats["measured_false_positive_rate"] == 1.0


async def test_without_the_exact_tier_a_saturated_sieve_loses_urls(site: FixtureSite) -> None:
    config = site_config(site).override("sieve", capacity=1000, error_rate=0.01)
    async with Crawler(config) as crawler:
        saturate(crawler)
        keys = {r.key async for r in crawler.crawl(site.seeds)}
    assert keys == set()  # even the seeds look "seen"


def test_confirm_defaults() -> None:
    assert Config().sieve.confirm == "auto"


async def test_library_crawl_closes_its_state(site: FixtureSite, tmp_path: Path) -> None:
    from crawler.engine.components import settings
    from crawler.state.crawlstate import CrawlState

    config = site_config(site, max_pages=4)
    state = CrawlState.open(tmp_path / "s", settings(config))
    async with Crawler(config, state=state) as crawler:
        async for _ in crawler.crawl(site.seeds):
            pass
    db = sqlite3.connect(tmp_path / "s" / "state.sqlite")
    assert db.execute("SELECT value FROM meta WHERE name = 'status'").fetchone() == ("finished",)
    assert db.execute("SELECT COUNT(*), SUM(done) FROM urls").fetchone() == (4, 4)
    db.close()
    assert state.finished


def _spends_budget(result: CrawlResult) -> bool:
    return result.error is None or result.error.split(":", 1)[0] not in ("robots", "host_down")


@pytest.mark.parametrize("how", ["raises", "breaks"])
async def test_a_result_not_taken_is_not_in_the_saved_stats(
    site: FixtureSite, tmp_path: Path, how: str
) -> None:
    """A consumer that fails on a result (its output full) or breaks out after it leaves that
    URL pending; the saved stats must not count it either, or a resumed max_pages crawl, which
    counts its budget from them, stops a page early."""
    from crawler.engine.components import settings
    from crawler.state.crawlstate import CrawlState

    config = site_config(site, max_pages=6, concurrency=1)
    taken: list[CrawlResult] = []
    state = CrawlState.open(tmp_path / "s", settings(config))
    with contextlib.suppress(OSError):
        async with (
            Crawler(config, state=state) as crawler,
            contextlib.aclosing(crawler.crawl(site.seeds)) as results,
        ):
            async for result in results:
                if sum(map(_spends_budget, taken)) == 3 and _spends_budget(result):
                    if how == "raises":
                        raise OSError(28, "No space left on device")
                    taken.append(result)  # taken, but the crawl is not told so
                    break
                taken.append(result)
    saved = CrawlState.open(tmp_path / "s", settings(config))
    stats = saved.stats()
    acknowledged = len(taken) - (how == "breaks")  # the consumer came back for the next one
    assert stats is not None and stats["pages"] == acknowledged
    async with Crawler(config, state=saved) as crawler:
        async for result in crawler.crawl(site.seeds):
            taken.append(result)
    fetched = {r.key for r in taken if _spends_budget(r)}
    assert len(fetched) == 6  # the budget, not one page short


async def test_a_resumed_crawl_keeps_max_pages_per_host(tmp_path: Path) -> None:
    # the home links 4 pages, each of which links 3 more: a cap of 5 URLs a host is the home and
    # its 4 links. Interrupted after 3 results, the resumed run counted only the URLs still
    # pending, and took 2 more (7 pages for a cap of 5)
    async def handler(request: web.Request) -> web.Response:
        p = request.path
        hrefs = [f"/a{i}" for i in range(4)] if p == "/" else [f"{p}-{i}" for i in range(3)]
        links = "".join(f'<a href="{h}">x</a>' for h in hrefs)
        return web.Response(text=f"<title>{p}</title>{links}", content_type="text/html")

    config = Config().override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
    config = config.override("crawl", concurrency=1).override("scope", max_pages_per_host=5)
    fetched: list[str] = []
    async with serve(handler) as port:
        for run in range(2):
            state = CrawlState.open(tmp_path / "state", settings(config))
            async with (
                Crawler(config, state=state) as crawler,
                contextlib.aclosing(crawler.crawl([f"http://127.0.0.1:{port}/"])) as crawl,
            ):
                async for result in crawl:
                    fetched.append(result.url.split("/", 3)[3])
                    if run == 0 and len(fetched) == 3:
                        break
    assert sorted(set(fetched)) == ["", "a0", "a1", "a2", "a3"]
