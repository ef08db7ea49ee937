"""Declared episodes: ``tribal_episode_start`` / ``POST /v1/episodes/start`` and the session's
next memories, through the real engine (embedding detector, no LLM), HTTP and MCP."""

from __future__ import annotations

from typing import Any

import pytest
from test_episodes_engine import AUTH, DB
from test_mcp import error_of, ok

from tribalmemory.config import config_from_dict
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
        (client.get("/v1/episodes/current"), 400, "session must be a string"),
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


async def test_daemon_http_mcp_without_a_session_id_has_no_session(rt: Any) -> None:
    from mcp import Client

    async with Client(build_mcp_server(lambda: rt.api, one_session=False)) as client:
        message = error_of(await client.call_tool("tribal_episode_start", {"topic": TOPIC}))
        assert "session must be a string" in message
        started = ok(
            await client.call_tool("tribal_episode_start", {"topic": TOPIC, "session": "me"})
        )
        stored = ok(
            await client.call_tool("tribal_remember", {"content": AUTH[0], "session": "me"})
        )
        assert stored["episode_id"] == started["episode_id"]
