"""One run of the `crawl` command: `run` (a crawl with its outputs) and `run_demo`.

`run` opens the crawl state (`--state`, `--fresh`, `--recrawl`), the WARC output and the
progress reporter, crawls the seeds and writes each result as a JSON line; SIGINT/SIGTERM
stop the crawl, fetches in flight finish (a second signal leaves at once), and the command
that resumes it is printed (`command_line`). `run_demo` crawls the bundled fixture site on
loopback and checks the crawled set against its ground truth. Each returns an `Outcome`:
the crawler, the exit status, whether its summary is worth printing (`crawler.cli.main`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from crawler.admission.kept import notes
from crawler.cli.progress import ProgressReporter
from crawler.cli.seeds import SeedReport
from crawler.cli.watching import Watching
from crawler.config.load import Config
from crawler.engine.components import settings
from crawler.engine.crawler import Crawler
from crawler.errors import OutputError
from crawler.output.jsonl import JsonlWriter
from crawler.state.crawlstate import CrawlState
from crawler.state.db import FILENAME, StateError

if TYPE_CHECKING:  # imported when used: a crawl without --warc or --demo never loads them
    from crawler.output.warc import WarcOutput

__all__ = ["NOTHING_FETCHED", "Outcome", "command_line", "run", "run_demo"]

SHUTDOWN_GRACE = 5.0  # seconds fetches in flight get to finish after SIGINT/SIGTERM
NOTHING_FETCHED = 3  # exit status: not one seed got an HTTP response


@dataclass(slots=True)
class Outcome:
    """What a run of the command ended with: the crawler, the exit status, and whether its
    summary is worth printing (not for a finished crawl re-run with nothing to do)."""

    crawler: Crawler
    status: int
    summary: bool = True
    error: str = ""  # printed after the summary
    last: str = ""  # printed last of all: how to resume an interrupted crawl


def command_line(args: Sequence[str]) -> str:
    """The command as it was invoked (`.venv/bin/crawl ...`, `python -m crawler.cli ...`), with
    `args` after it, quoted so that it can be pasted into a shell."""
    orig, argv = list(getattr(sys, "orig_argv", [])), sys.argv
    prefix = orig[: len(orig) - (len(argv) - 1)] if len(orig) >= len(argv) >= 1 else []
    if len(prefix) >= 3 and prefix[-2] == "-m":
        head = prefix  # python [options] -m crawler.cli
    elif argv and argv[0] and not argv[0].endswith(".py"):
        head = [argv[0]]  # the console script, as the shell found it
    else:
        head = [sys.executable, "-m", "crawler.cli"]
    return shlex.join([*head, *args])


def without_fresh(args: Sequence[str]) -> list[str]:
    """The arguments that resume this crawl: all but --fresh (which would start it over), and
    -O PATH as -o PATH (a resume appends to its output: -O, which empties it, is refused)."""
    resume = []
    for arg in args:
        if arg == "--fresh":
            continue
        name, eq, value = arg.partition("=")
        if len(name) > 3 and "--overwrite-output".startswith(name):  # (argparse: any prefix)
            arg = "--output" + eq + value
        elif arg.startswith("-") and not arg.startswith("--"):
            flags = arg[1:].lstrip("qv")  # -qO PATH, -OPATH: the flags without a value first
            if flags.startswith("O"):
                arg = arg[: len(arg) - len(flags)] + "o" + flags[1:]
        resume.append(arg)
    return resume


def say(quiet: bool, message: str) -> None:
    """A line for the user on stderr, unless -q."""
    if not quiet:
        tell(f"crawl: {message}")


def tell(line: str) -> None:
    """Print `line` on stderr; a stderr that cannot be written (full, closed) is no error:
    the crawl's results do not depend on it."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr)


async def run(
    config: Config,
    seeds: list[str],
    out: IO[str],
    *,
    keys: set[str] | None = None,
    quiet: bool = False,
    fresh: bool = False,
    recrawl: bool = False,
    args: Sequence[str] = (),
) -> Outcome:
    """Crawl `seeds`, writing JSON Lines to `out` (and WARC, progress, state, metrics, the
    report, as configured).

    The exit status is 0 when the crawl completed, 3 when seeds were tried and not one got an
    HTTP response, 128 + the signal number when SIGINT/SIGTERM stopped it. `args` are the
    command's arguments, for the command that resumes an interrupted crawl. `recrawl` starts a
    new generation of the finished crawl in the state (or resumes the one in progress).
    """
    # first: an address for --metrics that cannot be bound ends the run before anything else
    watching = await Watching.open(config, say=functools.partial(say, quiet))
    try:
        return await _run(config, seeds, out, watching, keys=keys, quiet=quiet, fresh=fresh,
                          recrawl=recrawl, args=args)  # fmt: skip
    finally:
        await watching.close()


async def _run(
    config: Config,
    seeds: list[str],
    out: IO[str],
    watching: Watching,
    *,
    keys: set[str] | None,
    quiet: bool,
    fresh: bool,
    recrawl: bool,
    args: Sequence[str],
) -> Outcome:
    o = config.output
    warc: WarcOutput | None = None
    if o.warc:  # before the state: a refused WARC file leaves the state unopened (--fresh too)
        from crawler.output.warc import WarcOutput  # warcio

        warc = WarcOutput(o.warc, max_size=o.warc_max_size)
    state = open_state(config, quiet=quiet, fresh=fresh, recrawl=recrawl)
    try:
        crawler = Crawler(config, recorder=warc.write if warc is not None else None, state=state)
    except BaseException:  # (a shared crawl refuses --state): the state's lock goes with it
        if state is not None:
            state.abandon()
        raise
    shared = bool(config.cluster.redis)  # a result is written before its lease is released
    writer = JsonlWriter(out, sync=state is not None or shared, on_error=crawler.stop,
                         name=o.path if o.path not in ("", "-") else "stdout",
                         text=o.text, markdown=o.markdown, meta=o.meta,
                         fields=bool(config.extract))  # fmt: skip

    def out_of_scope(seed: str, location: str) -> bool:
        resolved = crawler.urls.resolve(location, seed)
        return bool(resolved and crawler.scope and crawler.scope.check(resolved[1], 0) == "domain")

    report = SeedReport(out_of_scope)
    watching.attach(crawler)
    stopped_by = 0
    try:
        stopped_by = await crawl_with_signals(crawler, seeds, writer, report, out, keys=keys,
                                              quiet=quiet)  # fmt: skip
    except BaseException:  # the report of the crawl so far; the crawl's error goes on
        with contextlib.suppress(OutputError):
            watching.finish(crawler, interrupted=True, say=functools.partial(say, quiet))
        raise
    else:
        watching.finish(crawler, interrupted=bool(stopped_by), say=functools.partial(say, quiet))
    finally:
        if warc is not None:
            warc.close()
    if stopped_by:
        where = f"; state saved in {config.state.dir}" if state is not None else ""
        hint = (
            f"resume with: {command_line(without_fresh(args))}"
            if state is not None
            else f"the shared crawl {config.cluster.crawl_id!r} goes on in Redis; rejoin it "
            f"with: {command_line(args)}"
            if config.cluster.redis
            else "it cannot be resumed: run with --state DIR to make crawls resumable"
        )
        # said last, below the summary, so that the command to resume is on screen at the end
        return Outcome(crawler, 128 + stopped_by, last=f"crawl: interrupted{where}; {hint}")
    if state is not None and state.previous_status == "finished" and writer.lines == 0:
        again = command_line([*without_fresh(args), "--fresh"])
        visit = command_line([*without_fresh(args), "--recrawl"])
        say(quiet, f"the crawl in {state.directory} is already complete: nothing to do. "
                   f"To visit its URLs again (conditional requests): {visit}; "
                   f"to crawl again from scratch: {again} (outputs are appended to: "
                   "point -o/--warc at new files)")  # fmt: skip
        return Outcome(crawler, 0, summary=False)
    tell_how_it_ended(crawler, report, writer.lines, quiet=quiet)
    # a process of a shared crawl sees the seeds it fetched, maybe not all of them; a resumed
    # crawl tries only the seeds left pending: any answer of the crawl's URLs (its earlier runs'
    # included, in the restored stats) means something could be fetched
    answered = sum(crawler.stats.status_classes.values())
    if report.nothing_fetched and not answered and (not shared or report.tried >= len(set(seeds))):
        return Outcome(crawler, NOTHING_FETCHED, error=report.message())
    return Outcome(crawler, 0)


def open_state(config: Config, *, quiet: bool, fresh: bool, recrawl: bool) -> CrawlState | None:
    """The crawl state of `[state] dir` (None without one), opened, with a line saying what this
    run does with it: a recrawl started, a crawl resumed, the limits changed since."""
    if recrawl and not (Path(config.state.dir) / FILENAME).exists():
        raise StateError(f"{config.state.dir}: no crawl state to visit again; "
                         "run the crawl once without --recrawl")  # fmt: skip
    if not config.state.dir:
        return None
    state = CrawlState.open(config.state.dir, settings(config), fresh=fresh)
    if recrawl and state.previous_status == "finished":
        generation = state.start_recrawl()
        admitted, _ = state.counts()
        say(quiet, f"recrawl {generation} of the crawl in {state.directory}: "
                   f"{admitted:,} URLs to visit again")  # fmt: skip
    elif recrawl and state.generation == 0:
        state.abandon()
        raise StateError(f"{state.directory}: the crawl is not finished; run it again without "
                         "--recrawl to finish it first")  # fmt: skip
    elif state.previous_status in ("running", "interrupted"):
        admitted, done = state.counts()  # (a recrawl just started is not "resumed")
        what = "recrawl" if state.generation else "crawl"
        say(quiet, f"resuming the {what} in {state.directory} ({done:,} of {admitted:,} URLs done)")
    for line in notes(state):  # the limits changed since
        say(quiet, line)
    return state


async def crawl_with_signals(
    crawler: Crawler,
    seeds: list[str],
    writer: JsonlWriter,
    report: SeedReport,
    out: IO[str],
    *,
    keys: set[str] | None,
    quiet: bool,
) -> int:
    """Run the crawl, each result written and observed, under the command's SIGINT/SIGTERM
    handler: the first signal stops the crawl gracefully (fetches in flight get
    `SHUTDOWN_GRACE` seconds), a second one leaves at once. The signal that stopped it, or 0."""
    o = crawler.config.output
    reporter = ProgressReporter(crawler, sys.stderr, interval=o.progress_interval)
    stopped_by: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stopped_by:  # a second Ctrl-C: leave now; the state database is consistent
            with contextlib.suppress(OSError, ValueError):
                out.flush()  # the lines written so far, whole (os._exit flushes nothing)
            os._exit(128 + stopped_by[0])
        stopped_by.append(signum)
        name = signal.Signals(signum).name
        tell(
            f"\ncrawl: {name}: finishing fetches in flight (up to {SHUTDOWN_GRACE:g} s); "
            "press Ctrl-C again to quit at once"
        )
        crawler.stop()
        loop.call_later(SHUTDOWN_GRACE, crawler.abort)

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        async with crawler, writer, contextlib.AsyncExitStack() as stack:
            if not quiet and (reporter.tty or o.progress_interval > 0):
                await stack.enter_async_context(reporter)
            async for result in crawler.crawl(seeds):
                writer.write(result)
                report.observe(result)
                if keys is not None:
                    keys.add(result.key)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    return stopped_by[0] if stopped_by else 0


def tell_how_it_ended(crawler: Crawler, report: SeedReport, lines: int, *, quiet: bool) -> None:
    """What a user should know of a crawl that ran to its end: a fetch budget spent with URLs
    left, seeds that redirected out of the crawl's scope, a shared crawl with nothing left."""
    config, state = crawler.config, crawler.state
    shared = bool(config.cluster.redis)
    budget, frontier = crawler.budget, crawler.frontier
    if budget is not None and budget.exhausted and frontier is not None and len(frontier):
        # a focused crawl's --max-pages spent, URLs left queued: say so, and how to go on
        if state is not None or shared:
            where = str(state.directory) if state is not None else "the shared crawl (Redis)"
            hint = (f"left pending in {where}: run again with a larger --max-pages to go on "
                    "(the budget counts the pages of every run)")  # fmt: skip
        else:
            hint = "not fetched (with --state DIR they would be kept for a larger --max-pages)"
        say(quiet, f"fetch budget of {budget.limit:,} pages (max_pages) spent; "
                   f"{len(frontier):,} URLs {hint}")  # fmt: skip
    for seed, target in report.redirected:  # `crawl http://a.org/` -> https://b.org/
        say(quiet, f"seed {seed} redirected to {target}, another site, outside the crawl's scope: "
                   "nothing of it was crawled; seed the target itself, or add its host to "
                   "[scope] allowed_domains")  # fmt: skip
    if shared and lines == 0 and not (budget is not None and budget.exhausted):
        say(quiet, f"the shared crawl {config.cluster.crawl_id!r} has nothing left to do "
                   "(crawl --status shows it)")  # fmt: skip


async def run_demo(config: Config, out: IO[str], explicit_delay: bool, quiet: bool) -> Outcome:
    """Serve the fixture site on loopback, crawl it, and check the result against its truth."""
    from crawler.testing.fixture import FixtureSite  # aiohttp's server: only for the demo

    rendered = config.render.enabled  # --demo --render: the script-driven host too
    async with FixtureSite(scripted=rendered) as site:
        config = config.override("fetch", resolve={**config.fetch.resolve, **site.resolve})
        if not explicit_delay:
            # its hosts share one address: ip_delay too (ip_concurrency stays)
            config = config.override("politeness", delay=0.0, ip_delay=0.0)
        hosts, seeds = ", ".join(site.resolve), " ".join(site.seeds)
        say(quiet, f"demo: fixture site on 127.0.0.1:{site.port} (hosts: {hosts}), seeds: {seeds}")
        keys: set[str] = set()
        outcome = await run(config, site.seeds, out, keys=keys, quiet=quiet)
        if outcome.status:
            return outcome
        expected = site.expected(config.crawl.max_depth, rendered=rendered)
        expected |= site.refused(rendered=rendered)
        ok = keys == expected if not config.crawl.max_pages else keys <= expected
        # (a crawl cut by max_pages is checked to be a part of it, and said so)
        verdict = "equals" if keys == expected else "is a part of" if ok else "DIFFERS FROM"
        say(quiet and ok, f"demo: {len(keys)} results; the crawled set {verdict} the fixture's "
                          f"ground truth ({len(expected)} URLs)")  # fmt: skip
        outcome.status = 0 if ok else 1
        return outcome
