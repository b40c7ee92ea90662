"""The vectorized fingerprint (crawler.content.fingerprint) against plain-Python references of
what its docstrings say, and the fingerprint version kept with the index in the crawl state."""

from __future__ import annotations

import hashlib
import random
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from crawler.content import ContentIndex, Fingerprint, fingerprint
from crawler.content.fingerprint import (
    VERSION,
    content_hash,
    hamming,
    normalize,
    shingle_hashes,
    simhash64,
    word_hashes,
)
from crawler.state.crawlstate import CrawlState
from crawler.state.db import FILENAME, StateError
from tests.support.content import crawl_site, site_handler
from tests.support.server import serve

MASK = (1 << 64) - 1
K1, K2 = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F

# letters, digits, every kind of whitespace and control, no-break space, Latin-1, CJK, emoji
ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:()[]-_'\"")
    + list("0123456789")
    + [" ", " ", " ", "\n", "\t", "\r", "\x0b", "\x0c", "\x00", "\x1f", "\xa0"]
    + list("éüßÉ¶’—…漢字😀\u2028")
)


def random_text(rng: random.Random, n: int) -> str:
    """Words of 1-50 characters (some longer than 16 or 32 bytes) between whitespace runs."""
    out = []
    for _ in range(n):
        out.append(
            "".join(
                rng.choices(ALPHABET[:62], k=rng.choice([1, 2, 3, 5, 8, 9, 16, 17, 30, 32, 33, 50]))
            )
        )
        out.append("".join(rng.choices(ALPHABET, k=rng.randint(1, 3))))
    return "".join(out)[rng.randint(0, 3) :]


def reference_words(normalized: bytes) -> list[int]:
    """The documented word hash, one word at a time: its length and first 16 bytes, plus for a
    longer word each further 16 bytes (the last ending the word) mixed with their place."""
    out = []
    for w in re.split(rb"[\x00-\x20]+", normalized):
        if not w or (re.search(rb"[0-9]", w) and not re.search(rb"[g-z]{2}", w)):
            continue  # a number, date, time or hexadecimal id, not a name
        head, tail = int.from_bytes(w[:8], "little"), int.from_bytes(w[8:16], "little")
        v = (((head * K1) & MASK) ^ len(w)) + tail * K2
        for place in range(1, (len(w) - 1) // 16 + 1):
            at = min(16 * place, len(w) - 16)
            low, high = (
                int.from_bytes(w[at : at + 8], "little"),
                int.from_bytes(w[at + 8 : at + 16], "little"),
            )
            v += splitmix(((((low * K2) & MASK) ^ high) + place) & MASK)
        v &= MASK
        out.append(v ^ (v >> 32))
    return out


def splitmix(x: int) -> int:
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def reference_simhash(values: list[int]) -> int:
    features = np.array([splitmix(v) for v in set(values)], dtype="<u8")
    bits = np.unpackbits(features.view(np.uint8), bitorder="little").reshape(-1, 64).sum(axis=0)
    return sum(1 << b for b in range(64) if 2 * int(bits[b]) > len(features))


def test_word_hashes_are_the_documented_hash_of_each_word() -> None:
    rng = random.Random(1)
    for _ in range(200):
        text = normalize(random_text(rng, rng.randint(0, 60)))
        assert word_hashes(text).tolist() == reference_words(text), text
    # a word's hash is the word's own: not its neighbours', nor its place in the text
    a, b = word_hashes(b"alpha"), word_hashes(b"  zz\talpha\n")
    assert a.tolist() == b[1:].tolist()
    # words with a digit are left out (numbers, dates, times, hex ids), names are not
    assert word_hashes(b"2026-11-22 12:00 3fa9c0e1 2.0.12 (ab12). 2026-11-23t06:59z v1").size == 0
    assert word_hashes(b"visitor14 utf8 sqlite3_open_v2 python3 x86_64").size == 4  # not x86_64


def test_names_with_digits_tell_pages_apart() -> None:
    """Version 3 left out every word with a digit: javadoc's "Uses of Class
    javax.lang.model.util.SimpleElementVisitor14" page and its 6, 7, 8, 9 siblings differ
    only in such names, and 126 of openjdk-17-doc's pages were near duplicates of a sibling."""

    def page(n: int) -> str:
        name = f"javax.lang.model.util.SimpleElementVisitor{n}"
        return (
            f"Uses of Class {name} Packages that use {name} Package Description Subclasses of "
            f"{name} in javax.lang.model.util Modifier and Type Class Description class "
            f"ElementKindVisitor{n} A visitor of program elements based on their kind."
        )

    assert hamming(fingerprint(page(14)).simhash, fingerprint(page(9)).simhash) > 3
    # a mirror's timestamp and session id still change nothing
    stamped = page(14) + " Last synchronized 2026-11-23 06:59:12 UTC (session 3fa9c0e1d2)."
    plain = page(14) + " Last synchronized UTC (session"
    assert fingerprint(stamped).simhash == fingerprint(plain).simhash


def test_long_words_that_share_their_start_and_length_are_distinct_words() -> None:
    """Version 2 hashed a word from its length and first 16 bytes: javadoc's qualified names
    (java.util.concurrent.atomic.AtomicInteger, ...AtomicBoolean) were one word, and 479 of
    openjdk-17-doc's "Uses of Class X: No usage of X" pages near duplicates of each other."""
    names = [b"java.util.concurrent.atomic.atomic" + n for n in (b"integer", b"boolean")]
    names += [b"javax.management.openmbean.invalidkeyexception"]
    names += [b"javax.management.remote.rmi.rmiserverimpl_stub"]  # same length and start
    names += [b"javax.swing.plaf.basic.basicscrollpaneui.hsbchangelistener"]  # and end
    names += [b"javax.swing.plaf.basic.basicscrollpaneui.vsbchangelistener"]
    assert len(set(word_hashes(b" ".join(names)).tolist())) == 6
    pages = [f"Uses of Class {n}\nNo usage of {n}" for n in ("java.nio.charset.UnsupportedCharset"
             "Exception", "java.nio.charset.IllegalCharsetNameException")]  # fmt: skip
    a, b = (fingerprint(page) for page in pages)
    assert bin(a.simhash ^ b.simhash).count("1") > 3  # was 0: a near duplicate


def test_shingles_and_simhash_match_a_reference() -> None:
    rng = random.Random(2)
    words = np.array([rng.getrandbits(64) for _ in range(500)], dtype=np.uint64)
    shingles = shingle_hashes(words)
    assert shingles.size == 498
    expected = [(((int(a) * K1 + int(b)) & MASK) * K1 + int(c)) & MASK for a, b, c in zip(
        words[:-2], words[1:-1], words[2:], strict=True)]  # fmt: skip
    assert shingles.tolist() == expected
    assert shingle_hashes(words[:2]).tolist() == words[:2].tolist()  # fewer words than 3
    # duplicates count once; a bit set in more than 65,535 features needs more than one pass
    # of the 16-bit lanes
    for n, repeats in ((1, 1), (7, 3), (1000, 2), (140_000, 1)):
        values = [rng.getrandbits(64) for _ in range(n)] * repeats
        rng.shuffle(values)
        assert simhash64(np.array(values, dtype=np.uint64)) == reference_simhash(values)
    assert simhash64(np.zeros(0, dtype=np.uint64)) == 0


def test_content_hash_is_blake2b_of_the_text_without_whitespace() -> None:
    rng = random.Random(3)
    for _ in range(300):
        text = random_text(rng, rng.randint(0, 40))
        words = re.sub(rb"[\x00-\x20]+", b"", normalize(text))
        digest = hashlib.blake2b(words, digest_size=16).digest()
        assert fingerprint(text).content_hash == digest == content_hash(normalize(text))


def test_fingerprint_of_the_same_words_is_the_same() -> None:
    rng = random.Random(4)
    letters = ALPHABET[:62] + list("éüß¶’漢😀")
    for _ in range(100):
        words = ["".join(rng.choices(letters, k=rng.randint(1, 20))) for _ in range(80)]
        spaced = "".join(w + rng.choice([" ", "\n  ", "\t", "\xa0", "\r\n"]) for w in words)
        assert fingerprint(" ".join(words)) == fingerprint(spaced)
        upper = " ".join(words).translate({c: c - 32 for c in range(ord("a"), ord("z") + 1)})
        assert fingerprint(upper) == fingerprint(" ".join(words))


# -- the version kept in the state ---------------------------------------------------------


def test_the_state_keeps_the_fingerprint_version(tmp_path: Path) -> None:
    state = CrawlState.open(tmp_path / "s", {"x": 1})
    index = ContentIndex(3, store=state.add_content)
    index.check("http://a.test/", Fingerprint(b"a" * 16, 5))
    state.completed("http://a.test/none")
    state.abandon()
    db = sqlite3.connect(tmp_path / "s" / FILENAME)
    meta = dict(db.execute("SELECT name, value FROM meta").fetchall())
    db.close()
    assert meta["content_fingerprint"] == str(VERSION)
    again = CrawlState.open(tmp_path / "s", {"x": 1})
    assert list(again.content()) == [(5, b"a" * 16, "http://a.test/")]
    again.abandon()


@pytest.mark.parametrize("mark", [None, "1", str(VERSION + 1)])
def test_an_index_of_another_fingerprint_version_is_refused(
    tmp_path: Path, mark: str | None
) -> None:
    state = CrawlState.open(tmp_path / "s", {"x": 1})
    state.add_content(5, b"a" * 16, "http://a.test/")
    state.completed("http://a.test/none")
    state.abandon()
    db = sqlite3.connect(tmp_path / "s" / FILENAME)
    with db:  # as a state written by another version: no mark (version 1), or another mark
        if mark is None:
            db.execute("DELETE FROM meta WHERE name = 'content_fingerprint'")
        else:
            db.execute("UPDATE meta SET value = ? WHERE name = 'content_fingerprint'", (mark,))
    db.close()
    again = CrawlState.open(tmp_path / "s", {"x": 1})
    with pytest.raises(StateError, match=f"version {mark or 1}, this crawler computes version"):
        list(again.content())
    again.abandon()


def test_an_empty_index_without_a_mark_is_taken(tmp_path: Path) -> None:
    # a crawl started with dedup off, resumed with it on: nothing to compare against
    state = CrawlState.open(tmp_path / "s", {"x": 1})
    state.completed("http://a.test/none")
    state.abandon()
    again = CrawlState.open(tmp_path / "s", {"x": 1})
    assert list(again.content()) == []
    again.add_content(7, b"b" * 16, "http://b.test/")
    again.completed("http://b.test/none")
    again.abandon()
    third = CrawlState.open(tmp_path / "s", {"x": 1})
    assert list(third.content()) == [(7, b"b" * 16, "http://b.test/")]
    third.abandon()


async def test_resuming_a_crawl_with_an_older_index_is_refused(tmp_path: Path) -> None:
    async with serve(site_handler()) as port:
        await crawl_site(port, tmp_path, follow=True, stop_after=3)
        db = sqlite3.connect(tmp_path / "state" / FILENAME)
        with db:
            db.execute("DELETE FROM meta WHERE name = 'content_fingerprint'")
        db.close()
        with pytest.raises(StateError, match="resume with \\[dedup\\] enabled = false"):
            await crawl_site(port, tmp_path, follow=True)
