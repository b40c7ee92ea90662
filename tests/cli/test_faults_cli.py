"""Faults a user throws at the `crawl` command (second fault audit): seeds files in odd
encodings or shapes, config files that are not UTF-8, outputs that cannot be written (a full
disk: `/dev/full`), and Ctrl-C before the crawl has set its own handler."""

from __future__ import annotations

import asyncio
import codecs
import gzip
import io
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web

from crawler.cli.run import run
from crawler.cli.seeds import collect_seeds
from crawler.config.load import Config, load_config
from crawler.errors import ConfigError, OutputError, SeedError
from crawler.output.jsonl import open_output
from crawler.state.crawlstate import CrawlState
from crawler.state.db import FILENAME
from tests.support.server import serve

SEEDS = ["http://a.test/", "http://b.test/x"]
FULL = "/dev/full"  # every write fails with ENOSPC (Linux)


# -- seeds files -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        codecs.BOM_UTF8 + b"http://a.test/\nhttp://b.test/x\n",  # Notepad's "UTF-8"
        "http://a.test/\nhttp://b.test/x\n".encode("utf-16"),  # Notepad's "Unicode" (LE + BOM)
        codecs.BOM_UTF16_BE + "http://a.test/\nhttp://b.test/x\n".encode("utf-16-be"),
        b"http://a.test/\r\nhttp://b.test/x\r\n",  # CRLF
        b"http://a.test/\rhttp://b.test/x",  # old Mac line ends, no final newline
    ],
    ids=["utf8-bom", "utf16-le", "utf16-be", "crlf", "cr"],
)
def test_seeds_file_encodings_and_line_ends(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "seeds.txt"
    path.write_bytes(data)
    assert collect_seeds([str(path)]) == SEEDS


def test_binary_seeds_file_is_named_plainly(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_bytes(b"http://a.test/\n\x00\xd0\xff\xfe garbage \x89PNG\n")
    with pytest.raises(SeedError, match=r"seeds.txt: not a text file in UTF-8") as info:
        collect_seeds([str(path)])
    assert "codec" not in str(info.value)  # no Python internals


def test_directory_as_seeds_file(tmp_path: Path) -> None:
    with pytest.raises(SeedError, match="is a directory, not a seeds file"):
        collect_seeds([str(tmp_path)])


def test_seed_longer_than_max_url_length_is_a_bad_line_quoted_short(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text("http://a.test/\nhttp://a.test/" + "a" * 1_000_000 + "\n")
    with pytest.raises(SeedError) as info:
        collect_seeds([str(path)], max_length=2048)
    message = str(info.value)
    assert "seeds.txt:2: longer than [scope] max_url_length (2,048 characters)" in message
    assert len(message) < 400 and "(1,000,014 characters)" in message
    assert collect_seeds([str(path)])[0] == "http://a.test/"  # no limit: taken as it is


@pytest.mark.parametrize("target", ["mailto:a@b.test", "javascript:alert(1)", "data:,x"])
def test_a_url_of_another_scheme_is_named_as_such(tmp_path: Path, target: str) -> None:
    """Before: 'neither a seeds file nor a URL (no such file)'."""
    scheme = target.split(":", 1)[0]
    with pytest.raises(SeedError, match=rf"not a crawlable http\(s\) URL \(a {scheme}: URL\)"):
        collect_seeds([target])


def test_a_host_and_port_still_gets_its_suggestion() -> None:
    with pytest.raises(SeedError, match=r"did you mean http://example\.org:8080/\?"):
        collect_seeds(["example.org:8080"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-pages", "-1"], "--max-pages: must be >= 0, got -1"),
        (["--concurrency", "0"], "--concurrency: must be >= 1, got 0"),
        (["--delay", "nan"], "--delay: must be a finite number, got nan"),
    ],
)
def test_a_bad_flag_value_names_the_flag(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: 'override [crawl] max_pages: ...', a config key the user never typed."""
    from crawler.cli.main import main

    assert main(["http://127.0.0.1:9/", *flags]) == 2
    assert capsys.readouterr().err == f"crawl: error: {message}\n"


def test_a_seeds_file_or_config_as_an_output_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `crawl seeds.txt -o seeds.txt` appended the results to the seeds file."""
    from crawler.cli.main import main

    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/\n")
    config = tmp_path / "c.toml"
    config.write_text("[crawl]\nmax_pages = 3\n")
    assert main([str(seeds), "-o", str(seeds)]) == 2
    assert "-o " in capsys.readouterr().err
    assert main([str(seeds), "--config", str(config), "--stats", str(config)]) == 2
    assert "is an input of this crawl" in capsys.readouterr().err
    assert seeds.read_text() == "http://127.0.0.1:9/\n"
    assert config.read_text() == "[crawl]\nmax_pages = 3\n"


def test_a_host_no_dns_name_can_be_is_not_a_seed() -> None:
    """Before: taken, then its fetch failed with 'protocol: UnicodeError: encoding with
    'idna' codec failed'."""
    with pytest.raises(SeedError, match="not a crawlable http"):
        collect_seeds([f"http://{'a' * 64}.test/"])
    assert collect_seeds([f"http://{'a' * 63}.test/"])


def test_absurd_concurrency_and_sieve_capacity_are_config_errors() -> None:
    """Before: --concurrency 1000000 took 1.5 GB and 30 s before its first fetch; a Sieve
    capacity of 10^13 ended in a MemoryError traceback (exit 1)."""
    from crawler import Crawler

    with pytest.raises(ConfigError, match=r"concurrency: must be <= 10,000, got 1000000"):
        Config().override("crawl", concurrency=1_000_000)
    assert Config().override("crawl", concurrency=10_000).crawl.concurrency == 10_000
    huge = Config().override("sieve", capacity=10**13)
    with pytest.raises(ConfigError, match=r"\[sieve\] capacity = 10,000,000,000,000"):
        Crawler(huge)
    larger = Config().override("sieve", capacity=10**18)  # bits past a C index: OverflowError
    with pytest.raises(ConfigError, match=r"\[sieve\] capacity = 1,000,000,000,000,000,000"):
        Crawler(larger)


# -- config files ------------------------------------------------------------------------------


def test_config_with_a_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(codecs.BOM_UTF8 + b"[crawl]\nmax_pages = 7\n")
    assert load_config(path).crawl.max_pages == 7


def test_config_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b"[crawl]\nuser_agent = 'caf\xe9'\n")
    with pytest.raises(ConfigError, match=r"c.toml: not a TOML file: not UTF-8 text"):
        load_config(path)


# -- outputs that cannot be written ------------------------------------------------------------


async def page(request: web.Request) -> web.Response:
    links = "".join(f'<a href="/p{i}">p</a>' for i in range(5))
    return web.Response(text=f"<title>t</title>{links}", content_type="text/html")


def fast(config: Config) -> Config:
    return config.override("politeness", delay=0.0, ip_delay=0.0)


needs_dev_full = pytest.mark.skipif(not os.path.exists(FULL), reason="needs /dev/full")


@needs_dev_full
async def test_warc_on_a_full_disk_ends_the_crawl_with_a_clear_error(tmp_path: Path) -> None:
    """Before: each fetch's WARC write failed as an 'internal error' with a traceback, robots.txt
    counted as unreachable, and the crawl went on without its archive (exit 3 or 0)."""
    config = fast(Config()).override("output", warc=FULL)
    async with serve(page) as port:
        with pytest.raises(OutputError, match=r"/dev/full: cannot write the WARC file: No space"):
            await run(config, [f"http://127.0.0.1:{port}/"], io.StringIO(), quiet=True)


@needs_dev_full
async def test_warc_failure_with_a_state_leaves_the_url_pending(tmp_path: Path) -> None:
    config = fast(Config()).override("output", warc=FULL).override("state", dir=str(tmp_path))
    async with serve(page) as port:
        with pytest.raises(OutputError):
            await run(config, [f"http://127.0.0.1:{port}/"], io.StringIO(), quiet=True)
    from crawler.engine.components import settings

    state = CrawlState.open(tmp_path, settings(config))  # the lock was released
    assert state.counts() == (1, 0)  # the seed is still to do
    state.abandon()


@needs_dev_full
async def test_jsonl_on_a_full_disk_names_the_output() -> None:
    config = fast(Config()).override("output", path=FULL)
    async with serve(page) as port:
        expected = pytest.raises(OutputError, match=r"^/dev/full: cannot write: No space left")
        with expected, open_output(FULL) as out:
            await run(config, [f"http://127.0.0.1:{port}/"], out, quiet=True)


@pytest.mark.slow
@needs_dev_full
@pytest.mark.parametrize("option", ["--warc", "-o", "stdout"])
def test_cli_exit_status_2_on_a_full_disk(tmp_path: Path, option: str) -> None:
    """The command (its demo site on loopback): one line naming the output, exit 2, no
    traceback. Before: -o and stdout said '[Errno 28] No space left on device' without naming
    the output; --warc went on without its archive, a traceback per fetch."""
    where = [] if option == "stdout" else [option, FULL]
    with open(FULL, "w") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "crawler.cli", "--demo", "-q", *where],
            stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    name = "stdout" if option == "stdout" else FULL
    assert f"crawl: error: {name}: cannot write" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def demo(tmp_path: Path, **popen: object) -> tuple[int, str, int]:
    """`crawl --demo -o FILE` in a child: (exit status, stdout, lines written)."""
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "--demo", "-o", str(out)],
        stdout=subprocess.PIPE, text=True, timeout=120, cwd=tmp_path, **popen,  # type: ignore[call-overload]
    )  # fmt: skip
    lines = out.read_text().count("\n") if out.exists() else 0
    return done.returncode, done.stdout, lines


@pytest.mark.slow
@needs_dev_full
def test_a_full_stderr_does_not_fail_a_crawl(tmp_path: Path) -> None:
    """Before: exit 1 (the summary's write raised) after every result was written."""
    with open(FULL, "w") as stderr:
        status, _, lines = demo(tmp_path, stderr=stderr)
    assert status == 0 and lines > 10


@pytest.mark.slow
def test_a_closed_stderr_does_not_stop_a_crawl(tmp_path: Path) -> None:
    """Before: exit 1 and nothing crawled (sys.stderr is None when fd 2 is closed)."""
    status, _, lines = demo(tmp_path, stderr=subprocess.DEVNULL, preexec_fn=lambda: os.close(2))
    assert status == 0 and lines > 10


def test_a_closed_stdout_as_the_output_is_a_clear_error(tmp_path: Path) -> None:
    """Before: a traceback (sys.stdout is None when fd 1 is closed)."""
    done = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "http://127.0.0.1:9/"],
        stderr=subprocess.PIPE, text=True, timeout=60, preexec_fn=lambda: os.close(1),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == "crawl: error: stdout is closed: give -o PATH for the results\n"


@pytest.mark.parametrize(
    "data",
    [
        b"my notes\nno final newline",
        b"notes\n",
        b"\x1f\x8bnot json",
        b'{"url":"a"}\nnot a record',
        b'{"id": 1, "name": "another tool\'s JSON Lines"}\n',  # was appended to
        b'{"url":"a"}\n{"id": 2, "cut',
    ],
)
def test_jsonl_output_that_is_not_ours_is_never_cut(tmp_path: Path, data: bytes) -> None:
    """Before: `-o notes.txt` cut notes.txt's last line as a 'partial record' (all of it,
    with no newline), then appended results to it."""
    path = tmp_path / "notes.txt"
    path.write_bytes(data)
    refused = pytest.raises(ConfigError, match="not a JSON Lines output of the crawler")
    with refused, open_output(str(path)):
        pass
    assert path.read_bytes() == data


def test_warc_output_that_is_not_a_warc_is_never_cut(tmp_path: Path) -> None:
    """Before: `--warc notes.txt` truncated notes.txt to nothing (no complete gzip member)."""
    from crawler.output.warc import WarcOutput

    path = tmp_path / "notes.txt"
    path.write_bytes(b"my notes\n")
    with pytest.raises(OutputError, match="not a gzipped WARC file"):
        WarcOutput(path)
    assert path.read_bytes() == b"my notes\n"


def test_no_file_of_a_warc_series_that_is_not_a_warc_is_appended_to(tmp_path: Path) -> None:
    """Before: only the series' first file was checked: a later one that is not a WARC was cut
    (text) or appended to (any gzip)."""
    from crawler.output.warc import WarcOutput

    first = tmp_path / "crawl.warc.gz"
    first.write_bytes(gzip.compress(b"WARC/1.1\r\nWARC-Type: warcinfo\r\n\r\n"))
    WarcOutput(first)  # ours: accepted
    for name, data in (("crawl-00001.warc.gz", b"my notes\n"),
                       ("crawl-00001.warc.gz", gzip.compress(b"a gzipped tarball"))):  # fmt: skip
        later = tmp_path / name
        later.write_bytes(data)
        with pytest.raises(OutputError, match=r"crawl-00001\.warc\.gz: exists and is not a gzip"):
            WarcOutput(first)
        assert later.read_bytes() == data
    gz = tmp_path / "other.warc.gz"
    gz.write_bytes(gzip.compress(b"not a warc"))
    with pytest.raises(OutputError, match="not a gzipped WARC file"):
        WarcOutput(gz)


# -- Ctrl-C before the crawl's own handler -----------------------------------------------------


@pytest.mark.parametrize(
    "after",
    [
        "crawler.cli.command",  # its handler is in place; the command's modules still load
        "aiohttp",  # halfway through them
        "crawler.cli.main",  # loaded: the config, seeds and state are read next
    ],
)
def test_sigint_while_starting_exits_130_without_a_traceback(tmp_path: Path, after: str) -> None:
    """Before: a KeyboardInterrupt traceback (imports, config, seeds, state) in 5 of 7 tries
    10-50 ms after the start. The SIGINT is sent right after a given module was imported, as
    `-X importtime` reports it on stderr (a fixed sleep would race the machine's load)."""
    script = Path(sys.executable).with_name("crawl")
    if not script.exists():
        pytest.skip("the console script is not installed")
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", str(script), "http://127.0.0.1:9/", "-q",
         "--state", str(tmp_path / "s")],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == after:
            proc.send_signal(signal.SIGINT)
            break
    else:
        pytest.fail(f"{after} was never imported:\n{''.join(lines[-5:])}")
    err = proc.stderr.read()
    proc.wait(timeout=60)
    err = "".join(line for line in err.splitlines(keepends=True) if "import time:" not in line)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode == 130, err
    assert "crawl: interrupted" in err
    assert not (tmp_path / "s" / FILENAME).exists() or proc.returncode == 130


class Recorded(io.StringIO):
    """An output that remembers how much of it was flushed, and sends this process two
    SIGINTs at once after its 5th line (both reach the crawl's handler in one loop pass)."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = 0
        self.lines = 0

    def write(self, text: str) -> int:
        written = super().write(text)
        self.lines += text.count("\n")
        if self.lines == 5:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
        return written

    def flush(self) -> None:
        self.flushed = len(self.getvalue())


async def test_a_second_sigint_flushes_the_lines_written_before_leaving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second Ctrl-C leaves at once (os._exit, which flushes nothing): before, the lines
    written since the last timed flush (up to 0.5 s of results) were lost."""
    exits: list[tuple[int, int, int]] = []  # (status, flushed, written) at os._exit
    out = Recorded()
    monkeypatch.setattr(os, "_exit", lambda status: exits.append(
        (status, out.flushed, len(out.getvalue()))))  # fmt: skip

    async def handler(request: web.Request) -> web.Response:
        await asyncio.sleep(0.01)  # the crawl is still running when the signals come
        links = "".join(f'<a href="/p{i}">p</a>' for i in range(50))
        return web.Response(text=f"<title>t</title>{links}", content_type="text/html")

    async with serve(handler) as port:
        outcome = await run(fast(Config()), [f"http://127.0.0.1:{port}/"], out, quiet=True)
    assert outcome.status == 130
    assert exits, "the second SIGINT did not leave"
    status, flushed, written = exits[0]
    assert status == 130 and written > 0 and flushed == written


def test_jsonl_output_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    """An -o path that passed the checks made before the crawl but cannot be opened (a
    pseudo-filesystem such as /proc for root, a race): one line naming the file, exit 2 as for
    a full disk. Before: a bare '[Errno 20] Not a directory: ...', no file named."""
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "out.jsonl"
    refused = pytest.raises(OutputError, match=f"{re.escape(str(path))}: cannot open: ")
    with refused, open_output(str(path)):
        pass
