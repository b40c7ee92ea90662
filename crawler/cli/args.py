"""The `crawl` command's arguments: `build_parser`, and what they override in the config.

`apply_overrides` puts the flags given over the config file's values (`Config.override`, each
value checked like the file's); `output_paths` names every output path by the flag or the
config key that set it, for the checks made before the crawl (`crawler.output.jsonl`).
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, NoReturn

from crawler.errors import ConfigError

if TYPE_CHECKING:  # the config's modules load after the arguments are parsed (not for --help)
    from crawler.config.load import Config

__all__ = ["apply_overrides", "build_parser", "output_paths"]


class _Parser(argparse.ArgumentParser):
    """argparse, with the nearest flag suggested for a mistyped one (`--maxpages`)."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            import difflib  # only here: not on every start of the command

            flags = [flag for action in self._actions for flag in action.option_strings]
            for word in message.split(": ", 1)[1].split():
                close = difflib.get_close_matches(word.split("=", 1)[0], flags, n=1)
                if word.startswith("-") and close:
                    message += f" (did you mean {close[0]}?)"
                    break
        super().error(message)


class _Version(argparse.Action):
    """`--version`: the installed distribution's version, read only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help=str(kwargs.get("help")))

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("sieve-crawler")
        except PackageNotFoundError:  # run from a source tree that was not installed
            number = "unknown (not installed)"
        print(f"crawl (sieve-crawler) {number}")  # on stdout, as --version does elsewhere
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The `crawl` command's parser; building it imports nothing of the crawl (`--help` and
    `--version` answer without loading the engine)."""
    parser = _Parser(
        prog="crawl",
        description="Crawl from seed URLs (or seed files, one URL per line) and write JSON Lines.",
        epilog="exit status: 0 done; 1 the demo differed from its ground truth, or the focus "
        "scorer failed; 2 usage, config, "
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
    _add_outputs(parser)
    _add_limits(parser)
    _add_state_and_cluster(parser)
    _add_common(parser.add_argument_group("common settings (any other: -s SECTION.KEY=VALUE)"))
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    verbosity.add_argument("-q", "--quiet", action="store_true", help="only errors on stderr")
    return parser


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    """-o/-O, --stats, --warc."""
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "-o", "--output", metavar="PATH", help="JSON Lines output (appended to); '-' = stdout"
    )
    output.add_argument(
        "-O",
        "--overwrite-output",
        metavar="PATH",
        help="JSON Lines output, emptied first (refused on a resume: use -o)",
    )
    parser.add_argument("--stats", metavar="PATH", help="write the final stats as JSON")
    parser.add_argument("--warc", metavar="PATH", help="archive every exchange to WARC (.warc.gz)")
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="write an HTML report of the crawl at its end (interrupted too); "
        "`crawl report OUT.jsonl -o FILE` makes one from an output",
    )
    parser.add_argument(
        "--metrics",
        metavar="HOST:PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics while the crawl runs "
        "(a PORT alone: on loopback)",
    )


def _add_limits(parser: argparse.ArgumentParser) -> None:
    """How far and how fast: --max-pages, --max-depth, --concurrency, --focus, --delay."""
    parser.add_argument(
        "--max-pages",
        type=int,
        metavar="N",
        help="stop admitting after N URLs (with --focus: fetch N pages, best first); 0: no limit",
    )
    parser.add_argument(
        "--max-depth",
        type=int,
        metavar="N",
        help="links deeper than N are skipped (default 16); 0: no limit",
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
        help="minimum seconds between requests to one host, and to one address at most that "
        "(default 1; 0 for your own site)",
    )


def _add_state_and_cluster(parser: argparse.ArgumentParser) -> None:
    """--state, --fresh, --recrawl; --redis, --crawl-id, --status; --demo."""
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


def _add_common(common: argparse._ArgumentGroup) -> None:
    """The common settings, each a config key (any other: -s SECTION.KEY=VALUE)."""
    common.add_argument("--user-agent", metavar="UA", help="the User-Agent sent ([crawl])")
    common.add_argument(
        "--per-host-concurrency",
        type=int,
        metavar="N",
        help="requests in flight to one host at most (default 1)",
    )
    for flag, metavar, what in (
        ("--allow-domain", "DOMAIN",
         "crawl this domain and its subdomains (repeatable; default: the seeds' hosts)"),
        ("--include", "REGEX", "follow only URLs matching one of these (repeatable)"),
        ("--exclude", "REGEX", "skip URLs matching any of these (repeatable)"),
    ):  # fmt: skip
        common.add_argument(flag, action="append", metavar=metavar, help=what)
    common.add_argument(
        "--sieve",
        metavar="KIND",
        help="the URL-seen filter: scalable (default), bloom, blocked, multilayer, counting, "
        "cuckoo or stable ([sieve] kind)",
    )
    for flag, what in (
        ("--dedup", "content dedup of HTML pages ([dedup] enabled)"),
        ("--text", "give each HTML result its main content as plain text ([output] text)"),
        ("--markdown", "give each HTML result its main content as markdown ([output] markdown)"),
        ("--meta", "give each HTML result its metadata: description, language, author, dates, "
                   "OpenGraph, JSON-LD, microdata ([output] meta)"),
        ("--sitemaps", "seed each host with its robots.txt sitemaps ([scope] use_sitemaps)"),
        ("--ignore-robots", "do not fetch or obey robots.txt (only for sites that are yours)"),
        ("--pdf", "read PDFs: their text, title, pages and links ([parse] pdf)"),
        ("--render", "render HTML pages in a headless Chromium, its every request through the "
                     "crawler's fetcher ([render] enabled)"),
    ):  # fmt: skip
        common.add_argument(flag, action="store_true", default=None, help=what)
    common.add_argument(
        "-s",
        "--set",
        action="append",
        default=[],
        dest="settings",
        metavar="SECTION.KEY=VALUE",
        help="set any config key, e.g. -s dedup.near_distance=4 (repeatable; "
        "the value read as TOML, else as a string)",
    )


# the flag that sets each config key, to name it in an error ("--max-pages: must be >= 0")
_FLAGS = {
    "[crawl] max_pages": "--max-pages",
    "[crawl] max_depth": "--max-depth",
    "[crawl] concurrency": "--concurrency",
    "[politeness] delay": "--delay",
    "[output] path": "-o",
    "[crawl] user_agent": "--user-agent",
    "[politeness] per_host_concurrency": "--per-host-concurrency",
    "[scope] allowed_domains": "--allow-domain",
    "[scope] include": "--include",
    "[scope] exclude": "--exclude",
    "[sieve] kind": "--sieve",
    "[output] stats": "--stats",
    "[output] warc": "--warc",
    "[output] report": "--report",
    "[metrics] listen": "--metrics",
    "[state] dir": "--state",
    "[focus] keywords": "--focus",
    "[cluster] redis": "--redis",
    "[cluster] crawl_id": "--crawl-id",
}
_OVERRIDE = re.compile(r"override (\[\w+\] \w+)")


def apply_overrides(config: Config, args: argparse.Namespace) -> Config:
    """`config` with the flags given put over it; a bad value is a ConfigError naming its flag."""
    try:
        return _apply_overrides(config, args)
    except ConfigError as exc:
        message = _OVERRIDE.sub(lambda m: _FLAGS.get(m.group(1), m.group(0)), str(exc), count=1)
        raise ConfigError(message) from None


def _given(**values: object) -> dict[str, object]:
    return {k: v for k, v in values.items() if v is not None}


def _address_within_host(config: Config, delay: float | None, per_host: int | None) -> Config:
    """`--delay` and `--per-host-concurrency` never leave one address stricter than one host: a
    crawl of your own site at `--delay 0` is not held to `ip_delay`'s pace, nor one at
    `--per-host-concurrency 8` to `ip_concurrency`'s 4 (a config file sets each on its own)."""
    p = config.politeness
    if delay is not None and delay < p.ip_delay:
        config = config.override("politeness", ip_delay=delay)
    if per_host is not None and 0 < p.ip_concurrency < per_host:
        config = config.override("politeness", ip_concurrency=per_host)
    return config


def _apply_overrides(config: Config, args: argparse.Namespace) -> Config:
    from crawler.cli.settings import apply_settings

    config = apply_settings(config, args.settings)
    a = args
    for section, values in (
        ("crawl", _given(max_pages=a.max_pages, max_depth=a.max_depth,
                         concurrency=a.concurrency, user_agent=a.user_agent)),
        ("politeness", _given(delay=a.delay, per_host_concurrency=a.per_host_concurrency,
                              respect_robots=None if a.ignore_robots is None else False)),
        ("scope", _given(allowed_domains=a.allow_domain, include=a.include, exclude=a.exclude,
                         use_sitemaps=a.sitemaps)),
        ("dedup", _given(enabled=a.dedup)),
        ("output", _given(text=a.text, markdown=a.markdown, meta=a.meta)),
        ("sieve", _given(kind=a.sieve)),
        ("render", _given(enabled=a.render)),
        ("parse", _given(pdf=a.pdf)),
    ):  # fmt: skip
        if values:
            config = config.override(section, **values)
    config = _address_within_host(config, a.delay, a.per_host_concurrency)
    if (path := args.output if args.output is not None else args.overwrite_output) is not None:
        config = config.override("output", path=path)
    if args.stats is not None:
        config = config.override("output", stats=args.stats)
    if args.warc is not None:
        config = config.override("output", warc=args.warc)
    if args.report is not None:
        config = config.override("output", report=args.report)
    if args.metrics is not None:
        config = config.override("metrics", listen=args.metrics)
    if args.state is not None:
        config = config.override("state", dir=args.state)
    if args.focus is not None:
        if not args.focus.split():  # `--focus "$TOPIC"` with TOPIC unset: not an unfocused crawl
            raise ConfigError('--focus: no topic words given (e.g. --focus "replication standby")')
        config = config.override("focus", keywords=tuple(args.focus.split()))
    cluster = {k: v for k, v in (("redis", args.redis), ("crawl_id", args.crawl_id)) if v}
    if cluster:
        config = config.override("cluster", **cluster)
    return config


def output_paths(config: Config, args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str]]:
    """Every output path, keyed by the option that set it (the flag, or the config key)."""

    def name(flag: str, given: object, key: str) -> str:
        return flag if given is not None else key

    o = config.output
    output = "-O" if args.overwrite_output is not None else "-o"
    files = {
        name(output, args.output or args.overwrite_output, "[output] path"): o.path,
        name("--warc", args.warc, "[output] warc"): o.warc,
        name("--stats", args.stats, "[output] stats"): o.stats,
        name("--report", args.report, "[output] report"): o.report,
    }
    return files, {name("--state", args.state, "[state] dir"): config.state.dir}
