"""Lazy exports for the folders' ``__init__`` (PEP 562): each name is imported from its module
when first used, so importing a folder, or a module of it, costs nothing more (the `crawl`
command's start-up imports only what a crawl uses)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy"]


def lazy(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for `package` that imports ``package.MODULE`` for each name of
    `names` (name -> MODULE) on its first access."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
