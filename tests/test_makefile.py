"""The Makefile: `make demo`'s stdout holds the JSON Lines only, its first run (the install)
included: make's command lines and the installers' output go to stderr."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# a stand-in for python3: `-m venv DIR` makes a venv whose python talks on stdout (as pip does)
# and whose `crawl` writes one JSON line; nothing is installed, nothing leaves the machine
FAKE_PYTHON = """#!/bin/sh
[ "$1 $2" = "-m venv" ] || exit 1
mkdir -p "$3/bin"
printf '#!/bin/sh\\necho "Successfully installed sieve-crawler"\\n' > "$3/bin/python"
printf '#!/bin/sh\\necho "{\\\\"url\\\\": \\\\"http://site-a.test/\\\\"}"\\n' > "$3/bin/crawl"
chmod +x "$3/bin/python" "$3/bin/crawl"
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_prints_json_lines_only_on_its_first_run(tmp_path: Path) -> None:
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    venv = tmp_path / "venv"
    # as a user types it, in the clone: not as a make inside `make test`, which would say
    # "make[1]: Entering directory" on stdout
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run(
        ["make", "demo", f"VENV={venv}", f"PYTHON={python}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [
        {"url": "http://site-a.test/"}
    ]
    assert "Successfully installed" in proc.stderr  # said, on stderr
