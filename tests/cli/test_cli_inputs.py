"""Hostile inputs to the `crawl` command itself: each a one-line error (exit 2) or bounded, never
a traceback or an endless wait. A symlink given to -O, names too long for the file system,
arrays nested past the recursion limit, a device as a config file, absurd Sieve and time
settings, and the start-up of --help and --version."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler.config.load import Config, load_config
from crawler.errors import ConfigError

CRAWL = [sys.executable, "-m", "crawler.cli"]
LONG = "a" * 300  # past NAME_MAX (255 bytes) of every Linux file system


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CRAWL, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def one_line_error(proc: subprocess.CompletedProcess[str], starts: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"crawl: error: {starts}"), proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr


# -- -O refuses what -o refuses ------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-o", "-O"])
def test_big_o_through_a_symlink_empties_no_file_that_is_not_an_output(
    tmp_path: Path, flag: str
) -> None:
    """Before: -O followed a symlink to a file of notes and overwrote it (-o refused it)."""
    victim = tmp_path / "notes.txt"
    victim.write_text("precious\n")
    (tmp_path / "out.jsonl").symlink_to(victim)
    proc = run("--demo", "-q", flag, "out.jsonl", cwd=tmp_path)
    one_line_error(proc, f"{flag} out.jsonl: not a JSON Lines output of the crawler")
    assert victim.read_text() == "precious\n"


# -- names longer than the file system takes -----------------------------------------------------


@pytest.mark.parametrize("option", ["-o", "-O", "--state", "--warc", "--stats"])
@pytest.mark.parametrize("where", [LONG, f"{LONG}/x", f"missing/{LONG}"])
def test_a_name_too_long_is_a_one_line_error_before_the_crawl(
    tmp_path: Path, option: str, where: str
) -> None:
    """Before: an OSError traceback (ENAMETOOLONG, exit 1)."""
    proc = run("--demo", option, where, cwd=tmp_path)
    one_line_error(proc, f"{option} {where}: ")
    assert "(ENAMETOOLONG)" in proc.stderr and "demo:" not in proc.stderr  # nothing crawled
    assert list(tmp_path.iterdir()) == []  # nothing created


# -- the config: nested arrays, devices, sizes ---------------------------------------------------


def test_arrays_nested_past_the_recursion_limit_are_a_config_error(tmp_path: Path) -> None:
    """Before: a RecursionError traceback, from -s and from a config file alike."""
    deep = "[" * 600
    path = tmp_path / "deep.toml"
    path.write_text(f"[scope]\nexclude = {deep}\n")
    with pytest.raises(ConfigError, match="not valid TOML: arrays or tables nested too deeply"):
        load_config(path)
    for setting in (f"crawl.max_pages={deep}", f"scope.exclude={deep}"):
        one_line_error(run("--demo", "-s", setting), f"-s {setting}: ")
    one_line_error(run("--demo", "-s", "politeness.delay=1" + "0" * 5000), "-s politeness.delay")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_a_fifo_or_a_huge_file_is_not_read_as_a_config(tmp_path: Path) -> None:
    """Before: --config /dev/zero read until a MemoryError traceback; a FIFO waited forever."""
    with pytest.raises(ConfigError, match="/dev/zero: cannot read config: not a regular file"):
        load_config("/dev/zero")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(fifo)  # opened without waiting for a writer
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * ((4 << 20) + 1))  # MAX_CONFIG_SIZE, and a byte
    with pytest.raises(ConfigError, match="larger than 4 MiB"):
        load_config(big)
    one_line_error(run("--demo", "--config", "/dev/zero"), "/dev/zero: cannot read config")


# -- settings whose memory or wait has no bound --------------------------------------------------


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("sieve", "growth", 10**12, "growth: must be <= 16"),
        ("sieve", "ratio", 1e-300, "ratio: must be between 0.1 and 0.99"),
        ("sieve", "error_rate", 1e-300, "error_rate: must be between 1e-12 and 1"),
        ("politeness", "delay", 1e308, "delay: must be <= 86,400 seconds (a day)"),
        ("politeness", "max_retry_after", 1e9, "max_retry_after: must be <= 86,400"),
        ("politeness", "backoff_max", 86_401, "backoff_max: must be <= 86,400"),
        ("fetch", "read_timeout", 1e12, "read_timeout: must be <= 86,400"),
        ("fetch", "outage_give_up", 1e12, "outage_give_up: must be <= 86,400"),
        ("render", "timeout", 1e12, "timeout: must be <= 86,400"),
        ("state", "checkpoint_interval", 1e12, "checkpoint_interval: must be <= 86,400"),
        ("politeness", "delay", float("nan"), "delay: must be a finite number"),
        ("fetch", "connect_timeout", float("inf"), "connect_timeout: must be a finite number"),
        ("politeness", "delay", 10**400, "delay: must be a finite number"),
    ],
)
def test_settings_without_a_sane_bound_are_refused(
    section: str, key: str, value: object, message: str
) -> None:
    """Before: growth 10^12 was a MemoryError mid-crawl ("no seed could be fetched"), a delay of
    1e308 s waited forever, an integer too large for a float an OverflowError traceback."""
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Config().override(section, **{key: value})


def test_the_bounds_themselves_are_accepted() -> None:
    config = Config().override("sieve", growth=16, ratio=0.99, error_rate=1e-12)
    assert config.sieve.growth == 16
    assert Config().override("politeness", delay=86_400).politeness.delay == 86_400.0


def test_a_delay_of_1e308_is_a_one_line_error() -> None:
    one_line_error(run("--demo", "--delay", "1e308"), "--delay: must be <= 86,400 seconds")
    one_line_error(run("--demo", "-s", "sieve.growth=1000000000000"), "-s sieve.growth=")


# -- errors are not chained to the missing uvloop; --help and --version load nothing -------------


def test_an_error_of_the_crawl_is_not_chained_to_a_missing_uvloop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: every traceback began with "No module named 'uvloop'"."""
    from crawler.cli.main import run_loop

    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError

    async def fails() -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug") as info:
        run_loop(fails())
    assert info.value.__context__ is None and info.value.__cause__ is None


# what --help and --version must not import: the crawl's engine and everything under it
CRAWL_MODULES = ("asyncio", "aiohttp", "crawler.engine.crawler", "crawler.render",
                 "crawler.parse.extract", "crawler.config.load")  # fmt: skip


@pytest.mark.parametrize("flag", ["--help", "--version", None])
def test_help_and_version_import_nothing_of_the_crawl(flag: str | None) -> None:
    """Before: --help loaded 419 modules (aiohttp, the engine, rendering, page text)."""
    if flag is None:  # building the parser alone
        code = "from crawler.cli.args import build_parser\nbuild_parser()\n"
    else:
        code = (f"import sys\nsys.argv = ['crawl', {flag!r}]\n"
                "from crawler.cli.command import entry\ntry:\n    entry()\n"
                "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n")  # fmt: skip
    probe = (
        f"{code}import sys\nprint(json.dumps([m for m in {CRAWL_MODULES!r} if m in sys.modules]))"
    )
    proc = subprocess.run([sys.executable, "-c", "import json\n" + probe], capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    assert json.loads(proc.stdout.splitlines()[-1]) == []
    if flag == "--help":
        assert "usage: crawl" in proc.stdout


# -- a full disk: the count said is the lines in the file ----------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 KiB tmpfs, filled by a demo crawl's results; mounting needs root on Linux (CI)."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root on Linux")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(mnt)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow
@pytest.mark.parametrize("flags", [(), ("--state", "state")])
def test_a_full_disk_says_how_many_whole_lines_the_output_holds(
    tmp_path: Path, small_disk: Path, flags: tuple[str, ...]
) -> None:
    """Before: "234 results written before it" where the file held 215 whole lines and a
    partial one."""
    out = small_disk / "out.jsonl"
    proc = run("--demo", "-q", "-o", str(out), *flags, cwd=tmp_path)
    one_line_error(proc, f"{out}: cannot write: No space left on device (ENOSPC) (")
    said = re.search(r"\(([\d,]+) results written, each on a whole line", proc.stderr)
    assert said is not None, proc.stderr
    data = out.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == int(said[1].replace(",", "")) > 0
    for line in data.splitlines():
        json.loads(line)  # every line whole
