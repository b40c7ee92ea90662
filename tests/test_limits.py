"""Limits across a resume (`crawler.limits`): `crawl --state` grown step by step with
--max-pages and max_depth, against the fixture site, as a user runs it (a subprocess)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crawler.fixture import FixtureSite
from crawler.urls import canonicalize


@pytest.fixture
async def site() -> AsyncIterator[FixtureSite]:
    async with FixtureSite(crawl_delay=0.0, slow=0.05) as site:
        yield site


def write_config(site: FixtureSite, tmp: Path, **crawl: int) -> Path:
    """One worker: each page's links are admitted in the order a single crawl finds them."""
    resolve = ", ".join(f'"{h}" = "127.0.0.1"' for h in site.resolve)
    extra = "".join(f"{k} = {v}\n" for k, v in crawl.items())
    path = tmp / "c.toml"
    path.write_text(
        f"[crawl]\nconcurrency = 1\n{extra}"
        "[politeness]\ndelay = 0.0\nbackoff_base = 0.05\n"
        f"[fetch]\nresolve = {{ {resolve} }}\n"
        "[output]\nprogress_interval = 0.0\n"
    )
    return path


def crawl_args(site: FixtureSite, tmp: Path, state: str, out: str, *extra: str) -> list[str]:
    seeds = [site.url("site-a.test", "/")]
    return [*seeds, "--config", str(tmp / "c.toml"), "--state", str(tmp / state),
            "-o", str(tmp / out), *extra]  # fmt: skip


async def crawl(site: FixtureSite, tmp: Path, *extra: str, state: str = "state",
                out: str = "out.jsonl") -> tuple[int, str]:  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawler.cli", *crawl_args(site, tmp, state, out, *extra),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


def keys(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        key = canonicalize(json.loads(line)["url"])
        assert key is not None
        out.append(key)
    return out


def limit_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("crawl: resuming with ")]


async def test_a_10_page_crawl_resumed_with_max_pages_20_equals_a_20_page_crawl(
    site: FixtureSite, tmp_path: Path
) -> None:
    write_config(site, tmp_path)
    code, err = await crawl(site, tmp_path, "--max-pages", "10")
    assert code == 0, err
    assert len(keys(tmp_path / "out.jsonl")) == 10
    code, err = await crawl(site, tmp_path, "--max-pages", "20")
    assert code == 0, err
    assert "started with other settings" not in err
    (line,) = limit_lines(err)
    assert line.startswith("crawl: resuming with max_pages 10 -> 20 (10 URLs admitted so far, "
                           "up to 10 more); it was reached: ")  # fmt: skip
    assert "links kept for it are offered again" in line
    grown = keys(tmp_path / "out.jsonl")
    assert len(grown) == len(set(grown)) == 20  # nothing fetched twice
    code, err = await crawl(site, tmp_path, "--max-pages", "20", state="s20", out="o20.jsonl")
    assert code == 0, err
    assert set(grown) == set(keys(tmp_path / "o20.jsonl"))
