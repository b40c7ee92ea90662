"""Rendering pages in a headless Chromium whose every request goes through the crawler's fetcher.

| module | holds |
| --- | --- |
| `browser` | One Chromium for a crawl: found, launched without a network of its own, killed |
| `pool` | The crawl's browser: `Renderer`, one Chromium and a few tabs, started when first needed |
| `page` | Rendering one page in a fresh browser context: `render_page` |
| `network` | What a rendered page's requests get: `Subresources`, the fetcher behind a cache |
| `origin` | The same-origin policy for those answers: `refusal` (CORS, `[[hosts]]` credentials) |
| `settle` | When a rendered page is done: its load event, then its network quiet |
| `dom` | The rendered DOM read as the crawl reads markup: `merged` |
| `settings` | What a `Renderer` is told of its browser (``[render]``): `BrowserSettings` |
| `auto` | ``[render] mode = "auto"``: render a page only when its static HTML looks script-driven |

Playwright is imported only when a browser starts (the ``render`` extra). docs/render.md tells it
all. What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.render.auto import script_driven
    from crawler.render.browser import RenderError, RenderUnavailable, find_browser
    from crawler.render.dom import merged
    from crawler.render.page import DEFAULT_SKIP_TYPES, Rendered
    from crawler.render.pool import Renderer

__all__ = [
    "DEFAULT_SKIP_TYPES",
    "RenderError",
    "RenderUnavailable",
    "Rendered",
    "Renderer",
    "find_browser",
    "merged",
    "script_driven",
]

__getattr__ = lazy(
    __name__,
    {
        "DEFAULT_SKIP_TYPES": "page",
        "RenderError": "browser",
        "RenderUnavailable": "browser",
        "Rendered": "page",
        "Renderer": "pool",
        "find_browser": "browser",
        "merged": "dom",
        "script_driven": "auto",
    },
)
