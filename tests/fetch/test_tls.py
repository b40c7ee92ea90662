"""TLS on loopback: certificate verification, an extra CA file, verification off per crawl or per
host, and the errors a bad certificate gives (a CA made on the spot by trustme)."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme
from aiohttp import web

from crawler.config.load import config_from_mapping
from crawler.config.sections import HostConfig
from crawler.errors import CertificateError, ConfigError, ConnectError
from crawler.fetch.fetcher import Fetcher
from crawler.fetch.settings import FetchLimits, Timeouts, Transport
from crawler.fetch.steering import HostRules

HOSTS = {"secure.test": "127.0.0.1", "other.test": "127.0.0.1"}


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
async def port(ca: trustme.CA) -> AsyncIterator[int]:
    """An HTTPS server on 127.0.0.1 whose certificate names secure.test only."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("secure.test").configure_cert(context)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(
            text=f"<a href='/next'>hello {request.host}</a>", content_type="text/html"
        )

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


def fetcher(**kw: object) -> Fetcher:
    args: dict[str, object] = {"user_agent": "t/1", "resolve": HOSTS}
    args.update(kw)
    settings = [cls(**{k: args.pop(k) for k in cls.__dataclass_fields__.keys() & set(args)})
                for cls in (Transport, Timeouts, FetchLimits)]  # fmt: skip
    return Fetcher(*settings, **args)  # type: ignore[arg-type]


async def test_an_unknown_ca_is_a_clear_connect_error(port: int) -> None:
    async with fetcher() as f:
        with pytest.raises(ConnectError) as caught:
            await f.fetch(f"https://secure.test:{port}/")
    error = caught.value
    assert isinstance(error, CertificateError) and error.kind == "connect"
    assert not error.retry  # the same certificate again: not retried
    assert str(error).startswith(f"TLS: certificate verify failed for secure.test:{port}: ")
    assert "[fetch] ca_file" in str(error)  # what to do about it


async def test_the_ca_file_is_trusted_beside_the_system_store(port: int, ca_file: str) -> None:
    async with fetcher(ca_file=ca_file) as f:
        response = await f.fetch(f"https://secure.test:{port}/")
    assert response.status == 200 and b"hello secure.test" in response.body


async def test_a_trusted_certificate_for_another_name_is_refused(port: int, ca_file: str) -> None:
    async with fetcher(ca_file=ca_file) as f:
        with pytest.raises(CertificateError, match="Hostname mismatch") as caught:
            await f.fetch(f"https://other.test:{port}/")  # the certificate names secure.test
    assert "ca_file" not in str(caught.value)  # trusting a CA would not help


async def test_verification_off_accepts_any_certificate_and_says_so(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="crawler.fetch.fetcher"):
        async with fetcher(tls_verify=False) as f:
            response = await f.fetch(f"https://other.test:{port}/")
    assert response.status == 200
    assert "TLS certificates are not verified" in caplog.text


async def test_a_rule_turns_verification_off_for_its_hosts_only(port: int) -> None:
    rules = HostRules([HostConfig(match="secure.test", tls_verify=False)])
    async with fetcher(rules=rules) as f:
        assert (await f.fetch(f"https://secure.test:{port}/")).status == 200
        with pytest.raises(ConnectError, match="certificate verify failed"):
            await f.fetch(f"https://other.test:{port}/")


async def test_a_rule_turns_verification_back_on_for_its_hosts(port: int) -> None:
    rules = HostRules([HostConfig(match="other.test", tls_verify=True)])
    async with fetcher(tls_verify=False, rules=rules) as f:
        assert (await f.fetch(f"https://secure.test:{port}/")).status == 200
        with pytest.raises(ConnectError, match="certificate verify failed"):
            await f.fetch(f"https://other.test:{port}/")


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), (b"not a certificate\n", "not a file of PEM certificates")],
)
def test_a_bad_ca_file_is_a_config_error(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "ca.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError, match=rf"\[fetch\] ca_file: .*{message}"):
        config_from_mapping({"fetch": {"ca_file": str(path)}})


def test_tls_verify_in_a_rule_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match="tls_verify"):
        config_from_mapping({"hosts": [{"match": "a.test", "tls_verify": "no"}]})


@pytest.mark.slow
async def test_the_crawl_command_with_the_ca_file(port: int, ca_file: str, tmp_path: Path) -> None:
    resolve = ", ".join(f'"{h}" = "127.0.0.1"' for h in HOSTS)
    for name, extra in (("trusted", f'ca_file = "{ca_file}"\n'), ("untrusted", "")):
        config = tmp_path / f"{name}.toml"
        config.write_text(
            f"[fetch]\nresolve = {{ {resolve} }}\n{extra}"
            "retries = 0\n[politeness]\ndelay = 0.0\nip_delay = 0.0\nrespect_robots = false\n"
            '[security]\nallow_networks = ["127.0.0.0/8"]\n'
        )
        # the server runs on this test's loop: the command runs beside it, not blocking it
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "crawler.cli", f"https://secure.test:{port}/", "--config",
            str(config), "--max-pages", "2", "-q", "-o", "-",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        stdout, stderr = out.decode(), err.decode()
        results = [json.loads(line) for line in stdout.splitlines()]
        if name == "trusted":
            assert proc.returncode == 0, stderr
            assert [r["status"] for r in results] == [200, 200]
        else:  # one clear result per URL, the crawl ends (no seed got a response: exit 3)
            assert proc.returncode == 3, stderr
            assert results[0]["status"] is None
            assert "certificate verify failed" in results[0]["error"]
            assert "Traceback" not in stderr
