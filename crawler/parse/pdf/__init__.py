"""Reading PDFs (`[parse] pdf`): pdfium in bounded worker processes, the result as a `Markup`.

| module | holds |
| --- | --- |
| `read` | One PDF read with pdfium: its text page by page, title, page count and URI links |
| `worker` | The worker process: caps its address space, reads the jobs piped to it |
| `pool` | `PdfPool`: worker processes, each read bounded in time, a dead worker replaced |
| `page` | A read PDF as the `Markup` an HTML page gives: its text pages apart, its markdown |

`crawler.parse.thread.Parser.read_pdf` is the crawl's way in (the Parser owns the pool).
"""

from __future__ import annotations
