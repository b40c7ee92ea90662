"""The same-origin policy holds in a rendered page, as in a browser.

Every request of a page is answered by the crawler's fetcher, and Playwright's ``route.fulfill``
would let the page read any of those answers (it adds ``Access-Control-Allow-Origin: <origin>``
to one that has none). The page on ``a.test`` reads (fetch, XHR) another origin's answers: one
without CORS headers is unreadable, one whose server allows it readable, a redirect of its own
to another origin unreadable; an answer the fetcher made with another host's ``[[hosts]]``
credentials is never readable, whatever its server says. Same-origin reads, and another origin's
script and image, still work.
"""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from crawler.config.sections import HostConfig
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.settings import Transport
from crawler.fetch.steering import HostRules
from crawler.render import pool
from crawler.render.network import Subresources, credentials_of
from crawler.render.page import PageOptions
from tests.support.render import requires_browser
from tests.support.server import serve

pytestmark = requires_browser

SECRET = "s3cr3t-T0KEN"
GIF = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")

PAGE = """<!DOCTYPE html><html><head><title>reads</title></head><body>
<script>
const B = 'http://b.test:PORT', S = 'http://secret.test:PORT';
const out = (id, text) => { const p = document.createElement('p');
  p.textContent = '[' + id + '=' + text + ']'; document.body.appendChild(p); };
const get = (id, url, init) => fetch(url, init).then(r => r.text())
  .then(t => out(id, t), () => out(id, 'BLOCKED'));
const xhr = (id, url) => { const x = new XMLHttpRequest(); x.open('GET', url);
  x.onload = () => out(id, x.responseText); x.onerror = () => out(id, 'BLOCKED'); x.send(); };
get('same', '/same');
get('plain', B + '/plain');
get('plain-cred', B + '/plain', {credentials: 'include'});
get('cors', B + '/cors');
get('cors-cred', B + '/cors-cred', {credentials: 'include'});
get('star-cred', B + '/cors', {credentials: 'include'});
get('preflight', B + '/cors', {headers: {'X-Custom': '1'}});
get('post', B + '/cors', {method: 'POST', body: 'x'});
get('secret', S + '/api');
get('secret-cred', S + '/api', {credentials: 'include'});
get('to-b', '/to-b');
get('to-secret', '/to-secret');
xhr('xhr-plain', B + '/plain');
xhr('xhr-cors', B + '/cors');
fetch(B + '/plain', {mode: 'no-cors'}).then(r => out('no-cors', r.type + r.status),
                                           () => out('no-cors', 'BLOCKED'));
const img = new Image(); img.onload = () => out('img', 'LOADED');
img.onerror = () => out('img', 'FAILED'); img.src = B + '/img.gif';
</script>
<script src="http://b.test:PORT/script.js"></script>
<script src="http://secret.test:PORT/leak.js"></script>
</body></html>"""

EXPECTED = {
    "same": "SAME-DATA",
    "plain": "BLOCKED",  # no CORS header: a browser blocks the read
    "plain-cred": "BLOCKED",
    "cors": "CORS-DATA",  # Access-Control-Allow-Origin: *
    "cors-cred": "CORS-CRED-DATA",  # this origin, with credentials allowed
    "star-cred": "BLOCKED",  # * does not allow a read with credentials
    "preflight": "CORS-DATA",  # a preflighted GET: its answer's own headers decide
    "post": "BLOCKED",  # only GET is sent
    "secret": "BLOCKED",  # made with secret.test's [[hosts]] credentials
    "secret-cred": "BLOCKED",
    "to-b": "BLOCKED",  # a same-origin URL redirected to another origin without CORS
    "to-secret": "BLOCKED",
    "xhr-plain": "BLOCKED",
    "xhr-cors": "CORS-DATA",
    "no-cors": "opaque0",  # loaded, not readable
    "img": "LOADED",  # another origin's image loads
    "script": "B-SCRIPT-RAN",  # and its script runs
}


async def handler(request: web.Request) -> web.StreamResponse:
    host, path = request.host.split(":")[0], request.path
    port = request.host.split(":")[1]
    star = {"Access-Control-Allow-Origin": "*"}
    if host == "secret.test":  # a private API, willing to share with anyone
        auth = request.headers.get("Authorization", "none")
        secret = request.headers.get("X-Secret", "none")
        text = f"PRIVATE-API-DATA auth={auth} secret={secret}"
        if path == "/leak.js":
            text = f"out('leak', {text!r});"
        return web.Response(text=text, headers=star)
    if path == "/":
        return web.Response(text=PAGE.replace("PORT", port), content_type="text/html")
    answers = {
        "/same": ("SAME-DATA", {}),
        "/plain": ("PLAIN-DATA", {}),
        "/cors": ("CORS-DATA", star),
        "/cors-cred": ("CORS-CRED-DATA", {"Access-Control-Allow-Origin": f"http://a.test:{port}",
                                          "Access-Control-Allow-Credentials": "true"}),
        "/script.js": ("out('script', 'B-SCRIPT-RAN');", {}),
    }  # fmt: skip
    if path in answers:
        text, headers = answers[path]
        return web.Response(text=text, headers=headers)
    if path == "/img.gif":
        return web.Response(body=GIF, content_type="image/gif")
    if path == "/to-b":
        raise web.HTTPFound(f"http://b.test:{port}/plain")
    if path == "/to-secret":
        raise web.HTTPFound(f"http://secret.test:{port}/api")
    raise web.HTTPNotFound()


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async with serve(handler) as p:
        yield p


async def test_a_page_reads_another_origin_only_as_a_browser_would(port: int) -> None:
    rules = HostRules([HostConfig(match="secret.test", headers={"X-Secret": SECRET},
                                  auth=("user", "pw"))])  # fmt: skip
    names = {name: "127.0.0.1" for name in ("a.test", "b.test", "secret.test")}
    async with Fetcher(Transport(user_agent="t/1", resolve=names), rules=rules) as fetcher:
        url = f"http://a.test:{port}/"
        response = await fetcher.fetch(url)
        network = Subresources(fetcher.fetch, credentialed=credentials_of(rules))
        options = PageOptions(user_agent="t/1", skip_types=frozenset(), timeout=20.0)
        renderer = pool.Renderer(network, options)
        try:
            rendered = await renderer.render(url, response)
        finally:
            await renderer.close()
    html = rendered.html.decode()
    read = dict(re.findall(r"\[([a-z-]+)=([^\]]*)\]", html))
    assert read == EXPECTED
    assert "PRIVATE-API-DATA" not in html and SECRET not in html and "PLAIN-DATA" not in html
