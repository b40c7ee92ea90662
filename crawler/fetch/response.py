"""`Response`: one HTTP response as `crawler.fetch.fetcher.Fetcher` hands it over.

Its body is fully read (and decompressed) within the caps; the body as sent (`wire_body`) is
kept for archiving when it was content-encoded. Its headers are looked up case-insensitively,
every Content-Type read as one (`crawler.fetch.headers.content_type`); a 3xx's `location` is its
target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crawler.fetch.headers import content_type

__all__ = ["Response"]

_CT = "content-type"


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP response, body fully read (and decompressed) within the caps."""

    url: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes = field(repr=False)
    latency: float
    elapsed: float
    ip: str | None = None
    reason: str = ""
    version: str = "HTTP/1.1"
    request_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # redacted
    raw_body: bytes | None = field(default=None, repr=False)
    truncated: bool = False  # the body as sent was cut at the cap (robots.txt, a non-2xx)

    @property
    def wire_body(self) -> bytes:
        """The body as the server sent it (still content-encoded), for archiving."""
        return self.body if self.raw_body is None else self.raw_body

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None

    @property
    def content_type(self) -> str | None:
        """Every Content-Type header read as one (`crawler.fetch.headers.content_type`)."""
        return content_type([v for k, v in self.headers if len(k) == 12 and k.lower() == _CT])

    @property
    def location(self) -> str | None:
        if 300 <= self.status < 400:
            return self.header("Location")
        return None
