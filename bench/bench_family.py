"""Benchmark: the Sieve family (crawler.sieve.kinds) measured against the sources' claims.

1. The sources' comparison table, measured: each kind at P = 1% and 0.01%, built for C keys:
   bits a key at C, false-positive rate at C and at 10C (fresh URLs), cache lines a lookup
   touches (every probe of every stage, from the real buffer addresses), deletes, one-key add,
   batch add (pages of 110 keys), miss lookups; beside them the peers that install here.
2. The multi-layer paper's experiment (Cen, Xu & Sun 2010, Fig. 5-7): 1 to 3 M URLs into the
   classic filter and the multi-layer filter as the paper sized them (n = 3.5 M, k = 3, P = 0.1:
   m = 16,829,152 bits a layer, L = 4), and at equal memory; false positives on each URL with its
   id appended (the paper's queries) and on fresh URLs.
3. The sources' figures checked: claim / formula / measured.

URLs: `family_urls`, a seeded generator (documented there). The local doc sites' URLs are used
when their Debian packages are installed (this never installs them: no network).

Run: `python -m bench family` (BENCH_QUICK=1, or `python -m bench.bench_family --quick`: a
tenth of the sizes, a few minutes on 2 cores).
"""

from __future__ import annotations

import gc
import logging
import math
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crawler.sieve import FILTER_KINDS, Sieve, make_filter
from crawler.sieve.batch import _positions as sieve_positions
from crawler.sieve.kinds.classic import ClassicStage
from crawler.sieve.kinds.common import hash_batch
from crawler.sieve.kinds.multilayer import MultiLayerStage, hash_segments_batch

PAGE = 110
Row = tuple[str, ...]


def family_urls(n: int, seed: int) -> list[str]:
    """`n` distinct URLs with a crawl's repetition of hosts and directories.

    2,000 hosts drawn with Zipf weights (1/rank: a few big sites, a long tail); each host has
    its own tree of 30 directories (1-3 levels, names from a 400-word vocabulary, shared across
    hosts as real sites share "docs", "api"...); a URL is a host, one of its directories (Zipf
    again), a page name (word-number.html) and, one time in five, a query. Deterministic.
    """
    rng = random.Random(seed)
    stems = ("doc", "api", "news", "blog", "shop", "wiki", "lib", "img", "user", "item")
    words = [f"{a}{b}" for a in stems for b in ("", "s", "-v2", "-old", "x", "2024", "_en")]
    words += [f"w{i}" for i in range(400 - len(words))]
    hosts = [f"{'www.' if i % 3 else ''}site{i}.example" for i in range(2000)]
    trees = [
        ["/".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(30)]
        for _ in hosts
    ]
    host_w = [1.0 / (r + 1) for r in range(len(hosts))]
    dir_w = [1.0 / (r + 1) for r in range(30)]
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        batch = n - len(out)
        for h, d in zip(
            rng.choices(range(len(hosts)), host_w, k=batch),
            rng.choices(range(30), dir_w, k=batch), strict=True,
        ):  # fmt: skip
            url = (
                f"https://{hosts[h]}/{trees[h][d]}/{rng.choice(words)}-{rng.randrange(10**6)}.html"
            )
            if rng.random() < 0.2:
                url += f"?page={rng.randrange(100)}"
            if url not in seen:
                seen.add(url)
                out.append(url)
    return out


def doc_site_urls() -> list[str]:
    """The local doc sites' page URLs, if their packages are installed (never installed here)."""
    roots = [Path("/usr/share/doc/python3.11/html"), Path("/usr/share/doc/sqlite3"),
             Path("/usr/share/doc/postgresql-doc-15/html")]  # fmt: skip
    return [
        f"http://{root.parts[4]}.test/{p.relative_to(root).as_posix()}"
        for root in roots if root.is_dir() for p in sorted(root.rglob("*.html"))
    ]  # fmt: skip


def _rate(n: int, run: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    run()
    return n / (time.perf_counter() - start)


def _pages(add_many: Callable[[list[str]], object], items: list[str]) -> Callable[[], None]:
    def run() -> None:
        for i in range(0, len(items), PAGE):
            add_many(items[i : i + PAGE])

    return run


def _ones(add: Callable[[str], object], items: Sequence[str]) -> Callable[[], None]:
    def run() -> None:
        for x in items:
            add(x)

    return run


def _fpr(container: Any, probes: Sequence[str], check: Callable[[str], Any] | None = None) -> float:
    test = check or container.__contains__
    return sum(1 for x in probes if test(x)) / len(probes)


def _lines(f: Any, probes: list[str]) -> float:
    """Mean distinct 64-byte lines a lookup touches if every probe of every stage is made."""
    hb = hash_batch(probes)
    rows = np.arange(len(probes))
    per = np.zeros(len(probes))

    def count(addr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        lines = np.sort(addr // 64, axis=1)
        got: np.ndarray[Any, Any] = 1 + (lines[:, 1:] != lines[:, :-1]).sum(axis=1)
        return got

    if isinstance(f, Sieve):
        for bits, m, k1 in f._all:
            base = np.frombuffer(memoryview(bits), dtype=np.uint8).ctypes.data
            h = np.array([hb[0].view(np.int64), hb[1].view(np.int64) | 1])
            per += count(base + sieve_positions(m, k1 + 1, h[0], h[1]) // 8)
        return float(per.mean())
    if f.kind == "stable":
        m = f.m
        a, b = hb[0] % np.uint64(m), (hb[1] | np.uint64(1)) % np.uint64(m)
        pos = (a.astype(np.int64)[:, None] + b.astype(np.int64)[:, None] * np.arange(f.k)) % m
        return float(count(f._np.ctypes.data + pos).mean())
    if f.kind == "multilayer":
        hb = hash_segments_batch(probes, f.layers)
    for st in f._stages:
        if f.kind == "cuckoo":
            n = np.uint64(st.buckets)
            fp = (hb[1] >> np.uint64(64 - st.f)) % np.uint64(st._fmask) + np.uint64(1)
            from crawler.sieve.kinds.common import splitmix64_np

            i1 = (hb[0] % n).astype(np.int64)
            i2 = ((splitmix64_np(fp) % n + n - hb[0] % n) % n).astype(np.int64)
            ends = [i * st.stride + j for i in (i1, i2) for j in (0, st.stride - 1)]
            per += count(st._np.ctypes.data + np.stack(ends, axis=1))
        elif f.kind == "counting":
            per += count(st._buf.ctypes.data + st._positions(hb, rows) // 2)
        else:
            per += count(st._buf.ctypes.data + st.positions(hb, rows) // 8)
    return float(per.mean())


def table_kinds(n: int, p: float, items: list[str], probes: list[str]) -> list[Row]:
    """Table 1 rows for every kind at rate p, built for n keys (items: 10n keys)."""
    rows: list[Row] = []
    base_batch = 0.0
    for kind in FILTER_KINDS:
        one = make_filter(kind, capacity=n, error_rate=p)
        add = _rate(n, _ones(one.add, items[:n]))
        f = make_filter(kind, capacity=n, error_rate=p)
        batch = _rate(n, _pages(f.add_many, items[:n]))
        if f.to_bytes() != one.to_bytes():
            raise SystemExit(f"{kind}: add_many built a different filter than add")
        bits = f.size_in_bytes * 8 / n
        fp1 = _fpr(f, probes)
        miss = _rate(len(probes), _ones(f.__contains__, probes))
        lines = _lines(f, probes[:2000])
        _pages(f.add_many, items[n:])()
        fp10 = _fpr(f, probes)
        base_batch = base_batch or batch
        rows.append((
            kind, f"{p:.2%}", f"{bits:.2f}", f"{fp1 / p:.2f}P", f"{fp10 / p:.2f}P", f"{lines:.1f}",
            "yes" if f.supports_remove else "no", f"{add / 1e3:.0f}k", f"{batch / 1e3:.0f}k",
            f"{base_batch / batch:.2f}x", f"{miss / 1e3:.0f}k",
        ))  # fmt: skip
    return rows


def table_peers(n: int, p: float, items: list[str], probes: list[str]) -> list[Row]:
    """Table 1 rows for the peers that import here (same keys, same probes)."""
    rows: list[Row] = []

    def row(name: str, make: Callable[[], Any], add: str, batch: str | None, check: str,
            bits: Callable[[Any], float], deletes: str) -> None:  # fmt: skip
        one = make()
        a = _rate(n, _ones(getattr(one, add), items[:n]))
        b = float("nan")
        if batch:
            two = make()
            b = _rate(n, _pages(getattr(two, batch), items[:n]))
        chk = getattr(one, check)
        fp1 = _fpr(one, probes, chk)
        miss = _rate(len(probes), _ones(chk, probes))
        size = bits(one) / n
        try:
            _ones(getattr(one, add), items[n:])()
            fp10 = f"{_fpr(one, probes, chk) / p:.2f}P"
        except Exception as exc:  # a fixed peer may refuse past capacity
            fp10 = f"refused ({type(exc).__name__})"
        rows.append((
            name, f"{p:.2%}", f"{size:.2f}", f"{fp1 / p:.2f}P", fp10, "-", deletes,
            f"{a / 1e3:.0f}k", "-" if b != b else f"{b / 1e3:.0f}k", "", f"{miss / 1e3:.0f}k",
        ))  # fmt: skip

    try:
        from pybloom_live import BloomFilter, ScalableBloomFilter  # type: ignore[import-untyped]

        row("pybloom-live scalable", lambda: ScalableBloomFilter(n, p, 2), "add", None,
            "__contains__", lambda f: sum(x.num_bits for x in f.filters), "no")  # fmt: skip
        row("pybloom-live fixed", lambda: BloomFilter(n, p), "add", None, "__contains__",
            lambda f: f.num_bits, "no")  # fmt: skip
    except ImportError:
        pass
    try:
        from rbloom import Bloom

        row("rbloom (Rust, fixed)", lambda: Bloom(n, p), "add", "update", "__contains__",
            lambda f: f.size_in_bits, "no")  # fmt: skip
    except ImportError:
        pass
    try:
        from abloom import BloomFilter as Sbbf

        row("abloom (C, split-block)", lambda: Sbbf(n, p), "add", "update", "__contains__",
            lambda f: f.byte_count * 8, "no")  # fmt: skip
    except ImportError:
        pass
    try:
        from probables import CountingBloomFilter, CuckooFilter

        row("pyprobables counting", lambda: CountingBloomFilter(est_elements=n,
            false_positive_rate=p), "add", None, "check", lambda f: f.export_size() * 8,
            "yes")  # fmt: skip
        row("pyprobables cuckoo", lambda: CuckooFilter.init_error_rate(p, capacity=n),
            "add", None, "check",
            lambda f: f.capacity * f.bucket_size * f.fingerprint_size_bits, "yes")  # fmt: skip
    except ImportError:
        pass
    try:
        from scf import PyScalableCuckooFilter  # type: ignore[import-untyped]

        row("scalable-cuckoo (Rust)", lambda: PyScalableCuckooFilter(n, p), "insert", None,
            "might_contain", lambda f: f.bits(), "yes")  # fmt: skip
    except ImportError:
        pass
    return rows


def _bloom_stage(m: int, k: int) -> ClassicStage:
    return ClassicStage(1, 0.5, shape=(-(-m // 64) * 64, k))


def _fill(stage: Any, hb: Any, n: int) -> None:
    """Insert rows 0..n-1 of a hashed batch, in chunks."""
    for i in range(0, n, 20_000):
        stage.insert_rows(hb, np.arange(i, min(n, i + 20_000)), None)


def _false(stage: Any, hb: Any) -> int:
    """How many rows of a hashed batch the stage reports present."""
    n = len(hb[0])
    return sum(int(stage.present(hb, np.arange(i, min(n, i + 20_000))).sum())
               for i in range(0, n, 20_000))  # fmt: skip


def table_paper(scale: float) -> list[Row]:
    """Table 2: the multi-layer paper's experiment (sizes and m scaled by `scale`)."""
    m = math.ceil(16_829_152 * scale)
    sizes = [round(x * 1e6 * scale) for x in (1, 1.5, 2, 2.5, 3)]
    urls = family_urls(sizes[-1] * 2, seed=2010)
    items, fresh = urls[: sizes[-1]], urls[sizes[-1] :]
    variants: list[tuple[str, Callable[[], Any]]] = [
        ("BF m, k=3 (paper)", lambda: _bloom_stage(m, 3)),
        ("MLBF 5 x m, k=3 (paper)", lambda: MultiLayerStage(1, 0.5, 4, (-(-m // 64) * 64, 3))),
        ("BF 5m, k=3 (equal memory)", lambda: _bloom_stage(5 * m, 3)),
        ("BF 5m, k=17 (equal memory, best k)", lambda: _bloom_stage(5 * m, 17)),
        ("MLBF 5 x m/5, k=3 (equal to BF m)", lambda: MultiLayerStage(1, 0.5, 4,
                                                                      (-(-m // 320) * 64, 3))),
    ]  # fmt: skip
    rows: list[Row] = []
    for n in sizes:
        ins, idq = items[:n], [f"{u}{i}" for i, u in enumerate(items[:n])]
        fr = fresh[:n]
        f_theory = (1 - math.exp(-3 * n / m)) ** 3
        for name, make in variants:
            st = make()
            ml = isinstance(st, MultiLayerStage)

            def hashed(keys: list[str], ml: bool = ml) -> Any:
                return hash_segments_batch(keys, 4) if ml else hash_batch(keys)

            start = time.perf_counter()
            _fill(st, hashed(ins), n)
            t_ins = time.perf_counter() - start
            start = time.perf_counter()
            fp_id = _false(st, hashed(idq))
            t_q = time.perf_counter() - start
            fp_fresh = _false(st, hashed(fr))
            claim = f"{f_theory**4 * n:.1f}" if name.startswith("MLBF 5 x m,") else ""
            rows.append((
                f"{n / 1e6:.2f}M", name, f"{st.size_in_bytes * 8 / n:.1f}", str(fp_id),
                str(fp_fresh), f"{f_theory * n:.0f}" if name.startswith("BF m,") else claim,
                f"{t_ins:.2f}", f"{t_q:.2f}",
            ))  # fmt: skip
    return rows


def table_figures(n: int, measured: dict[tuple[str, float], tuple[float, float]]) -> list[Row]:
    """Table 3: the sources' figures; `measured` maps (kind, P) to (bits a key, rate at C)."""
    ln2 = math.log(2)
    rows: list[Row] = []

    def bits(p: float) -> float:
        return -math.log(p) / ln2**2

    def gb(bits_a_key: float) -> str:
        return f"{bits_a_key * 1e9 / 8 / 1e9:.2f} GB"

    b4, b2 = measured[("bloom", 1e-4)][0], measured[("bloom", 0.01)][0]
    rows.append(("1 billion URLs at 0.01% in just over 18 MB", "18 MB", gb(bits(1e-4)), gb(b4)))
    rows.append(("1 billion URLs at 1% in ~1.2 GB", "1.2 GB", gb(bits(0.01)), gb(b2)))
    urls = family_urls(n + 40_000, seed=99)
    for p, claim in ((0.1, 4.8), (0.01, 9.6), (1e-3, 14.4), (1e-6, 28.8)):
        f = make_filter("bloom", capacity=n, error_rate=p)
        f.add_many(urls[:n])
        rate = _fpr(f, urls[n:])
        rows.append((f"bits/element at {p:g}", f"{claim}", f"{bits(p):.2f}",
                     f"{f.size_in_bytes * 8 / n:.2f} (rate {rate:.2g})"))  # fmt: skip
    for p in (0.01, 1e-4):
        from crawler.sieve.kinds.blocked import BlockedStage

        st = BlockedStage(n, p / 2)  # the first stage of a blocked filter at P
        rows.append((f"blocked penalty at {p / 2:g}: 'small', 1 line", "small",
                     "Poisson mixture sizing", f"+{st.bits_penalty:.2f} bits/key over classic, "
                     f"rate {measured[('blocked', p)][1] / p:.2f}P, 1.0 line"))  # fmt: skip
    for p in (0.03, 0.01, 1e-3, 1e-4):
        f_bits = math.ceil(math.log2(8 / p)) / 0.95
        rows.append((f"cuckoo < Bloom below ~3% (at {p:g})", "cuckoo smaller",
                     f"{f_bits:.1f} vs {bits(p) * 1.0:.1f} bits",
                     _cuckoo_measured(p, n, urls)))  # fmt: skip
    cnt = make_filter("counting", capacity=n, error_rate=0.01, ratio=1e-9)  # one stage at P
    rows.append(("counting filter 3-4x the space", "3-4x", "4x (4-bit counters)",
                 f"{cnt.size_in_bytes * 8 / n / bits(0.01):.2f}x at equal P"))  # fmt: skip
    f = make_filter("bloom", capacity=n, error_rate=0.01)
    f.add_many(urls[:n])
    fill = f._stages[0]._buf  # type: ignore[attr-defined]
    ones = int(np.unpackbits(fill).sum()) / (fill.size * 8)
    rows.append(("optimal k leaves the array half full", "50%", "50%", f"{ones:.1%}"))
    return rows


def _cuckoo_measured(p: float, n: int, urls: list[str]) -> str:
    c = make_filter("cuckoo", capacity=n, error_rate=p, ratio=1e-9)  # one stage at P
    b = make_filter("bloom", capacity=n, error_rate=p)
    c.add_many(urls[:n])
    b.add_many(urls[:n])
    return f"{c.size_in_bytes * 8 / n:.1f} vs {b.size_in_bytes * 8 / n:.1f} bits"


def _print(title: str, header: Row, rows: list[Row]) -> None:
    print(f"\n### {title}\n")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    sys.stdout.flush()


def main(argv: list[str]) -> None:
    logging.getLogger("crawler.sieve").setLevel(logging.ERROR)  # growth warnings are expected
    quick = os.environ.get("BENCH_QUICK") == "1" or "--quick" in argv
    n = 10_000 if quick else 100_000
    scale = 0.1 if quick else 1.0
    n_probes = 200_000 if quick else 1_000_000  # at 0.01%: 100 expected false positives
    urls = family_urls(10 * n + n_probes, seed=7)
    items, probes = urls[: 10 * n], urls[10 * n :]
    peer_probes = probes[: n_probes // 4]  # the slowest peer looks up ~11k keys/s
    docs = doc_site_urls()
    print(f"{n:,} keys a filter (10x: {10 * n:,}), {len(probes):,} fresh URLs looked up "
          f"({len(peer_probes):,} for the peers); "
          f"batches of {PAGE}; doc-site URLs: {len(docs) or 'none installed here'}")  # fmt: skip
    header = ("kind", "P", "bits/key", "FPR at C", "FPR at 10C", "lines/lookup", "deletes",
              "add/s", "batch/s", "vs scalable", "miss/s")  # fmt: skip
    measured: dict[tuple[str, float], tuple[float, float]] = {}
    rows: list[Row] = []
    for p in (0.01, 1e-4):
        got = table_kinds(n, p, items, probes)
        for r in got:
            measured[(r[0], p)] = (float(r[2]), float(r[3][:-1]) * p)
        rows += got + table_peers(n, p, items, peer_probes)
    _print("1. The sources' comparison table, measured", header, rows)
    _print(
        "2. Cen, Xu & Sun's experiment (false positives counted; times in seconds)",
        ("URLs", "filter", "bits/URL", "FP (URL+id)", "FP (fresh)", "claim", "insert s",
         "query s"),
        table_paper(scale),
    )  # fmt: skip
    _print("3. The sources' figures", ("claim", "says", "formula", "measured"),
           table_figures(n, measured))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
