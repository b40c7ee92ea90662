"""Keys and helpers for the Sieve family's tests (no tests here; named to sit beside them)."""

from __future__ import annotations

from crawler.sieve import FILTER_KINDS
from tests.support.sieve import GROWING

assert set(GROWING) < set(FILTER_KINDS)
