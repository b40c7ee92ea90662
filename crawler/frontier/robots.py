"""robots.txt policy: RFC 9309 status rules on top of protego's parser.

The engine fetches ``/robots.txt`` (following up to 5 redirects, capping the body) and hands the
final status and body to :func:`policy_from_response`, which returns an immutable
:class:`RobotsPolicy`. The frontier asks the policy whether a URL may be fetched and reads its
Crawl-delay.

Status rules (RFC 9309 section 2.3.1):

- 2xx: the body (truncated at ``max_bytes``, 500 KiB by default, then at its last line end;
  decoded as UTF-8 with errors replaced, or UTF-16 after its BOM) is parsed with protego:
  wildcards, ``$``, Allow, longest match.
- 3xx as the *final* status (more than 5 redirects, or a redirect without a target): the file is
  "unavailable", which RFC 9309 treats like 4xx.
- 4xx: unavailable, allow everything. Exception: **429** means the server is rate-limiting us, so it
  is treated like 5xx (Google does the same); allowing everything on a 429 would hammer the host.
- 5xx, or no response at all (``status=None``: DNS/connection failure, timeout): unreachable,
  disallow everything *for now*; the policy is ``temporary`` and the frontier fetches it again
  after a backoff. A connection the host *refused* (nothing listens on the port) makes a
  ``refused`` temporary policy: an answer, not a silence, which the frontier gives up on sooner
  and whose pages fail as connection errors (``crawler.frontier.hosts.PolitenessRules.robots``).

Group selection (RFC 9309 2.2.1): a group is ours when the product token of one of its
User-agent lines equals ours (``sieve-crawler`` for ``"sieve-crawler/0.1 (+https://x)"``),
case-insensitively: ``User-agent: Sieve-Crawler/2.0`` is ours (Google's parser reads
``Googlebot/2.1`` as ``Googlebot``), ``User-agent: sieve`` is another crawler's (protego alone
matches a token at the start of ours: :func:`_own_groups` renames the lines before it parses).
Our groups are merged; without one, the ``*`` group applies.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from protego import Protego

from crawler.errors import BlockedAddress, FetchError

if TYPE_CHECKING:
    from crawler.fetch.response import Response

__all__ = [
    "ALLOW_ALL",
    "DEFAULT_MAX_BYTES",
    "REFUSED_ATTEMPTS",
    "RobotsFetch",
    "RobotsPolicy",
    "fetch_robots",
    "policy_from_response",
    "product_token",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES: Final = 512_000  # 500 KiB, the minimum RFC 9309 asks a crawler to parse
REFUSED_ATTEMPTS: Final = 2  # tries of a robots.txt whose connection the host refused: one quick
# retry (after the first backoff step), then its pages fail as connection errors
# (crawler.frontier.hosts)

_TOKEN_RE: Final = re.compile(r"[A-Za-z0-9_.\-]+")
_AFTER_TOKEN: Final = ("", "/", " ", "\t", ";", "(")  # what may follow a product token
# "Mozilla/5.0 (compatible; Googlebot/2.1; ...)", "(KHTML, like Gecko; compatible; bingbot/2.0"
_COMPATIBLE_RE: Final = re.compile(r"[(;]\s*compatible\s*;\s*([A-Za-z0-9_.\-]+)", re.IGNORECASE)
# the spellings of the User-agent field protego reads
_AGENT_FIELDS: Final = frozenset({"user-agent", "useragent", "user agent"})


def product_token(user_agent: str) -> str:
    """The product token of a User-Agent string, the crawler's name robots.txt groups are matched
    against (RFC 9309 2.2.1): its first token, ``"sieve-crawler/0.1 (+https://x)"`` ->
    ``"sieve-crawler"``; in the browser-style convention of the big crawlers,
    ``"Mozilla/5.0 (compatible; Googlebot/2.1; +http://...)"``, the name after ``compatible;``
    (``Googlebot``; a browser's own string keeps ``Mozilla``, Internet Explorer's ``compatible;
    MSIE 9.0`` too). Raises ValueError when the string does not start with a token (letters,
    digits, "-", "_", "."), or the token runs into another character (``bötbot/1.0``)."""
    stripped = user_agent.strip()
    match = _TOKEN_RE.match(stripped)
    if match is None:
        raise ValueError(f"user agent {user_agent!r} does not start with a product token")
    if stripped[match.end() : match.end() + 1] not in _AFTER_TOKEN:
        raise ValueError(
            f"user agent {user_agent!r}: its name {stripped.split('/')[0].split()[0]!r} holds a "
            "character a product token cannot (letters, digits, '-', '_' and '.' only)"
        )
    if match.group().lower() == "mozilla":
        compatible = _COMPATIBLE_RE.search(user_agent)
        if compatible is not None and compatible.group(1).lower() != "msie":
            return compatible.group(1)
    return match.group()


def _own_groups(text: str, token: str) -> str:
    """robots.txt ``text`` with each User-agent line rewritten for protego so that it picks the
    groups RFC 9309 picks for our product ``token``: a line whose value starts with our token
    (then a character outside tokens: ``/2.0``, a blank, the end) names ``token``; ``*`` stays;
    any other value gets a leading ``~``, which no product token contains, so protego never
    matches it (it matches any value that ours starts with: ``sieve`` for ``sieve-crawler``).
    Lines are split as protego splits them; comments go."""
    ours = token.lower()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        value = _agent_value(line)
        if not value:
            continue  # no agent (it still ends the group before it, as protego reads it)
        if value == "*" or (value[0] == "*" and value[1].isspace()):  # "* (all robots)": Google
            name = "*"
        else:
            found = _TOKEN_RE.match(value)
            name = token if found is not None and found.group().lower() == ours else "~" + value
        lines[i] = f"User-agent: {name}"
    return "\n".join(lines)


def _agent_value(line: str) -> str | None:
    """The value of a User-agent line read as protego reads a line (a field before a colon;
    else, when the colon is part of the value, the field in the first words), None for any
    other line: "User-agent foo: bar" is a field "User-agent foo", no User-agent line."""
    line = line.partition("#")[0].strip()
    field, colon, value = line.partition(":")
    if colon:
        if field.strip().lower() in _AGENT_FIELDS:
            return value.strip()
        if not value or value[0].isspace():
            return None  # an unknown field
    words = line.split()
    for count in (1, 2):  # "User-agent foo", "User agent foo"
        if " ".join(words[:count]).lower() in _AGENT_FIELDS:
            return " ".join(words[count:])
    return None


class RobotsPolicy:
    """What one host's robots.txt allows for one user agent. Immutable.

    ``status`` is the HTTP status it came from (None: unreachable or a default), ``temporary`` is
    True for a disallow-all caused by a server error or an unreachable host (fetch it again later),
    ``reason`` then says what went wrong ("HTTP 503", "connect: ..."), ``refused`` is True when
    that was a connection the host refused (ECONNREFUSED: nothing listens on its port),
    ``crawl_delay`` is the delay in seconds asked of our user agent (Crawl-delay, else derived from
    Request-rate), ``sitemaps`` the Sitemap URLs listed in the file (site-wide), ``retry_after``
    the seconds a temporary policy's 429/503 asked us to wait before asking again (Retry-After).
    """

    __slots__ = (
        "_disallow_all",
        "_parser",
        "_token",
        "crawl_delay",
        "reason",
        "refused",
        "retry_after",
        "sitemaps",
        "status",
        "temporary",
    )

    status: int | None
    temporary: bool
    reason: str | None
    refused: bool
    retry_after: float | None
    crawl_delay: float | None
    sitemaps: tuple[str, ...]
    _parser: Any
    _token: str
    _disallow_all: bool

    def __init__(
        self,
        *,
        status: int | None = None,
        temporary: bool = False,
        disallow_all: bool = False,
        crawl_delay: float | None = None,
        sitemaps: tuple[str, ...] = (),
        parser: Protego | None = None,
        token: str = "*",
        reason: str | None = None,
        retry_after: float | None = None,
        refused: bool = False,
    ) -> None:
        if crawl_delay is not None and not crawl_delay >= 0.0:
            raise ValueError(f"crawl_delay must be >= 0 seconds, got {crawl_delay!r}")
        setter = object.__setattr__
        setter(self, "status", status)
        setter(self, "temporary", temporary)
        setter(self, "reason", reason)
        setter(self, "refused", refused and temporary)
        setter(self, "retry_after", retry_after)
        setter(self, "_disallow_all", disallow_all or temporary)
        setter(self, "crawl_delay", crawl_delay)
        setter(self, "sitemaps", tuple(sitemaps))
        setter(self, "_parser", parser)
        setter(self, "_token", token)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"RobotsPolicy is immutable (tried to set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"RobotsPolicy is immutable (tried to delete {name!r})")

    def allowed(self, url: str) -> bool:
        """True when this policy lets our user agent fetch ``url`` (an absolute URL or a path)."""
        if self._disallow_all:
            return False
        parser = self._parser
        if parser is None:
            return True
        return bool(parser.can_fetch(url, self._token))

    def fetchable(self, url: str, key: str) -> str | None:
        """The URL to fetch for a page known by its dedup ``key``: ``url`` when allowed; else,
        when ``key`` drops session or tracking parameters of ``url`` (the same page, as the
        crawl's canonicalization reads it), ``url`` without them, its own order kept, when that is
        allowed (``Disallow: /*sid=`` asks for the page without its session id); None: refused.
        A URL found first with such a parameter took the key: refusing it lost the page."""
        if self.allowed(url):
            return url
        if url == key or self._disallow_all:
            return None
        bare = _without_dropped(url, key)
        return bare if bare is not None and self.allowed(bare) else None

    def __repr__(self) -> str:
        if self._disallow_all:
            rules = "disallow-all"
        elif self._parser is None:
            rules = "allow-all"
        else:
            rules = f"parsed for {self._token!r}"
        return (
            f"RobotsPolicy(status={self.status!r}, {rules}, temporary={self.temporary}, "
            f"crawl_delay={self.crawl_delay!r}, sitemaps={len(self.sitemaps)})"
        )


def _without_dropped(url: str, key: str) -> str | None:
    """``url`` without the query pairs and path parameters its canonical ``key`` drops, in the
    order ``url`` has them; None when ``key`` differs otherwise (another host: ``strip_www``),
    or drops nothing (it only sorts the query: never a way around a rule on ``?title=``)."""
    start = url.find("://")
    end = url.find("/", start + 3) if start > 0 else -1
    if end < 0 or not key.startswith(url[:end]) or key[end : end + 1] != "/":
        return None
    query = url.partition("?")[2]
    key_path, _, key_query = key.partition("?")
    wanted = Counter(key_query.split("&")) if key_query else Counter[str]()
    kept = []
    for pair in query.split("&") if query else ():
        if wanted[pair] > 0:
            wanted[pair] -= 1
            kept.append(pair)
    if +wanted:  # a pair of the key that the URL has not: not only parameters dropped
        return None
    bare = key_path + ("?" + "&".join(kept) if kept else "")
    return bare if bare != url else None


ALLOW_ALL: Final = RobotsPolicy()
"""Allow everything (no robots.txt known, or robots disabled)."""


def policy_from_response(
    status: int | None,
    body: bytes | None,
    user_agent: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    error: str | None = None,
    retry_after: float | None = None,
    refused: bool = False,
) -> RobotsPolicy:
    """Build the policy for the final response to a robots.txt fetch (see the module docstring).

    ``status`` is the final HTTP status after redirects (None when no response was received),
    ``body`` the response body (any length: it is truncated here at ``max_bytes``), ``user_agent``
    our User-Agent header or its product token, ``error`` why no response came (for the reason
    of a temporary disallow-all), ``retry_after`` the seconds a 429/503 asked us to wait,
    ``refused``: no response because the host refused the connection (see `RobotsFetch`).
    """
    if status is not None and not 100 <= status <= 599:
        raise ValueError(
            f"robots.txt status must be an HTTP status (100-599) or None, got {status}"
        )
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    token = product_token(user_agent)
    if status is None or status >= 500 or status == 429:
        reason = f"HTTP {status}" if status is not None else (error or "no response")
        wait = retry_after if status in (429, 503) else None
        return RobotsPolicy(status=status, temporary=True, reason=reason, retry_after=wait,
                            refused=refused and status is None)  # fmt: skip
    if status >= 300 or status < 200:
        # 3xx left over after the redirect limit, 4xx: "unavailable", crawl without restriction.
        return RobotsPolicy(status=status)
    data = (body or b"")[:max_bytes]
    if len(data) == max_bytes:  # cut: its last line is not what the site wrote ("Disallow: /")
        data = data[: max(data.rfind(b"\n"), data.rfind(b"\r")) + 1]
    # RFC 9309 wants UTF-8; a UTF-16 BOM says what it is, and its rules are the site's wishes
    codec = "utf-16" if data.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8"
    text = data.decode(codec, errors="replace").removeprefix("\ufeff")
    parser = Protego.parse(_own_groups(text, token))
    delay = parser.crawl_delay(token)
    if delay is None:
        rate = parser.request_rate(token)
        if rate is not None and rate.requests > 0:
            delay = rate.seconds / rate.requests
    crawl_delay = float(delay) if delay is not None and delay >= 0 else None
    return RobotsPolicy(
        status=status,
        crawl_delay=crawl_delay,
        sitemaps=tuple(parser.sitemaps),
        parser=parser,
        token=token,
    )


MAX_REDIRECTS = 5


class RobotsFetch(NamedTuple):
    """What a robots.txt fetch got, for `policy_from_response`: the final `status` (None: no
    response), its `body` and `latency`, why no response came (`error`, ``kind: message``),
    and whether that was a connection the host refused (`refused`)."""

    status: int | None
    body: bytes | None
    latency: float | None
    error: str | None = None
    refused: bool = False


async def fetch_robots(
    fetch: Callable[[str], Awaitable[Response]],
    join: Callable[[str, str], str | None],
    url: str,
) -> RobotsFetch:
    """Fetch robots.txt following up to 5 redirects (RFC 9309 section 2.3.1.2).

    `fetch(url)` does one capped GET; `join(location, base)` resolves a Location. Returns the
    (status, body, latency) that `policy_from_response` turns into a policy: status None when
    unreachable (also for a status outside 100-599: no HTTP class says what it means; `refused`
    when the connection to the host itself was refused, not to a redirect's target); 404
    (allow all) after too many redirects, a redirect without a usable Location,
    or when the SSRF guard refuses the host itself (so that each of its URLs then gets its own
    "blocked" result rather than a misleading robots refusal).
    """
    target, status, body, latency = url, None, None, None
    for _ in range(MAX_REDIRECTS + 1):
        try:
            response = await fetch(target)
        except FetchError as exc:
            logger.info("robots.txt %s unreachable: %s", target, exc.describe())
            if isinstance(exc, BlockedAddress) and target == url:
                return RobotsFetch(404, None, latency)
            refused = exc.refused and target == url
            return RobotsFetch(None, None, latency, exc.describe(), refused)
        status, body, latency = response.status, response.body, response.latency
        location = response.location
        if location is None:
            break
        nxt = join(location, target)
        if nxt is None:
            break
        target = nxt
    else:
        return RobotsFetch(404, None, latency)
    if status is not None and 300 <= status < 400:
        return RobotsFetch(404, None, latency)
    if status is not None and not 100 <= status <= 599:  # LinkedIn's 999, a 099: no HTTP class
        return RobotsFetch(None, None, latency, f"protocol: HTTP status {status} is not 100-599")
    return RobotsFetch(status, body, latency)
