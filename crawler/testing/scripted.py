"""The fixture's script-driven host, ``app.test``: links that exist only once scripts have run.

Its index holds one static link and an empty ``<div id="root"></div>``; its scripts add a link
each way a single-page app makes them: by DOM calls, from fetched JSON, from an external script,
after a timer, inside an open shadow root, and one to a path its robots.txt disallows (refused by
the crawl, never fetched). A crawl that does not render finds the static link only; one that
renders finds them all (`STATIC_PAGES`, `RENDERED_PAGES`, `REFUSED`). `FixtureSite(scripted=True)`
serves it (`crawler.testing.fixture`); `crawl --demo --render` crawls it.
"""

from __future__ import annotations

import json

from aiohttp import web

__all__ = ["APP", "REFUSED", "RENDERED_PAGES", "STATIC_PAGES", "scripted_app"]

APP = "app.test"

STATIC_PAGES = {"/": 0, "/static": 1}
"""The pages a crawl without rendering finds (path: depth)."""
RENDERED_PAGES = {
    **STATIC_PAGES, "/dom": 1, "/from-json": 1, "/from-script": 1, "/after-timer": 1,
    "/in-shadow": 1,
}  # fmt: skip
"""The pages a rendering crawl finds (path: depth)."""
REFUSED = ("/private/js-link",)
"""A link only the scripts make, to a path robots.txt disallows: refused, never fetched."""

TIMER_MS = 150  # under [render] settle's default (0.5 s): the link is in the DOM when it is read

_INDEX = f"""<!DOCTYPE html>
<html><head><meta charset=utf-8><title>Loading...</title></head>
<body><a href="/static">A static link</a><div id="root"></div>
<noscript>This app needs JavaScript: please enable JavaScript.</noscript>
<script>
  function link(parent, href, text) {{
    const a = document.createElement('a');
    a.href = href;
    a.textContent = text;
    parent.appendChild(a);
  }}
  const root = document.getElementById('root');
  document.title = 'Script-driven app';
  link(root, '/dom', 'made by DOM calls');
  link(root, '/private/js-link', 'disallowed by robots.txt');
  fetch('/api/links.json').then(r => r.json()).then(list => {{
    for (const href of list) link(root, href, 'from JSON');
  }});
  setTimeout(() => link(root, '/after-timer', 'after a timer'), {TIMER_MS});
  const host = document.createElement('div');
  root.appendChild(host);
  const shadow = host.attachShadow({{mode: 'open'}});
  link(shadow, '/in-shadow', 'inside a shadow root');
</script>
<script src="/app.js"></script>
</body></html>
"""

_APP_JS = "link(document.getElementById('root'), '/from-script', 'from an external script');\n"


def _page(title: str) -> web.Response:
    head = f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{title}</title></head>"
    body = f'<body><h1>{title}</h1><p>A page of the app.</p><a href="/">Home</a></body></html>'
    return web.Response(text=head + body, content_type="text/html")


def scripted_app(path: str) -> web.StreamResponse:
    """The response of ``app.test`` to a GET of `path`."""
    if path == "/":
        return web.Response(text=_INDEX, content_type="text/html")
    if path == "/robots.txt":
        return web.Response(text="User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    if path == "/app.js":
        return web.Response(text=_APP_JS, content_type="text/javascript")
    if path == "/api/links.json":
        return web.Response(text=json.dumps(["/from-json"]), content_type="application/json")
    if path in RENDERED_PAGES or path in REFUSED:
        return _page(path.strip("/").replace("-", " ").capitalize())
    raise web.HTTPNotFound()
