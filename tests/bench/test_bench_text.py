"""The page-text benchmark's plumbing (bench/bench_text.py, bench/text_corpora.py), on a tiny
stand-in for the article benchmark's checkout: its own evaluate.py is what scores, the texts
reach it by page key, the fixed halves split by the key's first hex digit, a missing data set
says how to get it, a crashing extractor counts as a miss; and the doc sites' "share kept"."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from bench.bench_text import run_all, share, visible
from bench.text_corpora import ARTICLES, Extractor, Page, load_articles

# a stand-in for the benchmark's evaluate.py: a page is right when its text is the truth
FAKE_EVALUATE = """
def metrics_from_tp_fp_fns(tp_fp_fns):
    tp = sum(t for t, _, _ in tp_fp_fns)
    return {"f1": tp / len(tp_fp_fns), "precision": 0.5, "recall": 0.25}

def evaluate(ground_truth, prediction, n_bootstrap):
    if ground_truth.keys() != prediction.keys():
        raise ValueError("prediction keys do not match ground truth")
    tp_fp_fns = [
        (1.0, 0.0, 0.0) if prediction[k]["articleBody"] == v["articleBody"] else (0.0, 0.5, 0.5)
        for k, v in ground_truth.items()
    ]
    return {**metrics_from_tp_fp_fns(tp_fp_fns), "f1_std": 0.01, "accuracy": 0.125,
            "tp_fp_fns": tp_fp_fns}
"""


def checkout(root: Path) -> Path:
    truth = {
        "0a": {"articleBody": "even page", "url": "http://a.test/0"},
        "1b": {"articleBody": "odd page", "url": "http://a.test/1"},
        "2c": {"articleBody": "another even", "url": "http://a.test/2"},
    }
    (root / "html").mkdir(parents=True)
    for key, item in truth.items():
        body = f"<html><body><p>{item['articleBody']}</p></body></html>".encode()
        (root / "html" / f"{key}.html.gz").write_bytes(gzip.compress(body))
    (root / "ground-truth.json").write_text(json.dumps(truth))
    (root / "evaluate.py").write_text(FAKE_EVALUATE)
    return root


def test_the_checkouts_own_metric_scores_texts_by_page_key(tmp_path: Path) -> None:
    corpus = load_articles(checkout(tmp_path / "aeb"), None)
    assert corpus is not None
    assert [p.key for p in corpus.pages] == ["0a", "1b", "2c"]
    assert corpus.pages[1].url == "http://a.test/1"
    assert corpus.pages[1].body.startswith(b"<html>")
    scores = corpus.score({"0a": "even page", "1b": "wrong", "2c": "another even"})
    assert (scores.precision, scores.recall, scores.f1_std, scores.accuracy) == (
        0.5, 0.25, 0.01, 0.125,
    )  # fmt: skip
    assert scores.f1 == pytest.approx(2 / 3)
    assert scores.halves == (1.0, 0.0)  # even keys 0a, 2c right; odd 1b wrong
    assert scores.per_page == {"0a": 1.0, "1b": 0.0, "2c": 1.0}


def test_a_quick_run_scores_its_pages_only(tmp_path: Path) -> None:
    corpus = load_articles(checkout(tmp_path / "aeb"), 2)
    assert corpus is not None
    assert [p.key for p in corpus.pages] == ["0a", "1b"]
    assert corpus.score({"0a": "even page", "1b": "odd page"}).f1 == 1.0


def test_a_missing_data_set_says_how_to_get_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_articles(tmp_path / "absent", None) is None
    said = capsys.readouterr().out
    assert f"git clone {ARTICLES.repo} " in said
    assert f"checkout {ARTICLES.commit}" in said
    assert "--dataset DIR" in said and "TEXT_BENCH_DATA" in said


def test_a_crash_is_a_miss_and_is_named() -> None:
    def crash(page: Page) -> str:
        raise RuntimeError("boom")

    pages = [Page("k1", "http://a.test/", b"<p>x</p>"), Page("k2", "http://a.test/2", b"")]
    ok, bad = run_all(pages, [Extractor("ok", "1", lambda p: p.key), Extractor("bad", "1", crash)])
    assert ok.texts == {"k1": "k1", "k2": "k2"} and ok.errors == 0
    assert bad.texts == {"k1": "", "k2": ""} and bad.errors == 2
    assert bad.first_error == "k1: RuntimeError: boom"
    assert set(bad.seconds) == {"k1", "k2"}


def test_visible_text_and_the_share_kept() -> None:
    body = (
        b"<html><head><title>T</title><style>p{}</style></head><body><nav>Home About</nav>"
        b"<script>var x</script><noscript>enable js</noscript><template>tpl</template>"
        b"<p>One two two three</p></body></html>"
    )
    seen = Counter(visible(body).lower().split())
    assert seen == Counter({"home": 1, "about": 1, "one": 1, "two": 2, "three": 1})
    assert share("one two three", seen) == pytest.approx(3 / 6)
    assert share("Two two two TWO one three home about", seen) == 1.0  # no more than seen
