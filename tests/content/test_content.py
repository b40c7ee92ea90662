"""Content dedup (crawler.content): normalization, fingerprints, the exact+near index, its
persistence in the crawl state, and the engine's use of it (fields, counts, follow_duplicates)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from aiohttp import web

from crawler.config.load import Config, config_from_mapping
from crawler.content import ContentIndex, Fingerprint, NearDuplicateIndex, fingerprint, hamming
from crawler.content.fingerprint import normalize
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError
from crawler.parse.markup import parse_markup
from crawler.state.crawlstate import CrawlState
from tests.support.content import (
    ORIG,
    article,
    banner,
    crawl_site,
    flip,
    page,
    site_handler,
)
from tests.support.server import serve


def fp_of(html: bytes) -> Fingerprint:
    content = parse_markup(html, "http://a.test/", "text/html", content=True).content
    assert content is not None
    return fingerprint(content)


# -- text and normalization ----------------------------------------------------------------


def test_visible_text_leaves_out_boilerplate() -> None:
    html = page(
        "<p>Real <b>content</b> here.</p><script>var x = 'script text';</script>"
        "<style>p { color: red }</style><aside>related</aside>"
        "<div role='navigation'>sidebar</div><template>tpl</template>",
    )
    content = parse_markup(html, "http://a.test/", "text/html", content=True).content
    assert content is not None
    words = content.split()
    assert words == ["Real", "content", "here."]


def test_one_text_pass_serves_focus_and_dedup() -> None:
    html = page(
        "<p>Main words.</p><svg><text>svg label</text></svg><aside>aside</aside>"
        "<ul role='Navigation menu'><li>toc</li></ul>",
        banner="<p>Banner words.</p>",
    )
    both = parse_markup(html, "http://a.test/", "text/html", text=True, content=True)
    alone = parse_markup(html, "http://a.test/", "text/html", content=True)
    assert both.text is not None and both.content is not None
    assert both.content.split() == ["Main", "words."] and alone.content == both.content
    assert both.text[1] == "Main words."  # focus reads the main content too (issue 33)
    assert both.text[0] == "Site" and both.hrefs == alone.hrefs
    no_main = page("<p>Main words.</p>", main=False)  # no main content marked: the body's text
    alone = parse_markup(no_main, "http://a.test/", "text/html", content=True)
    both = parse_markup(no_main, "http://a.test/", "text/html", text=True, content=True)
    assert alone.content is not None and alone.content.split() == ["Main", "words."]
    assert both.content == alone.content
    assert parse_markup(html, "http://a.test/", "text/html").content is None  # unless asked


def test_markup_noise_and_whitespace_keep_the_content_hash() -> None:
    rng = random.Random(1)
    body = article(rng, 400)
    a = fp_of(page(body))
    noisy = (
        body.replace("<p>", "\n   <p class='x' data-session='8f3a2c'><!-- c -->")
        .replace(" ", "  \n\t ", 50)
        .replace("</p>", "</p>\n\n<span></span>")
    )
    b = fp_of(page(noisy, head="<script>var sid = 'abc';</script><meta name=x content=y>"))
    assert b == a
    changed = fp_of(page(body.replace("<p>", "<p>different ", 1)))
    assert changed.content_hash != a.content_hash


def test_normalization_spaces_and_ascii_case() -> None:
    assert normalize("Full\u00a0Width\tLINE") == b"full width\tline"
    assert normalize("Ｆｕｌｌ ÉTÉ") == "Ｆｕｌｌ ÉtÉ".encode()  # no NFKC, ASCII case only
    assert fingerprint("Hello   World") == fingerprint("hello world")
    assert fingerprint("hello world").content_hash != fingerprint("hello word").content_hash
    assert fingerprint("").simhash == 0


def test_a_banner_above_the_main_content_is_not_text() -> None:
    rng = random.Random(3)
    for i in range(20):
        body = article(rng, 300)
        assert fp_of(page(body, banner=banner(rng, i))) == fp_of(page(body))


def test_dates_times_and_session_ids_do_not_move_the_simhash() -> None:
    rng = random.Random(5)
    for i in range(50):
        body = article(rng, rng.randint(50, 500))
        stamp = f"<p>Updated 2026-11-{i % 28 + 1} 10:{i:02d} session {rng.getrandbits(64):x}</p>"
        other = f"<p>Updated 2025-01-{i % 28 + 2} 09:{i:02d} session {rng.getrandbits(64):x}</p>"
        a, b = fp_of(page(stamp + body)), fp_of(page(other + body))
        assert a.content_hash != b.content_hash
        assert a.simhash == b.simhash


@pytest.mark.slow
def test_simhash_of_a_banner_in_the_content_stays_within_3_bits_on_long_pages() -> None:
    # The distance grows with the share of shingles a banner changes: ~10 shingles in a page
    # of >= 3,000 words (the docs benchmark measures real pages, short ones too).
    rng = random.Random(7)
    distances = []
    for i in range(200):
        body = article(rng, rng.randint(3000, 6000))
        mirror = fp_of(page(body, banner=banner(rng, i), main=False))
        distances.append(hamming(fp_of(page(body, main=False)).simhash, mirror.simhash))
    within = sum(d <= 3 for d in distances) / len(distances)
    assert within >= 0.9, sorted(distances)[-10:]


def test_distinct_pages_sharing_navigation_are_far_apart() -> None:
    rng = random.Random(11)
    sims = [fp_of(page(article(rng, rng.randint(150, 2000)))).simhash for _ in range(200)]
    close = [(i, j) for i in range(len(sims)) for j in range(i) if hamming(sims[i], sims[j]) <= 3]
    assert close == []


# -- the index -----------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("d", [0, 1, 2, 3, 4])
def test_near_index_finds_exactly_the_simhashes_within_k(k: int, d: int) -> None:
    rng = random.Random(100 * k + d)
    index = NearDuplicateIndex(k)
    bases = [rng.getrandbits(64) for _ in range(500)]
    for s in bases:
        index.add(s)
    for doc, s in enumerate(bases):
        probe = flip(s, rng.sample(range(64), d))
        expected = doc if d <= k else None
        assert index.query(probe) == expected, (doc, d)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4])
def test_near_index_agrees_with_a_scan(k: int) -> None:
    # clustered simhashes (few bits apart, flips crowded in one block or spread): the index
    # must return what a linear scan returns, the earliest within k bits
    rng = random.Random(k)
    index = NearDuplicateIndex(k)
    sims: list[int] = []
    for _ in range(1500):
        if sims and rng.random() < 0.7:
            base = rng.choice(sims)
            lo = rng.choice([0, 8, 16, 40])
            where = range(lo, lo + 16) if rng.random() < 0.5 else range(64)
            bits = rng.sample(where, rng.randint(0, k + 2))
            s = flip(base, bits)
        else:
            s = rng.getrandbits(64)
        scan = next((i for i, t in enumerate(sims) if hamming(s, t) <= k), None)
        assert index.query(s) == scan
        index.add(s)
        sims.append(s)


def test_near_index_rejects_bad_distances() -> None:
    with pytest.raises(ValueError, match="distance"):
        NearDuplicateIndex(11)
    with pytest.raises(TypeError):
        NearDuplicateIndex(True)


def test_content_index_exact_near_and_self() -> None:
    index = ContentIndex(3)
    a = Fingerprint(b"A" * 16, 0x0123_4567_89AB_CDEF)
    assert index.check("http://a.test/1", a) == (None, None)
    assert index.check("http://b.test/1", a) == ("http://a.test/1", None)
    near = Fingerprint(b"B" * 16, flip(a.simhash, [1, 30, 63]))
    assert index.check("http://b.test/2", near) == (None, "http://a.test/1")
    far = Fingerprint(b"C" * 16, flip(a.simhash, [1, 2, 30, 63]))
    assert index.check("http://c.test/", far) == (None, "http://b.test/2")  # 1 bit from it
    # fetched again after a crash: its own record is not a duplicate; an earlier near one is
    assert index.check("http://a.test/1", a) == (None, None)
    assert index.check("http://b.test/2", near) == (None, "http://a.test/1")
    assert len(index) == 3
    assert index.url(1) == "http://b.test/2"


def test_pages_with_no_word_to_fingerprint_are_no_near_duplicates() -> None:
    # a page of numbers and dates only keeps no word: simhash 0 for all such pages, which says
    # nothing of their likeness; only their exact content hashes are compared
    one, two = fingerprint("2026-11-23 12:00 4,096 17.5"), fingerprint("1999-01-01 3 1.2.3")
    assert one.simhash == two.simhash == 0 and one.content_hash != two.content_hash
    index = ContentIndex(3)
    assert index.check("http://a.test/1", one) == (None, None)
    assert index.check("http://a.test/2", two) == (None, None)
    assert index.check("http://a.test/3", one) == ("http://a.test/1", None)  # exact still


def test_pages_alike_but_for_numbers_do_not_crowd_a_bucket() -> None:
    # a calendar's months, a price list: distinct contents, one simhash (numbers are no
    # features). Each is a near duplicate of the first, and a query stays a few popcounts
    # (filing every one made each query walk all of them: 20,000 such pages took 157 s)
    index = ContentIndex(3)
    sim = 0x0123_4567_89AB_CDEF
    rng = random.Random(7)
    for i in range(3000):
        match = index.check(f"http://cal.test/{i}", Fingerprint(rng.randbytes(16), sim))
        assert match == (None, None if i == 0 else "http://cal.test/0")
    before = index.near.candidates
    assert index.check("http://cal.test/x", Fingerprint(rng.randbytes(16), flip(sim, [5])))[1] == (
        "http://cal.test/0"
    )
    assert index.near.candidates - before <= 4  # one record a table
    zero = [index.check(f"http://n.test/{i}", Fingerprint(rng.randbytes(16), 0)) for i in range(9)]
    assert zero == [(None, None)] * 9  # simhash 0: no near duplicate, filed once
    assert len(index) == 3000 + 1 + 9


def test_content_index_bytes_per_page_are_bounded() -> None:
    index = ContentIndex(3)
    empty = index.nbytes
    rng = random.Random(3)
    n = 20_000
    for i in range(n):
        index.check(f"http://a.test/p{i:06d}", Fingerprint(rng.randbytes(16), rng.getrandbits(64)))
    per_page = (index.nbytes - empty) / n
    url = len("http://a.test/p000000")
    # simhash 8 + 4 near chains x 4 + exact chain 4 + hash 16 + URL end 8 + the URL; arrays
    # grow by over-allocation (up to ~12%)
    assert 52 + url <= per_page <= 1.15 * (52 + url)


def test_state_keeps_the_index_across_a_resume(tmp_path: Path) -> None:
    settings = {"x": 1}
    state = CrawlState.open(tmp_path / "s", settings)
    index = ContentIndex(3, store=state.add_content)
    rng = random.Random(5)
    fps = [Fingerprint(rng.randbytes(16), rng.getrandbits(64)) for _ in range(50)]
    fps.append(Fingerprint(b"z" * 16, (1 << 64) - 1))  # the top bit: stored signed in SQLite
    for i, fp in enumerate(fps):
        index.check(f"http://a.test/{i}", fp)
    state.completed("http://a.test/none")  # commits (as each completion does)
    state.abandon()
    again = CrawlState.open(tmp_path / "s", settings)
    rows = list(again.content())
    assert rows == [(fp.simhash, fp.content_hash, f"http://a.test/{i}") for i, fp in enumerate(fps)]
    restored = ContentIndex(3)
    assert restored.load(rows) == len(fps)
    assert restored.check("http://b.test/", fps[7]) == ("http://a.test/7", None)
    near = Fingerprint(b"n" * 16, flip(fps[9].simhash, [0, 17, 40]))
    assert restored.check("http://b.test/n", near) == (None, "http://a.test/9")
    again.abandon()


# -- end to end ----------------------------------------------------------------------------


async def test_fields_and_counts_end_to_end() -> None:
    crawler, results = await crawl_site(follow=True)
    assert set(results) == {f"/{s}/{n}" for s in ("orig", "mirror") for n in ORIG} | {
        "/static/x.txt"
    }
    text = results["/static/x.txt"]
    assert (text.content_hash, text.simhash, text.duplicate_of) == (None, None, None)
    assert text.near_duplicate_of is None
    for name in ORIG:
        orig, mirror = results[f"/orig/{name}"], results[f"/mirror/{name}"]
        assert orig.duplicate_of is None and orig.near_duplicate_of is None
        assert orig.content_hash is not None and len(orig.content_hash) == 32
        assert orig.simhash is not None and len(orig.simhash) == 16
        assert mirror.simhash == orig.simhash
        if name:  # a timestamp in the text
            assert mirror.content_hash != orig.content_hash
            assert (mirror.duplicate_of, mirror.near_duplicate_of) == (None, orig.url)
        else:
            assert mirror.content_hash == orig.content_hash
            assert (mirror.duplicate_of, mirror.near_duplicate_of) == (orig.url, None)
        assert mirror.to_dict()["simhash"] == orig.simhash
    stats = crawler.stats_dict()
    assert (stats["exact_duplicates"], stats["near_duplicates"]) == (1, len(ORIG) - 1)
    assert stats["content_index"]["pages"] == 2 * len(ORIG) - 1


async def test_duplicate_pages_links_not_followed() -> None:
    # concurrency 1: /orig/ first, then the mirror's entry point, a duplicate of it
    _, results = await crawl_site(follow=False)
    assert set(results) == {f"/orig/{n}" for n in ORIG} | {"/mirror/", "/static/x.txt"}
    entry = results["/mirror/"]
    assert entry.duplicate_of == results["/orig/"].url
    assert entry.links == 6 and entry.new_links == 0  # navigation and content links


async def test_resumed_crawl_still_knows_earlier_pages(tmp_path: Path) -> None:
    # fetch order (concurrency 1): /orig/, /mirror/, /orig/a, /orig/b, /orig/c, /mirror/a...
    async with serve(site_handler()) as port:
        _, first = await crawl_site(port, tmp_path, follow=True, stop_after=4)
        assert set(first) == {"/orig/", "/mirror/", "/orig/a", "/orig/b"}
        crawler, second = await crawl_site(port, tmp_path, follow=True)
    assert {"/mirror/a", "/mirror/b", "/mirror/c"} <= set(second)
    for name in ("a", "b"):  # their originals were fetched by the first run
        assert second[f"/mirror/{name}"].near_duplicate_of == first[f"/orig/{name}"].url
    stats = crawler.stats  # counted across both runs
    assert (stats.exact_duplicates, stats.near_duplicates) == (1, len(ORIG) - 1)


def test_dedup_config_is_checked() -> None:
    assert config_from_mapping({"dedup": {"near_distance": 0}}).dedup.near_distance == 0
    with pytest.raises(ConfigError, match=r"near_distance: must be in 0\.\.10"):
        config_from_mapping({"dedup": {"near_distance": 11}})


async def test_disabled_dedup_leaves_the_fields_null() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=page("<p>same text</p>"), content_type="text/html")

    async with serve(handler) as port:
        config = Config().override("fetch", resolve={"site.test": "127.0.0.1"})
        config = config.override("politeness", delay=0.0, ip_delay=0.0, respect_robots=False)
        config = config.override("dedup", enabled=False)
        seeds = [f"http://site.test:{port}/{n}" for n in ("x", "y")]
        async with Crawler(config) as crawler:
            results = [r async for r in crawler.crawl(seeds)]
    assert len(results) == 5  # the seeds and their navigation links (a, b, and . = /)
    for r in results:
        assert (r.content_hash, r.duplicate_of, r.simhash, r.near_duplicate_of) == (None,) * 4
        line = json.loads(r.to_json())  # the JSONL fields are there, null
        assert [line[k] for k in ("content_hash", "duplicate_of", "simhash")] == [None] * 3
    assert crawler.stats.exact_duplicates == 0
