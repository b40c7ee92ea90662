"""One Chromium for a crawl: found, launched without a network of its own, measured, killed.

The browser is Debian's ``chromium`` (or ``[render] browser``) driven by the PyPI ``playwright``
package through ``chromium.launch(executable_path=...)``: no ``playwright install``. It is
launched so that it cannot reach anything by itself (`launch_args`): every proxy it would use is
a loopback port bound and never listened on (so a connection is refused at once), loopback
included (``<-loopback>``), every host name resolves to nothing, WebRTC sends no UDP (which no
proxy carries: ``disable_non_proxied_udp``), and its background services
(component updates, sync, safe browsing, DNS prefetch, QUIC, speculation prefetch) are off. The
pages' requests reach the network only through ``context.route`` (`crawler.render.network`),
answered by the crawler's fetcher.

`BrowserProcess` finds the browser's processes (by a marker switch on its command line, then its
descendants), sums their memory (PSS, Linux's ``/proc``) and kills them (a hung browser, a test's
crash). Every Playwright error is translated here, by `translate`, into a `RenderError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import signal
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from crawler.errors import ConfigError, CrawlerError

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

__all__ = [
    "BROWSER_PATHS",
    "BrowserGone",
    "BrowserProcess",
    "PageFailed",
    "PageTimeout",
    "RenderError",
    "RenderUnavailable",
    "find_browser",
    "launch",
    "launch_args",
    "process_tree",
    "pss",
    "quietly",
    "translate",
]

log = logging.getLogger(__name__)


class RenderError(CrawlerError):
    """Rendering a page failed: the crawl goes on with the page's static HTML."""


class RenderUnavailable(ConfigError):
    """Rendering was asked for but cannot run here (no playwright, no Chromium): exit status 2."""


class BrowserGone(RenderError):
    """The browser crashed, was killed or closed under a page: it is started again."""


class PageTimeout(RenderError):
    """The page did not render within its timeout (an endless script, a hung renderer)."""


class PageFailed(RenderError):
    """The browser refused or failed the page (a navigation error, a page that crashed)."""


BROWSER_PATHS = ("/usr/bin/chromium", "/usr/lib/chromium/chromium", "/usr/bin/chromium-browser")
"""Where Debian and Ubuntu install Chromium (the first found is used unless a path is given)."""

CHROMIUM = "install Debian's chromium (apt-get install chromium), or name it in [render] browser"


def checkout() -> Path | None:
    """The source checkout the crawler runs from (an editable install, or PYTHONPATH), else
    None (installed from a release)."""
    root = Path(__file__).resolve().parents[2]
    with contextlib.suppress(OSError):
        if 'name = "sieve-crawler"' in (root / "pyproject.toml").read_text(encoding="utf-8"):
            return root
    return None


def install_playwright() -> str:
    """The command that installs the playwright package where it is missing: into the
    checkout the crawler runs from (a release's extra would replace it), else the extra."""
    root = checkout()
    if root is None:
        return "pip install 'sieve-crawler[render]'"
    target = "." if root == Path.cwd() else str(root)
    return (f"{shlex.quote(sys.executable)} -m pip install -e {shlex.quote(target + '[render]')} "
            "(in this checkout; make test installs it, with Chromium)")  # fmt: skip


WEBRTC_POLICY = "disable_non_proxied_udp"
"""Chromium's WebRTC IP handling policy: no UDP that does not go through the proxy (none does)."""

_MARKER = "--sieve-crawler-browser"  # an unknown switch Chromium ignores: finds its process


def find_browser(path: str = "") -> str:
    """The Chromium executable to launch (`path`, else the first of BROWSER_PATHS, else
    ``chromium`` on PATH); `RenderUnavailable` naming what to install when there is none, or
    when the playwright package is missing."""
    candidates = [path] if path else [*BROWSER_PATHS, shutil.which("chromium") or ""]
    found = next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), "")
    try:
        import playwright.async_api  # noqa: F401 - only checked for
    except ImportError as exc:
        why = f"rendering needs the playwright package ({exc}): {install_playwright()}"
        raise RenderUnavailable(why if found else f"{why}; and Chromium: {CHROMIUM}") from None
    if found:
        return found
    where = f"{path!r} is not an executable file" if path else "no Chromium found"
    raise RenderUnavailable(f"rendering needs Chromium: {where}: {CHROMIUM}")


def launch_args(dead_port: int, marker: str) -> list[str]:
    """Chromium's switches: no network of its own, no background traffic, no sandbox as root."""
    dead = f"http://127.0.0.1:{dead_port}"
    args = [
        f"{_MARKER}={marker}",
        f"--proxy-server={dead}",  # every connection the browser makes itself is refused
        "--proxy-bypass-list=<-loopback>",  # loopback too (Chromium bypasses it by default)
        "--host-resolver-rules=MAP * ~NOTFOUND",  # and no name resolves
        # WebRTC's UDP (STUN, TURN, ICE checks) goes past every proxy: none is sent, and its
        # TCP would go through the dead proxy
        f"--force-webrtc-ip-handling-policy={WEBRTC_POLICY}",
        f"--webrtc-ip-handling-policy={WEBRTC_POLICY}",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-sync",
        "--disable-quic",
        "--disable-breakpad",
        "--dns-prefetch-disable",
        "--no-pings",
        "--no-first-run",
        "--no-default-browser-check",
        "--metrics-recording-only",
        "--mute-audio",
        "--disable-dev-shm-usage",
        "--disable-features=NetworkPrediction,SpeculationRulesPrefetchFuture,Prerender2,"
        "OptimizationHints,MediaRouter,Translate,AutofillServerCommunication,"
        "InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium's sandbox refuses to run as root
    return args


class BrowserProcess:
    """The OS side of one launched browser: its dead proxy port, its processes, their memory."""

    __slots__ = ("_pid", "_socket", "marker")

    def __init__(self) -> None:
        # bound, never listened on: a connection to it is refused at once (no timeout to wait)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self.marker = uuid.uuid4().hex
        self._pid: int | None = None

    @property
    def dead_port(self) -> int:
        return int(self._socket.getsockname()[1])

    @property
    def pid(self) -> int | None:
        """The browser's main process (found by its marker switch), None if it is gone."""
        if self._pid is not None and _alive(self._pid):
            return self._pid
        needle = f"{_MARKER}={self.marker}".encode()
        for entry in _proc_entries():
            with contextlib.suppress(OSError):
                if needle in (entry / "cmdline").read_bytes().split(b"\0"):
                    self._pid = int(entry.name)
                    return self._pid
        return None

    def pids(self) -> list[int]:
        """The main process and all its descendants (renderers, GPU, zygotes, utilities)."""
        root = self.pid
        return [] if root is None else process_tree(root)

    def memory(self) -> int:
        """The browser's proportional set size in bytes (its processes' PSS summed; 0 when it is
        not running or /proc does not tell)."""
        return pss(self.pids())

    def kill(self) -> None:
        """SIGKILL the browser's processes (a hung or oversized browser; a test's crash)."""
        for pid in reversed(self.pids()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        self._socket.close()

    def __repr__(self) -> str:
        return f"<BrowserProcess pid={self._pid} dead_port={self.dead_port}>"


async def launch(playwright: Playwright, path: str, process: BrowserProcess) -> Browser:
    """Launch Chromium at `path` with `launch_args`; a RenderError if it does not start."""
    with translate("launching Chromium"):
        return await playwright.chromium.launch(
            executable_path=path,
            args=launch_args(process.dead_port, process.marker),
            handle_sigint=False,
            handle_sigterm=False,
            handle_sighup=False,
            timeout=30_000,
        )


@contextlib.contextmanager
def translate(doing: str) -> Iterator[None]:
    """Playwright's errors as `RenderError`s: a closed browser or page is `BrowserGone`, a
    Playwright timeout `PageTimeout`, any other `PageFailed` (the one place that knows them)."""
    from playwright.async_api import Error, TimeoutError

    try:
        yield
    except TimeoutError as exc:
        raise PageTimeout(f"{doing}: {_first_line(exc)}") from None
    except Error as exc:
        text = _first_line(exc)
        gone = ("has been closed", "Browser closed", "disconnected", "Connection closed")
        if any(word in text for word in gone):
            raise BrowserGone(f"{doing}: {text}") from None
        raise PageFailed(f"{doing}: {text}") from None


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """Playwright's errors ignored: answering a request of a page that closed meanwhile."""
    from playwright.async_api import Error

    with contextlib.suppress(Error):
        yield


def _first_line(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc)
    return " ".join(str(text).split("\n", 1)[0].split())[:300]


def process_tree(root: int) -> list[int]:
    """Process `root` and all its descendants, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    for entry in _proc_entries():
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def pss(pids: list[int]) -> int:
    """The processes' proportional set size in bytes, summed (0 for what /proc does not tell)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
    return total


def _proc_entries() -> Iterator[Path]:
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                yield entry


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
