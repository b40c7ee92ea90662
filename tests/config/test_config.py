from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from crawler.config.load import Config, config_from_mapping, load_config
from crawler.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_documented_config_equals_defaults() -> None:
    # config.toml documents every setting with its default: loading it must give Config().
    assert load_config(ROOT / "config.toml") == Config()


def test_documented_config_lists_every_key() -> None:
    import tomllib

    data = tomllib.loads((ROOT / "config.toml").read_text())
    for section in dataclasses.fields(Config):
        if section.name in ("hosts", "extract"):  # none by default: their examples are checked
            continue  # by test_steering and test_extract_config
        keys = {f.name for f in dataclasses.fields(getattr(Config(), section.name))}
        assert set(data[section.name]) == keys, section.name


def test_no_file_gives_defaults() -> None:
    assert load_config(None) == Config()


def test_partial_file_overrides_only_its_keys(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[crawl]\nconcurrency = 3\n[fetch]\nresolve = { "a.test" = "127.0.0.1" }\n')
    config = load_config(path)
    assert config.crawl.concurrency == 3
    assert config.crawl.max_depth == Config().crawl.max_depth
    assert config.fetch.resolve == {"a.test": "127.0.0.1"}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[crawl]\nconcurrenc = 3\n", "unknown key 'concurrenc'"),
        ("[crawling]\n", "unknown section [crawling]"),
        ("[crawl]\nconcurrency = 'many'\n", "[crawl] concurrency: expected int"),
        ("[crawl]\nconcurrency = true\n", "[crawl] concurrency: expected int"),
        ("[crawl]\nconcurrency = 0\n", "concurrency: must be >= 1"),
        ("[politeness]\ndelay = -1\n", "delay: must be >= 0"),
        ("[sieve]\nerror_rate = 1.5\n", "error_rate: must be between 1e-12 and 1"),
        ("[scope]\ninclude = ['(']\n", "include: bad regex"),
        ("[scope]\nallowed_domains = 'a.test'\n", "expected a list of strings"),
        ("[fetch]\nresolve = { a = 1 }\n", "expected a table of strings"),
        ("[crawl\n", "not valid TOML"),
        ("[security]\nallow_networks = ['10.0.0.1/8']\n", "allow_networks: '10.0.0.1/8'"),
        ("[sieve]\nconfirm = 'maybe'\n", "confirm: must be one of"),
        ("crawl = 3\n", "[crawl] must be a table"),
        # an address that is not one failed every fetch of the host as "protocol: ValueError"
        ("[fetch]\nresolve = { 'a.test' = 'localhost' }\n", "'a.test' maps to 'localhost', which"),
        ("[fetch]\nresolve = { 'a.test' = '127.0.0.1:80' }\n", "which is not an IP address"),
    ],
)
def test_bad_config_names_file_and_key(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "nope.toml")


def test_int_accepted_for_float() -> None:
    assert config_from_mapping({"politeness": {"delay": 2}}).politeness.delay == 2.0


def test_override_is_validated() -> None:
    config = Config().override("crawl", max_pages=5)
    assert config.crawl.max_pages == 5
    with pytest.raises(ConfigError, match="max_pages"):
        Config().override("crawl", max_pages=-1)


def test_override_of_an_unknown_section_is_a_config_error() -> None:
    # a typo in a library user's section name: a ConfigError naming it, not an AttributeError
    with pytest.raises(ConfigError, match=r"unknown section 'crawls' \(known: cluster, crawl,"):
        Config().override("crawls", max_pages=5)
    with pytest.raises(ConfigError, match="unknown section 'hosts'"):
        Config().override("hosts", match="a.test")


def test_resolve_takes_ipv4_and_ipv6_addresses() -> None:
    resolve = {"a.test": "127.0.0.1", "b.test": "::1"}
    assert config_from_mapping({"fetch": {"resolve": resolve}}).fetch.resolve == resolve


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().crawl.concurrency = 2  # type: ignore[misc]
