"""Helpers shared by several test modules (moved from test_sieve_family_keys.py)."""

from __future__ import annotations

GROWING = ("scalable", "blocked", "multilayer", "counting", "cuckoo")


DELETING = ("counting", "cuckoo")


def urls(start: int, n: int) -> list[str]:
    """`n` distinct URLs with hosts and directories repeating, as in a crawl."""
    return [
        f"https://h{i % 97}.test/d{i % 13}/s{i % 7}/p-{i}.html?v={i % 5}"
        for i in range(start, start + n)
    ]


def add_in_pages(f: object, keys: list[str], page: int = 110) -> list[bool]:
    """`f.add_many` over pages of `page` keys, as the engine feeds a page's links."""
    out: list[bool] = []
    for i in range(0, len(keys), page):
        out += f.add_many(keys[i : i + page])  # type: ignore[attr-defined]
    return out
