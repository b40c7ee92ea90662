"""Where the `crawl` command's results go: output paths checked before the crawl starts, and
JSON Lines handed to the OS within a second of each result.

- `check_output_paths`: every output path (`-o`, `--warc`, `--stats`, `--state`) is checked
  before the crawl, alike: missing parent directories are created (for `--state`, the directory
  itself); a path that is a directory where a file is wanted (or the reverse), a parent that is
  a file, a path that is not writable, two options naming one file, or an output file inside the
  state directory are `ConfigError`s that name the option.
- `JsonlWriter`: lines go through the stream's buffer (no flush per line on the hot path) and a
  timer flushes them every `FLUSH_INTERVAL` seconds, so a crawl killed by SIGKILL, the OOM killer
  or a CI timeout keeps every result older than that, and `tail -f` follows the crawl. With a
  crawl state each line is flushed before the state marks its URL done.
- `open_output` / `repair_jsonl`: `-o PATH` is appended to, after a partial last line left by a
  crash is cut.

WARC records need no timer: warcio flushes each record (one gzip member) as it writes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import logging
import os
import stat
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TextIO

from crawler.errors import ConfigError, OutputError
from crawler.output.results import CrawlResult

__all__ = [
    "FLUSH_INTERVAL",
    "JsonlWriter",
    "check_not_inputs",
    "check_output_paths",
    "earlier_results",
    "open_output",
    "repair_jsonl",
]

log = logging.getLogger(__name__)

FLUSH_INTERVAL = 0.5  # seconds: a result reaches the OS at most this long after it is written


def check_output_paths(files: Mapping[str, str], directories: Mapping[str, str]) -> None:
    """Check output paths before a crawl, creating missing parent directories.

    `files` and `directories` map the option that named a path (`-o`, `[output] stats`, ...) to
    the path; empty paths and `-` (stdout) are skipped. Raises ConfigError naming the option.
    """
    for dir_option, directory in directories.items():
        if directory in ("", "-"):
            continue
        inside = Path(directory).resolve()
        for option, path in files.items():
            if path not in ("", "-") and inside in Path(path).resolve().parents:
                raise ConfigError(
                    f"{option} {path}: inside the {dir_option} directory {directory}, which "
                    "holds the crawl state only; write outputs elsewhere"
                )
    seen: dict[Path, str] = {}
    to_create: list[tuple[str, Path]] = []
    for option, path in [*files.items(), *directories.items()]:
        if path in ("", "-"):
            continue
        is_dir = option in directories
        if not is_dir and path.endswith(("/", os.sep)):
            raise ConfigError(f"{option} {path}: names a directory; give a file name")
        target = Path(path)
        resolved = target.resolve()
        if resolved in seen:
            raise ConfigError(f"{seen[resolved]} and {option} name the same path: {path}")
        seen[resolved] = option
        _check_one(option, target, is_dir=is_dir)
        to_create.append((option, target if is_dir else target.parent))
    for option, missing in to_create:  # nothing is created before every path passed
        try:
            missing.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConfigError(f"{option} {missing}: cannot create directory: {reason}") from None


def check_not_inputs(files: Mapping[str, str], inputs: Mapping[str, str]) -> None:
    """Refuse an output file that is one of the command's inputs (a seeds file, the config):
    results would be appended to it. `inputs` maps a description to each path."""
    given = {Path(path).resolve(): path for path in inputs.values() if Path(path).is_file()}
    for option, path in files.items():
        if path not in ("", "-") and (same := given.get(Path(path).resolve())) is not None:
            raise ConfigError(f"{option} {path}: is an input of this crawl ({same}); the crawl "
                              "would write into it: write elsewhere")  # fmt: skip


def _check_one(option: str, target: Path, *, is_dir: bool) -> None:
    """Check that `target` can be written, creating nothing that stays: a missing file (or the
    first missing directory on its way) is made and removed again, so a place where nothing can
    be created (a read-only mount, /proc even for root) is found before the crawl."""
    where = f"{option} {target}"
    if is_dir and target.exists() and not target.is_dir():
        raise ConfigError(f"{where}: not a directory")
    if not is_dir and target.is_dir():
        raise ConfigError(f"{where}: is a directory; give a file name")
    directory = target if is_dir else target.parent
    base = next((p for p in (directory, *directory.parents) if p.exists()), Path("/"))
    if not base.is_dir():
        raise ConfigError(f"{where}: {base} is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ConfigError(f"{where}: cannot write in {base}: permission denied")
    longest = os.pathconf(base, "PC_NAME_MAX")  # (the probe below creates the first one only)
    for part in target.relative_to(base).parts if target != base else ():
        if len(os.fsencode(part)) > longest:
            raise ConfigError(f"{where}: a name in it is longer than {longest} bytes: "
                              "File name too long (ENAMETOOLONG)")  # fmt: skip
    if target.exists() and not os.access(target, os.W_OK):
        raise ConfigError(f"{where}: not writable")
    try:
        if base != directory:  # the first missing directory on the way
            probe = base / directory.relative_to(base).parts[0]
            probe.mkdir()
            probe.rmdir()
        elif is_dir:
            pass  # an existing directory, writable (checked above)
        elif target.exists():
            if target.is_file():  # (not a FIFO: opening one would wait for its reader)
                os.close(os.open(target, os.O_WRONLY | os.O_APPEND))
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            target.unlink()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot write: {exc.strerror or exc}") from None


class JsonlWriter:
    """Writes results as JSON Lines; `async with` runs the timer that flushes them.

    `write` only buffers (unless `sync`); every `interval` seconds the lines written since the
    last flush are handed to the OS, and once more on leaving. A failed flush (the reader of a
    pipe went away, a full disk) calls `on_error` once and is raised by the next `write` and on
    leaving, so it ends the crawl the way a failed write does: `BrokenPipeError` as it is, any
    other OSError as an `OutputError` naming the output (`name`).
    """

    __slots__ = ("_dirty", "_fields", "_flushed_at", "_on_error", "_out", "_sync", "_task",
                 "error", "interval", "lines", "name", "whole")  # fmt: skip

    def __init__(
        self,
        out: IO[str],
        *,
        interval: float = FLUSH_INTERVAL,
        sync: bool = False,
        on_error: Callable[[], None] | None = None,
        name: str = "the JSON Lines output",
        text: bool = False,
        markdown: bool = False,
        meta: bool = False,
        fields: bool = False,
    ) -> None:
        self.name = name
        # the page fields written (text, metadata, [[extract]] fields)
        self._fields = {"text": text, "markdown": markdown, "meta": meta, "fields": fields}
        self._out = out
        self._sync = sync
        self._on_error = on_error
        self.interval = interval
        self.lines = 0  # results written (maybe still in the buffer)
        self.whole = 0  # results handed to the OS whole: at the last flush that succeeded
        self._flushed_at = self._file_size()  # a file's size then (None: not a regular file)
        self.error: OSError | OutputError | None = None
        self._dirty = False
        self._task: asyncio.Task[None] | None = None

    def _file_size(self) -> int | None:
        try:
            st = os.fstat(self._out.fileno())
        except (OSError, ValueError, AttributeError):  # a StringIO, a closed stream
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def _flushed(self) -> None:
        self.whole = self.lines
        if self._flushed_at is not None:
            self._flushed_at = self._file_size()

    def _failed(self, exc: OSError) -> OSError | OutputError:
        if isinstance(exc, BrokenPipeError):
            return exc
        code = errno.errorcode.get(exc.errno or 0)
        reason = f"{exc.strerror or exc}" + (f" ({code})" if code else "")
        whole = self._cut_at_a_whole_line()
        if whole is None:  # not a file: what the last good flush handed over
            counted = f"{self.whole:,} results written before it; more may have been cut"
        else:
            counted = f"{whole:,} results written, each on a whole line; the crawl stopped there"
        error = OutputError(f"{self.name}: cannot write: {reason} ({counted})")
        error.__cause__ = exc
        return error

    def _cut_at_a_whole_line(self) -> int | None:
        """After a failed write to a file (a full disk): the results on whole lines of it, the
        lines that reached it since the last good flush counted and a partial last line cut.
        Nothing more reaches the file: its descriptor is pointed at /dev/null, as what is left
        in the buffer (flushed on close) would start mid-line. None when it is no file."""
        start = self._flushed_at
        if start is None:
            return None
        try:
            fd = self._out.fileno()
            end = os.fstat(fd).st_size
            tail = os.pread(fd, end - start, start) if end > start else b""
            cut = tail.rfind(b"\n") + 1
            os.ftruncate(fd, start + cut)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        except OSError:  # (opened write-only by a caller: cannot be read back)
            return None
        return self.whole + tail[:cut].count(b"\n")

    def write(self, result: CrawlResult) -> None:
        if self.error is not None:
            raise self.error
        try:
            self._out.write(result.to_json(**self._fields) + "\n")
            self.lines += 1
            if self._sync:
                self._out.flush()  # before the state marks the URL done
                self._flushed()
        except OSError as exc:
            self.lines -= 1  # (its line was not written whole)
            self.error = self._failed(exc)
            raise self.error from exc
        self._dirty = not self._sync

    def flush(self) -> None:
        """Hand the buffered lines to the OS now; a failure is kept in `error`."""
        if not self._dirty or self.error is not None:
            return
        self._dirty = False
        try:
            self._out.flush()
            self._flushed()
        except OSError as exc:
            self.error = self._failed(exc)
            if self._on_error is not None:
                self._on_error()

    async def __aenter__(self) -> JsonlWriter:
        if not self._sync:
            self._task = asyncio.create_task(self._run(), name="jsonl-flush")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._dirty = True
        self.flush()
        if self.error is not None and not any(exc):
            raise self.error

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.flush()

    def __repr__(self) -> str:
        mode = "flush per line" if self._sync else f"flush every {self.interval:g} s"
        return f"<JsonlWriter {self.lines} lines, {mode}>"


@contextlib.contextmanager
def open_output(path: str, *, option: str = "-o", overwrite: bool = False) -> Iterator[TextIO]:
    """stdout, or `path` opened for appending (never truncated) after `repair_jsonl`; emptied
    first with `overwrite` (`-O`). Errors name the `option` that gave the path.

    A lone surrogate (text that was bytes no codec could read) is written as its JSON escape
    (``\\udcff``, ``errors="backslashreplace"``), never a UnicodeEncodeError ending the crawl."""
    if path in ("", "-"):
        if isinstance(sys.stdout, io.TextIOWrapper):
            sys.stdout.reconfigure(errors="backslashreplace")
        yield sys.stdout
        return
    try:
        if not overwrite:
            repair_jsonl(Path(path))
        # opened to read too: after a full disk, JsonlWriter reads back what reached the file
        fh = open(path, "w+" if overwrite else "a+", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
    except OSError as exc:  # past the checks made before the crawl (a race)
        raise OutputError(f"{option} {path}: cannot open: {exc.strerror or exc}") from exc
    try:
        yield fh
    except BaseException:
        with contextlib.suppress(OSError):  # the error in flight says what failed
            fh.close()
        raise
    try:
        fh.close()
    except OSError as exc:  # the last lines could not be written (a full disk)
        raise OutputError(f"{option} {path}: cannot write: {exc.strerror or exc}") from exc


def earlier_results(path: str) -> str | None:
    """What an output file to be appended to holds already ("12 results", "3.2 GB of results"),
    or None when it is empty, missing or stdout: `crawl -o` says so before it appends."""
    if path in ("", "-"):
        return None
    try:
        size = os.path.getsize(path)
        if size == 0:
            return None
        if size > 64 << 20:  # not read through for a count
            return (
                f"{size / 1e9:.1f} GB of results" if size >= 1e9 else f"{size >> 20} MiB of results"
            )
        with open(path, "rb") as fh:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return None
    return f"{lines:,} result{'s' * (lines != 1)}"


_RESULT_START = b'{"url":'  # every line CrawlResult.to_json writes starts so


def _starts_as_a_result(head: bytes) -> bool:
    """Whether a line's first bytes (maybe fewer than a result's start: a cut line) are those
    of a result."""
    return head == _RESULT_START[: len(head)]


def repair_jsonl(path: Path, *, check_only: bool = False) -> None:
    """Cut a partial last line left by a crash, so appended records start on a line of their own
    (`check_only`: refuse a file that is not the crawler's, change nothing).

    The URL of a cut line was not marked done in the state, so a resumed crawl writes it again.
    A file that is not the crawler's JSON Lines (its first line, or the partial last one, does
    not start as a result does, ``{"url":``: a seeds list, notes, a WARC, another tool's JSON
    Lines) is a ConfigError, never cut or appended to.
    """
    try:
        with open(path, "rb" if check_only else "r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return
            fh.seek(0)
            if not _starts_as_a_result(fh.read(len(_RESULT_START))):
                raise ConfigError(f"{path}: not a JSON Lines output of the crawler (it does not "
                                  "start with '{\"url\":'): results go to a file of their own, "
                                  "-O empties no other; give a new one")  # fmt: skip
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return
            end = size
            while end > 0:
                start = max(0, end - 65536)
                fh.seek(start)
                chunk = fh.read(end - start)
                cut = chunk.rfind(b"\n")
                if cut >= 0:
                    end = start + cut + 1
                    break
                end = start
            fh.seek(end)
            if not _starts_as_a_result(fh.read(len(_RESULT_START))):  # a crash cuts a record
                raise ConfigError(f"{path}: its last line is not a crawl result: not a JSON "
                                  "Lines output of the crawler; give a new file")  # fmt: skip
            if check_only:
                return
            fh.truncate(end)
            log.warning("%s: removed a partial last line (%d bytes)", path, size - end)
    except FileNotFoundError:
        return
