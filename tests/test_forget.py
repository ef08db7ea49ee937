"""forget really forgets (issue 18, point 1): a real daemon with the episode engine and the fake
LLM, which quotes memory text in the titles, summaries and metadata it writes. After
``forget`` returns, no file of the data folder (databases, log, ledger) holds the forgotten
text, outside the store's shard; after ``tribalmemory reembed`` the shard does not either
(docs/storage.md#forgetting says what remains in between and why)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fakellm import FakeLLM
from helpers_http import Daemon, start_daemon

SECRET = "zebraquokka4242"
ABOUT = [  # an episode the LLM summarises from its latest memories: the secret's two
    "The staging deploy signing key rotation pages the on-call engineer when it fails Monday.",
    "Staging deploy signing key rotation logs go to the staging deploy dashboard on Monday.",
    f"The staging deploy rotates its signing key with secret_{SECRET}.py every Monday morning.",
    f"Staging deploy signing key rotation: secret_{SECRET}.py also reloads the staging proxy.",
]
ALONE = f"Release checklist item: run {SECRET} audit before tagging."  # its own episode


def files_holding(folder: Path, text: str, skip: Path | None = None) -> list[str]:
    needle = text.encode()
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and (skip is None or skip not in path.parents):
            if needle in path.read_bytes():
                found.append(str(path.relative_to(folder)))
    return found


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Daemon, FakeLLM]]:
    with FakeLLM() as fake:
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.delenv("OPENAI_API_BASE", raising=False)
        episodes = {
            "enabled": True,
            "detector_strategy": "llm",
            "summary_debounce_seconds": 0,
            "llm_update_every": 1,
            "merge_checks": False,  # a check would wait a day for a review call to carry it
            "classify_batch_wait_seconds": 0,  # a doubtful memory's review is asked at once
        }
        running = start_daemon(tmp_path, episodes=episodes)
        try:
            yield running, fake
        finally:
            running.stop()


def settle(client: httpx.Client) -> None:
    """Poll until the episode queue is empty (a few fake LLM calls; 60 s bound)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if client.get("/v1/health").json()["episodes"]["queue_depth"] == 0:
            return
        time.sleep(0.05)
    pytest.fail("episode work did not settle")


def test_forget_removes_the_text_from_every_file(daemon: tuple[Daemon, FakeLLM]) -> None:
    running, fake = daemon
    with httpx.Client(base_url=running.url, timeout=60, trust_env=False) as client:
        ids = [client.post("/v1/remember", json={"content": t}).json()["memory_id"] for t in ABOUT]
        alone = client.post("/v1/remember", json={"content": ALONE, "skip_dedup": True}).json()
        created = client.post(
            "/v1/episodes", json={"title": "Release checklist", "memory_ids": [alone["memory_id"]]}
        ).json()
        settle(client)
        # The precondition: titles, summaries, metadata and the log quote the secret.
        episodes = client.get("/v1/episodes").json()["episodes"]
        quoted = [e for e in episodes if SECRET in str(e)]
        assert len(quoted) >= 2, episodes
        assert any(SECRET in r.text for r in fake.requests)
        data = running.home
        assert files_holding(data, SECRET, skip=data / "store")

        for memory_id in [ids[2], ids[3], alone["memory_id"]]:
            assert client.delete(f"/v1/forget/{memory_id}").status_code == 200
        # Before any job runs: nothing in any file but the store's shard.
        assert files_holding(data, SECRET, skip=data / "store") == []
        gone = client.get(f"/v1/episodes/{created['episode_id']}")
        assert gone.status_code == 404  # no members left: deleted, with its summary memory
        found = client.post("/v1/recall", json={"query": SECRET, "limit": 50}).json()
        assert found["count"] > 0 and SECRET not in str(found["results"])
        assert SECRET not in str(client.get("/v1/episodes").json())
        requests_before = len(fake.requests)
        settle(client)  # the queued LLM regeneration runs without the text
        assert not any(SECRET in r.text for r in fake.requests[requests_before:])
        assert files_holding(data, SECRET, skip=data / "store") == []
    assert running.stop() == 0
    assert files_holding(data, SECRET, skip=data / "store") == []
    done = subprocess.run(
        [sys.executable, "-m", "tribalmemory", "reembed", "--config", str(running.config_path)],
        env=running.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert files_holding(data, SECRET) == []
