"""Rendering JavaScript: pages/s and memory of `crawl --render`, against the static crawl of the
same site and against crawlee-python's PlaywrightCrawler and scrapy-playwright.

The site (bench.render_site) serves every page twice on 127.0.0.1: script-driven (its links
exist only once an external script ran; a fetched JSON adds text after that) and static (the
same links in the HTML). Each crawler runs in its own process, one after the other, from the
first page to the last: 4 pages at once (4 tabs; 4 connections for the static crawl), delay 0,
images, fonts and media not loaded, robots.txt off. Every rendering crawler runs the same
Chromium (Debian's, `[render] browser`'s default).

- sieve-crawler static: `crawl` on the static pages (no browser).
- sieve-crawler --render: `crawl --render` on the script-driven pages, every request of the
  browser through the crawler's fetcher (the SSRF guard, caps, User-Agent) or refused.
- crawlee PlaywrightCrawler, scrapy-playwright (bench/render_peers.py): installed with pip in a
  venv of their own, bench/.cache/render-peers (made when missing); the browser's own network.

pages: results (every crawler must find the whole site); s: the process's life, browser start
included; peak PSS: the process and every process under it (Playwright's driver, Chromium's),
sampled every 0.25 s from /proc. BENCH_QUICK=1: 40 pages.

    python -m bench render        # or: python -m bench.bench_render [--pages N] [--no-peers]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.render_site import serve_site
from crawler.render import RenderUnavailable, find_browser
from crawler.render.browser import process_tree, pss

QUICK = bool(os.environ.get("BENCH_QUICK"))
PAGES = 40 if QUICK else 200
TABS = 4
HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".cache" / "render-peers"
PEER_PACKAGES = ("crawlee[playwright]>=1.0", "scrapy-playwright>=0.0.40")


@dataclass(slots=True)
class Row:
    name: str
    pages: int | None = None
    seconds: float = 0.0
    peak_pss: int = 0
    note: str = ""

    def line(self) -> str:
        if self.pages is None:
            return f"| {self.name} | - | - | - | - | {self.note} |"
        rate = self.pages / self.seconds if self.seconds else 0.0
        return (f"| {self.name} | {self.pages} | {self.seconds:.1f} | {rate:.2f} | "
                f"{self.peak_pss / 2**20:,.0f} | {self.note} |")  # fmt: skip


def tree_pss(root: int) -> int:
    """PSS in bytes of process `root` and all its descendants (0 for what /proc does not tell)."""
    return pss(process_tree(root))


async def measure(row: Row, argv: list[str], env: dict[str, str] | None = None) -> str:
    """Run `argv`, sampling its process tree's PSS; its stdout (the row's seconds and peak)."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env
    )
    reading = asyncio.ensure_future(proc.communicate())
    while not reading.done():
        row.peak_pss = max(row.peak_pss, tree_pss(proc.pid))
        await asyncio.wait([reading], timeout=0.25)
    out, err = reading.result()
    row.seconds = time.monotonic() - started
    if proc.returncode:
        row.note = f"exit {proc.returncode}: {err.decode(errors='replace').strip()[-300:]}"
    return out.decode(errors="replace")


async def ours(row: Row, url: str, tmp: Path, render: bool) -> None:
    stats = tmp / f"stats-{render}.json"
    argv = [sys.executable, "-m", "crawler.cli", url, "-q", "-O", str(tmp / f"out-{render}.jsonl"),
            "--stats", str(stats), "--delay", "0", "-s", "politeness.ip_concurrency=0",
            "--ignore-robots", "--concurrency", "8",
            "--per-host-concurrency", str(TABS), "--max-depth", "0",
            "-s", f"render.tabs={TABS}", *(["--render"] if render else [])]  # fmt: skip
    await measure(row, argv)
    if stats.exists():
        figures = json.loads(stats.read_text())
        row.pages = figures["pages"]
        if render and "render" in figures:
            r = figures["render"]
            row.note = (f"{r['rendered']} rendered; subresources: {r['subresources_fetched']} "
                        f"fetched, {r['subresources_cached']} from the crawl's cache, "
                        f"{r['subresources_refused']} refused; {r['browser_launches']} "
                        "browser")  # fmt: skip


def peers_python() -> tuple[Path | None, str]:
    """The peers' venv's python (made and filled with pip when missing), or None and why."""
    python = PEERS_VENV / "bin" / "python"
    if not python.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)],
                              capture_output=True, text=True)  # fmt: skip
        if made.returncode:
            return None, f"no venv: {made.stderr.strip()[-200:]}"
    check = subprocess.run([str(python), "-c", "import crawlee, scrapy_playwright"],
                           capture_output=True, text=True)  # fmt: skip
    if check.returncode:
        pip = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEER_PACKAGES],
                             capture_output=True, text=True)  # fmt: skip
        if pip.returncode:
            return None, f"pip install failed: {pip.stderr.strip()[-200:]}"
    return python, ""


async def peer(row: Row, python: Path, name: str, url: str, chromium: str, tmp: Path) -> None:
    env = {**os.environ, "CRAWLEE_STORAGE_DIR": str(tmp / "crawlee"), "CRAWLEE_PURGE_ON_START": "1"}
    env.pop("PYTHONPATH", None)
    out = await measure(row, [str(python), str(HERE / "render_peers.py"), name, url, chromium],
                        env)  # fmt: skip
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if lines:
        row.pages = json.loads(lines[-1])["pages"]


async def main(pages: int, with_peers: bool) -> None:
    try:
        chromium = find_browser()
    except RenderUnavailable as exc:
        print(f"no browser: {exc}")
        return
    rows = [Row("sieve-crawler, static (no browser)"), Row("sieve-crawler --render")]
    names = {"crawlee": "crawlee PlaywrightCrawler", "scrapy": "scrapy-playwright"}
    peers = [Row(title) for title in names.values()]
    python, why = peers_python() if with_peers else (None, "not run (--no-peers)")
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        async with serve_site(pages) as port:
            base = f"http://127.0.0.1:{port}"
            await ours(rows[0], f"{base}/static/page/0", tmp, render=False)
            await ours(rows[1], f"{base}/js/page/0", tmp, render=True)
            for row, name in zip(peers, names, strict=True):
                if python is None:
                    row.note = why
                    continue
                await peer(row, python, name, f"{base}/js/page/0", chromium, tmp)
                row.note = row.note or "the browser's own network"
    print(f"{pages} pages, {TABS} at once, Chromium {chromium}; {os.cpu_count()} cores\n")
    print("| crawler | pages | s | pages/s | peak PSS MiB | notes |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in [*rows, *peers]:
        print(row.line())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.pages, not args.no_peers))
