"""Fixtures for the HTTP, auth, CLI and config tests (load with ``pytest_plugins``).

- ``tm_home``: a temp ``TRIBAL_MEMORY_HOME`` (and ``HOME``), no token or config in the env.
- ``embedder``: the bundled model, loaded once per session.
- ``client``: the real app on a fresh data folder per test; its lifespan starts the real
  runtime (store, embedder, episode engine with the embedding detector and no LLM key);
  ``runtime`` is that runtime. ``client_no_episodes`` runs with episodes disabled.
- ``module_client`` / ``module_client_no_episodes``: the same, one per module, for requests
  that are refused and so change nothing (``module_home`` is their ``tm_home``).
- ``daemon``: a real ``tribalmemory serve`` subprocess on a free port (one per module).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from starlette.testclient import TestClient

from tribalmemory.api import TribalAPI
from tribalmemory.client import tls_context
from tribalmemory.config import Config, load_config
from tribalmemory.interfaces.http import create_app
from tribalmemory.runtime import Runtime
from tribalmemory.service import MemoryService

BASE_URL = "http://127.0.0.1:18790"
LOCAL = httpx.Client(
    trust_env=False, verify=tls_context(), limits=httpx.Limits(max_keepalive_connections=0)
)
"""The tests' one-off requests to their daemons and fake LLMs: ``httpx.get`` builds a client,
and its TLS context (about 40 ms of CPU), for every call; polling a starting daemon's health
10 times a second, that took 40 % of a CPU beside the daemon's start. Each request opens its
own connection (no keep-alive), as ``httpx.get`` did: a daemon a test killed leaves none
behind."""
START_DEADLINE = 90.0
ISOLATED_ENV = (
    "TRIBAL_MEMORY_TOKEN",
    "TRIBAL_MEMORY_CONFIG",
    "TRIBAL_MEMORY_PROJECT",
    "CODEX_HOME",
    "XDG_CONFIG_HOME",
)


def write_config(home: Path, **sections: Any) -> Path:
    """``home/config.yaml`` with ``data_dir: home`` plus the given sections."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump({"data_dir": str(home), **sections}), encoding="utf-8")
    return path


def unique(text: str = "memory") -> str:
    """Content that no other test stores (so dedup never joins two tests)."""
    return f"{text} {uuid.uuid4().hex}"


def isolate(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``root/tm-home`` as ``TRIBAL_MEMORY_HOME`` and ``root/user-home`` as ``HOME``, no token,
    config, project or client configuration in the environment; returns the home."""
    home = root / "tm-home"
    home.mkdir()
    user = root / "user-home"
    user.mkdir()
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(home))
    monkeypatch.setenv("HOME", str(user))
    for name in ISOLATED_ENV:  # set first so that teardown also removes what load_env adds
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return home


@pytest.fixture
def tm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate(tmp_path, monkeypatch)


@pytest.fixture(scope="session")
def embedder() -> Any:
    from tribalmemory.embeddings import BUNDLED_MODEL, load_embedder

    return load_embedder(BUNDLED_MODEL, None)


def build_runtime(config: Config, embedder: Any) -> Runtime:
    """A store and service without plugins, not started (e.g. to hold the store's lock)."""
    from tribalmemory.storage import open_store

    config.data_path.mkdir(parents=True, exist_ok=True)
    store = open_store(config, embedder.model_name, embedder.dim)
    service = MemoryService(config, store, embedder)
    return Runtime(config=config, service=service, api=TribalAPI(service, None))


EPISODES = {"enabled": True, "detector_strategy": "embedding", "summary_debounce_seconds": 0}
"""The test daemon's episode engine: real, deterministic (no LLM), summaries without delay."""


@pytest.fixture
def app_config(tm_home: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the LLM stays off: no network
    return load_config(write_config(tm_home, episodes=EPISODES))


@pytest.fixture
def client(app_config: Config) -> Iterator[TestClient]:
    with TestClient(create_app(app_config), base_url=BASE_URL) as test_client:
        yield test_client


@pytest.fixture
def runtime(client: TestClient) -> Runtime:
    """The runtime that ``client``'s app started."""
    started = client.app.state.runtime  # type: ignore[attr-defined]
    assert isinstance(started, Runtime)
    return started


@pytest.fixture
def client_no_episodes(tm_home: Path) -> Iterator[TestClient]:
    config = load_config(write_config(tm_home, episodes={"enabled": False}))
    with TestClient(create_app(config), base_url=BASE_URL) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def module_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``tm_home`` for a whole module (its environment restored at the module's end)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the LLM stays off: no network
        yield isolate(tmp_path_factory.mktemp("module"), monkeypatch)


def module_client_for(home: Path, episodes: dict[str, Any]) -> Iterator[TestClient]:
    config = load_config(write_config(home, episodes=episodes))
    with TestClient(create_app(config), base_url=BASE_URL) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def module_client(module_home: Path) -> Iterator[TestClient]:
    """``client``, one for all the module's tests that take it: for requests that must be
    refused, which change nothing another test could read (a refusal that stored something
    fails its own test). Starting a runtime per case (~1 s) would buy nothing."""
    yield from module_client_for(module_home / "episodes", EPISODES)


@pytest.fixture(scope="module")
def module_client_no_episodes(module_home: Path) -> Iterator[TestClient]:
    """``client_no_episodes``, shared like :func:`module_client`."""
    yield from module_client_for(module_home / "no-episodes", {"enabled": False})


# -- a real daemon ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def subprocess_env(home: Path, user_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ISOLATED_ENV}
    env.update(TRIBAL_MEMORY_HOME=str(home), HOME=str(user_home), PYTHONUNBUFFERED="1")
    return env


def wait_healthy(
    url: str, process: subprocess.Popen[bytes], output: Path, deadline: float = START_DEADLINE
) -> None:
    """Poll ``/v1/health`` until it answers; fail early if the process exits."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if process.poll() is not None:
            pytest.fail(f"daemon exited with {process.returncode}:\n{output.read_text()}")
        try:
            if LOCAL.get(f"{url}/v1/health", timeout=0.5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail(f"daemon not healthy within {deadline} s:\n{output.read_text()}")


@dataclass
class Daemon:
    url: str
    port: int
    home: Path
    config_path: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    output: Path

    def config(self) -> Config:
        return load_config(self.config_path)

    def stop(self, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        return self.process.returncode


def start_daemon(
    root: Path, *args: str, environ: dict[str, str] | None = None, **sections: Any
) -> Daemon:
    """``tribalmemory serve`` on a free port, data in ``root/home``, with ``environ`` added to
    its environment and ``sections`` to its configuration; waits until healthy."""
    home, user = root / "home", root / "user"
    user.mkdir(parents=True, exist_ok=True)
    port = free_port()
    sections.setdefault("episodes", {"enabled": False})
    sections["server"] = sections.get("server", {}) | {"port": port}
    config_path = write_config(home, **sections)
    env = subprocess_env(home, user) | (environ or {})
    output = root / "daemon.out"
    with output.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "tribalmemory", "serve", "--config", str(config_path), *args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )
    daemon = Daemon(f"http://127.0.0.1:{port}", port, home, config_path, env, process, output)
    try:
        wait_healthy(daemon.url, process, output)
    except BaseException:
        daemon.stop()
        raise
    return daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    running = start_daemon(tmp_path_factory.mktemp("daemon"))
    yield running
    running.stop()
