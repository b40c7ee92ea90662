"""The same-origin policy for the answers a rendered page's requests get: `refusal`.

Every request of a page is answered by the crawler's fetcher, and a route's answer is checked by
Chromium as a server's would be: a cross-origin fetch or XHR reads it only if its own
``Access-Control-Allow-Origin`` allows. Two things would break that, and are refused here:

- Playwright's ``route.fulfill`` adds ``Access-Control-Allow-Origin: <origin>`` and
  ``Access-Control-Allow-Credentials: true`` to an answer that has no
  ``access-control-allow-origin`` header (by that lowercase name) when the request carries an
  ``Origin`` other than its URL's (a CORS request). Such an answer is refused (a network error, as
  a browser's failed CORS check is); one with the header is given as is and Chromium checks it.
- The fetcher follows redirects itself, so Chromium sees the answer at the URL it asked for: a
  same-origin fetch or XHR whose redirects ended on another origin is refused (a browser would
  have wanted that origin's consent).

An answer the fetcher made with a ``[[hosts]]`` rule's credentials (its auth, its headers) is
refused to any document or worker of another origin, whatever its server's CORS headers say: the
crawler's credentials for a host are never readable by another host's page. A request whose
requester is unknown (a worker's) counts as another origin's.

CORS preflights (``OPTIONS``) never reach the route: Playwright answers them itself, allowing
them; what the page reads is the GET that follows, checked as above. A no-cors subresource (a
classic script, a stylesheet, an image, an iframe) of another origin is given as a browser loads
it: Chromium keeps it opaque to the page.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from crawler.render.network import Answer

__all__ = ["READABLE", "foreign", "origin_of", "refusal"]

READABLE = frozenset({"fetch", "xhr"})
"""The kinds of request whose answer the page reads (the others are opaque to another origin)."""


def origin_of(url: str) -> str:
    """`url`'s origin as a browser serializes it (``http://a.test:8080``, the default port left
    out); ``null`` for a URL that has none (``about:blank``, ``data:``)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "null"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "null"
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{host}" + ("" if port in (None, default) else f":{port}")


def refusal(
    url: str,
    answer: Answer,
    *,
    kind: str,
    origin: str | None,
    requester: str | None,
    credentialed: Callable[[str], bool],
) -> str | None:
    """Why the page may not be given `answer` to its request of `url` (None: it may).

    `kind`: the request's resource type; `origin`: its ``Origin`` header (None without one);
    `requester`: the origin of the document making it (None: unknown, a worker's);
    `credentialed(url)`: whether the fetcher sends a ``[[hosts]]`` rule's credentials there."""
    target = origin_of(url)
    final = origin_of(answer.url or url)
    if foreign(url, requester, credentialed) or foreign(answer.url, requester, credentialed):
        return "made with another origin's [[hosts]] credentials"
    cors = origin is not None and target != origin.strip()
    if cors and "access-control-allow-origin" not in answer.headers:
        return "another origin's answer without Access-Control-Allow-Origin"
    if not cors and final != target and kind in READABLE:
        return "redirected to another origin"
    return None


def foreign(url: str, requester: str | None, credentialed: Callable[[str], bool]) -> bool:
    """Whether a request of `url` would carry a ``[[hosts]]`` rule's credentials to another
    origin's page (`requester`; None: unknown)."""
    return bool(url) and credentialed(url) and requester != origin_of(url)
