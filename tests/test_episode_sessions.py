"""Declared episodes: ``tribal_episode_start`` / ``POST /v1/episodes/start`` and the session's
next memories, through the real engine (embedding detector, no LLM), HTTP and MCP."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers_http import free_port, subprocess_env, write_config
from test_episodes_engine import AUTH, DB
from test_mcp import error_of, ok

from tribalmemory.config import config_from_dict, load_config
from tribalmemory.errors import InvalidInput, PayloadTooLarge
from tribalmemory.interfaces.mcp_server import build_mcp_server
from tribalmemory.runtime import start_runtime

TOPIC = "Fix the multi-tab logout caused by refresh token rotation"


@pytest.fixture
async def rt(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0}
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
    runtime = await start_runtime(config, run_scheduler=False)
    yield runtime
    await runtime.stop()


async def test_session_memories_join_the_declared_episode_when_they_fit(rt: Any) -> None:
    started = await rt.api.episode_start(f"  {TOPIC} ", "agent-1")
    eid = started["episode_id"]
    assert started == {"success": True, "episode_id": eid, "session": "agent-1", "topic": TOPIC}
    empty = await rt.api.episode_get(eid)
    assert empty["memory_ids"] == [] and empty["episode"]["status"] == "active"
    assert empty["history"][0]["action"] == "start"
    first = await rt.api.remember(AUTH[0], session="agent-1")
    assert first["episode_id"] == eid  # the first memory joins the empty episode at once
    unrelated = await rt.api.remember(DB[0], session="agent-1")
    assert unrelated["episode_id"] != eid  # clearly against the topic: the detector decides
    other_session = await rt.api.remember(AUTH[1], session="agent-2")
    no_session = await rt.api.remember(AUTH[2])
    second = await rt.api.remember(AUTH[3], session="agent-1")
    assert second["episode_id"] == eid
    memory = await rt.api.get_memory(second["memory_id"])
    assert memory["metadata"]["session"] == "agent-1"
    assert await rt.episodes.worker.drain(30)
    got = await rt.api.episode_get(eid)
    assert first["memory_id"] in got["memory_ids"] and second["memory_id"] in got["memory_ids"]
    assert unrelated["memory_id"] not in got["memory_ids"]
    assert got["episode"]["title"] == TOPIC  # the declared title stays after summaries
    assert got["episode"]["summary_memory_id"] is not None
    joins = [h for h in got["history"] if h["action"] == "join"]
    assert {h["details"]["memory_id"] for h in joins if h["details"].get("session")} == {
        first["memory_id"],
        second["memory_id"],
    }
    # memories of other sessions, or none, were decided by the detector like any other
    for result in (other_session, no_session):
        joined = [h for h in joins if h["details"]["memory_id"] == result["memory_id"]]
        assert all(not h["details"].get("session") for h in joined)
    current = await rt.api.episode_current("agent-1")
    assert current["topic"] == TOPIC and current["episode"]["id"] == eid
    assert await rt.api.episode_current("nobody") == {
        "session": "nobody",
        "topic": None,
        "episode": None,
    }


async def test_a_closed_or_replaced_episode_takes_no_more_session_memories(rt: Any) -> None:
    first = await rt.api.episode_start(TOPIC, "s")
    await rt.api.episode_close(first["episode_id"])
    closed = await rt.api.remember(AUTH[0], session="s")
    assert closed["episode_id"] != first["episode_id"]
    second = await rt.api.episode_start("Postgres migration with pgloader", "s")
    joined = await rt.api.remember(DB[1], session="s")
    assert joined["episode_id"] == second["episode_id"]
    assert (await rt.api.episode_current("s"))["episode"]["id"] == second["episode_id"]
    await rt.api.episode_delete(second["episode_id"])
    assert (await rt.api.episode_current("s"))["episode"] is None


async def test_start_refuses_bad_input(rt: Any) -> None:
    with pytest.raises(InvalidInput, match="topic must not be empty"):
        await rt.api.episode_start("  ", "s")
    with pytest.raises(InvalidInput, match="session must be a string"):
        await rt.api.episode_start(TOPIC, None)
    with pytest.raises(PayloadTooLarge, match="topic has 201 characters"):
        await rt.api.episode_start("x" * 201, "s")
    with pytest.raises(PayloadTooLarge, match="session has 201 characters"):
        await rt.api.remember(AUTH[0], session="s" * 201)
    assert (await rt.api.episodes_list())["count"] == 0


def test_http_start_and_current(client: Any) -> None:
    started = client.post("/v1/episodes/start", json={"topic": TOPIC, "session": "cli-7"})
    assert started.status_code == 200, started.text
    eid = started.json()["episode_id"]
    stored = client.post("/v1/remember", json={"content": AUTH[0], "session": "cli-7"})
    assert stored.json()["episode_id"] == eid
    current = client.get("/v1/episodes/current?session=cli-7")
    assert current.status_code == 200 and current.json()["episode"]["memory_count"] == 1
    for response, status, message in (
        (client.get("/v1/episodes/current"), 400, "session must be a string, and is missing"),
        (client.post("/v1/episodes/start", json={"topic": TOPIC}), 422, "missing required"),
        (client.post("/v1/episodes/start", json={"topic": 1, "session": "s"}), 422, "topic"),
    ):
        assert response.status_code == status, response.text
        assert message in response.json()["error"]


async def test_mcp_start_uses_the_connection_and_agents_stay_apart(rt: Any) -> None:
    from mcp import Client

    agent_a = Client(build_mcp_server(lambda: rt.api))
    agent_b = Client(build_mcp_server(lambda: rt.api))  # another stdio process
    async with agent_a as a, agent_b as b:
        started = ok(await a.call_tool("tribal_episode_start", {"topic": TOPIC}))
        from_b = ok(await b.call_tool("tribal_remember", {"content": AUTH[1]}))
        assert from_b["episode_id"] is None  # B declared nothing; the episode is empty
        from_a = ok(await a.call_tool("tribal_remember", {"content": AUTH[0]}))
        assert from_a["episode_id"] == started["episode_id"]
        current = ok(await a.call_tool("tribal_episode_current", {}))
        assert current["episode"]["id"] == started["episode_id"]
        assert ok(await b.call_tool("tribal_episode_current", {}))["episode"] is None
        named = ok(await b.call_tool("tribal_episode_current", {"session": started["session"]}))
        assert named["episode"]["id"] == started["episode_id"]  # a session can be named
        message = error_of(await a.call_tool("tribal_episode_start", {"topic": ""}))
        assert "topic must not be empty" in message


@dataclass
class McpDaemon:
    url: str
    config_path: Path
    env: dict[str, str]  # for a ``tribalmemory mcp`` process of its data folder
    home: Path


@pytest.fixture
def http_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[McpDaemon]:
    """The daemon's app (REST and /mcp) under uvicorn in a thread, episodes on, no LLM."""
    import uvicorn

    from tribalmemory.interfaces.http import create_app

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    home, user = tmp_path / "home", tmp_path / "user"
    user.mkdir()
    port = free_port()
    settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0}
    config_path = write_config(home, server={"port": port}, episodes=settings)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(load_config(config_path)),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:  # bounded: a daemon that does not start fails the test
        assert thread.is_alive(), "the daemon did not start"
        assert time.monotonic() < deadline, "the daemon did not start within 60 s"
        time.sleep(0.05)
    try:
        yield McpDaemon(f"http://127.0.0.1:{port}", config_path, subprocess_env(home, user), home)
    finally:
        server.should_exit = True
        thread.join(30)


async def test_mcp_agents_have_a_session_without_naming_one(http_daemon: McpDaemon) -> None:
    """Issue 40.14: over the daemon's /mcp, tribal_episode_start and tribal_episode_current
    failed with "session must be a string" unless a session was passed. Real MCP clients over
    HTTP (protocol 2026-07-28, which has no session id, and the handshake with its
    Mcp-Session-Id) and over stdio (``tribalmemory mcp``) each get their own session."""
    from mcp import Client, StdioServerParameters
    from mcp_types import Implementation

    mcp_url = f"{http_daemon.url}/mcp"
    async with Client(mcp_url) as agent:  # 2026-07-28: every request stands alone
        started = ok(await agent.call_tool("tribal_episode_start", {"topic": TOPIC}))
        assert started["session"] == "mcp-client:mcp/0.1.0@127.0.0.1"  # its clientInfo
        current = ok(await agent.call_tool("tribal_episode_current", {}))
        assert current["session"] == started["session"]
        assert current["episode"]["id"] == started["episode_id"]
        stored = ok(await agent.call_tool("tribal_remember", {"content": AUTH[0]}))
        assert stored["episode_id"] == started["episode_id"]  # the session's memory joins

    codex = Implementation(name="codex", version="0.9")
    async with Client(mcp_url, client_info=codex) as other:  # another client program
        assert ok(await other.call_tool("tribal_episode_current", {}))["episode"] is None
        named = {"session": started["session"]}  # a session the call names still wins
        shown = ok(await other.call_tool("tribal_episode_current", named))
        assert shown["episode"]["id"] == started["episode_id"]

    async with Client(mcp_url, mode="legacy") as legacy:  # the handshake: Mcp-Session-Id
        own = ok(await legacy.call_tool("tribal_episode_start", {"topic": "Postgres upgrade"}))
        assert own["session"].startswith("mcp-") and own["session"] != started["session"]
        assert not own["session"].startswith("mcp-client:")
        mine = ok(await legacy.call_tool("tribal_episode_current", {}))
        assert mine["episode"]["id"] == own["episode_id"]

    command = [sys.executable, "-m", "tribalmemory.mcp_stdio", str(http_daemon.config_path)]
    stdio = StdioServerParameters(
        command=command[0], args=command[1:], env=http_daemon.env, cwd=str(http_daemon.home)
    )
    async with Client(stdio, read_timeout_seconds=120) as local:
        declared = ok(await local.call_tool("tribal_episode_start", {"topic": "Release notes"}))
        assert declared["session"] not in (started["session"], own["session"])
        again = ok(await local.call_tool("tribal_episode_current", {}))
        assert again["episode"]["id"] == declared["episode_id"]
