"""What a `Renderer` is told of its browser (``[render]``): `BrowserSettings`. How each page is
rendered is `crawler.render.page.PageOptions`; its requests, `crawler.render.network.Subresources`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MEMORY_CHECK_SECONDS", "BrowserSettings"]

MEMORY_CHECK_SECONDS = 1.0
"""How often the browsers' memory is read (a /proc walk, in a thread), whatever their pages do."""


@dataclass(frozen=True, slots=True)
class BrowserSettings:
    """`path`: Chromium's ("" = the standard one); `tabs`: pages rendering at once;
    `memory_cap`: bytes of PSS past which the browser is replaced (0 = never), read every
    `memory_interval` seconds."""

    path: str = ""
    tabs: int = 4
    memory_cap: int = 1536 * 1024 * 1024
    memory_interval: float = MEMORY_CHECK_SECONDS
