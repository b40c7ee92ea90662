"""A generated site of many hosts for the long-crawl benchmark (bench.bench_soak).

    python -m bench.soak_site PORT HOSTS PAGES

Serves on 127.0.0.1:PORT the pages of HOSTS virtual hosts `h0.soak.test` ... (told apart by the
Host header), each with PAGES pages `/p/0` ... `/p/{PAGES-1}`: ~4 KB of text and 23 links,
20 to pages of the same host, 2 to other hosts' pages and one with a session id (the canonical
form drops it); every tenth page also links to a missing page (a 404). Links are picked by a
fixed hash of the page, so the whole site is reachable from each host's `/p/0` and the crawl
is the same in every run. `/robots.txt` is a 404 (everything allowed), as on most small sites.
Pages are built per request from a few precomputed pieces: the server costs little CPU.
"""

from __future__ import annotations

import random
import sys
from functools import cache

from aiohttp import web

__all__ = ["host_name", "page", "serve"]

_WORDS = (
    "frontier", "sieve", "crawler", "politeness", "robots", "canonical", "fetch", "parse",
    "anchor", "relevance", "harvest", "mirror", "shingle", "digest", "schedule", "queue", "host",
    "delay", "budget", "index", "document", "section", "table", "example", "reference", "module",
    "function", "class", "method", "value", "number", "string", "list", "record",
)  # fmt: skip
LINKS_SAME_HOST = 20
LINKS_OTHER_HOSTS = 2


def host_name(n: int) -> str:
    return f"h{n}.soak.test"


@cache
def _paragraphs() -> tuple[str, ...]:
    rng = random.Random(20261123)
    return tuple(
        "<p>" + " ".join(rng.choice(_WORDS) for _ in range(60)) + ".</p>" for _ in range(64)
    )


def _mix(a: int, b: int) -> int:
    """A fixed 32-bit hash of two numbers (splitmix-like)."""
    x = (a * 0x9E3779B1 + b * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    return x ^ (x >> 12)


def page(host: int, n: int, hosts: int, pages: int, port: int) -> bytes:
    """The body of page `n` of host `host`: its text and its links (page n + 1 always among
    them, so every page of a host is reachable from its /p/0)."""
    paras = _paragraphs()
    text = "".join(paras[_mix(host, n + i) % len(paras)] for i in range(6))
    links = [f'<a href="/p/{(n + 1) % pages}">next</a>']
    links += [
        f'<a href="/p/{_mix(n, i) % pages}">{_WORDS[_mix(i, n) % len(_WORDS)]}</a>'
        for i in range(LINKS_SAME_HOST - 1)
    ]
    for i in range(LINKS_OTHER_HOSTS):
        other = _mix(host, n * 7 + i) % hosts
        target = f"http://{host_name(other)}:{port}/p/{_mix(n, i + 99) % pages}"
        links.append(f'<a href="{target}">elsewhere</a>')
    if n % 10 == 0:
        links.append(f'<a href="/missing/{n}">gone</a>')
    links.append(f'<a href="/p/{n}?sid={_mix(host, n):08x}">this page</a>')
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>Page {n} of host {host}</title>"
        f"</head><body><h1>Page {n}</h1>{text}<ul><li>{'</li><li>'.join(links)}</li></ul>"
        "</body></html>"
    ).encode()


def serve(port: int, hosts: int, pages: int) -> None:
    async def handle(request: web.Request) -> web.Response:
        name = request.host.split(":", 1)[0]
        path = request.path
        if not (name.startswith("h") and name.endswith(".soak.test") and path.startswith("/p/")):
            return web.Response(status=404, text="not found")
        try:
            host, n = int(name[1 : -len(".soak.test")]), int(path[3:])
        except ValueError:
            return web.Response(status=404, text="not found")
        if not (0 <= host < hosts and 0 <= n < pages):
            return web.Response(status=404, text="not found")
        return web.Response(body=page(host, n, hosts, pages, port), content_type="text/html")

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
