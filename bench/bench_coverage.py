"""Coverage of a whole-site crawl against an independent reference (opt-in, not in `make bench`).

    python -m bench.bench_coverage --corpus openjdk-17-doc [--corpus git-doc ...]

nginx (bench.nginx) serves the site on 127.0.0.1; the `crawl` command crawls it from its index
page (or the corpus's start page, bench.corpus.START_PAGES) with the end-to-end benchmark's
settings (concurrency 32, per host too, delay 0, robots off) and every other setting at its
default (max_depth 16, the trap guards, skip_extensions), to JSON Lines. The reference is
computed without the crawler: the pages reachable from that page by `<a href>`, `<area href>`,
`<frame src>`, `<iframe src>` and `<meta http-equiv=refresh>`, read with the standard library's
`html.parser` from the files on disk (a link to a directory is its index.html, as nginx serves
it; fragments cut; the site only).
Every page the reference reaches and the crawl does not (or the opposite) is printed with its
depth; so is every result that is not a 200, by status or error kind.

    python -m bench.bench_coverage --corpus sqlite3-doc --sieve all

crawls the site once with each kind of URL-seen filter (`[sieve] kind`, `crawler.sieve`) and
ends with one table: each kind's crawled set against the reference (the breadth-first truth),
and the URLs fetched more than once (a false negative would show there; a false positive
among the missed).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter, deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from bench.bench_crawl import CORPORA
from bench.corpus import start_page
from bench.nginx import Nginx

SITE = "http://site.test/"
CONFIG = """\
[crawl]
concurrency = 32

[politeness]
delay = 0.0
ip_delay = 0.0
ip_concurrency = 0
respect_robots = false
per_host_concurrency = 32
"""


class _Links(HTMLParser):
    """The link targets of one page, in document order (and its first <base href>)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("a", "area") and a.get("href") is not None:
            self.links.append(a["href"] or "")
        elif tag in ("frame", "iframe") and a.get("src"):
            self.links.append(a["src"] or "")
        elif tag == "base" and a.get("href") and self.base is None:
            self.base = a["href"]
        elif tag == "meta" and (a.get("http-equiv") or "").lower() == "refresh":
            content = a.get("content") or ""
            at = content.lower().find("url=")
            if at >= 0:
                self.links.append(content[at + 4 :].strip("'\" "))

    handle_startendtag = handle_starttag


def reference(root: Path, start: str = "index.html") -> dict[str, tuple[str, int]]:
    """Site-relative URL -> (kind: html, other or missing; depth) of everything reachable."""
    seen = {start: 0}
    queue = deque([start])
    out: dict[str, tuple[str, int]] = {}
    while queue:
        rel = queue.popleft()
        depth = seen[rel]
        path = root / unquote(urlsplit(rel).path)
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            out[rel] = ("missing", depth)
            continue
        if path.suffix not in (".html", ".htm"):
            out[rel] = ("other", depth)
            continue
        out[rel] = ("html", depth)
        parser = _Links()
        parser.feed(path.read_bytes().decode("utf-8", "replace"))
        parser.close()
        base = urljoin(SITE + rel, parser.base) if parser.base else SITE + rel
        for href in parser.links:
            target = urldefrag(urljoin(base, href.strip()))[0]
            if not target.startswith(SITE):
                continue
            t = target[len(SITE) :]
            folder = unquote(urlsplit(t).path)
            if folder and not folder.endswith("/") and (root / folder).is_dir():
                t = t.replace(urlsplit(t).path, urlsplit(t).path + "/", 1)  # nginx's redirect
            if t not in seen:
                seen[t] = depth + 1
                queue.append(t)
    return out


def run(corpus: str, keep: Path | None = None, sieve: str = "") -> tuple[int, int, int, int]:
    """Crawl `corpus` and print its coverage; (reachable, crawled, missed, repeats)."""
    root = CORPORA[corpus]()
    with tempfile.TemporaryDirectory(prefix="bench-coverage-") as tmp, Nginx(root) as server:
        config, out = Path(tmp) / "crawl.toml", Path(tmp) / "crawl.jsonl"
        config.write_text(CONFIG)
        cmd = [sys.executable, "-m", "crawler.cli", server.base_url + start_page(corpus), "-q"]
        cmd += ["--config", str(config), "-o", str(out)] + (["--sieve", sieve] if sieve else [])
        proc = subprocess.run(cmd, check=True, stderr=subprocess.PIPE, text=True)
        results = [json.loads(line) for line in out.read_text().splitlines()]
        base = server.base_url
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{corpus}.jsonl").write_text(out.read_text())
            (keep / f"{corpus}.stderr").write_text(proc.stderr)
    ref = reference(root, start_page(corpus))
    crawled: dict[str, list[dict[str, object]]] = {}
    for r in results:
        url = str(r["url"])
        crawled.setdefault(url[len(base) :] if url.startswith(base) else url, []).append(r)
    ref_html = {rel for rel, (kind, _) in ref.items() if kind == "html"}
    ok = {
        rel
        for rel, rs in crawled.items()
        if any(r["status"] == 200 and str(r["content_type"]).startswith("text/html") for r in rs)
    }
    on_disk = sum(1 for p in root.rglob("*") if p.suffix in (".html", ".htm"))
    print(f"### {corpus}: {root}{f' (sieve: {sieve})' if sieve else ''}\n")
    print(f"HTML files on disk {on_disk}; reachable (html.parser reference) {len(ref_html)}; "
          f"crawled 200 HTML {len(ok)}; both {len(ref_html & ok)}")  # fmt: skip
    for label, only in (("missed by the crawl", ref_html - ok), ("only the crawl", ok - ref_html)):
        print(f"{label}: {len(only)}")
        for rel in sorted(only)[:30]:
            print(f"  {rel} (reference depth {ref.get(rel, ('', '-'))[1]})")
    kinds: Counter[str] = Counter()
    for rs in crawled.values():
        for r in rs:
            if r["status"] != 200:
                kinds[f"{r['status']} {str(r['error'] or '').split(':', 1)[0]}".strip()] += 1
    print(f"results {len(results)}, not 200: {dict(kinds.most_common())}")
    print(
        f"reference, not HTML: {dict(Counter(kind for kind, _ in ref.values() if kind != 'html'))}"
    )
    repeats = sum(len(rs) - 1 for rs in crawled.values())
    print(f"URLs with more than one result: {repeats}")
    # each distinct log line of the crawl's stderr, its URLs and numbers folded
    lines = Counter(re.sub(r"\S+://\S+|\d+", "#", line) for line in proc.stderr.splitlines())
    print(f"stderr: {sum(lines.values())} lines, {len(lines)} distinct")
    for line, n in lines.most_common(20):
        print(f"  {n} x {line[:160]}")
    print(flush=True)
    return len(ref_html), len(ok), len(ref_html - ok), repeats


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_coverage",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--corpus", choices=tuple(CORPORA), action="append", required=True)
    parser.add_argument("--keep", type=Path, help="keep each crawl's JSON Lines and stderr here")
    parser.add_argument("--sieve", action="append", default=[],
                        help="crawl with this [sieve] kind ('all': each of them)")  # fmt: skip
    args = parser.parse_args(argv)
    from crawler.sieve import FILTER_KINDS

    kinds = list(FILTER_KINDS) if "all" in args.sieve else args.sieve
    rows = []
    for corpus in args.corpus:
        for kind in kinds or [""]:
            rows.append((corpus, kind or "scalable", *run(corpus, args.keep, kind)))
    if kinds:
        print("| corpus | sieve kind | reachable HTML | crawled 200 HTML | missed | repeats |")
        print("|---|---|--:|--:|--:|--:|")
        for corpus, kind, reach, ok, missed, repeats in rows:
            print(f"| {corpus} | {kind} | {reach:,} | {ok:,} | {missed} | {repeats} |")


if __name__ == "__main__":
    main(sys.argv[1:])
