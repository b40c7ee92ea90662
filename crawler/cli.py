"""The `crawl` command.

    crawl [SEEDS_FILE_OR_URL ...] [--config PATH] [-o PATH|-] [--max-pages N] [--max-depth N]
          [--concurrency N] [--delay SECONDS] [--stats PATH] [--warc PATH] [--state DIR]
          [--fresh] [--recrawl] [--redis URL [--crawl-id NAME] [--status]] [--demo] [-v|-q]

Results go to stdout (or `-o PATH`) as JSON Lines; logs, progress and the summary go to stderr.
Seeds are read by `crawler.seeds`, outputs checked and written by `crawler.output`.
Exit status: 0 for a completed crawl, 1 when the demo's crawl differs from the fixture's ground
truth, 2 for usage, config, seed, output path or state errors (a shared crawl's Redis
unreachable or started with other settings included), 3 when not one seed got an HTTP
response (see `crawler.seeds`), 130/143 when stopped by SIGINT/SIGTERM, 141 when stdout was
closed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import shlex
import signal
import sys
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

from crawler.components import settings
from crawler.config import Config, load_config
from crawler.engine import Crawler
from crawler.errors import ConfigError, ScoreError, SeedError, SharedStateError
from crawler.output import JsonlWriter, check_output_paths, open_output, repair_jsonl
from crawler.progress import ProgressReporter, print_summary
from crawler.seeds import SeedReport, collect_seeds, read_seeds
from crawler.state import CrawlState
from crawler.statedb import FILENAME, StateError

if TYPE_CHECKING:  # imported when used: a crawl without --warc or --demo never loads them
    from crawler.warc import WarcOutput

__all__ = ["main", "read_seeds", "repair_jsonl"]

log = logging.getLogger("crawler")

T = TypeVar("T")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crawl",
        description="Crawl from seed URLs (or seed files, one URL per line) and write JSON Lines.",
        epilog="exit status: 0 done; 1 the demo differed from its ground truth; 2 usage, config, "
        "seed, output path or state error (Redis included); 3 not one seed got an HTTP "
        "response; 130/143 stopped by SIGINT/SIGTERM; 141 stdout closed",
    )
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="SEEDS_FILE_OR_URL",
        help="seed URLs, or files with one URL per line ('#' comments allowed)",
    )
    parser.add_argument("--config", metavar="PATH", help="TOML config (see config.toml)")
    parser.add_argument("-o", "--output", metavar="PATH", help="JSON Lines output, '-' = stdout")
    parser.add_argument("--stats", metavar="PATH", help="write the final stats as JSON")
    parser.add_argument("--warc", metavar="PATH", help="archive every exchange to WARC (.warc.gz)")
    parser.add_argument(
        "--max-pages",
        type=int,
        metavar="N",
        help="stop admitting after N URLs (with --focus: fetch N pages, best first)",
    )
    parser.add_argument(
        "--max-depth", type=int, metavar="N", help="links deeper than N are skipped"
    )
    parser.add_argument("--concurrency", type=int, metavar="N", help="number of fetch workers")
    parser.add_argument(
        "--focus",
        metavar="WORDS",
        help="focused crawl on these topic words: best-first, max-pages is a fetch budget",
    )
    parser.add_argument(
        "--delay",
        type=float,
        metavar="SECONDS",
        help="minimum seconds between requests to one host (default 1; 0 for your own site)",
    )
    parser.add_argument(
        "--state", metavar="DIR", help="keep a crash-safe crawl state in DIR; run again to resume"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="discard the state in --state DIR and start over"
    )
    parser.add_argument(
        "--recrawl",
        action="store_true",
        help="visit every URL of the finished crawl in --state DIR again, with conditional "
        "requests (If-None-Match / If-Modified-Since); run again to resume it",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="share the crawl with other crawl processes through Redis (redis://HOST:PORT/DB)",
    )
    parser.add_argument(
        "--crawl-id", metavar="NAME", help="the shared crawl's name in Redis (default: default)"
    )
    parser.add_argument(
        "--status",
        action="store_true",
        help="print the shared crawl's progress (with --redis) and exit, without crawling",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="crawl the bundled fixture site on loopback (no network needed)",
    )
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    verbosity.add_argument("-q", "--quiet", action="store_true", help="only errors on stderr")
    return parser  # fmt: skip


def apply_overrides(config: Config, args: argparse.Namespace) -> Config:
    crawl = {
        k: v
        for k, v in (
            ("max_pages", args.max_pages),
            ("max_depth", args.max_depth),
            ("concurrency", args.concurrency),
        )
        if v is not None
    }
    if crawl:
        config = config.override("crawl", **crawl)
    if args.delay is not None:
        config = config.override("politeness", delay=args.delay)
    if args.output is not None:
        config = config.override("output", path=args.output)
    if args.stats is not None:
        config = config.override("output", stats=args.stats)
    if args.warc is not None:
        config = config.override("output", warc=args.warc)
    if args.state is not None:
        config = config.override("state", dir=args.state)
    if args.focus is not None:
        config = config.override("focus", keywords=tuple(args.focus.split()))
    cluster = {k: v for k, v in (("redis", args.redis), ("crawl_id", args.crawl_id)) if v}
    if cluster:
        config = config.override("cluster", **cluster)
    return config


def setup_logging(verbose: int, quiet: bool) -> None:
    level = logging.ERROR if quiet else logging.WARNING - 10 * min(verbose, 2)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("crawler")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


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
    """The arguments that resume this crawl: all but --fresh (which would start it over)."""
    return [a for a in args if a != "--fresh"]


def say(quiet: bool, message: str) -> None:
    """A line for the user on stderr, unless -q."""
    if not quiet:
        print(f"crawl: {message}", file=sys.stderr)


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
    """Crawl `seeds`, writing JSON Lines to `out` (and WARC, progress, state, as configured).

    The exit status is 0 when the crawl completed, 3 when seeds were tried and not one got an
    HTTP response, 128 + the signal number when SIGINT/SIGTERM stopped it. `args` are the
    command's arguments, for the command that resumes an interrupted crawl. `recrawl` starts a
    new generation of the finished crawl in the state (or resumes the one in progress).
    """
    o = config.output
    if recrawl and not (Path(config.state.dir) / FILENAME).exists():
        raise StateError(f"{config.state.dir}: no crawl state to visit again; "
                         "run the crawl once without --recrawl")  # fmt: skip
    state = (
        CrawlState.open(config.state.dir, settings(config), fresh=fresh)
        if config.state.dir
        else None
    )
    if state is not None and recrawl and state.previous_status == "finished":
        generation = state.start_recrawl()
        admitted, _ = state.counts()
        say(quiet, f"recrawl {generation} of the crawl in {state.directory}: "
                   f"{admitted:,} URLs to visit again")  # fmt: skip
    elif state is not None and recrawl and state.generation == 0:
        state.abandon()
        raise StateError(f"{state.directory}: the crawl is not finished; run it again without "
                         "--recrawl to finish it first")  # fmt: skip
    if state is not None and state.previous_status in ("running", "interrupted"):
        admitted, done = state.counts()
        what = "recrawl" if state.generation else "crawl"
        say(quiet, f"resuming the {what} in {state.directory} ({done:,} of {admitted:,} URLs done)")
    warc: WarcOutput | None = None
    if o.warc:
        from crawler.warc import WarcOutput  # warcio

        warc = WarcOutput(o.warc, max_size=o.warc_max_size)
    crawler = Crawler(config, recorder=warc.write if warc is not None else None, state=state)
    reporter = ProgressReporter(crawler, sys.stderr, interval=o.progress_interval)
    shared = bool(config.cluster.redis)  # a result is written before its lease is released
    writer = JsonlWriter(out, sync=state is not None or shared, on_error=crawler.stop)
    report = SeedReport()
    stopped_by: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stopped_by:  # a second Ctrl-C: leave now; the state database is consistent
            os._exit(128 + stopped_by[0])
        stopped_by.append(signum)
        name = signal.Signals(signum).name
        print(
            f"\ncrawl: {name}: finishing fetches in flight (up to {SHUTDOWN_GRACE:g} s); "
            "press Ctrl-C again to quit at once",
            file=sys.stderr,
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
        print(f"crawl: interrupted{where}; {hint}", file=sys.stderr)
        return Outcome(crawler, 128 + stopped_by[0])
    if state is not None and state.previous_status == "finished" and writer.lines == 0:
        again = command_line([*without_fresh(args), "--fresh"])
        visit = command_line([*without_fresh(args), "--recrawl"])
        say(quiet, f"the crawl in {state.directory} is already complete: nothing to do. "
                   f"To visit its URLs again (conditional requests): {visit}; "
                   f"to crawl again from scratch: {again} (outputs are appended to: "
                   "point -o/--warc at new files)")  # fmt: skip
        return Outcome(crawler, 0, summary=False)
    if shared and writer.lines == 0:
        say(quiet, f"the shared crawl {config.cluster.crawl_id!r} has nothing left to do "
                   "(crawl --status shows it)")  # fmt: skip
    # a process of a shared crawl sees the seeds it fetched, maybe not all of them
    if report.nothing_fetched and (not shared or report.tried >= len(set(seeds))):
        return Outcome(crawler, NOTHING_FETCHED, error=report.message())
    return Outcome(crawler, 0)


async def run_demo(config: Config, out: IO[str], explicit_delay: bool, quiet: bool) -> Outcome:
    """Serve the fixture site on loopback, crawl it, and check the result against its truth."""
    from crawler.fixture import FixtureSite  # aiohttp's server: only for the demo

    async with FixtureSite() as site:
        config = config.override("fetch", resolve={**config.fetch.resolve, **site.resolve})
        if not explicit_delay:
            config = config.override("politeness", delay=0.0)
        hosts, seeds = ", ".join(site.resolve), " ".join(site.seeds)
        say(quiet, f"demo: fixture site on 127.0.0.1:{site.port} (hosts: {hosts}), seeds: {seeds}")
        keys: set[str] = set()
        outcome = await run(config, site.seeds, out, keys=keys, quiet=quiet)
        if outcome.status:
            return outcome
        expected = site.expected(config.crawl.max_depth) | site.refused()
        ok = keys == expected if not config.crawl.max_pages else keys <= expected
        verdict = "equals" if ok else "DIFFERS FROM"
        say(quiet and ok, f"demo: {len(keys)} results; the crawled set {verdict} the fixture's "
                          f"ground truth ({len(expected)} URLs)")  # fmt: skip
        outcome.status = 0 if ok else 1
        return outcome


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on uvloop when it is installed (`pip install 'sieve-crawler[fast]'`), else on
    asyncio's own loop. uvloop measured +4% pages/s alone, +12% with the rest of the hot path."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def output_paths(config: Config, args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str]]:
    """Every output path, keyed by the option that set it (the flag, or the config key)."""

    def name(flag: str, given: object, key: str) -> str:
        return flag if given is not None else key

    o = config.output
    files = {
        name("-o", args.output, "[output] path"): o.path,
        name("--warc", args.warc, "[output] warc"): o.warc,
        name("--stats", args.stats, "[output] stats"): o.stats,
    }
    return files, {name("--state", args.state, "[state] dir"): config.state.dir}


def write_stats(path: str, stats: dict[str, Any]) -> int:
    """Write the stats JSON; 0, or 2 with a message if it cannot be written."""
    try:
        Path(path).write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        print(f"crawl: error: stats {path}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.verbose, args.quiet)
    try:
        config = apply_overrides(load_config(args.config), args)
        if args.status:
            if not config.cluster.redis:
                raise ConfigError("--status reads a shared crawl: give --redis URL (or [cluster])")
            try:
                from crawler.cluster import status_command  # imports redis-py
            except ImportError as exc:
                raise ConfigError(f"--status needs redis-py: pip install 'sieve-crawler[redis]' "
                                  f"({exc})") from None  # fmt: skip
            return status_command(config.cluster.redis, config.cluster.crawl_id)
        if args.demo and args.targets:
            raise ConfigError("--demo crawls the bundled fixture site; give no seeds with it")
        if args.fresh and not config.state.dir:
            raise ConfigError("--fresh needs a state directory (--state DIR or [state] dir)")
        if args.recrawl and not config.state.dir:
            raise ConfigError("--recrawl needs a state directory (--state DIR or [state] dir)")
        if args.recrawl and (args.fresh or args.demo):
            raise ConfigError("--recrawl visits a finished crawl again: not with --fresh or --demo")
        if not args.demo and not args.targets:
            parser.print_usage(sys.stderr)
            print("crawl: error: no seeds given (use a URL, a seeds file, or --demo)",
                  file=sys.stderr)  # fmt: skip
            return 2
        seeds = [] if args.demo else collect_seeds(args.targets)
        check_output_paths(*output_paths(config, args))
    except (ConfigError, SeedError) as exc:
        print(f"crawl: error: {exc}", file=sys.stderr)
        return 2
    try:
        with open_output(config.output.path) as out:
            if args.demo:
                outcome = run_loop(run_demo(config, out, args.delay is not None, args.quiet))
            else:
                job = run(config, seeds, out, quiet=args.quiet, fresh=args.fresh,
                          recrawl=args.recrawl,
                          args=sys.argv[1:] if argv is None else argv)  # fmt: skip
                outcome = run_loop(job)
    except (StateError, ConfigError, SharedStateError) as exc:  # e.g. [focus] without words
        print(f"crawl: error: {exc}", file=sys.stderr)
        return 2
    except ScoreError as exc:  # the focus scorer failed: the results so far are written
        print(f"crawl: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader of our stdout went away (e.g. `crawl ... | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        print(f"crawl: error: {exc}", file=sys.stderr)
        return 2
    stats = outcome.crawler.stats_dict()
    if not args.quiet and outcome.summary:
        print_summary(stats, sys.stderr)
    if outcome.error:
        print(f"crawl: error: {outcome.error}", file=sys.stderr)
    if config.output.stats:
        return write_stats(config.output.stats, stats) or outcome.status
    return outcome.status


def entry() -> NoReturn:
    """The `crawl` command: `main`, then exit without the interpreter's last garbage collection.

    Everything the crawl wrote is flushed and closed by then; the collection that interpreter
    shutdown runs would only traverse the objects the crawl leaves behind, to free memory the
    process is about to give back anyway (~80 ms after a 1,180-page crawl of sqlite3-doc, a
    tenth of the command's run). `gc.freeze()` leaves them out of it; the atexit handlers
    (logging's flush) still run."""
    status = main()
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    entry()
