"""Helpers shared by several test modules (moved from test_resume.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path

from crawler.testing.fixture import FixtureSite
from crawler.urls.canonical import canonicalize

CONCURRENCY = 4


def write_config(site: FixtureSite, path: Path) -> Path:
    resolve = ", ".join(f'"{h}" = "127.0.0.1"' for h in site.resolve)
    path.write_text(
        f"[crawl]\nconcurrency = {CONCURRENCY}\n"
        "[politeness]\ndelay = 0.0\nip_delay = 0.0\nbackoff_base = 0.05\n"
        f"[fetch]\nresolve = {{ {resolve} }}\n"
        "[output]\nprogress_interval = 0.0\n"
    )
    return path


async def start(
    site: FixtureSite, tmp: Path, *extra: str, quiet: bool = True
) -> asyncio.subprocess.Process:
    args = [*site.seeds, "--config", str(tmp / "c.toml"), "--state", str(tmp / "state"),
            "-o", str(tmp / "out.jsonl"), *["-q"] * quiet, *extra]  # fmt: skip
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawler.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


def output_keys(tmp: Path) -> Counter[str]:
    keys: Counter[str] = Counter()
    for line in (tmp / "out.jsonl").read_text().splitlines():
        key = canonicalize(json.loads(line)["url"])  # every line is whole JSON
        assert key is not None
        keys[key] += 1
    return keys


async def wait_for_lines(tmp: Path, n: int, proc: asyncio.subprocess.Process) -> None:
    out = tmp / "out.jsonl"
    async with asyncio.timeout(30):
        while not out.exists() or out.read_text().count("\n") < n:
            assert proc.returncode is None, "the crawl ended before it could be interrupted"
            await asyncio.sleep(0.02)
