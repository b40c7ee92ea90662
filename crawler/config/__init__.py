"""The typed configuration: one frozen dataclass per TOML section, loaded and checked.

| module | holds |
| --- | --- |
| `checks` | The checks of a config section's values: ranges, patterns, header and proxy ... |
| `load` | Typed, frozen configuration (`Config`), loaded from TOML |
| `sections` | The config's sections: one frozen dataclass per TOML table, each field with ... |

What other folders use is exported here, imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler._exports import lazy

if TYPE_CHECKING:
    from crawler.config.load import Config, load_config

__all__ = [
    "Config",
    "load_config",
]

__getattr__ = lazy(
    __name__,
    {
        "Config": "load",
        "load_config": "load",
    },
)
