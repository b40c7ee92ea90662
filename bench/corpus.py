"""Benchmark corpus: a real documentation site (Debian's python3.11-doc) and URLs derived from it.

Everything here is offline: the HTML comes from a Debian package installed on this machine, and
the "realistic" URL set is built from the paths and words of that site's own links.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

DOC_PACKAGE = "python3.11-doc"
DOC_ROOT = Path("/usr/share/doc/python3.11/html")
SITE = "http://docs.test/"


def ensure_docs() -> Path:
    """Return the root of the documentation site, installing the Debian package if needed."""
    if DOC_ROOT.is_dir():
        return DOC_ROOT
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", DOC_PACKAGE], check=True, env=env)
    if not DOC_ROOT.is_dir():
        raise SystemExit(f"benchmark corpus missing: install the Debian package {DOC_PACKAGE}")
    return DOC_ROOT


@cache
def html_pages() -> tuple[tuple[str, bytes], ...]:
    """Every HTML page of the site as (URL under SITE, body), in a stable order."""
    root = ensure_docs()
    pages = []
    for path in sorted(root.rglob("*.html")):
        rel = path.relative_to(root).as_posix()
        pages.append((SITE + rel, path.read_bytes()))
    return tuple(pages)


@cache
def page_links() -> tuple[tuple[str, str], ...]:
    """Every (page URL, raw href) pair of the site, as a crawler meets them, in page order."""
    out = []
    for url, body in html_pages():
        tree = LexborHTMLParser(body)
        for node in tree.css("a[href]"):
            href = node.attributes.get("href")
            if href is not None:
                out.append((url, href))
    return tuple(out)


def realistic_urls(n: int, seed: int = 0) -> list[str]:
    """`n` distinct absolute URLs shaped like the ones crawlers meet.

    Paths, file names and query words are drawn from the documentation site's own links; hosts
    mimic a crawl spanning many sites. Deterministic for a given seed.
    """
    rng = random.Random(seed)
    segments: set[str] = set()
    for page, _ in html_pages():
        segments.update(s for s in page[len(SITE) :].split("/") if s)
    for _, href in page_links():
        path = href.split("#", 1)[0].split("?", 1)[0]
        segments.update(s for s in path.split("/") if s and s not in (".", ".."))
    words = sorted(segments)
    labels = [re.sub(r"[^a-z0-9-]", "", w.split(".")[0].lower())[:12] or "site" for w in words]
    hosts = [f"{'www.' if i % 3 == 0 else ''}{rng.choice(labels)}-{i}.example" for i in range(2000)]
    keys = ["id", "page", "q", "lang", "sort", "ref", "v", "offset"]
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        host = rng.choice(hosts)
        depth = rng.randint(1, 5)
        path = "/".join(rng.choice(words) for _ in range(depth))
        url = f"{'https' if rng.random() < 0.7 else 'http'}://{host}/{path}"
        if rng.random() < 0.3:
            params = rng.sample(keys, rng.randint(1, 3))
            url += "?" + "&".join(f"{k}={rng.randint(0, 9999)}" for k in params)
        if url not in seen:
            seen.add(url)
            out.append(url)
    return out


SQLITE_DOC_PACKAGE = "sqlite3-doc"
SQLITE_DOC_ROOT = Path("/usr/share/doc/sqlite3")


def ensure_sqlite_docs() -> Path:
    """Return the root of the SQLite docs (Debian's sqlite3-doc), installing them if needed."""
    if (SQLITE_DOC_ROOT / "index.html").is_file():
        return SQLITE_DOC_ROOT
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", SQLITE_DOC_PACKAGE], check=True, env=env)
    if not (SQLITE_DOC_ROOT / "index.html").is_file():
        raise SystemExit(
            f"benchmark corpus missing: install the Debian package {SQLITE_DOC_PACKAGE}"
        )
    return SQLITE_DOC_ROOT


POSTGRES_DOC_PACKAGE = "postgresql-doc-15"
POSTGRES_DOC_ROOT = Path("/usr/share/doc/postgresql-doc-15/html")


def ensure_postgres_docs() -> Path:
    """Return the root of the PostgreSQL 15 docs (Debian's postgresql-doc-15), installing them."""
    if (POSTGRES_DOC_ROOT / "index.html").is_file():
        return POSTGRES_DOC_ROOT
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", POSTGRES_DOC_PACKAGE], check=True, env=env
        )
    if not (POSTGRES_DOC_ROOT / "index.html").is_file():
        raise SystemExit(
            f"benchmark corpus missing: install the Debian package {POSTGRES_DOC_PACKAGE}"
        )
    return POSTGRES_DOC_ROOT


# Held out from everything: added for an independent judge's audit (never tuned on), each run
# only when named (--corpus / --site / --held-out). Package -> the root its start page is in.
UNSEEN_DOCS: dict[str, tuple[str, Path]] = {
    "git-doc": ("git-doc", Path("/usr/share/doc/git/html")),  # asciidoc
    "python-django-doc": ("python-django-doc", Path("/usr/share/doc/python-django-doc/html")),
    # javadoc; openjdk-17-doc's own directory holds symlinks into this one
    "openjdk-17-doc": ("openjdk-17-doc", Path("/usr/share/doc/openjdk-17-jre-headless")),
    # a second audit's (2026-11-23 afternoon), from four more generators
    "doxygen-doc": ("doxygen-doc", Path("/usr/share/doc/doxygen/html")),  # Doxygen
    "gettext-doc": ("gettext-doc", Path("/usr/share/doc/gettext")),  # texi2html, man2html, ...
    "cargo-doc": ("cargo-doc", Path("/usr/share/doc/cargo/doc")),  # rustdoc (syn, quote, ...)
    "libglib2.0-doc": ("libglib2.0-doc", Path("/usr/share/gtk-doc/html")),  # gtk-doc
    "mkdocs-doc": ("mkdocs-doc", Path("/usr/share/doc/mkdocs/html")),  # MkDocs
    "nodejs-doc": ("nodejs-doc", Path("/usr/share/doc/nodejs/api")),  # Node.js's doc tool
    "zsh-doc": ("zsh-doc", Path("/usr/share/doc/zsh-common/html")),  # Yodl
    "haskell98-report": ("haskell98-report", Path("/usr/share/doc/haskell98-report/html")),
    # libxml2's hand-made XSLT site (ISO-8859-1) and the libxslt / libexslt API (gtk-doc)
    "libxslt1-dev": ("libxslt1-dev", Path("/usr/share/doc/libxslt1-dev/html")),
}
# The page a crawl of a site starts from, relative to its root, where it is not index.html.
START_PAGES: dict[str, str] = {"cargo-doc": "syn/index.html", "libglib2.0-doc": "glib/index.html"}


def start_page(name: str) -> str:
    """The page (relative to the site's root) a crawl of the corpus `name` starts from."""
    return START_PAGES.get(name, "index.html")


def ensure_unseen_docs(name: str) -> Path:
    """Return the (resolved) root of one of UNSEEN_DOCS, installing its Debian package."""
    package, root = UNSEEN_DOCS[name]
    start = root / start_page(name)
    if not start.is_file() and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]
        subprocess.run(install, check=True, env=env)
    if not start.is_file():
        raise SystemExit(f"benchmark corpus missing: install the Debian package {package}")
    return root.resolve()
