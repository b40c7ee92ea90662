from __future__ import annotations

import logging
import math
import struct
from pathlib import Path

import mmh3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crawler.sieve.batch as sieve_mod
from crawler.sieve import SEED, BloomStage, Sieve, SieveFormatError, fingerprint, hash_pair


def urls(start: int, n: int) -> list[str]:
    """`n` distinct URL-shaped keys; disjoint ranges give disjoint key sets."""
    return [
        f"https://h{i % 977}.test/doc/{i // 977}/p-{i}.html?v={i % 13}"
        for i in range(start, start + n)
    ]


keys = st.lists(st.text(alphabet="abcdefgh/:.?=", max_size=6), max_size=300)


# -- hashing --------------------------------------------------------------------------------


def test_hash_pair_is_the_two_halves_of_one_128_bit_murmur3() -> None:
    for key in ("", "https://example.test/a?b=1", "ünïcode/ключ"):
        digest = mmh3.mmh3_x64_128_digest(key.encode(), SEED)
        assert hash_pair(key) == struct.unpack("<qq", digest)
        assert hash_pair(key.encode()) == hash_pair(key)
        assert fingerprint(key) == hash_pair(key)[0]
        assert -(2**63) <= fingerprint(key) < 2**63


def test_hashed_api_matches_item_api() -> None:
    a, b = Sieve(500, 0.01), Sieve(500, 0.01)
    items = urls(0, 2000) + urls(0, 300)
    assert [a.add(x) for x in items] == [b.add_hashed(*hash_pair(x)) for x in items]
    assert a.to_bytes() == b.to_bytes()
    probes = urls(5000, 2000)
    assert [x in a for x in probes] == [b.contains_hashed(*hash_pair(x)) for x in probes]
    c, d = Sieve(500, 0.01), Sieve(500, 0.01)
    assert c.add_many_hashed([hash_pair(x) for x in items]) == [d.add(x) for x in items]
    assert c.to_bytes() == a.to_bytes() == d.to_bytes()


# -- BloomStage -----------------------------------------------------------------------------


@pytest.mark.parametrize(("capacity", "p"), [(1, 0.5), (1000, 0.01), (12345, 1e-4), (10**6, 1e-6)])
def test_stage_sizing_follows_the_formulas(capacity: int, p: float) -> None:
    stage = BloomStage(capacity, p)
    bits_needed = -capacity * math.log(p) / math.log(2) ** 2
    assert stage.m % 64 == 0
    assert bits_needed <= stage.m < bits_needed + 65
    assert stage.k == max(1, round(-math.log2(p)))
    assert len(stage.bits) == stage.m and stage.set_bits == 0


def test_stage_positions_are_distinct_and_in_range() -> None:
    stage = BloomStage(1000, 1e-12)  # k = 40
    for key in urls(0, 500):
        pos = stage.positions(*hash_pair(key))
        assert len(set(pos)) == stage.k and all(0 <= x < stage.m for x in pos)


def test_bits_set_are_the_kirsch_mitzenmacher_positions() -> None:
    sieve, items = Sieve(5000, 0.01), urls(0, 3000)
    sieve.add_many(items[:1500])
    for x in items[1500:]:
        sieve.add(x)
    (stage,) = sieve.stages
    expected = set()
    for x in items:
        h1, h2 = hash_pair(x)
        expected |= {(h1 + i * (h2 | 1)) % stage.m for i in range(stage.k)}
    assert set(sieve._stages[0].bits.search(1)) == expected
    assert stage.set_bits == len(expected)


def test_stage_counts_set_bits_incrementally() -> None:
    stage = BloomStage(2000, 0.01)
    new = [stage.add(x) for x in urls(0, 2000)]
    assert stage.set_bits == stage.bits.count()
    assert sum(new) >= 1990 and all(x in stage for x in urls(0, 2000))
    assert stage.false_positive_rate == pytest.approx((stage.set_bits / stage.m) ** stage.k)


# -- correctness ----------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(keys, st.integers(1, 40))
def test_no_false_negatives(items: list[str], capacity: int) -> None:
    sieve = Sieve(capacity, 0.01)
    for i in range(0, len(items), 50):
        sieve.add_many(items[i : i + 50])
    assert all(x in sieve for x in items)
    assert not any(sieve.add(x) for x in items)
    assert sieve.count <= len(set(items))


@settings(max_examples=80, deadline=None)
@given(keys, st.integers(1, 30), st.sampled_from([1.0, 1.5, 2.0]))
def test_add_many_equals_sequential_adds(items: list[str], capacity: int, growth: float) -> None:
    one, batch = Sieve(capacity, 0.05, growth=growth), Sieve(capacity, 0.05, growth=growth)
    expected = [one.add(x) for x in items]
    assert batch.add_many(items) == expected
    assert batch.to_bytes() == one.to_bytes()
    assert batch.count == one.count == sum(expected)


def test_add_many_without_numpy_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    items = urls(0, 3000) + urls(1000, 500)
    with_np = Sieve(300, 0.01)
    got = [x for i in range(0, len(items), 110) for x in with_np.add_many(items[i : i + 110])]
    monkeypatch.setattr(sieve_mod, "np", None)
    without = Sieve(300, 0.01)
    assert without.add_many(items) == got
    assert without.to_bytes() == with_np.to_bytes()


@pytest.mark.parametrize("overshoot", [1, 10, 100])
def test_false_positive_rate_stays_below_target(overshoot: int) -> None:
    p, n, probes = 0.01, 20_000, 200_000
    sieve = Sieve(n // overshoot, p)
    sieve.update(urls(0, n))
    assert sieve.false_positive_bound < p
    hits = sum(x in sieve for x in urls(10**6, probes))
    # The filter is built for < p; hits ~ Binomial(probes, rate). Exceeding probes*p would need
    # the true rate to be >= p (at rate 0.9p that is 7 standard deviations away).
    assert hits <= probes * p
    expected = probes * sieve.false_positive_estimate
    assert abs(hits - expected) <= 5 * math.sqrt(expected) + 0.1 * expected
    # stages hold C, 2C, 4C...: about log2(overshoot + 1) of them, one more if the last just filled
    assert 0 <= len(sieve.stages) - math.log2(overshoot + 1) < 2


def test_estimate_tracks_truth_up_to_capacity() -> None:
    sieve = Sieve(50_000, 1e-4)
    items, done = urls(0, 50_000), 0
    for upto in (1_000, 5_000, 25_000, 50_000):
        sieve.update(items[done:upto])
        done = upto
        assert done * (1 - 1e-3) <= sieve.count <= done
        assert abs(sieve.approx_items - done) <= 0.03 * done
    assert len(sieve.stages) == 1


# -- growth ---------------------------------------------------------------------------------


def test_one_warning_per_growth(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="crawler.sieve")
    sieve = Sieve(100, 0.01, ratio=0.5, growth=2)
    sieve.update(urls(0, 3000))
    grew = [r for r in caplog.records if r.name == "crawler.sieve"]
    assert len(sieve.stages) >= 5
    assert len(grew) == len(sieve.stages) - 1
    for i, record in enumerate(grew):
        cap, p = sieve.stage_params(i + 1)
        assert record.levelno == logging.WARNING
        msg = record.getMessage()
        assert f"stage {i} " in msg and f"stage {i + 1} " in msg
        assert f"> {sieve.stages[i].capacity} items" in msg
        assert f"capacity {cap} " in msg and f"{p:.3g}" in msg


def test_stage_rates_follow_p0_times_r_to_the_i() -> None:
    p, r, c, g = 0.02, 0.7, 200, 1.5
    sieve = Sieve(c, p, ratio=r, growth=g)
    sieve.update(urls(0, 20_000))
    stages = sieve.stages
    assert len(stages) >= 5
    for s in stages:
        assert s.error_rate == pytest.approx(p * (1 - r) * r**s.stage, rel=1e-12)
        assert s.capacity == math.ceil(c * g**s.stage)
        assert s.k == max(1, round(-math.log2(s.error_rate)))
    assert sieve.false_positive_bound == pytest.approx(sum(s.error_rate for s in stages))
    assert sum(sieve.stage_params(i)[1] for i in range(500)) < p
    assert sieve.capacity == sum(s.capacity for s in stages)


# -- persistence ----------------------------------------------------------------------------


def grown_sieve() -> Sieve:
    sieve = Sieve(300, 0.01, ratio=0.8, growth=1.5)
    sieve.update(urls(0, 4000))
    return sieve


def test_bytes_round_trip_is_bit_identical() -> None:
    sieve = grown_sieve()
    data = sieve.to_bytes()
    back = Sieve.from_bytes(data)
    assert back.to_bytes() == data
    assert back.stages == sieve.stages and back.count == sieve.count
    assert [back.stages[i].set_bits for i in range(len(back.stages))] == [
        s.bits.count() for s in back._stages
    ]
    more = urls(3000, 3000)
    assert back.add_many(more) == sieve.add_many(more)
    assert back.to_bytes() == sieve.to_bytes()


def test_file_round_trip_and_atomic_save(tmp_path: Path) -> None:
    sieve = grown_sieve()
    path = tmp_path / "seen.sieve"
    path.write_bytes(b"old")
    sieve.save(path)
    assert path.read_bytes() == sieve.to_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["seen.sieve"]
    assert Sieve.load(path).to_bytes() == sieve.to_bytes()


def test_bad_files_raise_clear_errors(tmp_path: Path) -> None:
    data = grown_sieve().to_bytes()
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x10
    cases = {
        "checksum mismatch": bytes(flipped),
        "truncated": data[: len(data) - 100],
        "header incomplete": data[:20],
        "not a Sieve file": b"PK\x03\x04" + data[4:],
        "trailing bytes": data + b"\0",
        "unsupported Sieve format version 2": data[:8] + b"\x02" + data[9:],
    }
    for message, bad in cases.items():
        with pytest.raises(SieveFormatError, match=message):
            Sieve.from_bytes(bad)
    path = tmp_path / "broken.sieve"
    path.write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match=f"{path.name}: corrupt Sieve data"):
        Sieve.load(path)
    with pytest.raises(SieveFormatError, match="not a Sieve file"):
        Sieve.from_bytes(b"")


# -- API ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": 0}, "capacity"),
        ({"capacity": 2.5}, "capacity"),
        ({"error_rate": 0.0}, "error_rate"),
        ({"error_rate": 1.0}, "error_rate"),
        ({"ratio": 0.0}, "ratio"),
        ({"ratio": 1.0}, "ratio"),
        ({"growth": 0.5}, "growth"),
        ({"growth": math.nan}, "growth"),
    ],
)
def test_constructor_validates(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Sieve(**kwargs)  # type: ignore[arg-type]


def test_figures_and_repr() -> None:
    sieve = Sieve(1000, 0.01)
    assert sieve.add("a") and not sieve.add("a") and "a" in sieve and "b" not in sieve
    assert sieve.count == len(sieve) == 1
    assert sieve.size_in_bytes == sum(s.m for s in sieve.stages) // 8
    assert 0 < sieve.false_positive_estimate < sieve.false_positive_bound
    text = repr(sieve)
    assert "count=1" in text and "stages=1" in text and "capacity=1000" in text
    assert "BloomStage(capacity=1000" in repr(sieve._stages[0])
