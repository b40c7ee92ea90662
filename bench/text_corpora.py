"""The page-text benchmark's corpora, their own metrics, and the extractors compared on them.

Neither data set is in this repository (their pages are other people's): each is a checkout of
its project under bench/data/ (gitignored), found there or where an option or environment
variable says; when one is missing, `missing()` says how to get it and the benchmark goes on
with the other parts. Each corpus is scored by its own project's code, imported from the
checkout (never a copy): the article-extraction benchmark's `evaluate.py`, trafilatura's
`tests/eval_common.py`.

Every extractor reads a page's bytes and returns its text. Ours gets the bytes as a crawl
would (content type "text/html"); the peers get them decoded by trafilatura's `decode_file`
(UTF-8 first, else a detected charset: both harnesses decode so, the article benchmark's as
UTF-8, which its pages are), the decoding inside the timing. Each peer is run the way the
benchmark harnesses run it: trafilatura's `extract` with `include_comments=False` (both
harnesses; every other option at its default, which is what trafilatura's own harness names),
readability-lxml's `Document(html).summary(html_partial=True)` made text by html-text (the
article benchmark's extractors/run_readability.py), jusText with the harnesses' parameters
(50, 200, 0.1, 0.2, 0.2, 200, True; English stopwords on the English articles, every
language's on trafilatura's multilingual set, as each harness does), its good paragraphs joined
by spaces.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Any

from crawler.parse.extract import extract, page_text
from crawler.parse.markup import parse_tree, prepare

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "data"
SEED = 33
BOOTSTRAP = 1000  # the article benchmark's own default

Scorer = Callable[[dict[str, str]], "Scores"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a corpus comes from, the commit we measured, where it is looked for."""

    name: str
    repo: str
    commit: str
    default_dir: Path
    env: str
    option: str

    def directory(self, given: str | None) -> Path:
        return Path(given or os.environ.get(self.env) or self.default_dir)

    def missing(self, directory: Path) -> str:
        rel = os.path.relpath(self.default_dir, Path.cwd())
        return (
            f"{self.name}: not found at {directory}. To run this part (the data is not in this "
            f"repository), from {REPO}:\n"
            f"    git clone {self.repo} {rel}\n"
            f"    git -C {rel} checkout {self.commit}    # the commit measured in BENCHMARKS.md\n"
            f"or point {self.option} DIR / {self.env}=DIR at a checkout. Going on without it."
        )


ARTICLES = Source(
    "article-extraction-benchmark",
    "https://github.com/scrapinghub/article-extraction-benchmark",
    "4a3bc979f76c0df73cb95fe272e2fc1b96f9f010",
    DATA / "article-extraction-benchmark",
    "TEXT_BENCH_DATA",
    "--dataset",
)
TRAFILATURA = Source(
    "trafilatura's evaluation set",
    "https://github.com/adbar/trafilatura",
    "e90b0ef51ab026fdb905fb6c5b3c84dd3d784fd5",
    DATA / "trafilatura-eval",
    "TEXT_BENCH_TRAFILATURA",
    "--trafilatura-eval",
)


@dataclass(frozen=True, slots=True)
class Page:
    key: str
    url: str
    body: bytes


@dataclass(frozen=True, slots=True)
class Scores:
    """A corpus's metric for one extractor: F1's bootstrap standard deviation, and F1 on the
    corpus's two fixed halves (None where the corpus has none)."""

    precision: float
    recall: float
    f1: float
    f1_std: float
    accuracy: float
    halves: tuple[float, float] | None = None
    per_page: dict[str, float] | None = None  # F1 of each page (the article benchmark's)


@dataclass(slots=True)
class Corpus:
    name: str
    label: str
    commit: str
    pages: list[Page]
    score: Scorer
    stoplist: frozenset[str]
    metric: str


def load_module(path: Path, name: str) -> ModuleType:
    """A module of a checkout, imported from its file (its own folder importable beside it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def checkout_commit(directory: Path) -> str:
    """The commit of the checkout at `directory` (not of a repository it is copied into)."""
    try:
        out = subprocess.run(["git", "-C", str(directory), "rev-parse", "HEAD", "--show-toplevel"],
                             capture_output=True, text=True, check=True)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    commit, top = out.stdout.split()
    if Path(top).resolve() != directory.resolve():
        return "unknown (not a git checkout: a copy inside another repository)"
    return commit


def half(key: str) -> int:
    """The article benchmark's fixed halves: 0 when the key's first hex digit is even."""
    return int(key[0], 16) % 2


def load_articles(directory: Path, limit: int | None) -> Corpus | None:
    """The article-extraction benchmark (181 pages with a human-made article body each)."""
    if not (directory / "ground-truth.json").is_file() or not (directory / "html").is_dir():
        print(ARTICLES.missing(directory), flush=True)
        return None
    evaluate = load_module(directory / "evaluate.py", "article_benchmark_evaluate")
    truth: dict[str, dict[str, Any]] = json.loads((directory / "ground-truth.json").read_text())
    keys = sorted(truth)[:limit]
    pages = [
        Page(k, truth[k].get("url") or "", gzip.decompress((directory / "html" / f"{k}.html.gz")
                                                          .read_bytes()))
        for k in keys
    ]  # fmt: skip
    n_bootstrap = 100 if limit else BOOTSTRAP

    def score(texts: dict[str, str]) -> Scores:
        subset = {k: truth[k] for k in keys}
        random.seed(SEED)  # evaluate() draws its bootstrap from the random module
        m = evaluate.evaluate(subset, {k: {"articleBody": texts[k]} for k in keys}, n_bootstrap)
        tp_fp_fns = m["tp_fp_fns"]
        halves = []
        for side in (0, 1):
            part = [t for k, t in zip(keys, tp_fp_fns, strict=True) if half(k) == side]
            halves.append(evaluate.metrics_from_tp_fp_fns(part)["f1"] if part else float("nan"))
        per_page = {k: tp / (tp + (fp + fn) / 2) if tp else 0.0
                    for k, (tp, fp, fn) in zip(keys, tp_fp_fns, strict=True)}  # fmt: skip
        return Scores(m["precision"], m["recall"], m["f1"], m["f1_std"], m["accuracy"],
                      (halves[0], halves[1]), per_page)  # fmt: skip

    return Corpus(
        "article-extraction-benchmark",
        f"Zyte/Scrapinghub article-extraction benchmark, {len(pages)} pages, human-made "
        "article bodies",
        checkout_commit(directory),
        pages,
        score,
        stoplist("English"),
        f"its evaluate.py: 4-gram shingle P/R per page, means over pages, F1 of the means; "
        f"± = bootstrap std of F1 ({n_bootstrap} draws); accuracy = pages whose words are "
        "exactly the ground truth's",
    )


def load_trafilatura_eval(directory: Path, limit: int | None) -> Corpus | None:
    """trafilatura's own evaluation set: ~1,000 pages, each with snippets that must be in the
    text ("with") and snippets that must not ("without")."""
    here = directory / "tests" if (directory / "tests" / "evaldata.json").is_file() else directory
    if not (here / "evaldata.json").is_file() or not (here / "eval_common.py").is_file():
        print(TRAFILATURA.missing(directory), flush=True)
        return None
    common = load_module(here / "eval_common.py", "trafilatura_eval_common")
    evaldata: dict[str, dict[str, Any]] = common.load_evaldata(str(here))
    common.validate(evaldata)
    keys = sorted(evaldata)[:limit]
    docs = common.read_corpus(str(here), {k: evaldata[k] for k in keys})
    # a few keys are names ("hard::site-topic.html"), not URLs: those pages get a made-up one
    pages = [
        Page(k, k if k.startswith(("http://", "https://")) else f"http://eval.test/{k}", docs[k][1])
        for k in keys
    ]

    def score(texts: dict[str, str]) -> Scores:
        counts = [common.count_item(evaldata[k], texts[k]) for k in keys]
        matrix = common.ConfusionMatrix()
        for c in counts:
            matrix.add(c)
        precision, recall, accuracy, f1 = matrix.scores()
        rng = random.Random(SEED)
        draws = []
        for _ in range(100 if limit else BOOTSTRAP):
            tp = fp = fn = 0
            for i in rng.choices(range(len(counts)), k=len(counts)):
                tp, fp, fn = tp + counts[i][0], fp + counts[i][1], fn + counts[i][2]
            draws.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
        mean = sum(draws) / len(draws)
        std = (sum((d - mean) ** 2 for d in draws) / (len(draws) - 1)) ** 0.5
        return Scores(precision, recall, f1, std, accuracy)

    return Corpus(
        "trafilatura-eval",
        f"trafilatura's own evaluation set (its home ground: the set its extractor is tuned "
        f"and gated on), {len(pages)} pages in many languages",
        checkout_commit(directory),
        pages,
        score,
        _all_stoplists(),
        "its eval_common.py: per page, each 'with' snippet found in the text (whitespace "
        "normalized) is a TP, missed a FN; each 'without' snippet found a FP, absent a TN; "
        "counts summed over pages; ± = bootstrap std of F1 over pages (ours, not theirs)",
    )


def stoplist(language: str) -> frozenset[str]:
    """jusText's stopwords of `language` (none without jusText, which is then left out: the
    tests run with the dev extra, the benchmark with the bench one)."""
    try:
        import justext  # type: ignore[import-untyped]
    except ImportError:
        return frozenset()
    return frozenset(justext.get_stoplist(language))


def _all_stoplists() -> frozenset[str]:
    try:
        import justext
    except ImportError:
        return frozenset()
    return frozenset(w for lang in justext.get_stoplists() for w in justext.get_stoplist(lang))


# --- the extractors ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Extractor:
    """`run` gives a page's text, or (text, seconds) when it times a part of its work itself."""

    name: str
    version: str
    run: Callable[[Page], str | tuple[str, float]]


def _ours_version() -> str:
    """The commit of the extractor's code, '+wip' when its files differ from that commit."""
    git = ["git", "-C", str(REPO)]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
        status = [*git, "status", "--porcelain", "--", "crawler/parse"]
        dirty = subprocess.run(status, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + ("+wip" if dirty else "")


def _ours(page: Page) -> str:
    result = page_text(page.body, page.url, "text/html")
    return result.text if result is not None else ""


TREE = "ours, on the crawl's tree"
"""Ours, timing the extraction only: a crawl has parsed the page already (for its links), so
this is what `--text` adds to a page; sniffing, decoding, defusing and lexbor's parse stay out."""


def _ours_on_tree(page: Page) -> tuple[str, float]:
    prepared = prepare(page.body, page.url, "text/html")
    tree = parse_tree(prepared[1], page.url) if prepared is not None else None
    if tree is None:
        return "", 0.0
    started = time.perf_counter()
    text = extract(tree, page.url).text
    return text, time.perf_counter() - started


def extractors(stoplist: frozenset[str], names: Sequence[str] | None = None) -> list[Extractor]:
    """Ours and every peer that is installed (a missing one is named and left out)."""
    ours = _ours_version()
    made = [Extractor("ours", ours, _ours), Extractor(TREE, ours, _ours_on_tree)]
    for name, dist, build in (
        ("trafilatura", "trafilatura", _trafilatura),
        ("trafilatura fast", "trafilatura", lambda _: _trafilatura(_, fast=True)),
        ("readability-lxml", "readability-lxml", _readability),
        ("jusText", "jusText", _justext),
    ):
        if names and name not in names:
            continue
        try:
            made.append(Extractor(name, version(dist), build(stoplist)))
        except (ImportError, PackageNotFoundError) as exc:
            print(f"{name}: left out, not installed ({exc}); pip install -e '.[bench]'")
    return [e for e in made if not names or e.name in names]


def _trafilatura(_: frozenset[str], *, fast: bool = False) -> Callable[[Page], str]:
    from trafilatura import extract
    from trafilatura.utils import decode_file

    def run(page: Page) -> str:
        return extract(decode_file(page.body), include_comments=False, fast=fast) or ""

    return run


def _readability(_: frozenset[str]) -> Callable[[Page], str]:
    import html_text
    from readability import Document  # type: ignore[import-untyped]
    from trafilatura.utils import decode_file

    def run(page: Page) -> str:
        summary = Document(decode_file(page.body)).summary(html_partial=True)
        return str(html_text.extract_text(summary))  # type: ignore[attr-defined]

    return run


def _justext(stoplist: frozenset[str]) -> Callable[[Page], str]:
    import justext
    from trafilatura.utils import decode_file

    def run(page: Page) -> str:
        paragraphs = justext.justext(
            decode_file(page.body), stoplist, 50, 200, 0.1, 0.2, 0.2, 200, True
        )
        return " ".join(p.text for p in paragraphs if not p.is_boilerplate)

    return run
