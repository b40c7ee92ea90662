"""The `crawl` command.

    crawl [SEEDS_FILE_OR_URL ...] [--config PATH] [-o PATH|-] [--max-pages N] [--max-depth N]
          [--concurrency N] [--delay SECONDS] [--stats PATH] [--warc PATH] [--state DIR]
          [--fresh] [--recrawl] [--focus WORDS] [--redis URL [--crawl-id NAME] [--status]]
          [--demo] [-v|-q]

Results go to stdout (or `-o PATH`) as JSON Lines; logs, progress and the summary go to stderr.
Seeds are read by `crawler.cli.seeds`, outputs checked and written by `crawler.output.jsonl`. The
arguments are parsed (and put over the config file) by `crawler.cli.args`; a run of the crawl,
or of the demo, is `crawler.cli.run`; here: `main` (checks, `--status`, `--stats`, the exit
status) and `entry`, the console script.
Exit status: 0 for a completed crawl, 1 when the demo's crawl differs from the fixture's ground
truth, 2 for usage, config, seed, output path or state errors (a shared crawl's Redis
unreachable or started with other settings included), 3 when not one seed got an HTTP
response (see `crawler.cli.seeds`), 130/143 when stopped by SIGINT/SIGTERM, 141 when stdout was
closed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import json
import logging
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from crawler.cli.args import apply_overrides, build_parser, output_paths
from crawler.cli.progress import print_summary
from crawler.cli.run import command_line, run, run_demo, tell, without_fresh
from crawler.cli.seeds import collect_seeds, read_seeds
from crawler.config.load import Config, load_config
from crawler.errors import (
    ConfigError,
    NetworkUnavailable,
    OutputError,
    ScoreError,
    SeedError,
    SharedStateError,
)
from crawler.output.jsonl import (
    check_not_inputs,
    check_output_paths,
    earlier_results,
    open_output,
    repair_jsonl,
)
from crawler.state.db import FILENAME, StateError

__all__ = ["main", "read_seeds", "repair_jsonl"]

log = logging.getLogger("crawler")

T = TypeVar("T")


def setup_logging(verbose: int, quiet: bool) -> None:
    level = logging.ERROR if quiet else logging.WARNING - 10 * min(verbose, 2)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("crawler")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on uvloop when it is installed (`pip install 'sieve-crawler[fast]'`), else on
    asyncio's own loop: a faster loop is a faster crawl (docs/BENCHMARKS.md, "Event loop and GIL
    settings").

    The crawl runs outside the `except ImportError`: an error it raises is not chained to the
    missing uvloop (a traceback would begin with "No module named 'uvloop'")."""
    try:
        import uvloop
    except ImportError:
        factory = None
    else:
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def write_stats(option: str, path: str, stats: dict[str, Any]) -> int:
    """Write the stats JSON; 0, or 2 with a message naming `option` if it cannot be written."""
    try:
        Path(path).write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        tell(f"crawl: error: {option} {path}: cannot write: {exc.strerror or exc}")
        return 2
    return 0


def check_outputs(config: Config, args: argparse.Namespace) -> dict[str, str]:
    """Check every output path before anything is created or crawled (`crawler.output.jsonl`): not
    an input, an existing -o or -O file the crawler's JSON Lines (the same check: -O empties
    only what -o would append to, through a symlink too), an existing --warc series
    WARC files, every place writable; then the missing directories are made. Returns the output
    files keyed by the option that named each. A ConfigError names the option; so does an
    OSError met on the way (a name too long, a loop of symlinks, a parent not searchable)."""
    files, directories = output_paths(config, args)
    try:
        _check_outputs(config, args, files, directories)
    except OSError as exc:
        raise path_error(exc, {**files, **directories}) from None
    return files


def path_error(exc: OSError, paths: dict[str, str]) -> ConfigError:
    """`exc`, met on one of `paths` (keyed by the option that named each), as one line naming
    the option, the path and the reason: `--state DIR: File name too long (ENAMETOOLONG)`."""
    name = os.fsdecode(exc.filename) if exc.filename is not None else ""
    named = [(option, path) for option, path in paths.items()
             if path not in ("", "-") and name.startswith(path)]  # fmt: skip
    option, path = max(named, key=lambda item: len(item[1]), default=("", name))
    code = errno.errorcode.get(exc.errno or 0, "")
    reason = f"{exc.strerror or exc}" + (f" ({code})" if code else "")
    return ConfigError(f"{option} {path}: {reason}".strip())


def _check_outputs(
    config: Config, args: argparse.Namespace, files: dict[str, str], directories: dict[str, str]
) -> None:
    inputs = [t for t in args.targets if "://" not in t] + [args.config or ""]
    check_not_inputs(files, {path: path for path in inputs if path})
    resuming = config.state.dir and (Path(config.state.dir) / FILENAME).exists()
    if args.overwrite_output is not None and resuming and not args.fresh:
        raise ConfigError(f"-O {args.overwrite_output}: this crawl resumes the state in "
                              f"{config.state.dir}: emptying its output would lose the results "
                              "of the earlier runs; use -o to append (or --fresh to start "
                              "over)")  # fmt: skip
    for option, path in files.items():
        if path in ("", "-") or not Path(path).is_file():
            continue
        try:  # -O empties only what -o would append to: the crawler's own JSON Lines
            if path == config.output.path:
                repair_jsonl(Path(path), check_only=True)
            elif path == config.output.warc:
                from crawler.output.warc import check_series  # warcio: only with a WARC output

                check_series(Path(path))
        except (ConfigError, OutputError) as exc:
            raise ConfigError(f"{option} {exc}") from None
    check_output_paths(files, directories)


def crawl_failed(exc: Exception, config: Config, args: list[str]) -> int:
    """Say why the crawl ended on `exc`, and the command's exit status: 2 for what the user can
    mend (a state, a config, an output, Redis, the network), 1 for a failed scorer, memory or a
    bug of ours (its traceback), 141 when our stdout's reader went away."""
    if isinstance(exc, StateError | ConfigError | SharedStateError | OutputError |
                  NetworkUnavailable):  # fmt: skip
        tell(f"crawl: error: {exc}")
        if isinstance(exc, NetworkUnavailable) and config.state.dir:  # the proxy or network down
            tell(f"crawl: the URLs not fetched stay pending in {config.state.dir}: run the same "
                 "command again to resume")  # fmt: skip
        if isinstance(exc, OutputError) and config.output.path in ("", "-"):
            # stdout cannot be written: not again at exit ("Exception ignored ...")
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 2
    if isinstance(exc, ScoreError):  # the focus scorer failed: the results so far are written
        tell(f"crawl: error: {exc}")
        return 1
    if isinstance(exc, BrokenPipeError):
        # the reader of our stdout went away (e.g. `crawl ... | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    if isinstance(exc, OSError):
        tell(f"crawl: error: {exc}")
        return 2
    if isinstance(exc, MemoryError):  # not a bug, not a URL's fault: what to lower, how to go on
        out_of_memory(config, args)
        return 1
    internal_error(exc, config, args)  # a bug of ours: the crawl ended at once (never a hang)
    return 1


def out_of_memory(config: Config, args: list[str]) -> None:
    """Say that the crawl ran out of memory, what takes memory, and, with a crawl state, that
    nothing is lost and how to resume."""
    tell("crawl: error: out of memory: lower [crawl] concurrency or max_queued, [sieve] capacity, "
         "or [render] tabs, or give the crawl more memory")  # fmt: skip
    if config.state.dir:
        tell(f"crawl: the URLs not fetched stay pending in {config.state.dir}; resume with: "
             f"{command_line(without_fresh(args))}")  # fmt: skip


def internal_error(exc: Exception, config: Config, args: list[str]) -> None:
    """Say that the crawl ended on a bug of ours: the traceback (for a report), one line, and,
    with a crawl state, that nothing is lost and how to resume."""
    import traceback

    with contextlib.suppress(OSError):
        traceback.print_exception(exc, file=sys.stderr)
    tell(f"crawl: internal error: {type(exc).__name__}: {exc}")
    tell("crawl: this is a bug of the crawler: please report it with the traceback above")
    if config.state.dir:
        tell(f"crawl: the URLs not fetched stay pending in {config.state.dir}; resume with: "
             f"{command_line(without_fresh(args))}")  # fmt: skip


def show_status(config: Config) -> int:
    """``crawl --status``: the shared crawl's status, read from Redis."""
    if not config.cluster.redis:
        raise ConfigError("--status reads a shared crawl: give --redis URL (or [cluster])")
    try:
        from crawler.cluster import status_command  # imports redis-py
    except ImportError as exc:
        raise ConfigError(f"--status needs redis-py: pip install 'sieve-crawler[redis]' "
                          f"({exc})") from None  # fmt: skip
    return status_command(config.cluster.redis, config.cluster.crawl_id)


def check_flags(args: argparse.Namespace, config: Config) -> None:
    """A ConfigError for options that do not go together (or not with this config)."""
    if args.crawl_id and not config.cluster.redis:  # else a crawl of its own, unshared
        raise ConfigError("--crawl-id names a shared crawl: give --redis URL (or [cluster])")
    if args.demo and args.targets:
        raise ConfigError("--demo crawls the bundled fixture site; give no seeds with it")
    if args.fresh and not config.state.dir:
        raise ConfigError("--fresh needs a state directory (--state DIR or [state] dir)")
    if args.recrawl and not config.state.dir:
        raise ConfigError("--recrawl needs a state directory (--state DIR or [state] dir)")
    if args.recrawl and (args.fresh or args.demo):
        raise ConfigError("--recrawl visits a finished crawl again: not with --fresh or --demo")


def main(argv: list[str] | None = None, parsed: argparse.Namespace | None = None) -> int:
    """The command on `argv` (default: sys.argv), or on the arguments `parsed` from it."""
    if sys.stderr is None:  # started with stderr closed (2>&-): messages go nowhere, not crash
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    if parsed is None and argv is not None and argv[:1] == ["report"]:  # crawler.cli.report
        from crawler.cli.report import main as report

        return report(argv[1:])
    parser = build_parser()
    args = parsed if parsed is not None else parser.parse_args(argv)
    setup_logging(args.verbose, args.quiet)
    try:
        config = apply_overrides(load_config(args.config), args)
        if args.status:
            return show_status(config)
        check_flags(args, config)
        if not args.demo and not args.targets:
            parser.print_usage(sys.stderr)
            print("crawl: error: no seeds given (use a URL, a seeds file, or --demo)",
                  file=sys.stderr)  # fmt: skip
            return 2
        seeds = [] if args.demo else collect_seeds(args.targets, config.scope.max_url_length)
        files = check_outputs(config, args)
        if config.output.path in ("", "-") and sys.stdout is None:
            raise ConfigError("stdout is closed: give -o PATH for the results")
        output = next(option for option, path in files.items() if path == config.output.path)
    except (ConfigError, SeedError) as exc:
        print(f"crawl: error: {exc}", file=sys.stderr)
        return 2
    try:
        if not args.quiet and args.overwrite_output is None:
            held = earlier_results(config.output.path)
            if held is not None:
                tell(f"crawl: {output} {config.output.path}: appending to its {held} "
                     "(-O PATH empties it first)")  # fmt: skip
        overwrite = args.overwrite_output is not None
        with open_output(config.output.path, option=output, overwrite=overwrite) as out:
            if args.demo:
                outcome = run_loop(run_demo(config, out, args.delay is not None, args.quiet))
            else:
                job = run(config, seeds, out, quiet=args.quiet, fresh=args.fresh,
                          recrawl=args.recrawl,
                          args=sys.argv[1:] if argv is None else argv)  # fmt: skip
                outcome = run_loop(job)
    except Exception as exc:  # each kind said as what it is (crawl_failed)
        return crawl_failed(exc, config, sys.argv[1:] if argv is None else argv)
    stats = outcome.crawler.stats_dict()
    if not args.quiet and outcome.summary:
        with contextlib.suppress(OSError):  # stderr full or gone: the results are written
            print_summary(stats, sys.stderr, verbose=args.verbose > 0)
    if outcome.error:
        tell(f"crawl: error: {outcome.error}")
    status = outcome.status
    if config.output.stats:
        stats_option = next(o for o, path in files.items() if path == config.output.stats)
        status = write_stats(stats_option, config.output.stats, stats) or status
    if outcome.last:
        tell(outcome.last)
    return status


def entry(parsed: argparse.Namespace | None = None) -> NoReturn:
    """The `crawl` command: `main`, then exit without the interpreter's last garbage collection.

    Everything the crawl wrote is flushed and closed by then; the collection that interpreter
    shutdown runs would only traverse the objects the crawl leaves behind, to free memory the
    process is about to give back anyway (~80 ms after a 1,180-page crawl of sqlite3-doc, a
    tenth of the command's run). `gc.freeze()` leaves them out of it; the atexit handlers
    (logging's flush) still run."""
    status = main(parsed=parsed)  # (a Ctrl-C outside the crawl's own handler: crawler.cli.command)
    gc.freeze()
    sys.exit(status)
