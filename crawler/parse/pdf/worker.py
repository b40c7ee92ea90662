"""A PDF worker process: `python -m crawler.parse.pdf.worker MEMORY_BYTES`.

It caps its own address space (RLIMIT_AS) to MEMORY_BYTES, then reads jobs from stdin and
answers on stdout until stdin closes. A job is a header (max_pages, max_chars, max_links, the
body's length: four big-endian uint32) and the body; an answer is a uint32 length and a JSON
object: `PdfDocument`'s fields, or {"error": "kind: message"}. A PDF that makes pdfium use more
memory fails here (a MemoryError answered as `pdf_memory`, or the process dies: the pool then
answers for it), and one that keeps it busy too long is ended by the pool
(`crawler.parse.pdf.pool`).
"""

from __future__ import annotations

import dataclasses
import json
import resource
import struct
import sys
from typing import Any, BinaryIO

from crawler.parse.pdf.read import PdfError, read_pdf

JOB = struct.Struct(">IIII")
ANSWER = struct.Struct(">I")


def answer(data: bytes, max_pages: int, max_chars: int, max_links: int) -> dict[str, Any]:
    """The JSON-ready answer to one job."""
    try:
        doc = read_pdf(data, max_pages=max_pages, max_chars=max_chars, max_links=max_links)
    except PdfError as exc:
        return {"error": exc.describe()}
    except MemoryError:
        return {"error": "pdf_memory: reading it needs more memory than a PDF is allowed"}
    except Exception as exc:  # pdfium or its binding failing on a file it half-reads
        return {"error": f"pdf_broken: {type(exc).__name__}: {exc}"[:300]}
    return dataclasses.asdict(doc)


def serve(jobs: BinaryIO, answers: BinaryIO) -> None:
    """Answer jobs until `jobs` ends."""
    while header := jobs.read(JOB.size):
        if len(header) < JOB.size:
            return
        max_pages, max_chars, max_links, size = JOB.unpack(header)
        data = jobs.read(size)
        if len(data) < size:
            return
        out = json.dumps(answer(data, max_pages, max_chars, max_links)).encode()
        del data
        answers.write(ANSWER.pack(len(out)) + out)
        answers.flush()


def main(argv: list[str]) -> int:
    memory = int(argv[0]) if argv else 0
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    import pypdfium2  # noqa: F401  (loaded before the first job: its cost is the start-up's)

    serve(sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
