"""URL canonicalization: turn every extracted link into a fetchable URL and a dedup key.

`normalize()` gives the URL that is fetched: the reference resolved against its base (RFC 3986
section 5.2) plus safe syntax normalization (scheme and host case, IDNA, default port, dot-segments,
percent-encoding, no fragment). `canonicalize()` gives the Sieve key: the same, plus session and
tracking parameters stripped and query pairs sorted by key. Both return None for anything that is
not a crawlable http(s) URL, and never raise on any input string.

`UrlNormalizer.resolve(href, base)` is the engine's hot path: both results from one parse, behind
a bounded memo keyed by the part of the base the href depends on (so navigation links repeated on
every page of a site hit), with a per-base cache underneath. The fetch form is read in parts by
the base class, `crawler.urls.parts.UrlParser` (resolution, normalization, a per-authority cache;
hosts in `crawler.urls.host`); the dedup key (parameters stripped, the query sorted) is made here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final

from crawler.urls.host import host_problem
from crawler.urls.parts import CACHE_LIMIT, Base, UrlParser
from crawler.urls.syntax import (
    DEFAULT_PORTS,
    SPLIT,
    STRIP,
    TAB_NL,
    compile_patterns,
    cut_fragment,
    pair_key,
    remove_dot_segments,
)

__all__ = [
    "DEFAULT_SESSION_PARAMS", "DEFAULT_TRACKING_PARAMS", "UrlNormalizer", "canonicalize",
    "document_base", "normalize", "why_not",
]  # fmt: skip

DEFAULT_SESSION_PARAMS: Final[tuple[str, ...]] = (
    "jsessionid", "phpsessid", "sid", "sessionid", "session_id", "aspsessionid*", "cfid", "cftoken",
)  # fmt: skip
DEFAULT_TRACKING_PARAMS: Final[tuple[str, ...]] = ("utm_*", "gclid", "fbclid", "msclkid")

_INVALID: Final = ("", "")  # memo value standing for "None": never a real result
# Hrefs and bases longer than this bypass the memo and the caches, so that what they hold stays
# bounded (about memo_size x 1.5 KiB) whatever a hostile page links to. Real links are shorter.
_MEMO_MAX_LENGTH: Final = 512

_Result = tuple[str, str]  # (fetch URL, dedup key)


class UrlNormalizer(UrlParser):
    """Resolves and canonicalizes links; the knobs and a bounded memo live here.

    `session_params` and `tracking_params` are case-insensitive query keys (and, for session
    parameters, `;name=value` path parameters) removed from the dedup key; a pattern may hold one
    `*` wildcard ("utm_*"). `sort_query` sorts the key's query pairs by key (stable for repeated
    keys). `strip_www` drops a leading "www." from the key's host. `memo_size` bounds the memo (0
    disables it). `max_length` rejects URLs whose fetch form is longer.
    """

    __slots__ = (
        "_base_cache", "_half", "_hits", "_hot", "_last_base", "_last_base_str",
        "_max_length", "_memo_size", "_misses", "_old", "_path_param_sub", "_query_drop",
        "_query_drop_search", "_sort_query",
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
        super().__init__(strip_www=strip_www)
        self._sort_query = sort_query
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
        self._base_cache: dict[str, Base | None] = {}
        self._last_base_str: str | None = None
        self._last_base: Base | None = None

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
    ) -> tuple[Callable[[str, Base | None], _Result | None], Base | None]:
        """(the function resolving an href against `base`, the parsed base): the memo, or the
        bare computation when the memo is off or the base too long to be a memo context."""
        if base is not None and len(base) > _MEMO_MAX_LENGTH:
            return self._compute, self._parse_base(base)
        b = None if base is None else self._base(base)
        return (self._memoized if self._memo_size else self._compute), b

    def _memoized(self, href: str, b: Base | None) -> _Result | None:
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

    def _base(self, base: str) -> Base | None:
        """The parsed form of `base`, from the last-base slot or the base cache."""
        if base is self._last_base_str or base == self._last_base_str:
            return self._last_base
        if base in self._base_cache:
            b = self._base_cache[base]
        else:
            b = self._parse_base(base)
            if len(self._base_cache) >= CACHE_LIMIT:
                self._base_cache.clear()
            self._base_cache[base] = b
        self._last_base_str, self._last_base = base, b
        return b

    def _parse_base(self, base: str) -> Base | None:
        parts = self._parts(base, None)
        return None if parts is None else Base(parts)

    # -- the computation ----------------------------------------------------------------------

    def _compute(self, href: str, base: Base | None) -> _Result | None:
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


_DEFAULT = UrlNormalizer()


def canonicalize(url: str, base: str | None = None) -> str | None:
    """The dedup key of `url` (resolved against `base`), or None if it is not a crawlable URL."""
    return _DEFAULT.canonicalize(url, base)


def normalize(url: str, base: str | None = None) -> str | None:
    """The URL to fetch for `url` (resolved against `base`), or None if it is not crawlable."""
    return _DEFAULT.normalize(url, base)


def why_not(url: str) -> str:
    """Why `url` is not a crawlable absolute URL, in words for an error message ("" when it is,
    or when no better reason than "not crawlable" is known): no or another scheme, no host, a
    space or another character no host has, a port that is no port."""
    if canonicalize(url) is not None:
        return ""
    m = SPLIT(url.strip(STRIP))
    scheme, auth = (m.group(1), m.group(2)) if m is not None else (None, None)
    if scheme is None:
        return "no scheme (http:// or https://)"
    if scheme.lower() not in DEFAULT_PORTS:
        return f"the scheme is {scheme.lower()}:, not http(s)"
    return host_problem(scheme.lower(), auth) if auth is not None else ""


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
