"""The built-in topic scorer: text handling, page relevance (BM25-style), link priority."""

from __future__ import annotations

import itertools
import random

import pytest

from crawler.focus.relevance import DEFAULT_THRESHOLD, TopicScorer
from crawler.focus.relevance.learn import LinkLearner
from crawler.focus.relevance.text import Stems, url_words, words
from crawler.focus.scoring import Link, PageText

FILLER = "the quick brown fox jumps over the lazy dog while nothing else happens here. "


def page(body: str, *, title: str = "", headings: str = "", url: str = "http://t/p") -> PageText:
    return PageText(url=url, title=title, headings=headings, body=body)


def link(
    url: str = "http://t/a.html",
    *,
    anchor: str = "",
    context: str = "",
    depth: int = 1,
    parent_url: str = "http://t/",
    parent_relevance: float | None = None,
) -> Link:
    return Link(url, url, anchor, "", context, depth, parent_url, None, parent_relevance)


def test_words_are_case_folded_and_split_on_punctuation() -> None:
    assert words("Write-Ahead LOG, Straße_x") == ["write", "ahead", "log", "strasse", "x"]


def test_stemming_conflates_inflections_and_case() -> None:
    stems = Stems()
    assert stems.stem("Replication") == stems.stem("replications") == stems.stem("REPLICATION")
    assert stems.stem("standby") == stems.stem("standbys")
    assert stems.stem("tables") == stems.stem("table")
    assert stems.stem("table") != stems.stem("tablet")


def test_stem_cache_is_bounded() -> None:
    stems = Stems(capacity=10)
    for i in range(100):
        stems.stem(f"word{i}s")
    assert len(stems._cache) <= 10
    assert stems.stem("loops") == "loop"


def test_url_words_split_path_punctuation_and_camel_case() -> None:
    got = url_words("http://Host.example/library/asyncio-eventLoop.html?q=getAddrInfo#x")
    assert got == ["library", "asyncio", "event", "loop", "html", "q", "get", "addr", "info", "x"]
    assert url_words("http://host.example") == []


def test_a_page_about_the_topic_scores_above_one_that_is_not() -> None:
    scorer = TopicScorer(["replication standby"])
    on = scorer.page(page(FILLER * 5 + "A standby server keeps up by streaming replication. " * 3))
    off = scorer.page(page(FILLER * 6, url="http://t/q"))
    assert on >= scorer.threshold > off
    assert off == 0.0
    assert 0.0 <= on <= 1.0


def test_inflected_and_upper_case_forms_count() -> None:
    scorer = TopicScorer(["Replication STANDBY"])
    assert scorer.page(page(FILLER + "REPLICATED standbys, replicas of STANDBY replication")) > 0.5


def test_repeating_a_word_has_a_diminishing_effect() -> None:
    scorer = TopicScorer(["virtual table"])
    scores = [
        TopicScorer(["virtual table"]).page(page(FILLER * 5 + "virtual table. " * n))
        for n in (1, 2, 4, 8, 16, 32)
    ]
    gains = [b - a for a, b in itertools.pairwise(scores)]
    assert all(g > 0 for g in gains)  # more is better...
    assert all(b < a for a, b in itertools.pairwise(gains))  # ...by less and less
    assert scores[-1] < 1.0
    assert scorer.terms == ("virtual", "tabl")


def test_longer_pages_need_more_occurrences() -> None:
    text = "virtual table. " * 3
    short = TopicScorer(["virtual table"]).page(page(FILLER * 2 + text))
    long = TopicScorer(["virtual table"]).page(page(FILLER * 200 + text))
    assert short > long


def test_title_and_headings_weigh_more_than_body() -> None:
    body = FILLER * 5 + "foreign key"
    plain = TopicScorer(["foreign key"]).page(page(body))
    headed = TopicScorer(["foreign key"]).page(page(body, headings="Foreign keys"))
    titled = TopicScorer(["foreign key"]).page(page(body, title="Foreign keys"))
    assert plain < headed < titled


def test_all_terms_beat_one_term_repeated() -> None:
    both = TopicScorer(["foreign key"]).page(page(FILLER * 5 + "foreign key " * 3))
    one = TopicScorer(["foreign key"]).page(page(FILLER * 5 + "foreign " * 6))
    assert both > one


def test_idf_learned_from_the_crawl_downweights_a_common_term() -> None:
    scorer = TopicScorer(["virtual table"])
    for i in range(50):  # a site where every page says "table"
        scorer.page(page(FILLER * 3 + "table table", url=f"http://t/{i}"))
    virtual = scorer.page(page(FILLER * 5 + "virtual " * 4 + "table", url="http://t/v"))
    table = scorer.page(page(FILLER * 5 + "virtual " + "table " * 4, url="http://t/t"))
    assert virtual > table
    assert scorer.pages == 52


def test_threshold_default_and_meaning() -> None:
    scorer = TopicScorer(["regular expression"])
    assert scorer.threshold == DEFAULT_THRESHOLD == 0.5
    mention = scorer.page(page(FILLER * 40 + "a regular expression"))
    about = scorer.page(page(FILLER * 40 + "regular expression syntax. " * 4))
    assert mention < scorer.threshold <= about
    assert TopicScorer(["x"], threshold=0.8).threshold == 0.8


def test_relevant_anchor_beats_irrelevant_anchor() -> None:
    scorer = TopicScorer(["write-ahead log"])
    good = scorer.link(link("http://t/a.html", anchor="Write-Ahead Logging"))
    bad = scorer.link(link("http://t/b.html", anchor="Download"))
    assert good > bad


def test_url_words_and_context_raise_priority() -> None:
    scorer = TopicScorer(["write-ahead log"])
    plain = scorer.link(link("http://t/x.html", anchor="next"))
    by_url = scorer.link(link("http://t/write_ahead-log.html", anchor="next"))
    by_context = scorer.link(link("http://t/y.html", anchor="next", context="the write-ahead log"))
    assert by_url > plain
    assert by_context > plain


def test_parent_relevance_raises_priority() -> None:
    scorer = TopicScorer(["write-ahead log"])
    low = scorer.link(link("http://t/a.html", parent_url="http://t/p1", parent_relevance=0.0))
    high = scorer.link(link("http://t/b.html", parent_url="http://t/p2", parent_relevance=0.9))
    assert high > low


def test_a_relevant_page_lends_its_relevance_to_its_links() -> None:
    scorer = TopicScorer(["write-ahead log"])
    scorer.page(page("write-ahead log " * 5, url="http://t/wal"))
    scorer.page(page(FILLER, url="http://t/other"))
    from_wal = scorer.link(link("http://t/a.html", parent_url="http://t/wal"))
    from_other = scorer.link(link("http://t/b.html", parent_url="http://t/other"))
    assert from_wal > from_other


def test_potential_tunnels_through_an_irrelevant_page_with_decay() -> None:
    scorer = TopicScorer(["write-ahead log"])
    scorer.page(page("write-ahead log " * 5, url="http://t/wal"))
    scorer.link(link("http://t/mid", parent_url="http://t/wal"))
    scorer.link(link("http://t/cold", parent_url="http://t/elsewhere"))
    scorer.page(page(FILLER, url="http://t/mid"))  # not relevant, but linked from a relevant page
    scorer.page(page(FILLER, url="http://t/cold"))
    child = scorer.link(link("http://t/c1", parent_url="http://t/mid"))
    cold = scorer.link(link("http://t/c2", parent_url="http://t/cold"))
    direct = scorer.link(link("http://t/c3", parent_url="http://t/wal"))
    assert direct > child > cold


def test_deeper_links_go_later_among_equals() -> None:
    scorer = TopicScorer(["foreign key"])
    assert scorer.link(link("http://t/a", depth=1)) > scorer.link(link("http://t/b", depth=5))
    # a URL is as good as its best link: a deeper link to it found later changes nothing
    assert scorer.link(link("http://t/a", depth=5)) == scorer.link(link("http://t/a", depth=1))


def test_remembered_potentials_are_bounded() -> None:
    scorer = TopicScorer(["foreign key"], memory=20)
    for i in range(200):
        scorer.page(page("foreign key " * 3, url=f"http://t/{i}"))
        scorer.link(link(f"http://t/{i}/a", parent_url=f"http://t/{i}"))
    assert len(scorer._potential) <= 20
    assert len(scorer._inherited) <= 20


@pytest.mark.parametrize("keywords", [[], [""], ["   "], ["--", "!"]])
def test_empty_or_blank_keywords_are_refused(keywords: list[str]) -> None:
    with pytest.raises(ValueError, match="no words"):
        TopicScorer(keywords)


@pytest.mark.parametrize("threshold", [-0.1, 1.5])
def test_threshold_out_of_range_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        TopicScorer(["x"], threshold=threshold)


def test_stop_words_are_dropped_unless_nothing_else_is_left() -> None:
    assert TopicScorer(["the write-ahead log"]).terms == ("write", "ahead", "log")
    assert TopicScorer(["the"]).terms == ("the",)
    assert TopicScorer("foreign keys").terms == ("foreign", "key")


def test_learner_is_neutral_before_it_learns() -> None:
    learner = LinkLearner()
    assert learner.expect("http://t/a/x.html") == learner.expect("http://t/b/y.html")
    assert learner.expect("http://t/a/x.html") == pytest.approx(learner.mean)


def test_learner_ranks_urls_like_relevant_pages_higher() -> None:
    learner = LinkLearner()
    for i in range(10):
        for directory, relevance in (("good", 0.9), ("bad", 0.0)):
            url = f"http://t/{directory}/page{i}.html"
            learner.expect(url)
            learner.observe(url, relevance)
    good, bad, other = (
        learner.expect(u) for u in ("http://t/good/new.html", "http://t/bad/new.html", "http://t/x")
    )
    assert good > other > bad
    assert learner.observed == 20


def test_learner_expected_many_equals_expected_one_by_one() -> None:
    # one re-scoring round computes each feature's lift once: the same numbers, bit for bit
    rng = random.Random(11)
    learner = LinkLearner()
    urls = [f"http://t/d{rng.randrange(8)}/w{rng.randrange(30)}-x{i}.html" for i in range(400)]
    for url in urls[:300]:
        learner.expect(url, anchor=[f"a{rng.randrange(12)}"])
    for url in urls[:200]:
        learner.observe(url, rng.random() ** 3)
    asked = [*urls[200:300], *urls[300:], "http://t/never"]
    assert learner.expected_many(asked) == [learner.expected(u) for u in asked]
    assert learner.expected_many(urls[300:]) == [None] * 100  # never scored: no features


def test_learner_learns_from_the_page_a_scored_url_redirected_to() -> None:
    learner = LinkLearner()
    learner.expect("http://t/good/old.html")
    learner.expect("http://t/other/kept.html")
    learner.moved("http://t/good/old.html", "http://t/good/new/")
    learner.moved("http://t/never-scored", "http://t/other/kept.html")  # keeps its own features
    learner.observe("http://t/good/old.html", 1.0)  # no longer waiting under its old URL
    assert learner.observed == 0
    learner.observe("http://t/good/new/", 1.0)
    learner.observe("http://t/other/kept.html", 0.0)
    assert learner.observed == 2


def test_learner_learns_only_from_urls_it_was_asked_about() -> None:
    learner = LinkLearner()
    learner.observe("http://t/never-scored.html", 1.0)
    assert learner.observed == 0


def test_learner_tables_are_bounded() -> None:
    learner = LinkLearner(memory=30)
    for i in range(300):
        url = f"http://t/d{i}/w{i}.html"
        learner.expect(url)
        if i % 2:
            learner.observe(url, 0.5)
    assert len(learner._pending) <= 30
    assert len(learner._stats) <= 30


def test_learned_rates_raise_the_priority_of_similar_links() -> None:
    scorer = TopicScorer(["foreign key"])
    for i in range(10):
        for directory, body in (("good", "foreign key " * 5), ("bad", FILLER)):
            url = f"http://t/{directory}/p{i}.html"
            scorer.link(link(url, parent_url="http://t/"))
            scorer.page(page(body, url=url))
    good = scorer.link(link("http://t/good/new.html", parent_url="http://t/"))
    bad = scorer.link(link("http://t/bad/new.html", parent_url="http://t/"))
    assert good > bad


def test_a_relevant_hub_lends_less_to_each_link_past_its_first_ones() -> None:
    scorer = TopicScorer(["foreign key"])
    scorer.page(page("foreign key " * 5, url="http://t/hub"))
    priorities = [
        scorer.link(link(f"http://t/{i}.html", parent_url="http://t/hub")) for i in range(40)
    ]
    assert priorities[0] == priorities[9]  # the first ones inherit the whole potential
    assert priorities[9] > priorities[20] > priorities[39]
    assert priorities[39] > scorer.link(link("http://t/x.html", parent_url="http://t/unknown"))


def test_learner_learns_from_anchor_words_too() -> None:
    learner = LinkLearner()
    for i in range(10):
        for word, relevance in (("stream", 0.9), ("licens", 0.0)):
            url = f"http://t/p{word}{i}.html"
            learner.expect(url, anchor={word})
            learner.observe(url, relevance)
    assert learner.expect("http://t/a.html", anchor={"stream"}) > learner.expect(
        "http://t/b.html", anchor={"licens"}
    )


def test_learner_needs_support_before_a_feature_counts() -> None:
    learner = LinkLearner()
    learner.expect("http://t/hooks/first.html")
    learner.observe("http://t/hooks/first.html", 0.9)
    # one rated page: its directory and words count for nothing yet
    assert learner.expect("http://t/hooks/second.html") == pytest.approx(learner.mean)
    learner.observe("http://t/hooks/second.html", 0.9)
    assert learner.expect("http://t/hooks/third.html") > learner.mean


def test_a_link_without_evidence_keeps_breadth_first_order() -> None:
    scorer = TopicScorer(["write-ahead log"])
    url = "http://t/c3ref/wal_write_log_hook.html"
    scorer.link(link(url, parent_url="http://t/"))
    scorer.page(page("write-ahead log " * 5, url=url))
    # a deeper link sharing a directory and URL words with that one relevant page, from a page
    # not rated, goes after a shallower link with no evidence at all
    sibling = scorer.link(link("http://t/c3ref/commit_hook.html", depth=2, parent_url="http://t/x"))
    shallow = scorer.link(link("http://t/about.html", depth=1, parent_url="http://t/y"))
    assert shallow > sibling


def test_supported_or_strong_evidence_still_beats_breadth_first_order() -> None:
    scorer = TopicScorer(["foreign key"])
    no_evidence = scorer.link(link("http://t/about.html", depth=1, parent_url="http://t/y"))
    assert scorer.link(link("http://t/deep.html", anchor="foreign keys", depth=4)) > no_evidence
    for i in range(10):
        for directory, body in (("fk", "foreign key " * 5), ("misc", FILLER)):
            url = f"http://t/{directory}/p{i}.html"
            scorer.link(link(url, parent_url="http://t/"))
            scorer.page(page(body, url=url))
    learned = scorer.link(link("http://t/fk/new.html", depth=2, parent_url="http://t/z"))
    assert learned > scorer.link(link("http://t/other.html", depth=1, parent_url="http://t/w"))
