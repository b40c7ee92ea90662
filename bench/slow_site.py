"""A documentation site served with a fixed latency: the regime of a crawl of the web.

    python -m bench.slow_site ROOT PORT LATENCY [HOSTS]

Serves the files under ROOT on 127.0.0.1:PORT (aiohttp, one process), each response after
LATENCY seconds; a missing file is a 404 (after the same wait). HOSTS (default 1): the same
files on 127.0.0.1 to 127.0.0.HOSTS, PORT on each: as many hosts, for a crawl of many sites.
On loopback a crawl is bound by CPU; against servers a network away it is bound by latency,
and a crawl scales out by adding requests in flight, which is what this site lets a benchmark
show.
"""

from __future__ import annotations

import asyncio
import mimetypes
import sys
from pathlib import Path

from aiohttp import web

__all__ = ["read", "serve"]


def read(base: Path, path: str) -> tuple[bytes, str] | None:
    """The file at `path` under `base` and its content type (a directory: its index.html)."""
    file = (base / path.lstrip("/")).resolve()
    if file.is_dir():
        file = file / "index.html"
    if not file.is_relative_to(base) or not file.is_file():
        return None
    return file.read_bytes(), mimetypes.guess_type(file.name)[0] or "application/octet-stream"


async def serve(base: Path, port: int, latency: float, hosts: int = 1) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(latency)
        found = read(base, request.path)
        if found is None:
            raise web.HTTPNotFound()
        return web.Response(body=found[0], content_type=found[1])

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    for i in range(hosts):
        await web.TCPSite(runner, f"127.0.0.{i + 1}", port, backlog=1024).start()
    await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    hosts = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    asyncio.run(serve(Path(sys.argv[1]).resolve(), int(sys.argv[2]), float(sys.argv[3]), hosts))
