"""URL canonicalization: turn every extracted link into a fetchable URL and a dedup key.

`normalize()` gives the URL that is fetched: the reference resolved against its base (RFC 3986
section 5.2) plus safe syntax normalization (scheme and host case, IDNA, default port, dot-segments,
percent-encoding, no fragment). `canonicalize()` gives the Sieve key: the same, plus session and
tracking parameters stripped and query pairs sorted by key. Both return None for anything that is
not a crawlable http(s) URL, and never raise on any input string.

`UrlNormalizer.resolve(href, base)` is the engine's hot path: both results from one parse, behind
a bounded memo keyed by the part of the base the href depends on (so navigation links repeated on
every page of a site hit), with per-base and per-authority caches underneath. Hosts are mapped by
idna (UTS #46) and encoded by yarl (IDNA, IPv6 compression); IPv4 hosts are read as browsers read
them (WHATWG); everything else is done here with precompiled regexes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final
from urllib.parse import unquote

from idna import uts46_remap
from yarl import URL

from crawler.urlsyntax import (
    ASCII_HOST_OK,
    DEFAULT_PORTS,
    PATH_FIX,
    PATH_OK,
    QUERY_FIX,
    QUERY_OK,
    SPLIT,
    STRIP,
    TAB_NL,
    compile_patterns,
    cut_fragment,
    ends_in_number,
    fix_pct,
    pair_key,
    parse_ipv4,
    remove_dot_segments,
)

__all__ = [
    "DEFAULT_SESSION_PARAMS", "DEFAULT_TRACKING_PARAMS", "UrlNormalizer", "canonicalize",
    "document_base", "normalize",
]  # fmt: skip

DEFAULT_SESSION_PARAMS: Final[tuple[str, ...]] = (
    "jsessionid", "phpsessid", "sid", "sessionid", "session_id", "aspsessionid*", "cfid", "cftoken",
)  # fmt: skip
DEFAULT_TRACKING_PARAMS: Final[tuple[str, ...]] = ("utm_*", "gclid", "fbclid", "msclkid")

_INVALID: Final = ("", "")  # memo/cache value standing for "None": never a real result
_CACHE_LIMIT: Final = 4096
# Hrefs and bases longer than this bypass the memo and the caches, so that what they hold stays
# bounded (about memo_size x 1.5 KiB) whatever a hostile page links to. Real links are shorter.
_MEMO_MAX_LENGTH: Final = 512

_Result = tuple[str, str]  # (fetch URL, dedup key)
_Parts = tuple[str, str, str, str, str | None]  # scheme, netloc, key netloc, path, query


class _Base:
    """A parsed, normalized base URL and the memo contexts derived from it."""

    __slots__ = ("dir", "file", "full", "key_netloc", "netloc", "origin", "path", "query", "scheme")

    def __init__(self, parts: _Parts) -> None:
        self.scheme, self.netloc, self.key_netloc, self.path, self.query = parts
        self.origin = f"{self.scheme}://{self.netloc}"
        self.dir = self.origin + self.path[: self.path.rfind("/") + 1]
        self.file = self.origin + self.path
        self.full = self.file if self.query is None else f"{self.file}?{self.query}"

    def __repr__(self) -> str:
        return f"_Base({self.full!r})"


class UrlNormalizer:
    """Resolves and canonicalizes links; the knobs and a bounded memo live here.

    `session_params` and `tracking_params` are case-insensitive query keys (and, for session
    parameters, `;name=value` path parameters) removed from the dedup key; a pattern may hold one
    `*` wildcard ("utm_*"). `sort_query` sorts the key's query pairs by key (stable for repeated
    keys). `strip_www` drops a leading "www." from the key's host. `memo_size` bounds the memo (0
    disables it). `max_length` rejects URLs whose fetch form is longer.
    """

    __slots__ = (
        "_auth_cache", "_base_cache", "_half", "_hits", "_hot", "_last_base", "_last_base_str",
        "_max_length", "_memo_size", "_misses", "_old", "_path_param_sub", "_query_drop",
        "_query_drop_search", "_sort_query", "_strip_www",
    )  # fmt: skip

    def __init__(
        self,
        *,
        session_params: Iterable[str] = DEFAULT_SESSION_PARAMS,
        tracking_params: Iterable[str] = DEFAULT_TRACKING_PARAMS,
        sort_query: bool = True,
        strip_www: bool = False,
        memo_size: int = 100_000,
        max_length: int | None = None,
    ) -> None:
        if isinstance(memo_size, bool) or not isinstance(memo_size, int) or memo_size < 0:
            raise ValueError(f"memo_size must be an int >= 0, got {memo_size!r}")
        if max_length is not None and (isinstance(max_length, bool) or max_length < 1):
            raise ValueError(f"max_length must be None or an int >= 1, got {max_length!r}")
        session = compile_patterns(session_params, "session_params")
        dropped = session + compile_patterns(tracking_params, "tracking_params")
        self._sort_query = sort_query
        self._strip_www = strip_www
        self._memo_size = memo_size
        self._max_length = max_length
        self._query_drop = None
        self._query_drop_search = None
        self._path_param_sub = None
        if dropped:
            names = "|".join(re.escape(p).replace(r"\*", "[^=&]*") for p in dropped)
            self._query_drop = re.compile(f"(?:{names})", re.I).fullmatch
            self._query_drop_search = re.compile(f"(?:^|&)(?:{names})(?:=|&|$)", re.I).search
        if session:
            names = "|".join(re.escape(p).replace(r"\*", "[^=/;]*") for p in session)
            self._path_param_sub = re.compile(f";(?:{names})(?:=[^/;]*)?(?=[/;]|$)", re.I).sub
        self._half = max(1, memo_size // 2)
        self._hot: dict[tuple[str | None, str], _Result] = {}
        self._old: dict[tuple[str | None, str], _Result] = {}
        self._hits = 0
        self._misses = 0
        self._auth_cache: dict[tuple[str, str], tuple[str, str]] = {}
        self._base_cache: dict[str, _Base | None] = {}
        self._last_base_str: str | None = None
        self._last_base: _Base | None = None

    def __repr__(self) -> str:
        return (
            f"UrlNormalizer(sort_query={self._sort_query}, strip_www={self._strip_www}, "
            f"max_length={self._max_length}, memo={len(self._hot) + len(self._old)}/"
            f"{self._memo_size}, hits={self._hits}, misses={self._misses})"
        )

    # -- public API ---------------------------------------------------------------------------

    @property
    def memo_hits(self) -> int:
        return self._hits

    @property
    def memo_misses(self) -> int:
        return self._misses

    @property
    def memo_hit_rate(self) -> float:
        """Share of memoized lookups answered from the memo (0.0 before any lookup)."""
        total = self._hits + self._misses
        return self._hits / total if total else 0.0

    def clear_memo(self) -> None:
        """Empty the memo and the base/authority caches and reset the hit counters."""
        self._hot, self._old = {}, {}
        self._hits = self._misses = 0
        self._auth_cache.clear()
        self._base_cache.clear()
        self._last_base_str = self._last_base = None

    def canonicalize(self, url: str, base: str | None = None) -> str | None:
        """The dedup key of `url` resolved against `base`, or None if it is not crawlable."""
        result = self._lookup(url, base)
        return None if result is None else result[1]

    def normalize(self, url: str, base: str | None = None) -> str | None:
        """The URL to fetch for `url` resolved against `base`, or None if it is not crawlable."""
        result = self._lookup(url, base)
        return None if result is None else result[0]

    def resolve(self, href: str, base: str) -> tuple[str, str] | None:
        """`(normalize(href, base), canonicalize(href, base))` from one memoized computation."""
        return self._lookup(href, base)

    def resolve_all(self, hrefs: Iterable[str], base: str | None) -> list[_Result | None]:
        """`resolve` for each of `hrefs` (one page's links): the base is looked up once."""
        resolve, b = self._resolver(base)
        return [resolve(href, b) for href in hrefs]

    def _lookup(self, href: str, base: str | None) -> _Result | None:
        resolve, b = self._resolver(base)
        return resolve(href, b)

    def _resolver(
        self, base: str | None
    ) -> tuple[Callable[[str, _Base | None], _Result | None], _Base | None]:
        """(the function resolving an href against `base`, the parsed base): the memo, or the
        bare computation when the memo is off or the base too long to be a memo context."""
        if base is not None and len(base) > _MEMO_MAX_LENGTH:
            return self._compute, self._parse_base(base)
        b = None if base is None else self._base(base)
        return (self._memoized if self._memo_size else self._compute), b

    def _memoized(self, href: str, b: _Base | None) -> _Result | None:
        """The memo in front of `_compute`. Memo keys stop after the first "#" (`cut_fragment`);
        the context is the smallest part of the base the result can depend on (so navigation
        links repeated on every page of a site hit)."""
        if len(href) > _MEMO_MAX_LENGTH:
            return self._compute(href, b)
        ref = cut_fragment(href)
        ctx: str | None
        if b is None:
            ctx = None
        else:
            first = ref[:1]
            if first == "/":
                ctx = b.scheme if ref[1:2] == "/" else b.origin
            elif first == "?":
                ctx = b.file
            elif first == "#" or first <= " " or first == "\\":
                ctx = b.full  # fragment-only, empty, or changed by cleaning: depends on all
            elif ref.startswith(("http://", "https://")):
                ctx = ""
            elif ":" in ref:
                ctx = b.full  # maybe "http:?q" (relative, RFC 5.2.2 non-strict) or a scheme
            else:
                ctx = b.dir
        key = (ctx, ref)
        result = self._hot.get(key)
        if result is None:
            result = self._old.get(key)
            if result is None:
                self._misses += 1
                result = self._compute(href, b) or _INVALID
            else:
                self._hits += 1
            self._hot[key] = result
            if len(self._hot) >= self._half:  # two generations: at most memo_size entries
                self._old, self._hot = self._hot, {}
        else:
            self._hits += 1
        return None if result is _INVALID else result

    def _base(self, base: str) -> _Base | None:
        """The parsed form of `base`, from the last-base slot or the base cache."""
        if base is self._last_base_str or base == self._last_base_str:
            return self._last_base
        if base in self._base_cache:
            b = self._base_cache[base]
        else:
            b = self._parse_base(base)
            if len(self._base_cache) >= _CACHE_LIMIT:
                self._base_cache.clear()
            self._base_cache[base] = b
        self._last_base_str, self._last_base = base, b
        return b

    def _parse_base(self, base: str) -> _Base | None:
        parts = self._parts(base, None)
        return None if parts is None else _Base(parts)

    # -- the computation ----------------------------------------------------------------------

    def _compute(self, href: str, base: _Base | None) -> _Result | None:
        parts = self._parts(href, base)
        if parts is None:
            return None
        scheme, netloc, key_netloc, path, query = parts
        fetch = (
            f"{scheme}://{netloc}{path}" if query is None else f"{scheme}://{netloc}{path}?{query}"
        )
        if self._max_length is not None and len(fetch) > self._max_length:
            return None
        if self._path_param_sub is not None and ";" in path:
            path = self._path_param_sub("", path)
            if "/." in path:  # "/.;jsessionid=1/" was not a dot-segment before
                path = remove_dot_segments(path)
        if query:
            pairs = [p for p in query.split("&") if p]
            drop, search = self._query_drop, self._query_drop_search
            if drop is not None and search is not None and search(query):
                pairs = [p for p in pairs if not drop(p.partition("=")[0])]
            if self._sort_query and len(pairs) > 1:
                pairs.sort(key=pair_key)
            query = "&".join(pairs)
        key = (
            f"{scheme}://{key_netloc}{path}?{query}" if query else f"{scheme}://{key_netloc}{path}"
        )
        if key == fetch:  # the usual case: share one string (a queued URL holds both)
            key = fetch
        return fetch, key

    def _parts(self, href: str, base: _Base | None) -> _Parts | None:
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
            netlocs = self._make_netloc(scheme, auth) or _INVALID
            if len(self._auth_cache) >= _CACHE_LIMIT:
                self._auth_cache.clear()
            self._auth_cache[cache_key] = netlocs
        return None if netlocs is _INVALID else netlocs

    def _make_netloc(self, scheme: str, auth: str) -> tuple[str, str] | None:
        """(netloc, key netloc) for an authority: userinfo dropped, host encoded, port checked."""
        hostport = auth.rpartition("@")[2]
        if hostport.startswith("["):
            host, bracket, rest = hostport[1:].partition("]")
            if not bracket or (rest and rest[0] != ":") or not host or "%" in host:
                return None
            port = rest[1:]
            ipv6 = True
        else:
            host, _, port = hostport.partition(":")
            if "%" in host:
                host = unquote(host)
                if "%" in host:
                    return None
            ipv6 = False
        if not host:
            return None
        if not ipv6 and host.isascii() and not host[-1].isdigit() and ASCII_HOST_OK(host):
            encoded: str | None = host.lower()  # plain reg-name: what yarl would do, faster
        else:  # IDNA (UTS #46), IP addresses and validation are yarl's
            try:
                if not host.isascii():  # map first as browsers do (soft hyphens vanish...)
                    host = uts46_remap(host, std3_rules=False, transitional=False)
                encoded = URL.build(scheme=scheme, host=host).raw_host
            except (ValueError, UnicodeError):
                return None
        if not encoded or ipv6 != (":" in encoded):
            return None
        if ipv6:
            encoded = f"[{encoded}]"
        else:
            encoded = encoded.rstrip(".")
            if not encoded:
                return None
            if (encoded[-1].isdigit() or "0x" in encoded) and ends_in_number(encoded):
                # "127.1", "0x7f.1", "2130706433": an IPv4 address as browsers read it
                encoded = parse_ipv4(encoded)
                if encoded is None:
                    return None
        if port:
            port = port.lstrip("0") or "0"
            if (
                not (port.isascii() and port.isdigit())
                or len(port) > 5
                or not 0 < int(port) < 65536
            ):
                return None
            if port != DEFAULT_PORTS[scheme]:
                encoded = f"{encoded}:{port}"
        key_netloc = encoded
        if self._strip_www and encoded.startswith("www.") and "." in encoded[4:]:
            key_netloc = encoded[4:]
        return encoded, key_netloc


_DEFAULT = UrlNormalizer()


def canonicalize(url: str, base: str | None = None) -> str | None:
    """The dedup key of `url` (resolved against `base`), or None if it is not a crawlable URL."""
    return _DEFAULT.canonicalize(url, base)


def normalize(url: str, base: str | None = None) -> str | None:
    """The URL to fetch for `url` (resolved against `base`), or None if it is not crawlable."""
    return _DEFAULT.normalize(url, base)


def document_base(page: str, base_href: str) -> str:
    """The URL a page's links resolve against, given its `<base href>` value (HTML's "frozen base
    URL"): `base_href` resolved against `page` as links are; `page` itself when that fails; and
    for another scheme ("javascript:", "ftp:") the base as written, against which relative links
    resolve to nothing, as in a browser (absolute http(s) links still do)."""
    resolved = _DEFAULT.normalize(base_href, page)
    if resolved is not None:
        return resolved
    cleaned = base_href.strip(STRIP).translate(TAB_NL)
    scheme = SPLIT(cleaned).group(1)  # type: ignore[union-attr]  # SPLIT always matches
    if scheme is not None and scheme.lower() not in DEFAULT_PORTS:
        return cleaned
    return page
