"""``[[extract]]`` rules in a config: loaded and checked (a selector lexbor refuses, a missing
key, a duplicate name, a bad attr), the error naming the rule; a rule built in Python is checked
by the Crawler."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from crawler.config.load import Config, config_from_mapping, toml_loads
from crawler.config.sections import ExtractRule
from crawler.engine.crawler import Crawler
from crawler.errors import ConfigError

GOOD = """
[output]
meta = true

[[extract]]
name = "headings"
css = "h2, h3"
all = true

[[extract]]
name = "next"
css = 'a[rel~="next"]'
attr = "href"
"""


def load(text: str) -> Config:
    return config_from_mapping(toml_loads(text), "crawl.toml")


def test_rules_load() -> None:
    config = load(GOOD)
    assert config.output.meta is True
    assert config.extract == (
        ExtractRule("headings", "h2, h3", all=True),
        ExtractRule("next", 'a[rel~="next"]', attr="href"),
    )


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            'name = "price"\ncss = "span:price"',
            "crawl.toml: [[extract]] #1 ('price') css: 'span:price' is not a CSS selector lexbor",
        ),
        ('name = "price"\ncss = "  "', "[[extract]] #1 ('price') css: '  ' is an empty selector"),
        ('name = "price"', "crawl.toml: [[extract]] #1 ('price'): missing key 'css'"),
        ('css = "p"', "crawl.toml: [[extract]] #1: missing key 'name'"),
        ('name = " "\ncss = "p"', "[[extract]] #1 (' ') name: must not be blank"),
        ('name = "p"\ncss = "p"\nattr = "a b"', "[[extract]] #1 ('p') attr: must be 'text'"),
        ('name = "p"\ncss = "p"\nall = "yes"', "[[extract]] #1 ('p') all: expected bool"),
        ('name = "p"\ncss = "p"\nfirst = true', "[[extract]] #1 ('p'): unknown key 'first'"),
    ],
)
def test_a_bad_rule_is_refused_naming_it(rule: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(f"[[extract]]\n{rule}\n")
    assert message in str(err.value)


def test_duplicate_names_are_refused() -> None:
    text = '[[extract]]\nname = "a"\ncss = "p"\n[[extract]]\nname = "a"\ncss = "h1"\n'
    with pytest.raises(ConfigError, match=r"#2 \('a'\) name: 'a' is the name of an earlier"):
        load(text)


def test_extract_must_be_an_array_of_tables() -> None:
    with pytest.raises(ConfigError, match=r"extract must be an array of tables"):
        load('[extract]\nname = "a"\n')


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ((ExtractRule("a", "p["),), r"\[\[extract\]\] #1 \('a'\) css: 'p\[' is not a CSS"),
        ((ExtractRule("a", "p"), ExtractRule("a", "h1")), r"#2 \('a'\) name: 'a' is the name"),
        (("p",), r"extract #1: must be an ExtractRule, got str"),
    ],
)
def test_the_crawler_checks_rules_built_in_python(rules: tuple[object, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Crawler(Config(extract=rules))  # type: ignore[arg-type]


def test_config_tomls_example_loads_and_names_every_key() -> None:
    text = (Path(__file__).resolve().parents[2] / "config.toml").read_text()
    example = text.split("# [[extract]]\n", 1)[1].split("\n\n", 1)[0]
    rules = "[[extract]]\n" + "\n".join(
        line[2:] for line in example.splitlines() if re.match(r"# (\w+ = |\[\[extract\]\])", line)
    )
    config = load(rules)
    assert [rule.name for rule in config.extract] == ["price", "next"]
    described = text.split("# Field rules", 1)[1].split("# [[extract]]", 1)[0]
    for field in dataclasses.fields(ExtractRule):
        assert f"`{field.name}" in described, field.name
