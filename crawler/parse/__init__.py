"""Reading a page: sniffing, defusing hostile markup, the lexbor tree, links, sitemaps.

| module | holds |
| --- | --- |
| `anchors` | What a focused crawl reads about a link: its anchor text, its rel, and the ... |
| `links` | Link extraction from fetched pages (selectolax / lexbor) |
| `markup` | From response bytes to a lexbor tree, safely |
| `sitemaps` | Sitemaps (sitemaps.org protocol 0.9): the URLs a site lists, to seed a crawl |
| `sniff` | Sniffing a response body: is it HTML, and in which charset |
| `tags` | Lexbor's tag ids, by element name: what the tree readers sort nodes by |
| `thread` | The parse thread: response bodies to `Markup` records, lexbor running on ... |
| `defuse/` | Making response bytes safe to hand to lexbor: markup that would make it ... |
| `extract/` | A page's main content as plain text and as markdown |
| `yields/` | What a page yields beyond links and text: metadata and the fields a config asks for |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.parse.links import Page, read_page
    from crawler.parse.markup import Markup
    from crawler.parse.sitemaps import SitemapError, parse_sitemap
    from crawler.parse.thread import Parser, switch_interval

__all__ = [
    "Markup",
    "Page",
    "Parser",
    "SitemapError",
    "parse_sitemap",
    "read_page",
    "switch_interval",
]

__getattr__ = lazy(
    __name__,
    {
        "Markup": "markup",
        "Page": "links",
        "Parser": "thread",
        "SitemapError": "sitemaps",
        "parse_sitemap": "sitemaps",
        "read_page": "links",
        "switch_interval": "thread",
    },
)
