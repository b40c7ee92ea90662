"""PDF text: the libraries the crawler could read PDFs with, against poppler's pdftotext.

    python -m bench pdf                 (BENCH_QUICK=1: 20 pages a PDF)
    python -m bench.bench_pdf --pages 400 --libraries pypdfium2,pypdf

The PDFs are those Debian's octave-doc, libtasn1-doc and shared-mime-info install (3 to 1,158
pages; a missing package prints how to get it; `.pdf.gz` files are read too). Each library reads
the first `--pages` pages of each PDF (the same pages for all) in a fresh child process:

- F1: the words of its text (NFKC, lowercased \\w+ runs, as multisets) against pdftotext's
  (`pdftotext -enc UTF-8`, its default reading order) on the same pages, per PDF;
- pages/s: pages over the child's wall-clock time from the bytes to the text (the import and
  start-up of the child not counted; pdftotext's is its whole process run, start-up included,
  which is a few ms);
- peak RSS of the child on the largest PDF (`ru_maxrss` of that child alone, from os.wait4),
  the interpreter's own (~10-20 MB) included.

Then what the crawler's bounded reader costs (`crawler.parse.pdf.PdfPool`: a persistent
worker process, the body piped to it, the text piped back) over calling the same read in
process, for each PDF: the per-PDF overhead of the isolation.

pypdf and pdfminer.six are not dependencies of the crawler (the bench extra installs them):
those not installed are left out.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from collections import Counter
from pathlib import Path

QUICK = os.environ.get("BENCH_QUICK") == "1"
PACKAGES = ("octave-doc", "libtasn1-doc", "shared-mime-info")
LIBRARIES = ("pypdfium2", "pypdf", "pdfminer")
_WORD = re.compile(r"\w+")

# Run in a child: read the first N pages of a PDF with one library, print JSON
# {"seconds": ..., "text": ...}. The timer starts once the library is imported.
_CHILD = r"""
import json, sys, time
lib, path, pages = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(path, "rb").read()
if lib == "pypdfium2":
    import pypdfium2 as pdfium
    start = time.perf_counter()
    doc = pdfium.PdfDocument(data)
    parts = []
    for i in range(min(pages, len(doc))):
        page = doc[i]
        textpage = page.get_textpage()
        parts.append(textpage.get_text_bounded())
        textpage.close(); page.close()
    doc.close()
elif lib == "pypdf":
    import io, pypdf
    start = time.perf_counter()
    reader = pypdf.PdfReader(io.BytesIO(data))
    parts = [reader.pages[i].extract_text() for i in range(min(pages, len(reader.pages)))]
else:
    import io
    from pdfminer.high_level import extract_text
    start = time.perf_counter()
    parts = [extract_text(io.BytesIO(data), maxpages=pages)]
print(json.dumps({"seconds": time.perf_counter() - start, "text": "\f".join(parts)}))
"""


def pdfs() -> list[Path]:
    """The PDFs of PACKAGES (gunzipped to bench/out/pdf/ when shipped as .pdf.gz)."""
    found: list[Path] = []
    out = Path(__file__).parent / "out" / "pdf"
    for package in PACKAGES:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True)
        if listed.returncode != 0:
            print(f"{package} is not installed: apt-get install {package}")
            continue
        for line in listed.stdout.splitlines():
            path = Path(line)
            if path.suffix == ".pdf" and path.is_file():
                found.append(path)
            elif line.endswith(".pdf.gz") and path.is_file():
                out.mkdir(parents=True, exist_ok=True)
                target = out / path.name.removesuffix(".gz")
                target.write_bytes(gzip.decompress(path.read_bytes()))
                found.append(target)
    return sorted(found, key=lambda p: p.stat().st_size)


def words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def f1(ours: Counter[str], truth: Counter[str]) -> float:
    common = sum((ours & truth).values())
    if not common:
        return 0.0
    precision, recall = common / sum(ours.values()), common / sum(truth.values())
    return 2 * precision * recall / (precision + recall)


def page_count(path: Path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True).stdout
    match = re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE)
    return int(match.group(1)) if match else 0


def pdftotext(path: Path, pages: int) -> tuple[str, float]:
    start = time.perf_counter()
    run = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", "-l", str(pages), str(path), "-"],
        capture_output=True,
        check=True,
    )
    return run.stdout.decode("utf-8", "replace"), time.perf_counter() - start


def run_library(lib: str, path: Path, pages: int) -> tuple[str, float, int]:
    """(text, seconds, peak RSS in KiB) of `lib` reading `path` in a fresh child."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, lib, str(path), str(pages)], stdout=subprocess.PIPE
    )
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise RuntimeError(f"{lib} failed on {path}")
    got = json.loads(out)
    return got["text"], got["seconds"], usage.ru_maxrss


def installed(lib: str) -> bool:
    module = "pdfminer.high_level" if lib == "pdfminer" else lib
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def compare(paths: list[Path], libraries: list[str], pages: int) -> None:
    print(f"first {pages} pages of each PDF; F1 of words against pdftotext; pages/s\n")
    header = " | ".join(f"{lib} F1 | {lib} p/s" for lib in libraries)
    print(f"| PDF | pages | pdftotext p/s | {header} |")
    print("|" + " --- |" * (3 + 2 * len(libraries)))
    totals: dict[str, list[float]] = {lib: [0.0, 0.0] for lib in ["pdftotext", *libraries]}
    for path in paths:
        n = min(pages, page_count(path))
        truth, seconds = pdftotext(path, n)
        totals["pdftotext"][0] += n
        totals["pdftotext"][1] += seconds
        truth_words = words(truth)
        cells = []
        for lib in libraries:
            text, spent, _ = run_library(lib, path, n)
            totals[lib][0] += n
            totals[lib][1] += spent
            cells.append(f"{f1(words(text), truth_words):.3f} | {n / spent:.0f}")
        print(f"| {path.name} | {n} | {n / seconds:.0f} | {' | '.join(cells)} |", flush=True)
    rates = ", ".join(f"{lib} {n / s:.0f}" for lib, (n, s) in totals.items() if s)
    print(f"\nall pages together, pages/s: {rates}")
    largest = max(paths, key=lambda p: p.stat().st_size)
    n = min(pages, page_count(largest))
    peaks = ", ".join(f"{lib} {run_library(lib, largest, n)[2] / 1024:.0f} MB" for lib in libraries)
    print(f"peak RSS reading {largest.name} ({n} pages) in a child: {peaks}")


def isolation(paths: list[Path], pages: int) -> None:
    """The crawler's pooled, bounded read against the same read in this process."""
    from crawler.parse.pdf.pool import PdfPool
    from crawler.parse.pdf.read import read_pdf

    async def pooled(data: bytes) -> float:
        start = time.perf_counter()
        got = await pool.read(data)
        assert got.error is None, got.error
        return time.perf_counter() - start

    pool = PdfPool(workers=1, max_pages=pages)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(pool.read(paths[0].read_bytes()))  # the worker's start-up
        print("\n| PDF | size | in process ms | pooled worker ms | overhead ms |")
        print("| --- | --- | --- | --- | --- |")
        for path in paths:
            data = path.read_bytes()
            start = time.perf_counter()
            read_pdf(data, max_pages=pages, max_chars=10_000_000, max_links=10_000)
            direct = time.perf_counter() - start
            spent = loop.run_until_complete(pooled(data))
            print(
                f"| {path.name} | {len(data) / 1e6:.2f} MB | {direct * 1000:.1f} | "
                f"{spent * 1000:.1f} | {(spent - direct) * 1000:+.1f} |",
                flush=True,
            )
        start = time.perf_counter()
        fresh = PdfPool(workers=1)
        loop.run_until_complete(fresh.read(paths[0].read_bytes()))
        print(f"\na worker's start-up (and first read of {paths[0].name}): "
              f"{(time.perf_counter() - start) * 1000:.0f} ms")  # fmt: skip
        loop.run_until_complete(fresh.close())
    finally:
        loop.run_until_complete(pool.close())
        loop.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_pdf")
    parser.add_argument("--pages", type=int, default=20 if QUICK else 400)
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    args = parser.parse_args(argv)
    if shutil.which("pdftotext") is None:
        print("pdftotext is missing: apt-get install poppler-utils")
        return 0
    paths = pdfs()
    if not paths:
        print(f"no PDFs: apt-get install {' '.join(PACKAGES)}")
        return 0
    libraries = [lib for lib in args.libraries.split(",") if installed(lib)]
    compare(paths, libraries, args.pages)
    isolation(paths, args.pages)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
