"""The fetch form of a URL: a reference resolved against its base and normalized, in parts.

`UrlParser._parts(href, base)` resolves `href` against a parsed `Base` (RFC 3986 section 5.2,
read as browsers read it: backslashes, "http:g", any number of slashes after the scheme) and
normalizes it: scheme case, the authority (`crawler.urls.host`, cached per authority),
percent-encoding, dot-segments; the fragment is dropped. The parts it returns are (scheme,
netloc, key netloc, path, query): `crawler.urls.canonical.UrlNormalizer`, a `UrlParser`, joins them
into the URL to fetch and, after stripping session and tracking parameters, the dedup key.
"""

from __future__ import annotations

from typing import Final

from crawler.urls.host import make_netloc
from crawler.urls.syntax import (
    DEFAULT_PORTS,
    PATH_FIX,
    PATH_OK,
    QUERY_FIX,
    QUERY_OK,
    SPLIT,
    STRIP,
    TAB_NL,
    fix_pct,
    remove_dot_segments,
)

__all__ = ["CACHE_LIMIT", "Base", "Parts", "UrlParser"]

CACHE_LIMIT: Final = 4096
"""Entries a per-authority or per-base cache holds at most (then it starts over)."""
_INVALID: Final = ("", "")  # cache value standing for "None": never a real result

Parts = tuple[str, str, str, str, str | None]  # scheme, netloc, key netloc, path, query


class Base:
    """A parsed, normalized base URL and the memo contexts derived from it."""

    __slots__ = ("dir", "file", "full", "key_netloc", "netloc", "origin", "path", "query", "scheme")

    def __init__(self, parts: Parts) -> None:
        self.scheme, self.netloc, self.key_netloc, self.path, self.query = parts
        self.origin = f"{self.scheme}://{self.netloc}"
        self.dir = self.origin + self.path[: self.path.rfind("/") + 1]
        self.file = self.origin + self.path
        self.full = self.file if self.query is None else f"{self.file}?{self.query}"

    def __repr__(self) -> str:
        return f"Base({self.full!r})"


class UrlParser:
    """Resolves references into normalized parts, with a bounded cache of authorities.
    `strip_www`: the key netloc drops a leading "www." (see
    `crawler.urls.canonical.UrlNormalizer`)."""

    __slots__ = ("_auth_cache", "_strip_www")

    def __init__(self, *, strip_www: bool = False) -> None:
        self._strip_www = strip_www
        self._auth_cache: dict[tuple[str, str], tuple[str, str]] = {}

    def __repr__(self) -> str:
        return f"UrlParser(strip_www={self._strip_www}, authorities={len(self._auth_cache)})"

    def _parts(self, href: str, base: Base | None) -> Parts | None:
        """Resolve and normalize `href` into (scheme, netloc, key netloc, path, query)."""
        href = href.strip(STRIP)
        if "\t" in href or "\n" in href or "\r" in href:
            href = href.translate(TAB_NL)
        if "\\" in href:  # browsers read "\" as "/" before the query in http(s) URLs
            end = len(href)
            for sep in "?#":
                pos = href.find(sep)
                if 0 <= pos < end:
                    end = pos
            href = href[:end].replace("\\", "/") + href[end:]
        m = SPLIT(href)
        if m is None:  # pragma: no cover - every group is optional, so this always matches
            return None
        scheme, auth, path, query = m.group(1, 2, 3, 4)
        if scheme is not None:
            scheme = scheme.lower()
            if scheme not in DEFAULT_PORTS:
                return None
            if auth is None:
                if base is not None and base.scheme == scheme:
                    scheme = None  # "http:g": relative when the base has the same scheme
                else:  # "https:g" on an http page: browsers read "https://g"
                    auth = ""
                    path = "/" + path
        if auth == "" and path[:1] == "/":  # "///g": browsers skip any number of slashes
            auth, slash, path = path.lstrip("/").partition("/")
            path = slash + path
        if query is not None and not QUERY_OK(query):
            query = QUERY_FIX(fix_pct, query)
        if path and not PATH_OK(path):
            path = PATH_FIX(fix_pct, path)
        if auth is not None:
            if scheme is None:
                if base is None:
                    return None
                scheme = base.scheme
            netlocs = self._netloc(scheme, auth)
            if netlocs is None:
                return None
            netloc, key_netloc = netlocs
            if not path:
                path = "/"
        elif base is None:
            return None
        else:
            scheme, netloc, key_netloc = base.scheme, base.netloc, base.key_netloc
            if not path:
                path = base.path
                if query is None:
                    query = base.query
                return scheme, netloc, key_netloc, path, query
            if path[0] != "/":
                path = base.path[: base.path.rfind("/") + 1] + path
        if "/." in path:
            path = remove_dot_segments(path)
        return scheme, netloc, key_netloc, path, query

    def _netloc(self, scheme: str, auth: str) -> tuple[str, str] | None:
        cache_key = (scheme, auth)
        netlocs = self._auth_cache.get(cache_key)
        if netlocs is None:
            netlocs = make_netloc(scheme, auth, self._strip_www) or _INVALID
            if len(self._auth_cache) >= CACHE_LIMIT:
                self._auth_cache.clear()
            self._auth_cache[cache_key] = netlocs
        return None if netlocs is _INVALID else netlocs
