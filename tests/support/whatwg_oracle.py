"""A browser oracle for link resolution (test-only): ada, a WHATWG URL parser, beside the crawler.

A case is (page URL, `<base href>` value or None, `<a href>` value), as the HTML parser hands them
over. `browser()` is what a browser follows: the document base URL (the base href parsed against
the page, or the page when absent or unparsable), the href parsed against it, kept if http(s),
fragment dropped. `crawler()` is what the crawl fetches: the same values through
`crawler.parse.links.read_page` and `UrlNormalizer.resolve_all`, with the fragment cut as the
admission does. `classify()` names the difference between the two, or "same".

Everything here is string work: nothing is resolved through DNS or sent anywhere.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from ada_url import join_url

from crawler.parse.links import read_page
from crawler.parse.markup import Markup, parse_markup
from crawler.urls.canonical import UrlNormalizer
from crawler.urls.syntax import STRIP, cut_fragment

Case = tuple[str, str | None, str]  # page URL, <base href> value or None, href value
_SURROGATE = re.compile("[\ud800-\udfff]")

# -- the two sides ------------------------------------------------------------------------------


def browser(case: Case) -> str | None:
    """The URL a browser follows for `case` (http(s) only, no fragment), or None."""
    page, base_href, href = case
    # A DOM string holds no lone surrogate: browsers read one as U+FFFD (ada cannot take one).
    base_href = None if base_href is None else _SURROGATE.sub("\ufffd", base_href)
    href = _SURROGATE.sub("\ufffd", href)
    base = page
    if base_href is not None:
        try:
            base = join_url(page, base_href)
        except ValueError:
            base = page
    try:
        url = join_url(base, href)
    except ValueError:
        return None
    if not url.startswith(("http://", "https://")):
        return None
    return url.partition("#")[0]


def crawler(case: Case, norm: UrlNormalizer) -> tuple[str, str] | None:
    """(URL fetched, dedup key) the crawl makes of `case`, or None when it drops the link."""
    page, base_href, href = case
    markup = Markup(True, hrefs=(href.strip(STRIP),), base_href=base_href)
    got = read_page(markup, page)
    return norm.resolve_all([cut_fragment(h) for h in got.links], got.base)[0]


# -- equivalences the crawler applies on purpose ------------------------------------------------

_PCT = re.compile(r"%([0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]|%")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_AUTHORITY = re.compile(r"(https?://)([^/?#]*)(.*)", re.S)
# Hosts a browser accepts but no DNS name can be: only dots, or ASCII outside the name characters.
_NO_DNS_NAME = re.compile(r"\.*|.*[^A-Za-z0-9\-._~!$&'()*+,;=\[\]:].*").fullmatch


def _pct(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        char = chr(int(m.group(1), 16))
        return char if char in _UNRESERVED else m.group(0).upper()
    return "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8", "surrogatepass"))


def pct_equivalent(url: str) -> str:
    """`url` with its path and query in RFC 3986 normal form (section 6.2.2: hex digits
    uppercased, unreserved characters decoded, characters a URI may not hold encoded)."""
    m = _AUTHORITY.fullmatch(url)
    if m is None:
        return url
    return m.group(1) + m.group(2) + _PCT.sub(_pct, m.group(3))


def _without_userinfo(url: str) -> str:
    m = _AUTHORITY.fullmatch(url)
    return url if m is None else m.group(1) + m.group(2).rpartition("@")[2] + m.group(3)


def _without_trailing_dot(url: str) -> str:
    m = _AUTHORITY.fullmatch(url)
    if m is None:
        return url
    host, colon, port = m.group(2).rpartition(":") if "]" not in m.group(2)[-1:] else ("", "", "")
    if not colon or not port.isdigit():
        host, colon, port = m.group(2), "", ""
    return m.group(1) + host.rstrip(".") + colon + port + m.group(3)


# (name, what it does to a browser URL): the differences the crawler makes on purpose, applied
# in this order until the browser's URL equals the crawler's.
DELIBERATE = (
    ("percent-encoding", pct_equivalent),
    ("userinfo", _without_userinfo),
    ("trailing-dot", _without_trailing_dot),
)


def classify(case: Case, norm: UrlNormalizer) -> str:
    """The class of `case`: "same", the "+"-joined DELIBERATE names that explain the
    difference, "port-0" or "unusable-host" for links only a browser keeps, or
    "unexplained: ..." naming how the crawler and a browser differ."""
    want = browser(case)
    got = crawler(case, norm)
    if got is None:
        if want is None:
            return "same"
        m = _AUTHORITY.fullmatch(want)
        assert m is not None
        host = m.group(2).rpartition("@")[2]
        if re.fullmatch(r".*:0+", host):
            return "port-0"
        if _NO_DNS_NAME(host.rpartition(":")[0] if ":" in host[-6:] else host):
            return "unusable-host"
        return "unexplained: crawler drops a link a browser follows"
    if want is None:
        return "unexplained: crawler fetches a URL a browser does not follow"
    fetched = got[0]
    if fetched == want:
        return "same"
    applied = []
    for name, fn in DELIBERATE:
        changed = fn(want)
        if changed != want:
            applied.append(name)
            want = changed
        if want == fetched:
            return "+".join(applied)
    return "unexplained: different URL"


# -- corpora ------------------------------------------------------------------------------------

PAGES = (
    "http://a.test/d/page.html",
    "https://b.test/x/y/?q=1",
    "http://127.0.0.1:8080/a/b",
    "http://[::1]/dir/",
    "https://xn--bcher-kva.test/%C3%A4/i?x=%C3%B6",
    "http://c.test/",
)
BASE_HREFS = (
    None, None, None, None, "/sub/", "//cdn.test/lib/", "https://other.test/base/", "../up/", "",
    "javascript:void(0)", "mailto:x@y.test", "http://[bad/", "  /s p/ ", "\\\\back.test\\s\\",
    "data:text/html,x", "ftp://f.test/dir/", "HTTP://UP.TEST/Dir/", "?only", "#frag", "\t/t\nab/",
)  # fmt: skip
# Hand-written hrefs: the tricky pieces of WHATWG URL parsing, one or two at a time.
HREFS = (
    # whitespace and controls
    "", " ", "\t", "  x.html  ", "\x01x.html\x1f", "x\t.html", "x\n.ht\rml", "/a\tb/\nc",
    "ht\ttp://a.test/", "\x00y", "x\u00a0", "\u3000x",
    # backslashes
    "\\x", "\\\\h.test\\p", "x\\y", "..\\..\\z", "/a\\b?c\\d#e\\f", "http:\\\\h.test\\p",
    "https:/\\h.test/p", "\\/h.test/", "/\\h.test/",
    # dot segments and relative forms
    ".", "./", "..", "../", "../../../../x", "./a/./b/../c", "a/..", "a/.", "%2e/x", "%2E%2e/x",
    ".%2E/x", "a/%2e%2e/b", "/%2e%2e/%2E/x", "..%2fx", "?", "?x", "??", "#", "#x", "?#", "//",
    "///", "////x", ";p", ";jsessionid=1", "x;jsessionid=ab?y=1",
    # schemes
    "HTTP://A.TEST/", "HtTpS://A.test/x", "http:x", "HTTP:x", "https:x", "http:/x", "http:///x",
    "http:////x", "https:///x", "http:", "https:", "http:?q", "http:#f", "javascript:alert(1)",
    " javascript:void(0)", "mailto:a@b.test", "data:text/html,hi", "about:blank", "tel:+1",
    "ftp://f.test/", "ws://w.test/", "file:///etc/x", "x:y", "c:\\x", "1http://a/", "+x:y",
    "ht tp://a/",
    # authority
    "//h.test", "//h.test/p?q#f", "//H.TEST:80/", "http://h.test:80/", "http://h.test:0080/",
    "https://h.test:443/", "http://h.test:443/", "https://h.test:80/", "http://h.test:/",
    "http://h.test:65535/", "http://h.test:65536/", "http://h.test:0/", "http://h.test:x/",
    "http://h.test:-1/", "http://h.test:1:2/", "http://u:p@h.test/", "http://u@v@h.test/",
    "http://@h.test/", "http://:@h.test/", "http://u:p@/", "http://h.test./", "http://h.test..",
    "http://.h.test/", "http://h..test/", "http://%68.test/", "http://%48.TEST/",
    "http://h%2ftest/", "http://h%00.test/", "http://h test/", "http://h<test/", "http://h^test/",
    "http://h|test/", "http://a_b.test/", "http://-a.test/", "http://a-.test/", "http://ab--c.test/",
    "http://xn--bcher-kva.test/", "http://bücher.test/", "http://BÜCHER.TEST/", "http://Faß.test/",
    "http://ＡＢＣ．test/", "http://☃.test/", "http://e\u00adx.test/", "http://e\u200bx.test/",
    "http://xn--zz.test/", "http://xn--.test/", "http://例え.テスト/",
    # IP addresses
    "http://127.0.0.1/", "http://127.1/", "http://127.0.1/", "http://0x7f.1/", "http://0x7F.0.0.1/",
    "http://2130706433/", "http://017700000001/", "http://0177.0.0.1/", "http://0300.0250.0.1/",
    "http://00.1.2.3/", "http://1.2.3.4./", "http://1.2.3.256/", "http://1.2.3.4.5/",
    "http://4294967295/", "http://4294967296/", "http://0x/", "http://0x.0x.0/", "http://08/",
    "http://09.1/", "http://h.test.123/", "http://h.09/", "http://h.0x1/", "http://1.2.3.foo/",
    "http://0xg.1/", "http://1..2/", "http://[::1]/", "http://[::1]:8080/x", "http://[::1/",
    "http://[0:0:0:0:0:0:0:1]/", "http://[2001:DB8::1]/", "http://[::FFFF:127.0.0.1]/",
    "http://[::127.0.0.1]/", "http://[1.2.3.4]/", "http://[not-ip]/", "http://[fe80::1%25eth0]/",
    "http://[::1]x/", "http://[::1]:/",
    # path and query encoding
    "a b", "a%20b", "a+b", "ä", "%C3%A4", "%c3%a4", "€?€", "%7e%7E~", "%41%5f", "%3b%3D", "%2f",
    "%25", "100%", "%zz", "%4", "%%", "x|y", "x^y", "[x]", "{x}", "`x`", "'x'", "\"x\"", "<x>",
    "?q=a b", "?q='x'", "?q=\"x\"", "?q=<x>", "?q=|^`{}[]", "?q=ä", "?q=%7e", "?q=\\x", "?a=1&b=2",
    "?b=2&a=1", "?a=1&amp;b=2", "?utm_source=x&k=1", "?q=a#b", "?q=%", "a?b?c", "\ud800",
    "x\x7fy", "?\x7f", "/%00", "/a\x00b",
)  # fmt: skip


def hand_cases() -> Iterator[Case]:
    """Every hand-written href on every page, without and with each kind of <base href>."""
    for page in PAGES:
        for base_href in dict.fromkeys(BASE_HREFS):
            for href in HREFS:
                yield page, base_href, href


# fmt: off
_PIECES = {
    "lead": ("", "", "", " ", "\t", "\x01", "\n"),
    "scheme": ("", "", "", "http:", "https:", "HTTP:", "hTtPs:", "javascript:", "mailto:", "ftp:"),
    "slashes": ("", "//", "//", "//", "/", "///", "\\\\", "/\\", "\\"),
    "userinfo": ("", "", "", "", "u@", "u:p@", "@", "a@b@"),
    "host": (
        "h.test", "h.test", "H.TEST", "bücher.test", "BÜCHER.test", "xn--bcher-kva.test", "127.1",
        "0x7f.1", "2130706433", "[::1]", "[::FFFF:1.2.3.4]", "%68.test", "h.test.", "", "h t",
        "a_b.test", "01.02.03.04", "1.2.3.4", "h.123", "h\t.test", "例え.テスト", "ＡＢＣ．test",
        "e\u00adx.test", "[::1.2.3.4]", "[0:0::1]", "%C3%BC.test", "0x7F.0.0.1", "h%2etest",
    ),
    "port": ("", "", "", "", ":", ":80", ":0080", ":443", ":8080", ":65536", ":0", ":x"),
    "segment": (
        "a", "b", "..", ".", "%2e", "%2E%2e", "b c", "ä", "%7e", "%7E", "x|y", "[z]", "\t", "\n",
        "q%zz", "%", "'", "{}", "é", "a;jsessionid=1", "", "x\\y", "%2F", "~",
    ),
    "query": (
        None, None, None, "", "a=1&b=2", "b=2&a=1", "q=a b", "q='x'", "x=ä", "a=%7e",
        "utm_source=x&z=1", "x=\\y", "|^`", "a=1&&b", "sid=1", "q=%zz", "q=%41",
    ),
    "fragment": (None, None, None, "", "frag", "a b", "x/../y"),
    "trail": ("", "", "", " ", "\x1f", "\t"),
}
# fmt: on


def generated_cases(n: int, seed: int) -> list[Case]:
    """`n` random cases from a grammar of the tricky pieces above (fixed `seed`)."""
    rnd = random.Random(seed)

    def pick(name: str) -> object:
        return rnd.choice(_PIECES[name])

    cases: list[Case] = []
    for _ in range(n):
        href = str(pick("lead")) + str(pick("scheme"))
        slashes = str(pick("slashes"))
        if slashes.count("/") + slashes.count("\\") >= 2 or (href and slashes):
            href += slashes + str(pick("userinfo")) + str(pick("host")) + str(pick("port"))
            path_start = "/"
        else:
            href += slashes
            path_start = rnd.choice(("", "/", "../", "./"))
        segments = [str(pick("segment")) for _ in range(rnd.randrange(4))]
        if segments:
            href += path_start + rnd.choice("//\\").join(segments)
        query, fragment = pick("query"), pick("fragment")
        if query is not None:
            href += f"?{query}"
        if fragment is not None:
            href += f"#{fragment}"
        href += str(pick("trail"))
        base_href = rnd.choice(BASE_HREFS)
        cases.append((rnd.choice(PAGES), base_href, href))
    return cases


DOC_SITES = (
    ("python3.11-doc", Path("/usr/share/doc/python3.11/html"), "http://docs.test/"),
    ("sqlite3-doc", Path("/usr/share/doc/sqlite3"), "http://sqlite.test/"),
    ("postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html"), "http://pg.test/"),
)


def site_cases(root: Path, site: str) -> Iterator[Case]:
    """Every (page, base href, href) of the HTML pages under `root`, served under `site`."""
    for path in sorted(root.rglob("*.html")):
        page = site + path.relative_to(root).as_posix()
        markup = parse_markup(path.read_bytes(), page, "text/html")
        for href in markup.hrefs:
            yield page, markup.base_href, href


def split_keys(cases: Iterable[Case], norm: UrlNormalizer) -> dict[str, set[str]]:
    """Browser URLs the crawl gives more than one dedup key (it should give each one key)."""
    keys: dict[str, set[str]] = {}
    for case in cases:
        want, got = browser(case), crawler(case, norm)
        if want is not None and got is not None:
            keys.setdefault(want, set()).add(got[1])
    return {url: found for url, found in keys.items() if len(found) > 1}


def tally(cases: Iterable[Case], norm: UrlNormalizer) -> dict[str, list[Case]]:
    """class -> the cases in it (see `classify`)."""
    out: dict[str, list[Case]] = {}
    for case in cases:
        out.setdefault(classify(case, norm), []).append(case)
    return out
