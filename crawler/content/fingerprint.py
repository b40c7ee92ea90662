"""Content fingerprints of a page's text: an exact `content_hash` and a 64-bit `simhash`.

Normalization (`normalize`): UTF-8, no-break spaces made spaces, ASCII letters lowercased;
words are the runs of bytes above 0x20 (C0 controls and space separate them). Two copies of a
page whose markup differs (attributes, comments, indentation, tags around the same words) give
the same words.

- `content_hash`: BLAKE2b-128 (hashlib, standard library) of the normalized text with its
  whitespace removed. A cryptographic hash, so a collision between two different pages is not a
  concern at any crawl size; 16 bytes keep the index and the state small.
- `simhash` (Charikar): every word 3-shingle is hashed to 64 bits; bit i of the simhash is set
  when more of the page's distinct shingles have bit i set than not. Each distinct shingle
  counts once (a set, like the Jaccard similarity it estimates): counted per occurrence, the
  phrases an index page repeats hundreds of times ("(in module ...") made distinct index pages
  look alike. Words with a digit (numbers, dates, times, counters, hexadecimal session ids and
  hashes: what changes between copies of a page) are left out, unless two letters past "f"
  follow each other in them: names with digits stay (`Visitor14`, `utf8`, `sqlite3_open_v2`;
  version 3 left them out too, and 126 of openjdk-17-doc's "Uses of Class ...Visitor14"
  pages were near duplicates of one another), ISO times do not (`2026-11-23T06:59:12Z`). A
  few changed shingles among thousands move few bits; the share of changed shingles sets the
  distance (see docs/dedup-and-recrawl.md).

Cost (`python -m bench dedup` measures it): everything after the UTF-8 encoding is a fixed,
small number of numpy calls per page, none per word. A word is hashed from its length and
its first 16 bytes (one unaligned gather: all of a word up to 16 bytes), plus, when it is
longer, a mixed hash of each further 16 bytes and their place (a second gather, of the long
words' chunks only; the last chunk is the word's last 16 bytes), a shingle from
three word hashes, the distinct shingles come from one sort, and
the 64 per-bit counts from one pass that sums 16-bit lanes (four bit positions per 64-bit
lane word, 16 shifts). Full Unicode normalization (NFKC) and case folding are left out: a
mirror does not rewrite the characters of a page, and on these pages they cost more than all
the hashing.

`VERSION` numbers the fingerprint function: simhashes and content hashes are kept in the crawl
state, and a state whose index was computed by another version cannot be compared against
(`crawler.state.crawlstate` refuses it). It changes whenever the same page would get another
fingerprint: a change of the text hashed (today the page's main content as
`crawler.parse.extract` chooses it), of the words kept or of how a word is hashed (whole: a
word hashed from a prefix makes API documentation's long qualified names, alike there, look
alike). Each version and why it came: CHANGELOG.md ("Content dedup").
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["SHINGLE", "VERSION", "Fingerprint", "content_hash", "fingerprint", "hamming"]
__all__ += ["normalize", "shingle_hashes", "simhash64", "word_hashes"]

U64 = npt.NDArray[np.uint64]

VERSION = 5
"""The fingerprint function's version, kept with the index in the crawl state."""
SHINGLE = 3
"""Words per feature."""

_WHITESPACE = bytes(range(33))  # C0 controls and space: word separators
_K1, _K2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31, _S32 = np.uint64(27), np.uint64(30), np.uint64(31), np.uint64(32)
# for a word of i = 0..16 bytes, the bytes of it in its first / second 8 bytes
_HEAD = np.array([(1 << (8 * min(i, 8))) - 1 for i in range(17)], dtype=np.uint64)
_TAIL = np.array([(1 << (8 * max(i - 8, 0))) - 1 for i in range(17)], dtype=np.uint64)
_ZERO_DIGIT = np.uint8(ord("0"))
# a word with a digit is a name ("Visitor14", "utf8"), not a number, date, time or hexadecimal
# id, when two of these follow each other in it: ASCII letters past "f" (lowercased already)
_NAME_LETTER = np.zeros(256, dtype=np.uint8)
_NAME_LETTER[ord("g") : ord("z") + 1] = 1
_LANE_SHIFTS = np.arange(16, dtype=np.uint64)[:, None]
_LANE_BITS = np.uint64(0x0001_0001_0001_0001)
_LANE_MAX = 0xFFFF  # features summed per pass: a 16-bit lane cannot overflow


class Fingerprint(NamedTuple):
    """A page's content hash (16 bytes) and simhash (an unsigned 64-bit int)."""

    content_hash: bytes
    simhash: int

    @property
    def content_hex(self) -> str:
        return self.content_hash.hex()

    @property
    def simhash_hex(self) -> str:
        return f"{self.simhash:016x}"


def normalize(text: str) -> bytes:
    """UTF-8, no-break spaces made spaces, ASCII letters lowercased. Words are the runs of bytes
    above 0x20 (`str.split()`'s words for ASCII whitespace, C0 controls also splitting)."""
    if not text.isascii() and "\xa0" in text:
        text = text.replace("\xa0", " ")
    return text.encode("utf-8", "replace").lower()


def _mix(x: U64) -> U64:
    """splitmix64's finalizer, in place: every input bit affects every output bit."""
    x ^= x >> _S30
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return x


def _padded(normalized: bytes) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.bool_]]:
    """The text's bytes followed by 16 zero bytes, and `word`: a flag per byte, True for the
    bytes of words, with a False either end."""
    n = len(normalized)
    buf = np.zeros(n + 16, dtype=np.uint8)
    buf[:n] = np.frombuffer(normalized, dtype=np.uint8)
    word = np.zeros(n + 2, dtype=bool)
    np.greater(buf[:n], 32, out=word[1:-1])
    return buf, word


def _word_hashes(buf: npt.NDArray[np.uint8], word: npt.NDArray[np.bool_]) -> U64:
    n = buf.size - 16
    edges = np.flatnonzero(word[1:] != word[:-1])  # start, end, start, end... (into the text)
    starts, ends = edges[0::2], edges[1::2]
    length = ends - starts
    # the 16 bytes from each word's start (one unaligned gather, no copy of the text: a
    # complex128 is just a 16-byte carrier here), as two little-endian uint64: bytes 0-7, 8-15
    windows = np.ndarray(shape=(n + 1,), dtype="<c16", buffer=buf, strides=(1,))
    pairs = windows[starts].view("<u8")
    head, tail = pairs[0::2], pairs[1::2]
    short = np.minimum(length, 16)
    head &= _HEAD[short]
    tail &= _TAIL[short]
    head *= _K1
    head ^= length.astype(np.uint64)
    tail *= _K2
    head += tail
    long = np.flatnonzero(length > 16)
    if long.size:  # the rest of each longer word, 16 bytes at a time (the last chunk ends it)
        more = (length[long] - 1) // 16  # chunks after the first: 1 for 17-32 bytes, ...
        first = np.cumsum(more) - more  # where each long word's chunks begin
        word_of = np.repeat(np.arange(long.size), more)
        place = np.arange(word_of.size) - first[word_of] + 1  # chunk 1, 2, ... of its word
        at = np.minimum(starts[long][word_of] + 16 * place, ends[long][word_of] - 16)
        chunks = windows[at].view("<u8")
        extra = chunks[0::2] * _K2
        extra ^= chunks[1::2]
        extra += place.astype(np.uint64)
        head[long] += np.add.reduceat(_mix(extra), first)
    head ^= head >> _S32
    digits = np.flatnonzero(buf[:n] - _ZERO_DIGIT < 10)
    if digits.size:  # leave out the words with a digit, unless they are names (see above)
        flags = np.zeros(head.size, dtype=bool)
        flags[np.searchsorted(ends, digits, side="right")] = True
        numeric = np.flatnonzero(flags)  # the words with a digit
        size = length[numeric]
        first = np.cumsum(size) - size  # where each word's bytes begin among all of them
        word_of = np.repeat(np.arange(numeric.size), size)
        at = starts[numeric][word_of] + np.arange(word_of.size) - first[word_of]
        letter = _NAME_LETTER[buf[at]]
        pair = np.zeros(letter.size, dtype=np.uint8)  # two name letters in a row, in one word
        np.bitwise_and(letter[:-1], letter[1:], out=pair[:-1])
        pair[first[1:] - 1] = 0  # the last byte of a word and the first of the next
        named = np.add.reduceat(pair, first) > 0  # "Visitor14", "utf8", not "2026-11-23T06:59Z"
        keep = np.ones(head.size, dtype=bool)
        keep[numeric[~named]] = False
        return head[keep]
    return head


def word_hashes(normalized: bytes) -> U64:
    """A 64-bit hash per word of `normalize`d text without a digit, in order."""
    return _word_hashes(*_padded(normalized))


def shingle_hashes(words: U64, size: int = SHINGLE) -> U64:
    """A 64-bit value per run of `size` consecutive words (the words themselves if fewer);
    distinct runs give distinct values but for collisions, not yet mixed (`simhash64` does)."""
    if words.size < size:
        return words.copy()
    n = words.size - size + 1
    acc = words[:n] * _K1
    for i in range(1, size):
        acc += words[i : i + n]
        if i + 1 < size:
            acc *= _K1
    return acc


def simhash64(shingles: U64) -> int:
    """Charikar's simhash of the distinct values of `shingles` (each mixed to 64 bits, each
    weighing 1); 0 if none. Sorts `shingles` in place."""
    if shingles.size == 0:
        return 0
    shingles.sort()
    distinct = np.empty(shingles.size, dtype=bool)
    distinct[0] = True
    np.not_equal(shingles[1:], shingles[:-1], out=distinct[1:])
    features = _mix(shingles[distinct])
    counts = np.zeros(64, dtype=np.int64)
    for i in range(0, features.size, _LANE_MAX):
        # lanes[j]: bit j of each 16-bit lane of every feature; its sum counts bits j, j+16,
        # j+32 and j+48 in its four 16-bit lanes
        lanes = features[None, i : i + _LANE_MAX] >> _LANE_SHIFTS
        lanes &= _LANE_BITS
        counts += lanes.sum(axis=1).view(np.uint16).reshape(16, 4).T.reshape(64)
    bits = 2 * counts > features.size
    return int(np.packbits(bits, bitorder="little").view("<u8")[0])


def content_hash(normalized: bytes) -> bytes:
    """BLAKE2b-128 of `normalize`d text with its whitespace removed."""
    return hashlib.blake2b(normalized.translate(None, _WHITESPACE), digest_size=16).digest()


def fingerprint(text: str) -> Fingerprint:
    """The `Fingerprint` of a page's visible text."""
    buf, word = _padded(normalize(text))
    words = np.compress(word[1:-1], buf[:-16])  # the text without its whitespace
    digest = hashlib.blake2b(words.data, digest_size=16).digest()
    return Fingerprint(digest, simhash64(shingle_hashes(_word_hashes(buf, word))))


def hamming(a: int, b: int) -> int:
    """Bits that differ between two 64-bit simhashes."""
    return (a ^ b).bit_count()
