"""`crawl -s SECTION.KEY=VALUE`: any config key from the command line (Scrapy's `-s`).

The value is read as a TOML value when it parses as one (`8`, `true`, `0.5`, `["a", "b"]`,
`"quoted"`), else taken as the string written (`-s crawl.user_agent=mybot/1.0`); a string key
always takes the text written, and a list key given one plain string gets a one-item list
(`-s scope.exclude=/private/`). Every key is
checked as a config file's is: an unknown section or key is refused by name with the known ones
(and the closest, for a typo), a value of the wrong type names the `-s` that gave it (a bool:
``true`` or ``false``). A key without its section (`-s max_pages=5`) is refused naming the full
key when one section has it. Settings given with `-s` go over the config file; the dedicated
flags (`--max-pages`, ...) go over both.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
import typing
from typing import Any

from crawler.config.load import Config, toml_loads
from crawler.errors import ConfigError

__all__ = ["apply_settings", "parse_setting"]


def parse_setting(text: str) -> tuple[str, str, Any]:
    """(section, key, value) of one `SECTION.KEY=VALUE`; a ConfigError when it is not that."""
    name, eq, raw = text.partition("=")
    section, dot, key = name.strip().partition(".")
    if not (eq and dot and section and key):
        hint = _full_key(name.strip(), raw) if eq and not dot else ""
        raise ConfigError(f"-s {text}: expected SECTION.KEY=VALUE "
                          f"({hint or 'e.g. -s dedup.enabled=true'})")  # fmt: skip
    try:
        value = toml_loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:  # (nested too deeply too: a string key takes it as written)
        value = raw
    return section, key.strip(), value


def apply_settings(config: Config, settings: list[str]) -> Config:
    """`config` with every `-s` setting put over it (the last of one key wins)."""
    tables: dict[str, dict[str, tuple[str, Any]]] = {}
    for text in settings:
        section, key, value = parse_setting(text)
        tables.setdefault(section, {})[key] = (text, value)
    for section, keys in tables.items():
        current = _section(config, section, next(iter(keys.values()))[0])
        hints = typing.get_type_hints(type(current))
        values = {}
        for key, (text, value) in keys.items():
            if key not in hints:
                known = ", ".join(sorted(hints))
                close = _closest(key, list(hints))
                mean = f"did you mean {section}.{close}? " if close else ""
                raise ConfigError(f"-s {text}: unknown key {key!r} in [{section}] "
                                  f"({mean}known: {known})")  # fmt: skip
            hint = hints[key]
            if hint is bool and not isinstance(value, bool):
                raise ConfigError(f"-s {text}: expected true or false, got {value!r}")
            if hint in (str, str | None) and not isinstance(value, str):
                value = text.partition("=")[2]  # a user agent "2.0" is the string written
            elif isinstance(value, str) and typing.get_origin(hint) is tuple:
                value = [value]
            values[key] = value
        try:
            config = config.override(section, **values)
        except ConfigError as exc:
            # "override [crawl] max_pages: ..." -> "-s crawl.max_pages=x: ..."
            message = str(exc)
            for key, (text, _) in keys.items():
                prefix = f"override [{section}] {key}"
                if message.startswith(prefix):
                    message = f"-s {text}" + message[len(prefix) :]
                    break
            raise ConfigError(message) from None
    return config


def _section(config: Config, section: str, text: str) -> Any:
    current = getattr(config, section, None)
    if section == "hosts":
        raise ConfigError(f"-s {text}: [[hosts]] rules are set in a --config file only")
    if not dataclasses.is_dataclass(current):
        names = sorted(f.name for f in dataclasses.fields(config) if f.name != "hosts")
        close = _closest(section, names)
        mean = f"did you mean [{close}]? " if close else ""
        raise ConfigError(f"-s {text}: unknown section {section!r} ({mean}known: "
                          f"{', '.join(names)})")  # fmt: skip
    return current


def _keys() -> dict[str, list[str]]:
    """Each config key's name -> the sections that have it ([[hosts]] left out)."""
    sections: dict[str, list[str]] = {}
    for field in dataclasses.fields(Config):
        if field.name == "hosts":
            continue
        for key in typing.get_type_hints(type(getattr(Config(), field.name))):
            sections.setdefault(key, []).append(field.name)
    return sections


def _full_key(key: str, raw: str) -> str:
    """A key given without its section: the `-s` with the full key when one section has it
    (or the closest key, for a typo), else the sections to choose from ("" when none)."""
    keys = _keys()
    sections = keys.get(key)
    if sections is None:
        close = _closest(key, list(keys))
        if close is None:
            return ""
        key, sections = close, keys[close]
    if len(sections) == 1:
        return f"did you mean -s {sections[0]}.{key}={raw}?"
    return f"{key!r} is a key of " + ", ".join(f"[{s}]" for s in sections) + ": say which"


def _closest(word: str, choices: list[str]) -> str | None:
    """The choice closest to a mistyped `word` (difflib), or None when none is close."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    return close[0] if close else None
