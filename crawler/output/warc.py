"""WARC 1.1 output (ISO 28500), written with warcio.

Each file starts with a `warcinfo` record; each fetch (pages, redirects, robots.txt) adds a
`request` record and a `response` record carrying the body exactly as the server sent it (still
content-encoded), with WARC-Target-URI, WARC-Date, WARC-IP-Address where known and the payload
digest (warcio computes the digests). Records are gzipped one by one, so the files are seekable
by replay tools. Request records never carry a credential: the fetcher's `Response.request_headers`
come with secret values replaced by ``[redacted]`` (see `crawler.fetch.steering`), and
Authorization, Proxy-Authorization and Cookie are redacted here again whatever built the Response. A
file that passes `max_size` bytes is closed and the next one is opened:
``crawl.warc.gz``, ``crawl-00001.warc.gz``, ``crawl-00002.warc.gz``, ...
Each record reaches the OS as soon as it is written (warcio flushes the file after every record),
so a crawl killed at any moment loses at most the record being written, which the next run cuts.
A write that fails (a full disk) raises `OutputError`, which ends the crawl, and every later write
is refused, so that no record follows a torn one in the file (the next run cuts the torn one).
"""

from __future__ import annotations

import io
import logging
import zlib
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawler.errors import OutputError
from crawler.fetch.response import Response
from crawler.fetch.steering import ALWAYS_SECRET, redact

__all__ = ["WarcOutput"]

log = logging.getLogger(__name__)

# The body is stored de-chunked, so the framing header would lie about it.
_DROP_HEADERS = frozenset({"transfer-encoding"})


class WarcOutput:
    """Appends request/response record pairs to a rotating series of .warc.gz files."""

    __slots__ = ("_file", "_index", "_info", "_writer", "error", "files", "max_size", "path",
                 "records")  # fmt: skip

    def __init__(
        self, path: str | Path, *, max_size: int = 1024**3, info: dict[str, Any] | None = None
    ) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be >= 1 byte, got {max_size}")
        self.path = Path(path)
        check_series(self.path)
        self.max_size = max_size
        self._info = {"software": "sieve-crawler/0.1", "format": "WARC File Format 1.1"}
        self._info.update(info or {})
        self._file: IO[bytes] | None = None
        self._writer: WARCWriter | None = None
        self._index = 0
        self.files: list[Path] = []
        self.records = 0
        self.error: OutputError | None = None  # the first failed write; later ones refused

    def _name(self, index: int) -> Path:
        return _series_name(self.path, index)

    def _open(self) -> WARCWriter:
        if self._writer is not None and self._file is not None:
            if self._file.tell() < self.max_size:
                return self._writer
            self._file.close()
            self._index += 1
        elif not self.files:  # first write: continue an earlier run's series, repaired
            while self._name(self._index + 1).exists():
                self._index += 1
            _repair(self._name(self._index))
        path = self._name(self._index)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "ab")  # noqa: SIM115 - kept open across writes; appended, never truncated
        self._writer = WARCWriter(self._file, gzip=True, warc_version="WARC/1.1")
        self._writer.write_record(self._writer.create_warcinfo_record(path.name, self._info))
        self.files.append(path)
        self.records += 1
        return self._writer

    def write(self, response: Response) -> None:
        """Archive one fetch as a request record and a response record; `OutputError` if it
        cannot be written (and for every write after a failed one)."""
        if self.error is not None:
            raise self.error
        try:
            self._write(response)
        except OSError as exc:
            where = self._name(self._index)
            self.error = OutputError(f"{where}: cannot write the WARC file: {exc.strerror or exc}")
            raise self.error from exc

    def _write(self, response: Response) -> None:
        writer = self._open()
        target = response.url
        parts = urlsplit(target)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request_headers = list(redact(response.request_headers, ALWAYS_SECRET))
        if not any(k.lower() == "host" for k, _ in request_headers):
            request_headers.insert(0, ("Host", parts.netloc))
        request = writer.create_warc_record(
            target,
            "request",
            payload=io.BytesIO(b""),
            http_headers=StatusAndHeaders(
                f"GET {path} {response.version}", request_headers, is_http_request=True
            ),
        )
        headers = [(k, v) for k, v in response.headers if k.lower() not in _DROP_HEADERS]
        body = response.wire_body
        warc_headers = {"WARC-IP-Address": response.ip} if response.ip else {}
        if response.truncated:  # cut at the body cap: the record says so (WARC 1.1, 5.13)
            warc_headers["WARC-Truncated"] = "length"
        record = writer.create_warc_record(
            target,
            "response",
            payload=io.BytesIO(body),
            length=None,
            warc_headers_dict=warc_headers,
            http_headers=StatusAndHeaders(
                f"{response.status:03d} {_ascii(response.reason)}".strip(),  # "000", "099"
                headers,
                protocol=response.version,
            ),
        )
        request.rec_headers.replace_header(
            "WARC-Concurrent-To", record.rec_headers.get_header("WARC-Record-ID")
        )
        writer.write_record(request)
        writer.write_record(record)
        self.records += 2

    def close(self) -> None:
        """Close the current file; `OutputError` if its last bytes cannot be written (none
        after a failed write: that error was raised already)."""
        if self._file is not None:
            file, self._file, self._writer = self._file, None, None
            try:
                file.close()
            except OSError as exc:
                if self.error is None:
                    self.error = OutputError(f"{self._name(self._index)}: cannot write the WARC "
                                             f"file: {exc.strerror or exc}")  # fmt: skip
                    raise self.error from exc

    def __repr__(self) -> str:
        return f"<WarcOutput {str(self.path)!r} files={len(self.files)} records={self.records}>"


def check_series(path: Path) -> None:
    """Check every file of an earlier run's series at `path` (the last is appended to, after a
    cut): an `OutputError` for one that is not a gzipped WARC. Creates and changes nothing."""
    index = 0
    name = path
    while index == 0 or name.exists():
        _check_existing(name)
        index += 1
        name = _series_name(path, index)


def _series_name(path: Path, index: int) -> Path:
    if index == 0:
        return path
    name = path.name
    for suffix in (".warc.gz", ".warc"):
        if name.endswith(suffix):
            return path.with_name(f"{name[: -len(suffix)]}-{index:05d}{suffix}")
    return path.with_name(f"{name}-{index:05d}")


def _check_existing(path: Path) -> None:
    """An existing file is appended to (after its torn last record is cut): refuse one that is
    not a gzipped WARC (its first record inflated, starting "WARC/"), which the cut would
    destroy or the records appended would not belong to (`OutputError`)."""
    if not path.is_file():  # none yet, or a device (/dev/null)
        return
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise OutputError(f"{path}: cannot read the WARC file: {exc.strerror or exc}") from None
    if not head:
        return
    try:
        start = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 5)
    except zlib.error:
        start = b""
    if start != b"WARC/":
        raise OutputError(f"{path}: exists and is not a gzipped WARC file: the crawl appends "
                          "to its own WARC files only; give a new file")  # fmt: skip


def _ascii(reason: str) -> str:
    """The reason phrase as warcio can write a status line: ASCII ("Très bien": "Tr?s bien")."""
    return reason if reason.isascii() else reason.encode("ascii", "replace").decode("ascii")


def _repair(path: Path) -> None:
    """Cut a torn last record (a crash mid-write) so records appended after it stay readable.

    Every record is its own gzip member: keep the file up to the end of the last complete one.
    """
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as fh:
        good = _complete_members_end(fh)
    size = path.stat().st_size
    if good < size:
        with path.open("r+b") as fh:
            fh.truncate(good)
        log.warning("%s: removed %d bytes of a torn last record", path, size - good)


def _complete_members_end(fh: IO[bytes]) -> int:
    """The file offset where the last complete gzip member ends (inflating in bounded steps)."""
    good = base = fed = 0
    z = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while chunk := fh.read(1 << 20):
        buf = chunk
        while buf:
            try:
                z.decompress(buf, 1 << 16)
            except zlib.error:
                return good
            if z.eof:
                rest = z.unused_data
                base += fed + len(buf) - len(rest)
                good, fed = base, 0
                z = zlib.decompressobj(16 + zlib.MAX_WBITS)
                buf = rest
            else:
                fed += len(buf) - len(z.unconsumed_tail)
                buf = z.unconsumed_tail
    return good
