"""A read PDF as the `Markup` record HTML pages give, so the crawl treats both alike.

Its links go where an HTML page's go (`crawler.parse.links.read_page`: resolved, capped at
`max_links_per_page`, then canonicalized, scoped and sieved by admission); its text is the
result's `text` and `markdown` and the content dedup and focus read.

`text`: the pages' text in pdfium's reading order, one page after the other separated by a form
feed (U+000C, as pdftotext does: `text.split("\\f")` gives the pages). `markdown`: the same
text, each page after the first preceded by a blank line, a `<!-- page N -->` comment (hidden
when rendered) and a blank line; the lines are kept as the PDF lays them out.
"""

from __future__ import annotations

from crawler.parse.markup import Main, Markup
from crawler.parse.pdf.read import PdfDocument

__all__ = ["PAGE_BREAK", "pdf_markdown", "pdf_markup", "pdf_text"]

PAGE_BREAK = "\f"


def pdf_text(doc: PdfDocument) -> str:
    return PAGE_BREAK.join(doc.texts)


def pdf_markdown(doc: PdfDocument) -> str:
    parts = [doc.texts[0]] if doc.texts else []
    parts += [f"<!-- page {n} -->\n\n{text}" for n, text in enumerate(doc.texts[1:], 2)]
    return "\n\n".join(parts)


def pdf_markup(
    doc: PdfDocument | None, *, text: bool = False, content: bool = False, main: Main = None
) -> Markup:
    """`doc` as a Markup (an empty one for None: a PDF that could not be read); `text`,
    `content` and `main` as for `crawler.parse.markup.read_tree`."""
    if doc is None:
        return Markup(is_html=False)
    words = " ".join(pdf_text(doc).split()) if text or content else None
    return Markup(
        is_html=True,  # a document with links to follow, as HTML pages are
        charset="utf-8",
        hrefs=doc.links,
        title=doc.title,
        text=("", words or "") if text else None,
        content=words if content else None,
        main_text=pdf_text(doc) if main else None,
        markdown=pdf_markdown(doc) if main == "markdown" else None,
        main_truncated=doc.truncated,
    )
