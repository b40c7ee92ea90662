"""Watching a crawl: live progress and the final summary, on stderr (stdout may carry JSONL).

On a terminal, a rich live line refreshes a few times a second; elsewhere (CI, a log file) a
plain timestamped line is written every `interval` seconds. Reporting only
reads the crawler's figures; it never touches the crawl itself. rich is imported only on a
terminal, for the live line and the summary table (~50 ms of import); elsewhere the summary is
plain aligned text.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.live import Live
    from rich.table import Table

    from crawler.engine.crawler import Crawler

__all__ = ["ProgressReporter", "progress_line", "summary_table"]


def progress_line(crawler: Crawler) -> str:
    """One line of the crawl's state: pages (results so far), rate, queue, hosts, errors, and
    the distinct URLs seen so far (the Sieve's estimate: found, not all fetched)."""
    s = crawler.stats
    rate = s.pages / s.elapsed if s.elapsed > 0 else 0.0
    parts = [f"pages {s.pages}", f"{rate:.1f}/s"]
    if crawler.frontier is not None:
        fs = crawler.frontier.stats
        parts.append(f"queued {fs.queued}")
        parts.append(f"in flight {fs.in_flight}")
        parts.append(f"hosts {fs.ready_hosts} ready/{fs.waiting_hosts} waiting")
    parts.append(f"errors {sum(s.errors.values())}")
    if (harvest := s.harvest_rate) is not None:  # a focused crawl
        parts.append(f"harvest {harvest:.0%}")
    figures = crawler.seen_figures()  # the shared Sieve's in a crawl through Redis
    kind = figures["kind"]
    which = "shared sieve" if figures.get("shared") else "sieve" if kind == "scalable" else kind
    approx, stages = figures["approx_items"], figures["stages"]
    parts.append(f"seen ~{approx:,.0f} URLs ({which}, {stages} stage{'s' * (stages != 1)})")
    return " | ".join(parts)


class ProgressReporter:
    """Runs beside a crawl (`async with ProgressReporter(crawler):`) and reports its progress."""

    __slots__ = ("_crawler", "_live", "_stream", "_task", "interval", "tty")

    def __init__(
        self, crawler: Crawler, stream: TextIO, *, interval: float = 10.0, tty: bool | None = None
    ) -> None:
        self._crawler = crawler
        self._stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.interval = interval
        self._task: asyncio.Task[None] | None = None
        self._live: Live | None = None

    async def __aenter__(self) -> ProgressReporter:
        if self.tty:
            from rich.console import Console
            from rich.live import Live
            from rich.text import Text

            console = Console(file=self._stream, stderr=True)
            self._live = Live(Text(""), console=console, transient=True, refresh_per_second=4)
            self._live.start()
        self._task = asyncio.create_task(self._run(), name="crawl-progress")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._live is not None:
            self._live.stop()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.25 if self.tty else self.interval)
            line = progress_line(self._crawler)
            if self._live is not None:
                from rich.text import Text

                self._live.update(Text(line))
            else:
                stamp = time.strftime("%H:%M:%S")
                self._stream.write(f"{stamp} progress: {line}\n")
                self._stream.flush()

    def __repr__(self) -> str:
        mode = "live" if self.tty else f"log every {self.interval}s"
        return f"<ProgressReporter {mode}>"


def summary_rows(stats: dict[str, Any], *, verbose: bool = False) -> list[tuple[str, str]]:
    """The final summary's (figure, value) rows: what a user acts on (pages and their answers,
    the rate, what was left out and why, the focus's harvest); a count of refusals that is zero
    is left out. `verbose` (`crawl -v`) adds the internals: each scope reason, the Sieve, the
    canonicalizer's memo. `--stats` has every figure."""
    rows: list[tuple[str, str]] = []

    def add(name: str, value: object, *, always: bool = True) -> None:
        if always or value:
            rows.append((name, str(value)))

    add("pages (results)", stats["pages"])
    for cls, n in stats["status_classes"].items():
        add(f"  status {cls}", n)
    for kind, n in stats["errors"].items():
        add(f"  error {kind}", n)
    add("bytes", f"{stats['bytes']:,}")
    add("duration", f"{stats['elapsed_s']:.2f} s")
    add("pages/s", f"{stats['pages_per_s']:.1f}")
    add("retries", stats["retries"], always=verbose)
    add("unchanged (304, recrawl)", stats.get("unchanged"), always=False)
    if stats.get("harvest_rate") is not None:
        at = stats.get("harvest_threshold")
        name = f"harvest rate (relevance >= {at:g})" if at is not None else "harvest rate"
        add(name, f"{stats['harvest_rate']:.1%} ({stats['relevant']}/{stats['scored']})")
    if "content_index" in stats:
        add("duplicate pages exact / near", f"{stats['exact_duplicates']} / "
            f"{stats['near_duplicates']}")  # fmt: skip
    # URLs (each counted once) apart from links (each occurrence on a page counted)
    add("URLs not fetched: robots.txt", stats["robots_refused"], always=verbose)
    add("URLs dropped: queue full", stats["dropped_full"], always=verbose)
    add("URLs admitted (seeds included)", stats["admitted"])
    add("links to URLs already seen", stats["duplicates"])
    add("links out of scope", stats["out_of_scope"], always=verbose)
    if verbose:
        for reason, n in stats["scope_refused"].items():
            add(f"  {reason}", n)
    add("links not followed: max_pages reached", stats["over_limit"], always=verbose)
    if verbose:
        add("memo hit rate", f"{stats['memo_hit_rate']:.1%}")
        sieve = stats["sieve"]
        # the Sieve: its estimate from its set bits / its count of the URLs it let through
        kind = sieve.get("kind", "scalable")  # (a shared crawl's is the scalable Sieve)
        add("sieve kind", kind)
        add("sieve: URLs seen", f"~{sieve['approx_items']:,} est. / {sieve['count']:,} counted")
        add("sieve stages", sieve["stages"])
        add("sieve bits", f"{sieve['size_in_bytes'] * 8:,}")
        add("sieve FPR bound", f"{sieve['false_positive_bound']:.2e}")
    return rows


def summary_table(stats: dict[str, Any], *, verbose: bool = False) -> Table:
    """The final summary (`summary_rows`) as a two-column rich table."""
    from rich.table import Table

    table = Table(title="crawl summary", show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value", justify="right")
    for name, value in summary_rows(stats, verbose=verbose):
        table.add_row(name, value)
    return table


def print_summary(stats: dict[str, Any], stream: TextIO, *, verbose: bool = False) -> None:
    """The summary as a rich table on a terminal; elsewhere (a log file, CI) as plain aligned
    text, without importing rich (~50 ms at the end of every run of the command)."""
    if stream.isatty():
        from rich.console import Console

        Console(file=stream, stderr=True).print(summary_table(stats, verbose=verbose))
        return
    rows = summary_rows(stats, verbose=verbose)
    left = max(len(name) for name, _ in rows)
    right = max(len(value) for _, value in rows)
    lines = ["crawl summary"]
    lines += [f" {name:<{left}} │ {value:>{right}}" for name, value in rows]
    stream.write("\n".join(lines) + "\n")
