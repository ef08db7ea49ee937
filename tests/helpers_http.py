"""Fixtures for the HTTP, auth, CLI and config tests (load with ``pytest_plugins``).

- ``tm_home``: a temp ``TRIBAL_MEMORY_HOME`` (and ``HOME``), no token or config in the env.
- ``embedder``: the bundled model, loaded once per session.
- ``runtime`` / ``client``: a fresh store per test (shared embedder) behind the real app,
  with :class:`FakeEpisodes` as the episode engine; ``client_no_episodes`` has none.
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
from tribalmemory.config import Config, load_config
from tribalmemory.errors import NotFound
from tribalmemory.interfaces.http import create_app
from tribalmemory.runtime import Runtime
from tribalmemory.service import MemoryService

BASE_URL = "http://127.0.0.1:18790"
START_DEADLINE = 90.0
ISOLATED_ENV = ("TRIBAL_MEMORY_TOKEN", "TRIBAL_MEMORY_CONFIG", "CODEX_HOME", "XDG_CONFIG_HOME")


def write_config(home: Path, **sections: Any) -> Path:
    """``home/config.yaml`` with ``data_dir: home`` plus the given sections."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump({"data_dir": str(home), **sections}), encoding="utf-8")
    return path


def unique(text: str = "memory") -> str:
    """Content that no other test stores (so dedup never joins two tests)."""
    return f"{text} {uuid.uuid4().hex}"


@pytest.fixture
def tm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "tm-home"
    home.mkdir()
    user = tmp_path / "user-home"
    user.mkdir()
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(home))
    monkeypatch.setenv("HOME", str(user))
    for name in ISOLATED_ENV:  # set first so that teardown also removes what load_env adds
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return home


@pytest.fixture(scope="session")
def embedder() -> Any:
    from tribalmemory.embeddings import BUNDLED_MODEL, load_embedder

    return load_embedder(BUNDLED_MODEL, None)


class FakeEpisodes:
    """An in-memory episode engine with the engine's JSON shapes; records every call."""

    def __init__(self) -> None:
        self.episodes: dict[str, dict[str, Any]] = {}
        self.members: dict[str, list[str]] = {}
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.fail_with: Exception | None = None

    def _row(self, episode_id: str) -> dict[str, Any]:
        if self.fail_with is not None:
            raise self.fail_with
        if episode_id not in self.episodes:
            raise NotFound(f"no episode with id {episode_id}")
        return self.episodes[episode_id]

    async def list_episodes(
        self, status: str | None, limit: int, offset: int, filters: dict[str, str]
    ) -> list[dict[str, Any]]:
        self.calls.append(("list", (status, limit, offset, filters)))
        rows = [e for e in self.episodes.values() if status in (None, e["status"])]
        return rows[offset : offset + limit]

    async def get_episode(self, episode_id: str, include_timeline: bool) -> dict[str, Any]:
        self.calls.append(("get", (episode_id, include_timeline)))
        result: dict[str, Any] = {
            "episode": self._row(episode_id),
            "memory_ids": list(self.members[episode_id]),
        }
        if include_timeline:
            result["timeline"] = [{"memory_id": m} for m in self.members[episode_id]]
        return result

    async def create_episode(
        self, title: str, memory_ids: list[str], parent_episode_id: str | None
    ) -> dict[str, Any]:
        self.calls.append(("create", (title, memory_ids, parent_episode_id)))
        episode_id = f"ep-{uuid.uuid4().hex[:12]}"
        self.episodes[episode_id] = {
            "id": episode_id,
            "title": title,
            "summary": None,
            "status": "active",
            "memory_count": len(memory_ids),
        }
        self.members[episode_id] = list(memory_ids)
        return {"id": episode_id, "memory_count": len(memory_ids)}

    async def add_memory(self, episode_id: str, memory_id: str) -> None:
        self._row(episode_id)["memory_count"] += 1
        self.members[episode_id].append(memory_id)
        self.calls.append(("add", (episode_id, memory_id)))

    async def remove_memory(self, episode_id: str, memory_id: str) -> None:
        row = self._row(episode_id)
        if memory_id not in self.members[episode_id]:
            raise NotFound(f"memory {memory_id} is not in episode {episode_id}")
        row["memory_count"] -= 1
        self.members[episode_id].remove(memory_id)
        self.calls.append(("remove", (episode_id, memory_id)))

    async def close_episode(self, episode_id: str) -> None:
        self._row(episode_id)["status"] = "closed"
        self.calls.append(("close", (episode_id,)))

    async def regenerate_episode(self, episode_id: str) -> None:
        self._row(episode_id)
        self.calls.append(("regenerate", (episode_id,)))

    async def delete_episode(self, episode_id: str) -> None:
        self._row(episode_id)
        del self.episodes[episode_id]
        self.calls.append(("delete", (episode_id,)))

    def costs(self) -> dict[str, Any]:
        return {"month": "2025-01", "spent_usd": 0.0, "ceiling_usd": 5.0}

    async def chain(self, episode_id: str) -> dict[str, Any]:
        row = self._row(episode_id)
        self.calls.append(("chain", (episode_id,)))
        return {"episode_id": episode_id, "root_id": episode_id, "chain": [row], "count": 1}

    async def replay(self, topic: str, limit: int) -> dict[str, Any]:
        self.calls.append(("replay", (topic, limit)))
        rows = list(self.episodes.values())[:limit]
        return {
            "topic": topic,
            "episodes": rows,
            "count": len(rows),
            "text": f"Episodes about {topic!r}, oldest first:",
        }

    async def search(
        self,
        query: str,
        time_start: float | None,
        time_end: float | None,
        status: str | None,
        limit: int,
    ) -> dict[str, Any]:
        self.calls.append(("search", (query, time_start, time_end, status, limit)))
        rows = [e for e in self.episodes.values() if status in (None, e["status"])][:limit]
        return {"query": query, "episodes": rows, "count": len(rows)}


def build_runtime(config: Config, embedder: Any, episodes: Any = None) -> Runtime:
    """What start_runtime assembles, with the shared embedder and a chosen episode engine."""
    from tribalmemory.storage import open_store

    config.data_path.mkdir(parents=True, exist_ok=True)
    store = open_store(config, embedder.model_name, embedder.dim)
    service = MemoryService(config, store, embedder)
    return Runtime(config=config, service=service, api=TribalAPI(service, episodes))


@pytest.fixture
def runtime(tm_home: Path, embedder: Any) -> Iterator[Runtime]:
    config = load_config(write_config(tm_home, episodes={"enabled": False}))
    built = build_runtime(config, embedder, FakeEpisodes())
    yield built
    built.service.store.close()


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(runtime.config, runtime), base_url=BASE_URL) as test_client:
        yield test_client


@pytest.fixture
def client_no_episodes(runtime: Runtime) -> Iterator[TestClient]:
    plain = Runtime(runtime.config, runtime.service, TribalAPI(runtime.service, None))
    with TestClient(create_app(plain.config, plain), base_url=BASE_URL) as test_client:
        yield test_client


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
            if httpx.get(f"{url}/v1/health", timeout=0.5, trust_env=False).status_code == 200:
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


def start_daemon(root: Path, *args: str, **sections: Any) -> Daemon:
    """``tribalmemory serve`` on a free port, data in ``root/home``; waits until healthy."""
    home, user = root / "home", root / "user"
    user.mkdir(parents=True, exist_ok=True)
    port = free_port()
    sections.setdefault("episodes", {"enabled": False})
    config_path = write_config(home, server={"port": port}, **sections)
    env = subprocess_env(home, user)
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
