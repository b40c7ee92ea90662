"""The `crawl` command.

    crawl [SEEDS_FILE_OR_URL ...] [--config PATH] [-o PATH|-] [--max-pages N] [--max-depth N]
          [--concurrency N] [--delay SECONDS] [--stats PATH] [--demo] [-v|-q]

Results go to stdout (or `-o PATH`) as JSON Lines; logs and the summary go to stderr.
Exit status: 0 for a completed crawl, 2 for usage, config or seed errors, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TextIO

from crawler.config import Config, load_config
from crawler.engine import Crawler
from crawler.errors import ConfigError, SeedError
from crawler.fixture import FixtureSite

__all__ = ["main", "read_seeds"]

log = logging.getLogger("crawler")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crawl",
        description="Crawl from seed URLs (or seed files, one URL per line) and write JSON Lines.",
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
    parser.add_argument("--max-pages", type=int, metavar="N", help="stop admitting after N URLs")
    parser.add_argument(
        "--max-depth", type=int, metavar="N", help="links deeper than N are skipped"
    )
    parser.add_argument("--concurrency", type=int, metavar="N", help="number of fetch workers")
    parser.add_argument(
        "--delay",
        type=float,
        metavar="SECONDS",
        help="minimum seconds between requests to one host",
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


def read_seeds(source: str, lines: Iterator[str]) -> list[str]:
    """Seed URLs from a seeds file's lines; a bad line raises SeedError naming source and line."""
    from crawler.urls import canonicalize

    seeds = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if canonicalize(line) is None:
            raise SeedError(f"{source}:{number}: not a crawlable http(s) URL: {line!r}")
        seeds.append(line)
    return seeds


def collect_seeds(targets: list[str]) -> list[str]:
    seeds: list[str] = []
    for target in targets:
        if "://" in target:
            seeds.extend(read_seeds("command line", iter([target])))
            continue
        path = Path(target)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SeedError(f"{target}: cannot read seeds file: {exc}") from None
        seeds.extend(read_seeds(target, iter(text.splitlines())))
    return seeds


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
    return config


def setup_logging(verbose: int, quiet: bool) -> None:
    level = logging.ERROR if quiet else logging.WARNING - 10 * min(verbose, 2)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("crawler")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


@contextlib.contextmanager
def open_output(path: str) -> Iterator[TextIO]:
    if path in ("", "-"):
        yield sys.stdout
        return
    with open(path, "a", encoding="utf-8") as fh:
        yield fh


async def run(
    config: Config, seeds: list[str], out: IO[str], keys: set[str] | None = None
) -> Crawler:
    async with Crawler(config) as crawler:
        async for result in crawler.crawl(seeds):
            out.write(result.to_json() + "\n")
            if keys is not None:
                keys.add(result.key)
        out.flush()
    return crawler


async def run_demo(config: Config, out: IO[str], explicit_delay: bool) -> tuple[Crawler, bool]:
    """Serve the fixture site on loopback, crawl it, and check the result against its truth."""
    async with FixtureSite() as site:
        config = config.override("fetch", resolve={**config.fetch.resolve, **site.resolve})
        if not explicit_delay:
            config = config.override("politeness", delay=0.0)
        print(f"demo: fixture site on 127.0.0.1:{site.port} "
              f"(hosts: {', '.join(site.resolve)}), seeds: {' '.join(site.seeds)}",
              file=sys.stderr)  # fmt: skip
        keys: set[str] = set()
        crawler = await run(config, site.seeds, out, keys)
        expected = site.expected(config.crawl.max_depth) | site.refused()
        ok = keys == expected if not config.crawl.max_pages else keys <= expected
        verdict = "equals" if ok else "DIFFERS FROM"
        print(f"demo: {len(keys)} results; the crawled set {verdict} the fixture's ground truth "
              f"({len(expected)} URLs)", file=sys.stderr)  # fmt: skip
        return crawler, ok


def print_summary(crawler: Crawler, stream: TextIO) -> None:
    stats = crawler.stats_dict()
    print("crawl summary:", file=stream)
    for key in ("pages", "bytes", "status_classes", "errors", "retries", "robots_refused",
                "out_of_scope", "duplicates", "over_limit", "dropped_full", "elapsed_s",
                "pages_per_s", "memo_hit_rate", "sieve"):  # fmt: skip
        print(f"  {key:15} {stats[key]}", file=stream)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.verbose, args.quiet)
    try:
        config = apply_overrides(load_config(args.config), args)
        if args.demo and args.targets:
            raise ConfigError("--demo crawls the bundled fixture site; give no seeds with it")
        seeds = [] if args.demo else collect_seeds(args.targets)
        if not args.demo and not seeds:
            parser.print_usage(sys.stderr)
            print("crawl: error: no seeds given (use a URL, a seeds file, or --demo)",
                  file=sys.stderr)  # fmt: skip
            return 2
        Crawler(config).seed_entries(seeds)
    except (ConfigError, SeedError) as exc:
        print(f"crawl: error: {exc}", file=sys.stderr)
        return 2
    try:
        with open_output(config.output.path) as out:
            if args.demo:
                crawler, ok = asyncio.run(run_demo(config, out, args.delay is not None))
            else:
                crawler, ok = asyncio.run(run(config, seeds, out)), True
    except KeyboardInterrupt:
        print("crawl: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"crawl: error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print_summary(crawler, sys.stderr)
    if config.output.stats:
        Path(config.output.stats).write_text(json.dumps(crawler.stats_dict(), indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
