"""The family's file format: every kind round-trips; truncated or corrupt data is refused."""

from __future__ import annotations

import json
import struct

import pytest

from crawler.sieve import FILTER_KINDS, SieveFormatError, filter_from_bytes, make_filter
from crawler.sieve.kinds import codec
from tests.support.sieve import add_in_pages, urls


def _filled(kind: str) -> bytes:
    f = make_filter(kind, capacity=300, error_rate=0.01)
    add_in_pages(f, urls(0, 1000))  # past capacity: several stages where the kind grows
    return f.to_bytes()


@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_round_trip_keeps_answers_and_state(kind: str) -> None:
    f = make_filter(kind, capacity=300, error_rate=0.01)
    add_in_pages(f, urls(0, 1000))
    g = filter_from_bytes(f.to_bytes())
    assert g.kind == kind and g.to_bytes() == f.to_bytes() and len(g) == len(f)
    assert g.size_in_bytes == f.size_in_bytes
    assert g.false_positive_bound == f.false_positive_bound
    probes = urls(0, 1000) + urls(50_000, 1000)
    assert [x in g for x in probes] == [x in f for x in probes]
    more = urls(2000, 500)  # both go on the same way (the stable filter's decrements too)
    assert g.add_many(more) == f.add_many(more) and g.to_bytes() == f.to_bytes()


@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_truncated_data_is_refused(kind: str) -> None:
    data = _filled(kind)
    for cut in (0, 5, 15, 20, 40, len(data) // 2, len(data) - 17, len(data) - 1):
        with pytest.raises(SieveFormatError):
            filter_from_bytes(data[:cut])
    with pytest.raises(SieveFormatError):
        filter_from_bytes(data + b"\x00")


@pytest.mark.parametrize("kind", FILTER_KINDS)
def test_a_flipped_bit_anywhere_is_refused(kind: str) -> None:
    data = _filled(kind)
    for at in (0, 9, 12, 30, len(data) // 3, len(data) - 20, len(data) - 1):
        bad = bytearray(data)
        bad[at] ^= 0x10
        with pytest.raises(SieveFormatError):
            filter_from_bytes(bytes(bad))


def _rewrite(data: bytes, edit: object) -> bytes:
    """Decode a version-2 file, change its parameters, encode it again (valid checksum)."""
    kind, params, arrays = codec.decode(data)
    edit(params)  # type: ignore[operator]
    return codec.encode(kind, params, arrays)


@pytest.mark.parametrize(
    ("kind", "edit", "message"),
    [
        ("blocked", lambda p: p["stages"][0].update(k=3), "do not match"),
        ("counting", lambda p: p.update(error_rate=2.0), "error_rate"),
        ("cuckoo", lambda p: p["stages"][0].update(buckets=7), "do not match"),
        ("cuckoo", lambda p: p["stages"][0].update(stash=[[0, 0, 1]]), "fp"),
        ("cuckoo", lambda p: p["stages"][0].update(stash=[[0, 1, 0]]), "stash count"),
        ("multilayer", lambda p: p["options"].update(layers=3), "do not match"),
        ("stable", lambda p: p.update(m=64), "shape"),
        ("bloom", lambda p: p.update(stages=[]), "stage table"),
        ("bloom", lambda p: p.pop("len"), "len"),
    ],
)
def test_valid_checksum_but_wrong_parameters_is_refused(
    kind: str, edit: object, message: str
) -> None:
    with pytest.raises(SieveFormatError, match=message):
        filter_from_bytes(_rewrite(_filled(kind), edit))


def test_other_programs_and_versions_are_refused() -> None:
    with pytest.raises(SieveFormatError, match="bad magic"):
        filter_from_bytes(b"PK\x03\x04" + bytes(60))
    data = bytearray(_filled("cuckoo"))
    struct.pack_into("<H", data, 8, 9)
    with pytest.raises(SieveFormatError, match="version"):
        filter_from_bytes(bytes(data))
    unknown = codec.encode("bitmap", {"capacity": 1}, [])
    with pytest.raises(SieveFormatError, match="unknown filter kind 'bitmap'"):
        filter_from_bytes(unknown)
    with pytest.raises(SieveFormatError, match="not an object"):
        filter_from_bytes(codec.encode("bloom", json.loads("[1]"), []))  # type: ignore[arg-type]


def test_a_cuckoo_file_with_an_earlier_victim_reads_it_as_a_stashed_entry() -> None:
    """An earlier version saved one `victim` (bucket, fingerprint) instead of the stash."""
    f = make_filter("cuckoo", capacity=100, error_rate=0.01)
    hot = urls(0, 1)[0]
    for _ in range(9):  # its two buckets hold 8: the 9th waits in the stash
        f.add(hot)
    kind, params, arrays = codec.decode(f.to_bytes())
    ((low, fp, n),) = params["stages"][0].pop("stash")
    assert n == 1
    params["stages"][0]["victim"] = [low, fp]
    g = filter_from_bytes(codec.encode(kind, params, arrays))
    assert g.to_bytes() == f.to_bytes()
    assert all(g.remove(hot) for _ in range(9)) and hot not in g
