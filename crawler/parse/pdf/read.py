"""Reading one PDF with pdfium (pypdfium2): its text page by page, title, page count and links.

`read_pdf` runs in a PDF worker process (`crawler.parse.pdf.worker`), never on the crawl's
event loop: pdfium is C code fed by whatever a server sends, so the process it runs in is bounded
(address space, wall clock) and thrown away when it overruns (`crawler.parse.pdf.pool`). What it
finds is returned as plain values; what is wrong with the file is a `PdfError` with a kind.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

__all__ = ["NOT_PDF", "PdfDocument", "PdfError", "read_pdf"]

NOT_PDF = "not_pdf"
# Control characters pdfium leaves in text: soft hyphens' markers, NULs, form feeds of its own.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffe\uffff]")
_BLANKS = re.compile(r"[ \t]+\n")
_EOF_MARK = b"%%EOF"


class PdfError(Exception):
    """What is wrong with a PDF: `kind` (`not_pdf`, `pdf_encrypted`, `pdf_broken`...) and a
    one-line message; a result's error is `f"{kind}: {message}"`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    def describe(self) -> str:
        return f"{self.kind}: {self}"


@dataclass(frozen=True, slots=True)
class PdfDocument:
    """One PDF as read: `title` (the metadata's, else the first line of text, None without
    either), `pages` (its page count), `texts` (the text of the first pages read, in pdfium's
    reading order), `links` (its URI link annotations' targets, in page order, at most
    max_links), `truncated` (pages or characters left unread: over max_pages or max_chars),
    `error` (a problem that left the text readable, such as a missing end of file, else None)."""

    title: str | None
    pages: int
    texts: tuple[str, ...]
    links: tuple[str, ...]
    truncated: bool = False
    error: str | None = None


def read_pdf(data: bytes, *, max_pages: int, max_chars: int, max_links: int) -> PdfDocument:
    """The text, title, page count and links of the PDF `data`; raises PdfError."""
    if b"%PDF-" not in data[:1024]:
        start = data[:16].decode("latin-1").strip()
        raise PdfError(NOT_PDF, f"the body has no %PDF- header (it starts {start!r})")
    import pypdfium2 as pdfium  # in the worker process only

    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code in (pdfium.raw.FPDF_ERR_PASSWORD, pdfium.raw.FPDF_ERR_SECURITY):
            raise PdfError("pdf_encrypted", "it needs a password") from None
        if _EOF_MARK not in data[-1024:]:
            raise PdfError("pdf_truncated", "the file ends early (no %%EOF): unreadable") from None
        raise PdfError("pdf_broken", f"pdfium cannot open it ({exc})") from None
    try:
        return _read(doc, data, max_pages, max_chars, max_links)
    finally:
        doc.close()


def _read(doc: object, data: bytes, max_pages: int, max_chars: int, max_links: int) -> PdfDocument:
    import pypdfium2 as pdfium

    assert isinstance(doc, pdfium.PdfDocument)
    count = len(doc)
    texts: list[str] = []
    links: list[str] = []
    chars = 0
    truncated = count > max_pages
    for index in range(min(count, max_pages)):
        try:
            page = doc[index]
        except pdfium.PdfiumError as exc:
            raise PdfError("pdf_broken", f"page {index + 1} of {count}: {exc}") from None
        try:
            textpage = page.get_textpage()
            text = _clean(textpage.get_text_bounded())
            textpage.close()
            if len(links) < max_links:
                links.extend(_uris(doc, page, max_links - len(links)))
        finally:
            page.close()
        if chars + len(text) > max_chars:
            texts.append(text[: max_chars - chars])
            truncated = True
            break
        chars += len(text)
        texts.append(text)
    title = (doc.get_metadata_value("Title") or "").strip() or _first_line(texts)
    error = None
    if _EOF_MARK not in data[-1024:]:
        error = f"pdf_truncated: the file ends early (no %%EOF); {len(texts)} of {count} pages read"
    return PdfDocument(title, count, tuple(texts), tuple(links), truncated, error)


def _clean(text: str) -> str:
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _BLANKS.sub("\n", text).strip()


def _first_line(texts: list[str]) -> str | None:
    for text in texts:
        for line in text.splitlines():
            if line := " ".join(line.split()):
                return line[:1000]
    return None


def _uris(doc: object, page: object, limit: int) -> list[str]:
    """The targets of the URI actions of `page`'s link annotations, at most `limit`."""
    import pypdfium2.raw as c

    raw_doc, raw_page = doc.raw, page.raw  # type: ignore[attr-defined]
    found: list[str] = []
    position = ctypes.c_int(0)
    link = c.FPDF_LINK()
    while len(found) < limit and c.FPDFLink_Enumerate(
        raw_page, ctypes.byref(position), ctypes.byref(link)
    ):
        action = c.FPDFLink_GetAction(link)
        if not action or c.FPDFAction_GetType(action) != c.PDFACTION_URI:
            continue
        size = c.FPDFAction_GetURIPath(raw_doc, action, None, 0)
        if not 1 < size <= 65536:
            continue
        buffer = ctypes.create_string_buffer(size)
        c.FPDFAction_GetURIPath(raw_doc, action, buffer, size)
        found.append(buffer.raw[: size - 1].decode("utf-8", "replace").strip())
    return found
