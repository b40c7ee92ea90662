"""What a recrawl keeps of each response and sends back: ETag and Last-Modified.

`stored_validators` decides what the state keeps of a result (``CrawlState.completed``);
`conditional_headers` makes a recrawl's If-None-Match / If-Modified-Since from what it kept.
"""

from __future__ import annotations

from crawler.output.results import CrawlResult
from crawler.state.crawlstate import CrawlState, Validators

__all__ = ["conditional_headers", "stored_validators"]


# statuses that say the server failed, not that the page changed: its validators are kept
_TRANSIENT = frozenset({408, 429})


def stored_validators(result: CrawlResult) -> tuple[Validators | None, bool]:
    """What the state keeps of a result's validators: (validators, keep the stored ones?).
    A 2xx stores its ETag and Last-Modified; a 304 replaces those it carries and keeps the
    others (RFC 9111 4.3.4: a 304's validators are the page's current ones); a failure (no
    response), a 5xx, 408 or 429 keeps the stored ones (a server that failed once says nothing
    of the page: the next recrawl is still conditional); any other status clears them (a page
    gone or moved is fetched unconditionally next time)."""
    status = result.status
    if status is None or status >= 500 or status in _TRANSIENT:
        return None, True
    if status >= 300 and status != 304:
        return None, False
    etag = modified = None
    for name, value in result.headers:
        lname = name.lower()
        if lname == "etag" and etag is None:
            etag = value
        elif lname == "last-modified" and modified is None:
            modified = value
    return (etag, modified), status == 304


def conditional_headers(state: CrawlState | None, key: str) -> dict[str, str] | None:
    """A recrawl's If-None-Match / If-Modified-Since for a URL with stored validators (None:
    no state, or nothing stored)."""
    stored = state.validators(key) if state is not None else None
    if stored is None:
        return None
    etag, modified = stored
    headers = {"If-None-Match": etag} if etag else {}
    if modified:
        headers["If-Modified-Since"] = modified
    return headers
