"""``multilayer``: the multi-layer Bloom filter of Cen, Xu & Sun (2010) for URLs.

A URL ``scheme://host/a2/.../aL`` is cut at "/" into L segments (`segments`): layer 1 holds the
host (with its scheme: the paper drops the scheme, which would make http and https URLs one key,
and the crawl's canonical keys keep them apart), layers 2..L one path segment each, the last one
the rest of the path (query included). Each of layers 1..L is a classic filter BF^{k,m} of its
segments; layer L+1, the paper's XOR layer, sets for j < k the bit

    XOR_i g_j(a_i)  mod m,    g_j(a) = h1(a) + j*h2(a) mod 2^64

(the paper XORs the layers' bit addresses; XORing their 64-bit hash values before the reduction
keeps the result uniform for any m). A key is present when every layer reports its part.

Two departures, both to keep keys apart: a missing segment (a URL shallower than L) is the byte
0xFF, which no UTF-8 text contains, so "a/b" and "a/b/" differ; and each layer hashes with its
own seed (SEED + layer), or a URL repeating one segment in two layers would XOR it away.

Sizing: every layer has the classic shape for the stage's (C, P), as the paper's layers are
identical; layer L+1 alone is then a filter over whole URLs at rate P, so the measured rate meets
P whatever the URLs (the segment layers only lower it). That costs L+1 times the classic filter's
memory: `python -m bench family` measures what the layers buy for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mmh3
import numpy as np
from numpy.typing import NDArray

from crawler.sieve.bloom import stage_shape
from crawler.sieve.format import SEED
from crawler.sieve.kinds.bits import BitStage
from crawler.sieve.kinds.common import MASK64, U64, Stage, Staged, check_int

__all__ = ["MultiLayerFilter", "MultiLayerStage", "segments"]

_hash_bytes = mmh3.hash_bytes  # the 128-bit digest; takes str (as UTF-8) or bytes
_hash64 = mmh3.hash64
_MISSING = b"\xff"


def segments(key: str | bytes, layers: int) -> list[str | bytes]:
    """The key's `layers` segments: scheme://host, then path segments, the last one the rest.

    A key not of the form ``scheme://...`` is cut at "/" alone (its first segment has no "/",
    so it never equals a URL's "scheme://host"). Missing segments are the byte 0xFF.
    """
    if isinstance(key, str):
        p: list[Any] = key.split("/", layers + 1)
        if len(p) > 2 and not p[1] and p[0][-1:] == ":":
            p[:3] = (p[0] + "//" + p[2],)
        else:
            p = key.split("/", layers - 1)
    else:
        p = key.split(b"/", layers + 1)
        if len(p) > 2 and not p[1] and p[0][-1:] == b":":
            p[:3] = (p[0] + b"//" + p[2],)
        else:
            p = key.split(b"/", layers - 1)
    if len(p) < layers:
        p += [_MISSING] * (layers - len(p))
    return p


def hash_segments(key: str | bytes, layers: int) -> tuple[list[int], list[int]]:
    """(h1 of each segment, h2 of each segment), unsigned, segment i hashed with SEED + i."""
    h1s, h2s = [], []
    for i, seg in enumerate(segments(key, layers)):
        h1, h2 = _hash64(seg, SEED + i)
        h1s.append(h1 & MASK64)
        h2s.append(h2 & MASK64)
    return h1s, h2s


def hash_segments_batch(keys: Sequence[str | bytes], layers: int) -> tuple[U64, U64]:
    """`hash_segments` of every key, as two (keys, layers) uint64 arrays."""
    parts = [segments(k, layers) for k in keys]
    h = np.empty((len(keys), layers, 2), dtype=np.uint64)
    for i in range(layers):
        seed = SEED + i
        raw = b"".join([_hash_bytes(p[i], seed) for p in parts])
        h[:, i, :] = np.frombuffer(raw, dtype="<u8").reshape(len(keys), 2)
    return h[:, :, 0], h[:, :, 1]


class MultiLayerStage(BitStage):
    """L segment layers and one XOR layer, each of m bits with k positions a part.

    `shape` = (m, k) overrides the classic shape (the benchmark builds the paper's).
    """

    def __init__(
        self, capacity: int, error_rate: float, layers: int, shape: tuple[int, int] | None = None
    ) -> None:
        self.layers = layers
        self.m, self.k = shape or stage_shape(capacity, error_rate)
        self.nbits = self.m * (layers + 1)
        self._alloc(capacity, error_rate)
        self._offsets = np.arange(layers, dtype=np.int64)[:, None] * self.m

    def positions_one(self, h: tuple[list[int], list[int]]) -> list[int]:
        m, k, out = self.m, self.k, []
        xors = [0] * k
        for i, (h1, h2) in enumerate(zip(*h, strict=True)):
            a, b, off = h1 % m, (h2 | 1) % m, i * m
            out += [off + x % m for x in range(a, a + k * b, b)]
            for j in range(k):
                xors[j] ^= (h1 + j * h2) & MASK64
        top = self.layers * m
        out += [top + x % m for x in xors]
        return out

    def positions(
        self, hb: tuple[NDArray[np.uint64], NDArray[np.uint64]], rows: NDArray[np.intp]
    ) -> NDArray[np.int64]:
        h1, h2 = hb[0][rows], hb[1][rows]  # (n, L)
        m = np.uint64(self.m)
        j = np.arange(self.k, dtype=np.uint64)
        a = (h1 % m).astype(np.int64)[:, :, None]
        b = ((h2 | np.uint64(1)) % m).astype(np.int64)[:, :, None]
        seg = (a + b * j.astype(np.int64)) % self.m + self._offsets[None, :, :]
        xor = np.bitwise_xor.reduce(h1[:, :, None] + h2[:, :, None] * j, axis=1)
        top = (xor % m).astype(np.int64) + self.layers * self.m
        got: NDArray[np.int64] = np.concatenate(
            [seg.reshape(len(rows), self.layers * self.k), top], axis=1
        )
        return got

    def params(self) -> dict[str, Any]:
        return {**self.base_params(), "m": self.m, "k": self.k, "layers": self.layers}


class MultiLayerFilter(Staged):
    """Multi-layer stages (`layers` segment layers + the XOR layer), growing as the Sieve does."""

    kind = "multilayer"

    def __init__(
        self,
        capacity: int,
        error_rate: float,
        ratio: float = 0.5,
        growth: float = 2.0,
        layers: int = 4,
    ) -> None:
        self.layers = check_int("layers", layers, 1, 32)
        super().__init__(capacity, error_rate, ratio, growth)

    def options(self) -> dict[str, Any]:
        return {**super().options(), "layers": self.layers}

    def _hash(self, key: str | bytes) -> Any:
        return hash_segments(key, self.layers)

    def _hash_many(self, keys: Sequence[str | bytes]) -> Any:
        return hash_segments_batch(keys, self.layers)

    def _new_stage(self, capacity: int, error_rate: float) -> Stage:
        return MultiLayerStage(capacity, error_rate, self.layers)

    def _restore_stage(self, params: dict[str, Any], arrays: list[bytes]) -> Stage:
        st = MultiLayerStage(params["capacity"], params["error_rate"], self.layers)
        return st.load(params, arrays)
