"""Offline is a mode, not a fault (issue 40.5): with no API key configured the LLM's state is
``offline`` with the reason and the documented fallback, in ``/v1/health`` and ``tribalmemory
status``; work only an LLM can do (merge and split checks) is never queued nor counted as
pending; local commands print nothing about it, and the daemon says it once at start.

Through the real engine, the real daemon and the real CLI, with no key in the environment.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from helpers_http import free_port, start_daemon, subprocess_env, write_config
from test_episodes_engine import AUTH, DB, remember
from test_quickstart import run as run_cli

from tribalmemory.runtime import Runtime

QUEUE_DEADLINE = 60.0  # bounds a wait for the daemon's queue; it empties in about a second
HYBRID = {"detector_strategy": "hybrid", "summary_debounce_seconds": 0}


async def test_offline_engine_queues_no_llm_only_work(
    engine_runtime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Hybrid detection (the default) without a key: the database thread reaches 4 memories,
    a merge check size; on main that check waited a day for an LLM review that never comes."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(tmp_path / "tm-home"))
    rt: Runtime = await engine_runtime(**HYBRID)
    for i, text in enumerate(AUTH[:3]):
        await remember(rt, text, 3, 9 + i)
    for i, text in enumerate(DB):
        await remember(rt, text, 3, 12 + i)
    assert await rt.episodes.worker.drain(30, due_only=True), "due episode work did not settle"
    health = rt.api.health()
    queue = health["episodes"]
    assert queue["merge_waiting"] == 0 and queue["split_waiting"] == 0
    assert queue["queue_depth"] == 0 and queue["oldest_pending_age_seconds"] == 0.0
    llm = health["llm"]
    assert llm["state"] == "offline"
    assert "no API key configured" in llm["reason"] and "OPENAI_API_KEY" in llm["reason"]
    assert f"environment or {tmp_path / 'tm-home' / '.env'};" in llm["reason"]  # the one read
    assert "extractive summaries" in llm["fallback"]
    episodes = (await rt.api.episodes_list())["episodes"]
    assert len(episodes) == 2 and {e["summary_kind"] for e in episodes} == {"extractive"}


async def test_checks_left_from_a_run_with_a_key_are_settled_offline(
    engine_runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge check queued while a key was configured does not wait for ever once the key is
    gone: the start-up check finds the LLM offline and settles it."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt: Runtime = await engine_runtime(**HYBRID)
    for i, text in enumerate(DB[:2]):
        await remember(rt, text, 3, 12 + i)
    assert await rt.episodes.worker.drain(30, due_only=True)
    (episode,) = (await rt.api.episodes_list())["episodes"]
    store = rt.episodes.store
    with store.transaction() as db:  # as a run with a key left it: due in a day
        store.jobs.enqueue(db, "merge", episode["id"], rt.episodes.engine.state.clock(), 86400.0)
    await rt.episodes._check_llm()  # what start-up does once litellm is imported
    assert await rt.episodes.worker.drain(30, due_only=True)
    assert rt.api.health()["episodes"]["merge_waiting"] == 0
    assert rt.api.health()["episodes"]["queue_depth"] == 0


def test_offline_daemon_says_it_once_and_status_shows_the_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon (default settings, no key) logs one WARNING with the reason at start; its
    queue empties after a thread reaches a check size; ``status`` prints the state and reason;
    a local command (no daemon) prints nothing about the LLM on stderr."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    running = start_daemon(tmp_path / "d", episodes={"summary_debounce_seconds": 0})
    try:
        with httpx.Client(base_url=running.url, trust_env=False, timeout=30) as http:
            for text in AUTH[:3] + DB:
                assert http.post("/v1/remember", json={"content": text}).status_code == 200
            end = time.monotonic() + QUEUE_DEADLINE
            while (queue := http.get("/v1/health").json()["episodes"])["queue_depth"]:
                assert time.monotonic() < end, f"the queue never empties: {queue}"
                time.sleep(0.1)
            assert queue["merge_waiting"] == 0
            llm = http.get("/v1/health").json()["llm"]
        assert llm["state"] == "offline" and "no API key configured" in llm["reason"]
        status = run_cli(["status", "--config", str(running.config_path)], running.env, tmp_path)
        assert status.returncode == 0, status.stderr
        assert "  state: offline" in status.stdout
        assert "no API key configured for openai" in status.stdout
        assert "extractive summaries" in status.stdout  # the fallback, said
    finally:
        running.stop()
    log = running.output.read_text(encoding="utf-8")
    warned = [line for line in log.splitlines() if " WARNING " in line and "LLM" in line]
    assert len(warned) == 1, log
    assert "LLM offline: no API key configured for openai" in warned[0]
    assert "extractive summaries" in warned[0]
    assert "LLM features unavailable" not in log

    home, user = tmp_path / "local", tmp_path / "user"
    user.mkdir()
    config = write_config(home, server={"port": free_port()})
    env = subprocess_env(home, user)
    env.pop("OPENAI_API_KEY", None)
    for args in (["remember", AUTH[0]], ["remember", AUTH[1]], ["episodes", "list"]):
        done = run_cli([*args, "--config", str(config)], env, tmp_path)
        assert done.returncode == 0, done.stderr
        assert "LLM" not in done.stderr and "API key" not in done.stderr, done.stderr
