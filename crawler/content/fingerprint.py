"""Content fingerprints of a page's text: an exact `content_hash` and a 64-bit `simhash`.

Normalization (`normalize`): NFKC, ASCII letters lowercased, UTF-8; whitespace (and C0
controls) only separates words. Two copies of a page whose markup differs (attributes,
comments, indentation, tags around the same words) give the same words.

- `content_hash`: BLAKE2b-128 (hashlib, standard library) of the normalized text with its
  whitespace removed. A cryptographic hash, so a collision between two different pages is not a
  concern at any crawl size; ~1 GB/s; 16 bytes keep the index and the state small.
- `simhash` (Charikar): every word 3-shingle is hashed to 64 bits; bit i of the simhash is set
  when more of the page's distinct shingles have bit i set than not. Each distinct shingle
  counts once (a set, like the Jaccard similarity it estimates): counted per occurrence, the
  phrases an index page repeats hundreds of times ("(in module ...") made distinct index pages
  look alike. Words with a digit (dates, times, counters, session ids: what
  changes between copies of a page) are left out. A few changed shingles among thousands move
  few bits; the share of changed shingles sets the distance (see README "Content dedup").

Everything after normalization is vectorized with numpy (a Python loop over the words, let
alone over 64 bits per feature, costs several times more): words are found from one
whitespace mask, a word's hash mixes its first, middle and last 8 bytes and its length (three
unaligned 64-bit gathers, splitmix64), a shingle's hash mixes three word hashes, and the per-bit
counts come from one `bincount` per byte of the shingle hashes. The hashes are fixed by this
module (no per-process seed): simhashes are kept in the crawl state.

Full Unicode case folding (`str.casefold`) is left out on purpose: a mirror does not change the
case of a page, and on a typical page it cost more than hashing all its shingles.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["SHINGLE", "Fingerprint", "content_hash", "fingerprint", "hamming", "normalize"]
__all__ += ["shingle_hashes", "simhash64", "word_hashes"]

U64 = npt.NDArray[np.uint64]

SHINGLE = 3
"""Words per feature."""

_WHITESPACE = bytes(range(33))  # C0 controls and space: word separators
_OTHER_SPACES = ("\x85", "\u1680", "\u2028", "\u2029")  # Unicode spaces NFKC keeps
_LOW = np.array([(1 << (8 * i)) - 1 for i in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_K1, _K2, _K3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B1)
# bit b of a byte, for every byte value: turns per-byte-value counts into per-bit counts
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")


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
    """NFKC, ASCII letters lowercased, Unicode spaces made ASCII; UTF-8. Words are the runs of
    bytes above 0x20 (`str.split()`'s words, C0 controls also splitting)."""
    if text.isascii():
        return text.encode("ascii").lower()
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    for space in _OTHER_SPACES:
        if space in text:
            text = text.replace(space, " ")
    return text.encode("utf-8", "replace").lower()


def _mix(x: U64) -> U64:
    """splitmix64's finalizer: every input bit affects every output bit."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def word_hashes(normalized: bytes, *, skip_digits: bool = False) -> U64:
    """A 64-bit hash per word of `normalize`d text, in order: its length and its first, middle
    and last 8 bytes (all of a word up to 24 bytes; two longer words that agree on those 24
    bytes and their length get the same hash, a harmless feature collision). `skip_digits`
    leaves out the words with an ASCII digit (dates, times, counters, session ids)."""
    n = len(normalized)
    buf = np.zeros(n + 16, dtype=np.uint8)  # 8 zero bytes either side for the 8-byte windows
    data = buf[8 : 8 + n]
    data[:] = np.frombuffer(normalized, dtype=np.uint8)
    word = np.zeros(n + 2, dtype=bool)
    np.greater(data, 32, out=word[1:-1])
    edges = np.flatnonzero(word[1:] != word[:-1])  # start, end, start, end... (into data)
    starts, ends = edges[0::2], edges[1::2]
    if starts.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if skip_digits:
        digits = np.zeros(n + 1, dtype=np.int32)
        np.cumsum((data >= 48) & (data <= 57), out=digits[1:])
        plain = digits[ends] == digits[starts]
        starts, ends = starts[plain], ends[plain]
    length = ends - starts
    # window[i] = the 8 bytes buf[i:i+8] as a little-endian uint64 (unaligned, no copy)
    window = np.ndarray(shape=(n + 9,), dtype="<u8", buffer=buf, strides=(1,))
    first = window[starts + 8] & _LOW[np.minimum(length, 8)]
    last = np.where(length > 8, window[ends], np.uint64(0))  # data[end-8:end]
    middle = np.where(length > 16, window[starts + 4 + length // 2], np.uint64(0))
    mixed = _mix(last ^ (length.astype(np.uint64) << np.uint64(56))) ^ middle * _K3
    return _mix(first * _K1 ^ _mix(mixed))


def shingle_hashes(words: U64, size: int = SHINGLE) -> U64:
    """A 64-bit hash per run of `size` consecutive words (the words themselves if fewer)."""
    if words.size < size:
        return words
    n = words.size - size + 1
    acc = words[:n].copy()
    for i in range(1, size):
        acc = acc * _K1 + (words[i : i + n] ^ _K2)
    return _mix(acc)


def _distinct(values: U64) -> U64:
    """The distinct values, sorted (np.unique costs ~10x more here: it hashes)."""
    if values.size < 2:
        return values
    ordered = np.sort(values)
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def simhash64(features: U64) -> int:
    """Charikar's simhash of 64-bit feature hashes (each one weighs 1); 0 if none."""
    if features.size == 0:
        return 0
    as_bytes = np.ascontiguousarray(features, dtype="<u8").view(np.uint8).reshape(-1, 8)
    counts = np.empty((8, 8), dtype=np.int64)  # counts[byte][bit]: features with that bit set
    for b in range(8):
        counts[b] = np.bincount(as_bytes[:, b], minlength=256) @ _BYTE_BITS
    bits = (2 * counts.reshape(64) > features.size).astype(np.uint8)
    return int(np.packbits(bits, bitorder="little").view("<u8")[0])


def content_hash(normalized: bytes) -> bytes:
    """BLAKE2b-128 of `normalize`d text with its whitespace removed."""
    return hashlib.blake2b(normalized.translate(None, _WHITESPACE), digest_size=16).digest()


def fingerprint(text: str) -> Fingerprint:
    """The `Fingerprint` of a page's visible text."""
    normalized = normalize(text)
    with np.errstate(over="ignore"):
        features = _distinct(shingle_hashes(word_hashes(normalized, skip_digits=True)))
    return Fingerprint(content_hash(normalized), simhash64(features))


def hamming(a: int, b: int) -> int:
    """Bits that differ between two 64-bit simhashes."""
    return (a ^ b).bit_count()
