"""The right daemon: clients talk only to the daemon of their own data folder.

Two real daemons with two data folders on loopback, and an impostor (a plain HTTP server that
answers ``/v1/health`` like a daemon, even with the real folder's public id): the CLI,
``DaemonClient``, quickstart, status and ``tribalmemory mcp`` refuse a daemon that cannot prove
it serves their data folder, say which folder it serves, and send it neither the token nor
memory text. ``/v1/health`` shows reasons and paths to authenticated callers only.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers_http import (
    LOCAL,
    Daemon,
    free_port,
    start_daemon,
    subprocess_env,
    unique,
    write_config,
)

from tribalmemory.client import DaemonClient, WrongDaemon, find_daemon
from tribalmemory.config import Config, load_config
from tribalmemory.datafolder import ensure_identity, new_challenge, read_identity
from tribalmemory.interfaces.auth import TokenStore, generate_token
from tribalmemory.interfaces.health import CHALLENGE_HEADER, PROOF_HEADER, public_view

SECRET_TEXT = "the launch code for the staging cluster is 7 7 4 1"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, Daemon]]:
    first = start_daemon(
        tmp_path_factory.mktemp("first"), episodes={"detector_strategy": "embedding"}
    )
    try:
        second = start_daemon(tmp_path_factory.mktemp("second"))
    except BaseException:
        first.stop()
        raise
    yield first, second
    second.stop()
    first.stop()


def count(daemon: Daemon) -> int:
    return int(LOCAL.get(f"{daemon.url}/v1/stats").json()["total_memories"])


def cli(
    root: Path, config: Path, *args: str, token: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = subprocess_env(config.parent, root)
    if token:
        env["TRIBAL_MEMORY_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "tribalmemory", *args, "--config", str(config)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_each_daemon_proves_its_own_data_folder(pair: tuple[Daemon, Daemon]) -> None:
    first, second = pair
    ids = []
    for daemon in pair:
        identity = read_identity(daemon.home)
        assert identity is not None
        challenge = new_challenge()
        response = LOCAL.get(f"{daemon.url}/v1/health", headers={CHALLENGE_HEADER: challenge})
        assert response.json()["data_folder"] == {"id": identity.id, "path": str(daemon.home)}
        assert identity.verify(challenge, response.headers[PROOF_HEADER])
        ids.append(identity)
    assert ids[0].id != ids[1].id
    answer = LOCAL.get(f"{first.url}/v1/health", headers={CHALLENGE_HEADER: "ab" * 16})
    assert not ids[1].verify("ab" * 16, answer.headers[PROOF_HEADER])


def test_each_client_reaches_its_own_daemon(pair: tuple[Daemon, Daemon]) -> None:
    first, second = pair
    before = count(second)

    async def scenario() -> None:
        client = DaemonClient(first.config())
        try:
            stored = await client.remember(unique("Routing check for the first folder"))
            assert stored["success"]
        finally:
            await client.aclose()

    asyncio.run(scenario())
    assert count(second) == before
    assert find_daemon(second.config()) is not None


def test_a_client_of_another_folder_refuses_the_daemon_on_its_port(
    pair: tuple[Daemon, Daemon], tmp_path: Path
) -> None:
    first, second = pair
    # The second folder's configuration, but pointing at the first daemon's port.
    crossed = write_config(
        tmp_path / "crossed", server={"port": first.port}, episodes={"enabled": False}
    )
    crossed_config = load_config(crossed)
    crossed_config.data_dir = str(second.home)
    with pytest.raises(WrongDaemon) as caught:
        find_daemon(crossed_config)
    message = str(caught.value.message)
    assert str(first.home) in message and str(second.home) in message
    assert "nothing was sent" in message and "server.port" in str(caught.value.detail)

    before = count(first)
    with pytest.raises(WrongDaemon):
        asyncio.run(DaemonClient(crossed_config).remember(unique("must not land")))
    done = cli(tmp_path, crossed, "remember", SECRET_TEXT)
    assert done.returncode == 1 and "serves another data folder" in done.stderr
    assert str(first.home) in done.stderr and "Traceback" not in done.stderr
    assert count(first) == before


def test_quickstart_and_status_name_the_foreign_folder(
    pair: tuple[Daemon, Daemon], tmp_path: Path
) -> None:
    first, _ = pair
    foreign = write_config(tmp_path / "home", server={"port": first.port})  # a fresh folder
    before = count(first)
    started = cli(tmp_path, foreign, "quickstart")
    assert started.returncode == 1, started.stdout
    assert f"serves another data folder ({first.home}" in started.stderr
    assert "set server.port in" in started.stderr and not started.stdout
    status = cli(tmp_path, foreign, "status")
    assert status.returncode == 1 and str(first.home) in status.stderr
    assert count(first) == before


def test_health_shows_reasons_and_paths_to_authenticated_callers_only(
    pair: tuple[Daemon, Daemon],
) -> None:
    first, _ = pair
    url = f"{first.url}/v1/health"
    open_health = LOCAL.get(url).json()  # no token configured: all of it
    assert open_health["data_folder"]["path"] == str(first.home)
    assert open_health["store"]["location"].startswith(str(first.home))
    assert open_health["llm"]["reason"]
    token = generate_token()
    auth = TokenStore(first.home / "auth.json")
    auth.save(token)
    try:
        public = LOCAL.get(url).json()
        wrong = LOCAL.get(url, headers={"Authorization": f"Bearer {generate_token()}"}).json()
        full = LOCAL.get(url, headers={"Authorization": f"Bearer {token}"}).json()
    finally:
        auth.path.unlink()
    for shown in (public, wrong):
        text = json.dumps(shown)
        assert str(first.home) not in text
        assert '"reason"' not in text and '"location"' not in text
        assert shown["status"] == "ok" and shown["llm"]["state"] == open_health["llm"]["state"]
        assert shown["data_folder"] == {"id": open_health["data_folder"]["id"]}
        assert "authenticated" in shown["hidden"]
    assert full["data_folder"]["path"] == str(first.home) and full["llm"]["reason"]


def test_clients_share_one_tls_context_that_still_verifies() -> None:
    """Each client used to build its own (certifi's CA bundle loaded again: about 40 ms of
    CPU), and the CLI waiting for a daemon it had started built one every 0.2 s."""
    first, second = DaemonClient(Config()), DaemonClient(Config())
    context = first._options()["verify"]
    assert isinstance(context, ssl.SSLContext) and context is second._options()["verify"]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded


def test_public_view_keeps_numbers_and_states_only() -> None:
    leaked = "sk-live-0123456789 was rejected by the provider"
    health = {
        "status": "ok",
        "version": "1.0",
        "store": {"backend": "edge", "location": "/home/me/.tribal-memory/store"},
        "llm": {"state": "unreachable", "reason": leaked, "fallback": "extractive"},
        "episodes": {"queue_depth": 3, "stalled": False, "errors": [leaked], "ages": [1.5]},
    }
    assert public_view(health) == {
        "status": "ok",
        "version": "1.0",
        "store": {"backend": "edge"},
        "llm": {"state": "unreachable"},
        "episodes": {"queue_depth": 3, "stalled": False, "errors": [], "ages": [1.5]},
    }


# -- an impostor on the port ---------------------------------------------------------------------


@dataclass
class Impostor:
    """Answers ``GET /v1/health`` like a daemon (with ``data_id``); records every request."""

    data_id: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    delay: float = 0.0  # seconds before each answer (a daemon under load)

    def serve(self) -> ThreadingHTTPServer:
        impostor = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                impostor.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": self.rfile.read(length).decode("utf-8", "replace"),
                    }
                )
                time.sleep(impostor.delay)
                body = json.dumps(
                    {
                        "status": "ok",
                        "version": "1.0.0",
                        "data_folder": {"id": impostor.data_id},
                        "success": True,
                        "results": [],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header(PROOF_HEADER, "00" * 32)  # it cannot compute the real one
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def assert_got_nothing(self) -> None:
        assert self.requests, "the client never asked"
        for request in self.requests:
            assert (request["method"], request["path"].split("?")[0]) == ("GET", "/v1/health")
            assert "authorization" not in request["headers"]
            assert "launch code" not in json.dumps(request)


@pytest.fixture
def impostor(tmp_path: Path) -> Iterator[tuple[Impostor, Path]]:
    """An impostor posing as the daemon of ``tmp_path/home`` (it knows the public id)."""
    home = tmp_path / "home"
    identity = ensure_identity(home)
    fake = Impostor(identity.id, port=free_port())
    server = fake.serve()
    config = write_config(home, server={"port": fake.port}, episodes={"enabled": False})
    yield fake, config
    server.shutdown()
    server.server_close()


def test_a_slow_answer_on_the_port_is_still_checked(impostor: tuple[Impostor, Path]) -> None:
    """A first probe that times out (0.5 s) does not mean "nothing there": something holds
    the port, so the client asks again, patiently, and finds out whose daemon it is."""
    fake, config = impostor
    fake.delay = 1.0
    with pytest.raises(WrongDaemon):
        find_daemon(load_config(config))
    assert len(fake.requests) == 2  # the impatient probe, then the patient one
    fake.assert_got_nothing()


def test_the_cli_sends_no_token_or_text_to_an_impostor(
    impostor: tuple[Impostor, Path], tmp_path: Path
) -> None:
    fake, config = impostor
    token = generate_token()
    for args in (
        ["remember", SECRET_TEXT],
        ["recall", SECRET_TEXT],
        ["status"],
        ["stats"],
        ["quickstart"],
    ):
        done = cli(tmp_path, config, *args, token=token)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "serves another data folder" in done.stderr, args
        assert "it shows its path only with its token" in done.stderr
    fake.assert_got_nothing()


def test_tribalmemory_mcp_sends_nothing_to_an_impostor(
    impostor: tuple[Impostor, Path], tmp_path: Path
) -> None:
    from mcp import Client, StdioServerParameters

    fake, config = impostor
    env = {**subprocess_env(config.parent, tmp_path), "TRIBAL_MEMORY_TOKEN": generate_token()}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tribalmemory", "mcp", "--config", str(config)],
        env=env,
        cwd=str(tmp_path),
    )

    async def scenario() -> Any:
        async with Client(params, read_timeout_seconds=120) as agent:
            return await agent.call_tool("tribal_remember", {"content": SECRET_TEXT})

    result = asyncio.run(scenario())
    assert result.is_error
    assert "serves another data folder" in json.dumps(result.model_dump(mode="json"))
    fake.assert_got_nothing()
