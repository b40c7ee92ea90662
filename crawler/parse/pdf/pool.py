"""Reading PDFs off the event loop, bounded: a small pool of persistent worker processes.

pdfium is C code reading whatever a server sends; a thread running it could not be stopped, so
each read runs in a worker process (`crawler.parse.pdf.worker`) whose address space is capped
(RLIMIT_AS, `memory` bytes) and whose answer is awaited for at most `timeout` seconds. A worker
that overruns is killed and a new one started for the next PDF; the PDF's result gets an error
(`pdf_timeout`, `pdf_crashed`). Workers start when the first PDF comes (~0.1 s each) and stay.

    pool = PdfPool()
    read = await pool.read(body)      # a PdfRead: the document, or an error
    await pool.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from crawler.parse.pdf.read import PdfDocument
from crawler.parse.pdf.worker import ANSWER, JOB

__all__ = ["MAX_PAGES", "MEMORY_BYTES", "TIMEOUT_SECONDS", "WORKERS", "PdfPool", "PdfRead"]

MAX_PAGES = 2000
"""Pages read of one PDF; the rest of a longer one is left (its result's text is truncated)."""
MEMORY_BYTES = 1 << 30
"""A worker's address space: a PDF that needs more (a decompression bomb) fails, not the crawl."""
TIMEOUT_SECONDS = 30.0
"""Longest a PDF may keep a worker (octave.pdf's 1,158 pages take ~3 s on one core)."""
WORKERS = max(1, min(2, (os.cpu_count() or 2) - 1))
"""Worker processes: PDFs are rare next to HTML pages, and a worker holds a core while it reads."""
_ROOT = str(Path(__file__).resolve().parents[3])  # the folder `crawler` is imported from


@dataclass(frozen=True, slots=True)
class PdfRead:
    """What reading one PDF gave: `doc` (None when it could not be read) and `error`
    (`kind: message`, None when all went well; a truncated file has both)."""

    doc: PdfDocument | None
    error: str | None = None


class _Worker:
    __slots__ = ("process",)

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def ask(self, data: bytes, max_pages: int, max_chars: int, max_links: int) -> bytes:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(JOB.pack(max_pages, max_chars, max_links, len(data)))
        stdin.write(data)
        await stdin.drain()
        (size,) = ANSWER.unpack(await stdout.readexactly(ANSWER.size))
        return await stdout.readexactly(size)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()


class PdfPool:
    """Reads PDFs in up to `workers` worker processes (see the module's docstring)."""

    __slots__ = ("_busy", "_closed", "_idle", "_slots", "max_chars", "max_links", "max_pages",
                 "memory", "timeout", "workers")  # fmt: skip

    def __init__(
        self,
        workers: int = WORKERS,
        *,
        max_pages: int = MAX_PAGES,
        max_chars: int = 8 << 20,
        max_links: int = 10_000,
        memory: int = MEMORY_BYTES,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        self.workers, self.max_pages, self.max_chars = workers, max_pages, max_chars
        self.max_links, self.memory, self.timeout = max_links, memory, timeout
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._slots: asyncio.Semaphore | None = None  # made on the loop that reads
        self._closed = False

    async def read(self, data: bytes) -> PdfRead:
        """Read the PDF `data` in a worker; never raises for what the bytes hold."""
        if self._closed:
            raise RuntimeError("PdfPool is closed")
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
        async with self._slots:
            worker = self._idle.pop() if self._idle else await self._start()
            self._busy.add(worker)
            try:
                async with asyncio.timeout(self.timeout):
                    out = await worker.ask(data, self.max_pages, self.max_chars, self.max_links)
            except TimeoutError:
                worker.kill()
                return PdfRead(None, f"pdf_timeout: not read in {self.timeout:g} s")
            except (asyncio.IncompleteReadError, ConnectionError):
                return PdfRead(None, await self._died(worker))
            except BaseException:  # cancelled mid-read: the worker's state is unknown
                worker.kill()
                raise
            finally:
                self._busy.discard(worker)
            self._idle.append(worker)
        return _answer(out)

    async def _start(self) -> _Worker:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_ROOT, env.get("PYTHONPATH")]))
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "crawler.parse.pdf.worker", str(self.memory),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env,
        )  # fmt: skip
        return _Worker(process)

    async def _died(self, worker: _Worker) -> str:
        """The error of a PDF whose worker died reading it."""
        worker.kill()
        code = await worker.process.wait()
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return (f"pdf_crashed: the PDF reader died ({how}), e.g. over its "
                f"{self.memory >> 20} MB memory bound")  # fmt: skip

    async def close(self) -> None:
        """End the workers (idle ones close their stdin and exit; busy ones are killed)."""
        self._closed = True
        idle, self._idle = self._idle, []
        for worker in self._busy:
            worker.kill()
        for worker in idle:
            if worker.process.stdin is not None:
                worker.process.stdin.close()
        for worker in idle:
            try:
                await asyncio.wait_for(worker.process.wait(), 5.0)
            except TimeoutError:
                worker.kill()
                await worker.process.wait()

    def __repr__(self) -> str:
        return (f"<PdfPool workers={self.workers} idle={len(self._idle)} busy={len(self._busy)} "
                f"closed={self._closed}>")  # fmt: skip


def _answer(out: bytes) -> PdfRead:
    got = json.loads(out)
    if "pages" not in got:
        return PdfRead(None, str(got["error"]))
    doc = PdfDocument(
        title=got["title"],
        pages=int(got["pages"]),
        texts=tuple(got["texts"]),
        links=tuple(got["links"]),
        truncated=bool(got["truncated"]),
        error=got["error"],
    )
    return PdfRead(doc, doc.error)
