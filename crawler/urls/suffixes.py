"""The Public Suffix List, as the ``publicsuffixlist`` package ships it (nothing is downloaded).

Two uses: the cookie jar refuses a cookie set for a public suffix (``co.uk``, ``github.io``:
`is_public_suffix`), and the default scope follows a seed's redirect to another host of the
same site (``example.org`` to ``www.example.org``: `registrable_domain`). The list is loaded
(~30 ms) the first time either asks; unknown top-level names (``test``, ``internal``) are
public suffixes by the list's default rule, so ``a.test`` is a site of its own.
"""

from __future__ import annotations

import functools
from typing import Final

from publicsuffixlist import PublicSuffixList

__all__ = ["is_public_suffix", "registrable_domain"]

_MEMO: Final = 4096


@functools.cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()


@functools.lru_cache(maxsize=_MEMO)
def is_public_suffix(domain: str) -> bool:
    """Is `domain` (lower-case, no leading dot) a public suffix (``com``, ``co.uk``, ``test``)?"""
    return bool(_suffixes().is_public(domain))


@functools.lru_cache(maxsize=_MEMO)
def registrable_domain(host: str) -> str | None:
    """The site of `host` (a lower-case, IDNA-encoded host name): its public suffix and one
    label more (``www.bbc.co.uk`` -> ``bbc.co.uk``, ``a.github.io`` -> ``a.github.io``); None
    for an IP address and for a public suffix itself (``localhost``, ``co.uk``)."""
    host = host.rstrip(".")
    if not host or host.startswith("[") or host.replace(".", "").isdigit():
        return None
    site = _suffixes().privatesuffix(host)
    return str(site) if site else None
