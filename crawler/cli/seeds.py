"""Seeds for the `crawl` command: read from the command line and seeds files, and how they fared.

- `collect_seeds`: each argument is a URL (it has ``://``) or a seeds file (one URL per line,
  blank lines and ``#`` comments allowed; UTF-8, or UTF-16 with its BOM; CRLF line ends; read
  line by line, only the seeds kept). Every bad line is reported (up to `MAX_REPORTED`), with
  its file and line; an argument that is neither a file nor a URL gets a suggestion
  (``example.net`` -> ``http://example.net/``); a file without seeds is named.
- `SeedReport`: which seeds got an HTTP response. A seed *got an HTTP response* when the result
  of the seed URL itself carries an HTTP status, whatever it is (2xx to 5xx, a redirect
  included); a seed refused because its host's robots.txt could not be fetched, or disallowed by
  it, or whose fetch failed (DNS, connection, timeout, ...) did not. When seeds were tried and
  not one got an HTTP response, the crawl fetched nothing: `crawl` exits with status 3 and shows
  each seed's real reason.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from crawler.errors import SeedError
from crawler.output.results import CrawlResult
from crawler.urls.canonical import canonicalize, why_not

__all__ = ["MAX_REPORTED", "SeedReport", "collect_seeds", "failure_reason", "read_seeds"]

MAX_REPORTED = 20  # bad seed lines (and failed seeds) listed before "... and N more"


def _listing(problems: list[str], total: int) -> str:
    more = f"\n  ... and {total - len(problems)} more" if total > len(problems) else ""
    return "\n  ".join(problems) + more


def read_seeds(source: str, lines: Iterable[str], max_length: int = 0) -> list[str]:
    """Seed URLs from a seeds file's lines; bad lines raise one SeedError naming each of them
    (source and line number), up to `MAX_REPORTED`. A URL whose canonical form is longer than
    `max_length` (``[scope] max_url_length``; 0: no limit) is a bad line too."""
    seeds: list[str] = []
    bad: list[str] = []
    nbad = 0
    for number, raw in enumerate(lines, start=1):
        line = _COMMENT.sub("", raw).strip()  # `URL  # a comment`: the comment is no part of it
        if not line or line.startswith("#"):
            continue
        problem = _spaced(line) or _problem(line, max_length)
        if problem:
            nbad += 1
            if len(bad) < MAX_REPORTED:
                bad.append(f"{source}:{number}: {problem}: {_shown(line)}")
            continue
        seeds.append(line)
    if nbad == 1:
        raise SeedError(bad[0])
    if nbad:
        raise SeedError(f"{nbad} bad seed lines:\n  {_listing(bad, nbad)}")
    return seeds


def _problem(line: str, max_length: int) -> str:
    """What is wrong with a seed URL ("" if nothing)."""
    key = canonicalize(line)
    if key is None:
        why = why_not(line)
        return f"not a crawlable http(s) URL: {why}" if why else "not a crawlable http(s) URL"
    if max_length and len(key) > max_length:
        return f"longer than [scope] max_url_length ({max_length:,} characters)"
    return ""


def _spaced(line: str) -> str:
    """What is wrong with a seeds file's line holding whitespace ("" if none): words after a
    URL (one URL per line: a comment starts with " #"), a space in a host, or in a URL (a path
    with a space is written %20: a space is more often a slip than meant)."""
    words = line.split(None, 1)  # (the line is stripped)
    if len(words) < 2:
        return ""
    if why := why_not(line):  # a space in the host: said as such
        return f"not a crawlable http(s) URL: {why}"
    if canonicalize(words[0]) is not None:
        return f"words after the URL ({words[1]!r}): one URL per line, a comment starts with ' #'"
    return "a space in the URL (write it %20)"


# a scheme whose "://" was mistyped (http//host/, https:\\host, http;//host)
_MISTYPED = re.compile(r"(https?)(?://|;//|:\\\\|:)(?=[^/\\])(.+)", re.IGNORECASE)


def _shown(line: str, limit: int = 200) -> str:
    """A line as quoted in an error: its repr, cut after `limit` characters."""
    if len(line) <= limit:
        return repr(line)
    return f"{line[:limit]!r}... ({len(line):,} characters)"


_FILE_SUFFIXES = frozenset({"txt", "csv", "tsv", "lst", "list", "urls", "json", "jsonl", "md"})


def suggest_url(target: str) -> str | None:
    """`http://TARGET/` when TARGET looks like a host name (a path after it allowed) rather than
    a file name (``seeds.txt``), else None."""
    mistyped = _MISTYPED.fullmatch(target)
    if mistyped is not None:
        target = mistyped.group(2)
    host = re.split(r"[/:]", target, maxsplit=1)[0].rstrip(".")
    if "." not in host and host != "localhost":
        return None
    if host.rsplit(".", 1)[-1].lower() in _FILE_SUFFIXES or target.startswith((".", "/", "~")):
        return None
    scheme = mistyped.group(1).lower() if mistyped is not None else "http"
    url = f"{scheme}://{target}" if "/" in target else f"{scheme}://{target}/"
    return url if canonicalize(url) is not None else None


def collect_seeds(targets: Iterable[str], max_length: int = 0) -> list[str]:
    """Every seed of the command line's URLs and seeds files, in order; `max_length`: see
    `read_seeds`.

    Raises SeedError for an unreadable file, an argument that is neither a file nor a URL, bad
    lines, or when the seeds files given hold no seed at all ("no seeds in FILE")."""
    seeds: list[str] = []
    empty: list[str] = []
    problems: list[str] = []  # one per argument: all of them are reported at once
    for target in targets:
        try:
            found = _seeds_of(target, max_length)
        except SeedError as exc:
            problems.append(str(exc))
            continue
        if not found:
            empty.append(target)
        seeds.extend(found)
    if problems:
        raise SeedError("\n".join(problems))
    if empty and not seeds:
        raise SeedError(f"no seeds in {', '.join(empty)} (one URL per line, '#' comments)")
    return seeds


def _seeds_of(target: str, max_length: int) -> list[str]:
    path = Path(target)
    scheme = _SCHEME.match(target.strip())
    if "://" in target or (scheme is not None and not path.exists()):
        return [_url_seed(target, scheme.group(1).lower() if scheme else "", max_length)]
    if not path.exists():
        url = suggest_url(target)
        hint = f"; did you mean {url}?" if url else ""
        raise SeedError(f"{target}: neither a seeds file nor a URL (no such file){hint}")
    if path.is_dir():
        raise SeedError(f"{target}: is a directory, not a seeds file")
    try:
        with path.open("rb") as fh:
            encoding = _encoding(fh.read(4))
            fh.seek(0)
            # line by line: the file is never held whole
            with io.TextIOWrapper(fh, encoding=encoding, newline=None) as text:
                return read_seeds(target, text, max_length)
    except UnicodeError:
        raise SeedError(f"{target}: not a text file in UTF-8 (or UTF-16 with a BOM): "
                        "give one URL per line") from None  # fmt: skip
    except OSError as exc:
        raise SeedError(f"{target}: cannot read seeds file: {exc.strerror or exc}") from None


def _url_seed(target: str, scheme: str, max_length: int) -> str:
    """A seed URL given on the command line, or a SeedError naming it (and a scheme other than
    http(s): mailto:, javascript:, ftp:, ...). `http:/host/` is read as browsers read it."""
    shown = target if len(target) <= 200 else _shown(target)
    if scheme not in ("http", "https"):
        tail = f" (a {scheme}: URL)" if scheme else ""
        raise SeedError(f"{shown}: not a crawlable http(s) URL{tail}; "
                        "seeds are http:// or https:// URLs")  # fmt: skip
    problem = _problem(target.strip(), max_length)
    if problem:
        raise SeedError(f"{shown}: {problem}")
    return target.strip()


# a comment after a seed: whitespace, then "#" (a URL's own fragment has no whitespace before it)
_COMMENT = re.compile(r"(?<=\s)#.*", re.DOTALL)  # a lookbehind: linear on a line of blanks

# a URL scheme and its colon, not a host and port ("example.org:8080") or a Windows drive
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]+):(?![0-9]+(?:/|$))")


def _encoding(head: bytes) -> str:
    """A seeds file's encoding: UTF-16 with its BOM (Windows Notepad's "Unicode"), else UTF-8
    (its BOM skipped)."""
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16"
    return "utf-8-sig"


_UNREACHABLE = re.compile(r"robots: robots\.txt unreachable \((?:(.*); )?RFC 9309: [^)]*\)")


def failure_reason(error: str | None) -> str:
    """Why a seed got no HTTP response, in words: the real cause of a robots.txt that could not be
    fetched (``connect: ...``, ``dns: ...``) rather than only "robots.txt unreachable"."""
    if error is None:
        return "no response"
    match = _UNREACHABLE.fullmatch(error)
    if match is None:
        return error
    cause = match.group(1)
    if not cause:
        return "its host's robots.txt could not be fetched"
    if cause.startswith("HTTP "):
        return f"its host's robots.txt answered {cause} (RFC 9309: then nothing may be fetched)"
    return f"{cause} (fetching its host's robots.txt)"


class SeedReport:
    """Counts the seeds' results (depth 0, no parent) and keeps the first few failures."""

    __slots__ = ("answered", "failures", "out_of_scope", "redirected", "tried")

    def __init__(self, out_of_scope: Callable[[str, str], bool] | None = None) -> None:
        self.tried = 0
        self.answered = 0
        self.failures: list[tuple[str, str]] = []  # (url, reason), the first MAX_REPORTED
        # (seed, Location) of seeds whose redirect target was not admitted, the first few;
        # only those `out_of_scope(seed, location)` says left the crawl's scope, if given (so
        # that targets already seen do not take the places of the ones to report)
        self.out_of_scope = out_of_scope
        self.redirected: list[tuple[str, str]] = []

    def observe(self, result: CrawlResult) -> None:
        if result.depth or result.parent is not None:
            return
        self.tried += 1
        if result.status is not None:
            self.answered += 1
            location = result.location
            if (
                location is not None
                and not result.new_links
                and not result.error
                and len(self.redirected) < MAX_REPORTED
                and (self.out_of_scope is None or self.out_of_scope(result.url, location))
            ):
                self.redirected.append((result.url, location))
        elif len(self.failures) < MAX_REPORTED:
            self.failures.append((result.url, failure_reason(result.error)))

    @property
    def nothing_fetched(self) -> bool:
        """True when seeds were tried and not one got an HTTP response."""
        return self.tried > 0 and self.answered == 0

    def message(self) -> str:
        lines = [f"{url}: {reason}" for url, reason in self.failures]
        return f"no seed could be fetched:\n  {_listing(lines, self.tried)}"

    def __repr__(self) -> str:
        return f"<SeedReport tried={self.tried} answered={self.answered}>"
