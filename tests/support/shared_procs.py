"""Real `crawl --redis` processes sharing one crawl of the fixture site: their config, start,
end and output (tests/cluster: one Redis node and a Redis Cluster)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from crawler.testing.fixture import FixtureSite
from crawler.urls.canonical import UrlNormalizer

# The delay is kept between claims (Redis's clock); the server sees it give or take how long each
# process took from its claim to its request (scheduling on a shared 2-core machine: three crawl
# processes, Redis and this test's server): judged with no tight gap (tests/support/spacing.py).
# Without shared politeness the gaps would be ~0.
DELAY = 0.15
URLS = UrlNormalizer()


def write_config(
    site: FixtureSite, path: Path, *, lease_ttl: float = 0.0, delay: float = DELAY
) -> Path:
    resolve = ", ".join(f'"{h}" = "{a}"' for h, a in site.resolve.items())
    path.write_text(
        f"[crawl]\nconcurrency = 4\n[politeness]\ndelay = {delay}\nbackoff_base = 0.05\n"
        f"[fetch]\nresolve = {{ {resolve} }}\n"
        f"[cluster]\nlease_ttl = {lease_ttl}\nheartbeat = 0.5\n"
    )
    return path


async def start(
    site: FixtureSite, config: Path, url: str, out: Path, *extra: str, crawl_id: str = "procs"
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawler.cli", *site.seeds, "--config", str(config),
        "--redis", url, "--crawl-id", crawl_id, "-o", str(out), *(extra or ["-q"]),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def finish(procs: list[asyncio.subprocess.Process], seconds: float) -> list[str]:
    """Wait for the processes; their stderr. On a timeout, kill them and fail with their logs."""
    try:
        async with asyncio.timeout(seconds):  # read every pipe at once: none may fill up
            return [
                err.decode() for _, err in await asyncio.gather(*(p.communicate() for p in procs))
            ]
    except TimeoutError:
        for p in procs:
            if p.returncode is None:
                p.kill()
        logs = []
        for p in procs:  # what each said before it was killed: the way to the hang
            assert p.stderr is not None
            logs.append((await p.stderr.read()).decode(errors="replace")[-3000:])
        pytest.fail(f"crawl processes still running after {seconds} s:\n" + "\n---\n".join(logs))


def keys_of(path: Path) -> list[str]:
    """The canonical keys of the results in a JSON Lines file (a cut last line is left out)."""
    lines = path.read_text().splitlines() if path.exists() else []
    keys = [URLS.canonicalize(json.loads(line)["url"]) for line in lines if line.endswith("}")]
    return [k for k in keys if k is not None]


async def kill_one_mid_crawl(
    site: FixtureSite, config: Path, url: str, tmp: Path
) -> tuple[list[str], list[str]]:
    """Two processes share the crawl; one is killed (SIGKILL) after 5 results and the other
    finishes it: (the victim's keys, the other's keys)."""
    victim_out, other_out = tmp / "victim.jsonl", tmp / "other.jsonl"
    victim = await start(site, config, url, victim_out)
    other = await start(site, config, url, other_out, "-v")
    async with asyncio.timeout(60):
        while len(keys_of(victim_out)) < 5:
            assert victim.returncode is None, "the victim finished before the kill"
            await asyncio.sleep(0.02)
    os.kill(victim.pid, signal.SIGKILL)
    await victim.wait()
    (err,) = await finish([other], 120)
    assert other.returncode == 0, err
    return keys_of(victim_out), keys_of(other_out)
