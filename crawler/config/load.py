"""Typed, frozen configuration (`Config`), loaded from TOML.

`Config` holds one frozen dataclass per section (`crawler.config.sections`, where every default
is), and `[[hosts]]` rules. `config.toml` at the repository root documents every setting with
its default; the defaults are the same values (a test keeps the two in step). Unknown sections
or keys and values of the wrong type are `ConfigError`s that name the file and the key; each
section's values are checked by `crawler.config.checks`.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawler.config.checks import check_section
from crawler.config.sections import (
    ClusterConfig,
    CrawlConfig,
    DedupConfig,
    ExtractRule,
    FetchConfig,
    FocusConfig,
    HostConfig,
    MetricsConfig,
    OutputConfig,
    ParseConfig,
    PolitenessConfig,
    RenderConfig,
    ScopeConfig,
    SecurityConfig,
    SieveConfig,
    StateConfig,
    UrlsConfig,
)
from crawler.errors import ConfigError
from crawler.fetch.steering import shadowed

__all__ = ["MAX_CONFIG_SIZE", "Config", "config_from_mapping", "load_config", "toml_loads"]


@dataclass(frozen=True, slots=True)
class Config:
    crawl: CrawlConfig = field(default_factory=CrawlConfig)
    politeness: PolitenessConfig = field(default_factory=PolitenessConfig)
    fetch: FetchConfig = field(default_factory=FetchConfig)
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    sieve: SieveConfig = field(default_factory=SieveConfig)
    urls: UrlsConfig = field(default_factory=UrlsConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    state: StateConfig = field(default_factory=StateConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    hosts: tuple[HostConfig, ...] = ()
    focus: FocusConfig = field(default_factory=FocusConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    render: RenderConfig = field(default_factory=RenderConfig)
    parse: ParseConfig = field(default_factory=ParseConfig)
    extract: tuple[ExtractRule, ...] = ()  # [[extract]] rules: each HTML result's fields
    metrics: MetricsConfig = field(default_factory=MetricsConfig)

    def override(self, section: str, **values: Any) -> Config:
        """A copy with some keys of one section replaced (used for CLI flags); validated."""
        current = getattr(self, section, None)
        if not dataclasses.is_dataclass(current):  # a typo, or `hosts` (a tuple of rules)
            tables = ("hosts", "extract")  # arrays of rules
            known = ", ".join(
                sorted(f.name for f in dataclasses.fields(self) if f.name not in tables)
            )
            raise ConfigError(f"override: unknown section {section!r} (known: {known})")
        checked = _build(type(current), {**_as_table(current), **values}, f"override [{section}]")
        return dataclasses.replace(self, **{section: checked})


def load_config(path: str | Path | None = None) -> Config:
    """Load a TOML config file; `None` gives the defaults. Raises ConfigError on any problem."""
    if path is None:
        return Config()
    where = str(path)
    try:
        raw = _read_bounded(path, where)
        # TOML is UTF-8; a BOM (Windows editors write one) is skipped
        data = toml_loads(raw.decode("utf-8-sig"))
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read config: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not a TOML file: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML: {exc}") from None
    return config_from_mapping(data, where)


MAX_CONFIG_SIZE = 4 << 20  # bytes: ~100x a config with a thousand [[hosts]] rules


def _read_bounded(path: str | Path, where: str) -> bytes:
    """The bytes of a regular file of at most `MAX_CONFIG_SIZE`: a device (/dev/zero), a FIFO
    (opened without waiting for a writer) or a directory is refused, never read without end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError(f"{where}: cannot read config: is a directory")
        if not stat.S_ISREG(mode):
            raise ConfigError(f"{where}: cannot read config: not a regular file "
                              "(a device, FIFO or socket)")  # fmt: skip
        raw = fh.read(MAX_CONFIG_SIZE + 1)
    if len(raw) > MAX_CONFIG_SIZE:
        raise ConfigError(f"{where}: cannot read config: larger than "
                          f"{MAX_CONFIG_SIZE >> 20} MiB")  # fmt: skip
    return raw


def toml_loads(text: str) -> dict[str, Any]:
    """`tomllib.loads`, with arrays or tables nested deeper than the interpreter's recursion
    limit (`[[[[...`) or an integer past int()'s 4,300 digits a TOMLDecodeError like any other
    malformed TOML, not a RecursionError or a ValueError."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except RecursionError:
        raise tomllib.TOMLDecodeError("arrays or tables nested too deeply") from None
    except ValueError as exc:  # int("1" * 5000) in the parser
        raise tomllib.TOMLDecodeError(f"a number too long ({exc})") from None


def config_from_mapping(data: Mapping[str, Any], where: str = "<config>") -> Config:
    """Build a Config from parsed TOML, checking every section, key and type."""
    sections = {f.name: f for f in dataclasses.fields(Config)}
    built: dict[str, Any] = {}
    for name, table in data.items():
        if name == "hosts":
            built[name] = _build_hosts(table, where)
            continue
        if name == "extract":
            built[name] = _build_extract(table, where)
            continue
        if name not in sections:
            if not isinstance(table, Mapping | list):
                raise ConfigError(_stray_key(name, where))
            known = ", ".join(sorted(sections))
            raise ConfigError(f"{where}: unknown section [{name}] (known: {known})")
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: [{name}] must be a table")
        cls = _field_types(Config)[name]
        built[name] = _build(cls, table, f"{where}: [{name}]")
    return Config(**built)


def _build_hosts(rules: Any, where: str) -> tuple[HostConfig, ...]:
    """The ``[[hosts]]`` array of tables, each rule checked like a section."""
    if not isinstance(rules, list) or not all(isinstance(r, Mapping) for r in rules):
        raise ConfigError(f"{where}: hosts must be an array of tables ([[hosts]])")
    out = []
    for i, table in enumerate(rules, 1):
        here = f"{where}: [[hosts]] #{i}"
        if "match" not in table:
            raise ConfigError(f"{here}: missing key 'match' (a host glob, e.g. '*.example.org')")
        out.append(_build(HostConfig, table, here))
    problem = shadowed([rule.match for rule in out])
    if problem is not None:
        raise ConfigError(f"{where}: [[hosts]] {problem}")
    return tuple(out)


def _build_extract(rules: Any, where: str) -> tuple[ExtractRule, ...]:
    """The ``[[extract]]`` array of tables, each rule checked like a section (its selector by
    lexbor), their names distinct."""
    if not isinstance(rules, list) or not all(isinstance(r, Mapping) for r in rules):
        raise ConfigError(f"{where}: extract must be an array of tables ([[extract]])")
    out: list[ExtractRule] = []
    for i, table in enumerate(rules, 1):
        name = table.get("name")
        here = f"{where}: [[extract]] #{i}" + (f" ({name!r})" if isinstance(name, str) else "")
        for key in ("name", "css"):
            if key not in table:
                raise ConfigError(f"{here}: missing key {key!r}")
        rule = _build(ExtractRule, table, here)
        if any(other.name == rule.name for other in out):
            raise ConfigError(f"{here} name: {rule.name!r} is the name of an earlier rule")
        out.append(rule)
    return tuple(out)


def _stray_key(name: str, where: str) -> str:
    """The error for a key written above every section header (a `key = value` at top level)."""
    homes = [f"[{section}]" for section, hint in _field_types(Config).items()
             if isinstance(hint, type) and dataclasses.is_dataclass(hint)
             and name in _field_types(hint)]  # fmt: skip
    if homes:
        return (f"{where}: top-level key {name!r} must be inside a section, "
                f"e.g. {' or '.join(homes)}")  # fmt: skip
    sections = [f"[[{f.name}]]" if f.name in ("hosts", "extract") else f"[{f.name}]"
                for f in dataclasses.fields(Config)]  # fmt: skip
    return (f"{where}: top-level key {name!r} is not a setting; settings go inside a section "
            f"({', '.join(sections)})")  # fmt: skip


def _as_table(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(cls: type[Any], table: Mapping[str, Any], where: str) -> Any:
    types_ = _field_types(cls)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in types_:
            known = ", ".join(sorted(types_))
            raise ConfigError(f"{where}: unknown key {key!r} (known: {known})")
        values[key] = _coerce(value, types_[key], f"{where} {key}")
    obj = cls(**values)
    check_section(obj, where)
    return obj


_SECRET_KEYS = frozenset({"headers", "auth", "proxy"})


def _coerce(value: Any, hint: Any, where: str) -> Any:
    try:
        return _coerce_value(value, hint, where)
    except ConfigError as exc:
        if where.rsplit(" ", 1)[-1] not in _SECRET_KEYS:
            raise
        # never echo a value that may hold a credential
        message = str(exc).split(", got ", 1)[0]
        raise ConfigError(f"{message}, got {type(value).__name__}") from None


def _coerce_value(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:  # an integer of hundreds of digits
                raise ConfigError(f"{where}: must be a finite number, got an integer of "
                                  f"{int(value).bit_length()} bits") from None  # fmt: skip
    elif hint is str:
        if isinstance(value, str):
            return value
    elif origin is tuple:
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    elif origin is dict:
        if isinstance(value, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            return dict(value)
        raise ConfigError(f"{where}: expected a table of strings, got {value!r}")
    elif isinstance(hint, types.UnionType):  # `X | None`: TOML has no null, so a given value is X
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _coerce_value(value, inner, where)
    name = getattr(hint, "__name__", str(hint))
    raise ConfigError(f"{where}: expected {name}, got {type(value).__name__} {value!r}")
