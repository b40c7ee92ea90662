"""The render benchmark's local site: the same pages twice, script-driven and static.

``/js/page/N``: an empty ``<div id="root">`` that an external script (``/js/app.js``, shared,
cached) fills with the page's links and text, then a fetched JSON (``/js/data.json``) adds a
paragraph: what a rendering crawler must run to find the links. ``/static/page/N``: the same
links and text in the HTML. Page N links to 2N+1 and 2N+2 (so every page is reached), to the
home page and to 3 pages drawn with a fixed seed; ~4 KB of text each. Served by aiohttp on
127.0.0.1 from the benchmark's own process.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

__all__ = ["APP_JS", "serve_site"]

APP_JS = """function show(links, words) {
  const root = document.getElementById('root');
  const h = document.createElement('h1'); h.textContent = document.title; root.appendChild(h);
  for (const href of links) {
    const a = document.createElement('a'); a.href = href; a.textContent = href;
    root.appendChild(a);
  }
  const p = document.createElement('p'); p.textContent = words; root.appendChild(p);
  fetch('/js/data.json').then(r => r.json()).then(d => {
    const q = document.createElement('p'); q.textContent = d.text; root.appendChild(q);
  });
}
"""

_WORDS = ("crawler", "render", "browser", "script", "page", "link", "frontier", "politeness",
          "robots", "fetch", "parse", "sieve", "focus", "dedup", "archive")  # fmt: skip


def _links(n: int, pages: int, rng: random.Random) -> list[int]:
    out = [c for c in (2 * n + 1, 2 * n + 2) if c < pages] + [0]
    out += [rng.randrange(pages) for _ in range(3)]
    return out


def _text(n: int) -> str:
    rng = random.Random(n)
    return " ".join(rng.choice(_WORDS) for _ in range(600))


def site_app(pages: int) -> web.Application:
    rng = random.Random(7)
    links = [_links(n, pages, rng) for n in range(pages)]

    async def handler(request: web.Request) -> web.StreamResponse:
        parts = request.path.strip("/").split("/")
        if request.path == "/js/app.js":
            return web.Response(text=APP_JS, content_type="text/javascript")
        if request.path == "/js/data.json":
            return web.Response(
                text=json.dumps({"text": "loaded"}), content_type="application/json"
            )
        if len(parts) == 3 and parts[1] == "page" and parts[2].isdigit() and int(parts[2]) < pages:
            kind, n = parts[0], int(parts[2])
            hrefs = [f"/{kind}/page/{m}" for m in links[n]]
            head = f"<!DOCTYPE html><html><head><meta charset=utf-8><title>Page {n}</title>"
            if kind == "js":
                call = f"show({json.dumps(hrefs)}, {json.dumps(_text(n))})"
                body = (f'<script src="/js/app.js"></script></head><body><div id="root"></div>'
                        f"<script>{call};</script></body></html>")  # fmt: skip
                return web.Response(text=head + body, content_type="text/html")
            if kind == "static":
                items = "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
                body = (f"</head><body><div id=root><h1>Page {n}</h1>{items}<p>{_text(n)}</p>"
                        "<p>loaded</p></div></body></html>")  # fmt: skip
                return web.Response(text=head + body, content_type="text/html")
        raise web.HTTPNotFound()

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    return app


@asynccontextmanager
async def serve_site(pages: int) -> AsyncIterator[int]:
    """Serve the site on 127.0.0.1 and a free port; yield the port."""
    runner = web.AppRunner(site_app(pages), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()
