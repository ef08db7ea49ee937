"""The MCP server: tool list and schemas, result shapes, errors, and the stdio command.

Three layers:
- the MCP mapping alone, over a fake API object (no store needed);
- a real TribalAPI from ``start_runtime`` (needs ``tribalmemory.storage.open_store``);
- ``tribalmemory mcp`` as a subprocess over stdio against a daemon (needs the client, the
  HTTP daemon and the CLI).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters

from tribalmemory.api import EPISODES_DISABLED
from tribalmemory.config import Config
from tribalmemory.errors import FeatureDisabled, InvalidInput, NotFound, Unavailable
from tribalmemory.interfaces.mcp_server import build_mcp_server
from tribalmemory.interfaces.mcp_tools import INTERNAL_ERROR
from tribalmemory.projects import from_directory

TOOLS = {
    "tribal_remember",
    "tribal_recall",
    "tribal_forget",
    "tribal_used",
    "tribal_correct",
    "tribal_ingest_conversation",
    "tribal_stats",
    "tribal_episodes_list",
    "tribal_episode_get",
    "tribal_episode_create",
    "tribal_episode_add",
    "tribal_episode_remove",
    "tribal_episode_close",
    "tribal_episode_regenerate",
    "tribal_episode_start",
    "tribal_episode_current",
    "tribal_episode_update",
    "tribal_episode_merge",
    "tribal_episode_split",
    "tribal_episode_delete",
    "tribal_episode_chain",
    "tribal_episode_replay",
    "tribal_episodes_search",
    "tribal_episode_decisions",
    "tribal_context",
    "tribal_patterns",
    "tribal_projects",
    "tribal_entities",
    "tribal_entity",
    "tribal_sessions",
    "tribal_causes",
    "tribal_causal_path",
    "tribal_cause_add",
    "tribal_cause_remove",
}
EPISODE_CALLS: dict[str, dict[str, Any]] = {
    "tribal_episodes_list": {},
    "tribal_episode_get": {"episode_id": "ep-0123456789ab"},
    "tribal_episode_create": {"title": "t", "memory_ids": [str(uuid.uuid4())]},
    "tribal_episode_add": {"episode_id": "ep-0123456789ab", "memory_id": str(uuid.uuid4())},
    "tribal_episode_remove": {"episode_id": "ep-0123456789ab", "memory_id": str(uuid.uuid4())},
    "tribal_episode_close": {"episode_id": "ep-0123456789ab"},
    "tribal_episode_regenerate": {"episode_id": "ep-0123456789ab"},
    "tribal_episode_start": {"topic": "refresh tokens"},
    "tribal_episode_current": {},
    "tribal_episode_update": {"episode_id": "ep-0123456789ab", "title": "t"},
    "tribal_episode_merge": {"episode_id": "ep-0123456789ab", "other_id": "ep-0123456789ac"},
    "tribal_episode_split": {"episode_id": "ep-0123456789ab", "memory_ids": [str(uuid.uuid4())]},
    "tribal_episode_delete": {"episode_id": "ep-0123456789ab"},
    "tribal_episode_chain": {"episode_id": "ep-0123456789ab"},
    "tribal_episode_replay": {"topic": "refresh tokens"},
    "tribal_episodes_search": {"query": "refresh tokens"},
    "tribal_episode_decisions": {"episode_id": "ep-0123456789ab"},
    "tribal_context": {"query": "refresh tokens"},
    "tribal_patterns": {"kind": "antipattern"},
    "tribal_entities": {},
    "tribal_entity": {"name": "orders-svc"},
    "tribal_causes": {"node": "ep-0123456789ab"},
    "tribal_causal_path": {"from_node": "ep-0123456789ab", "to_node": "ep-0123456789ac"},
    "tribal_cause_add": {"cause": "ep-0123456789ab", "effect": "ep-0123456789ac"},
    "tribal_cause_remove": {"link_id": "cl-0123456789ab"},
}
REMEMBER_KEYS = {"success", "memory_id", "duplicate_of", "episode_id", "error", "episode_status"}
MEMORY_KEYS = {
    "id",
    "content",
    "source_type",
    "source_instance",
    "tags",
    "context",
    "created_at",
    "updated_at",
    "supersedes",
    "metadata",
}
LIST_ITEM_KEYS = {
    "id",
    "title",
    "summary",
    "status",
    "memory_count",
    "created_at",
    "updated_at",
    "closed_at",
}
DETAIL_KEYS = LIST_ITEM_KEYS | {"summary_memory_id", "metadata"}


def text_of(result: Any) -> str:
    assert result.content, "a tool result must carry text content"
    return "\n".join(block.text for block in result.content)


def error_of(result: Any) -> str:
    assert result.is_error is True, f"expected a tool error, got {result.structured_content}"
    assert result.structured_content is None
    return text_of(result)


def ok(result: Any) -> dict[str, Any]:
    """The structured result of a successful call; its text content is the same JSON."""
    assert result.is_error is not True, text_of(result)
    data = result.structured_content
    assert isinstance(data, dict)
    assert json.loads(text_of(result)) == data
    return data


# -- the MCP mapping over a fake API ----------------------------------------------------------


class FakeAPI:
    """Records calls; answers with documented shapes or raises what it is told to."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.raise_next: BaseException | None = None

    def _record(self, method: str, **arguments: Any) -> None:
        self.calls.append((method, arguments))
        if self.raise_next is not None:
            exc, self.raise_next = self.raise_next, None
            raise exc

    async def remember(self, **arguments: Any) -> dict[str, Any]:
        self._record("remember", **arguments)
        return {
            "success": True,
            "memory_id": str(uuid.uuid4()),
            "duplicate_of": None,
            "episode_id": "ep-00000000aaaa",
            "error": None,
            "episode_status": "assigned",
            "plugin_extra": 7,
        }

    async def stats(self) -> dict[str, Any]:
        self._record("stats")
        return {
            "total_memories": 0,
            "by_source_type": {},
            "embedding_model": "m",
            "episodes": None,
        }

    async def forget(self, memory_id: Any) -> dict[str, Any]:
        self._record("forget", memory_id=memory_id)
        return {"success": True, "memory_id": memory_id}


@pytest.fixture
def fake() -> FakeAPI:
    return FakeAPI()


def connect(api: Any) -> Client:
    """An in-memory MCP client of a server over ``api`` (enter it inside the test's task)."""
    return Client(build_mcp_server(lambda: api))


async def test_tool_list_names_descriptions_and_schemas(fake: FakeAPI) -> None:
    async with connect(fake) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert len(tool.description or "") > 40, tool.name
            assert tool.input_schema["type"] == "object"
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            for name, prop in tool.input_schema.get("properties", {}).items():
                assert prop.get("description"), f"{tool.name}.{name} has no description"
                assert "type" in prop and "anyOf" not in prop, f"{tool.name}.{name}: {prop}"
        assert "before starting a task" in (tools["tribal_recall"].description or "")
        remember = tools["tribal_remember"].input_schema
        assert remember["required"] == ["content"]
        assert remember["properties"]["content"]["type"] == "string"
        assert remember["properties"]["tags"]["type"] == "array"
        assert "USER_EXPLICIT" in remember["properties"]["source_type"]["enum"]
        assert "EPISODE_SUMMARY" not in remember["properties"]["source_type"]["enum"]
        recall = tools["tribal_recall"].input_schema["properties"]
        assert (recall["limit"]["minimum"], recall["limit"]["maximum"]) == (1, 50)
        listing = tools["tribal_episodes_list"].input_schema["properties"]
        assert listing["status"]["enum"] == ["active", "closed", "archived"]
        assert (
            listing["limit"]["minimum"],
            listing["limit"]["maximum"],
            listing["limit"]["default"],
        ) == (1, 100, 50)
        get = tools["tribal_episode_get"].input_schema
        assert get["required"] == ["episode_id"]
        timeline = get["properties"]["include_timeline"]
        assert (timeline["type"], timeline["default"]) == ("boolean", False)
        create = tools["tribal_episode_create"].input_schema
        assert set(create["required"]) == {"title", "memory_ids"}
        recall_hints, forget_hints = (
            tools["tribal_recall"].annotations,
            tools["tribal_forget"].annotations,
        )
        assert recall_hints is not None and recall_hints.read_only_hint is True
        assert forget_hints is not None and forget_hints.destructive_hint is True
        output = tools["tribal_remember"].output_schema
        assert output is not None and set(output["required"]) == REMEMBER_KEYS


async def test_arguments_reach_the_api_unchanged(fake: FakeAPI) -> None:
    async with connect(fake) as client:
        data = ok(
            await client.call_tool(
                "tribal_remember",
                {
                    "content": "The deploy script needs AWS_PROFILE=prod",
                    "context": '{"file": "deploy.sh"}',  # JSON text stays text
                    "tags": '["deploy", "aws"]',  # a list sent as JSON text is decoded
                    "source_type": "auto_capture",
                },
            )
        )
        assert REMEMBER_KEYS <= set(data) and data["plugin_extra"] == 7  # extra keys pass through
        method, arguments = fake.calls[-1]
        assert method == "remember"
        session = arguments.pop("session")  # the connection's session, named by the server
        assert isinstance(session, str) and session.startswith("mcp-")
        assert arguments == {
            "content": "The deploy script needs AWS_PROFILE=prod",
            "source_type": "auto_capture",
            "source_instance": "mcp",  # the client's own name (its clientInfo)
            "context": '{"file": "deploy.sh"}',
            "tags": ["deploy", "aws"],
            "created_at": None,
            "skip_dedup": None,  # left out: the API applies its default
            "project": None,  # the daemon's /mcp names no project: the API's default
            "shared": None,
            "run": None,
        }


async def test_wrong_types_are_left_to_the_api(fake: FakeAPI) -> None:
    """The server does not reject on its schema: the API does, with its own message."""
    async with connect(fake) as client:
        fake.raise_next = InvalidInput("skip_dedup must be true or false")
        message = error_of(
            await client.call_tool("tribal_remember", {"content": "x", "skip_dedup": "maybe"})
        )
        assert fake.calls[-1][1]["skip_dedup"] == "maybe"
        assert "skip_dedup must be true or false" in message
        assert "What to do:" in message


async def test_missing_required_argument_is_a_tool_error(fake: FakeAPI) -> None:
    async with connect(fake) as client:
        message = error_of(await client.call_tool("tribal_remember", {}))
        assert "content" in message


@pytest.mark.parametrize(
    ("tool", "arguments", "unknown", "allowed"),
    [
        ("tribal_recall", {"query": "x", "limt": 3}, "'limt'", "query, limit, min_relevance"),
        ("tribal_recall", {"query": "x", "tag": "a", "since": "2"}, "'tag', 'since'", "query, "),
        ("tribal_remember", {"content": "x", "tag": ["a"]}, "'tag'", "content, source_type"),
        ("tribal_stats", {"verbose": True}, "'verbose'", "none"),
        ("tribal_episodes_list", {"page": 5}, "'page'", "status, limit, offset"),
    ],
)
async def test_unknown_arguments_are_refused_naming_the_allowed_ones(
    fake: FakeAPI, tool: str, arguments: dict[str, Any], unknown: str, allowed: str
) -> None:
    async with connect(fake) as client:
        message = error_of(await client.call_tool(tool, arguments))
    plural = "s" if "," in unknown else ""
    assert f"unknown argument{plural} {unknown}; allowed: {allowed}" in message
    assert "What to do:" in message
    assert fake.calls == []  # refused before the API is called


async def test_schemas_are_the_shapes(fake: FakeAPI) -> None:
    """Each tool's input properties are fields of a request model, its output a response model."""
    from tribalmemory import shapes

    requests = [
        shapes.RememberRequest,
        shapes.RecallRequest,
        shapes.ForgetRequest,
        shapes.CorrectRequest,
        shapes.IngestConversationRequest,
        shapes.EpisodesListQuery,
        shapes.EpisodeRef,
        shapes.EpisodeGetQuery,
        shapes.EpisodeCreateRequest,
        shapes.EpisodeMemoryRequest,
        shapes.EpisodesReplayRequest,
        shapes.EpisodesSearchRequest,
        shapes.EpisodeStartRequest,
        shapes.EpisodeCurrentQuery,
        shapes.EpisodeUpdateRequest,
        shapes.EpisodeMergeRequest,
        shapes.EpisodeSplitRequest,
        shapes.ContextQuery,
        shapes.PatternsQuery,
        shapes.EntitiesListQuery,
        shapes.EntityRef,
        shapes.EntityGetQuery,
        shapes.CausesQuery,
        shapes.CauseAddRequest,
        shapes.CauseRef,
        shapes.CauseRemoveQuery,
        shapes.CausalPathQuery,
        shapes.SessionsQuery,
    ]
    outputs = {
        "tribal_remember": shapes.RememberResult,
        "tribal_recall": shapes.RecallResult,
        "tribal_forget": shapes.ForgetResult,
        "tribal_used": shapes.UsedResult,
        "tribal_correct": shapes.RememberResult,
        "tribal_ingest_conversation": shapes.IngestConversationResult,
        "tribal_stats": shapes.Stats,
        "tribal_episodes_list": shapes.EpisodeList,
        "tribal_episode_get": shapes.EpisodeGetResult,
        "tribal_episode_create": shapes.EpisodeCreateResult,
        "tribal_episode_add": shapes.EpisodeAddResult,
        "tribal_episode_start": shapes.EpisodeStartResult,
        "tribal_episode_current": shapes.EpisodeCurrent,
        "tribal_episode_update": shapes.EpisodeGetResult,
        "tribal_episode_merge": shapes.EpisodeMergeResult,
        "tribal_episode_split": shapes.EpisodeSplitResult,
        "tribal_episode_chain": shapes.EpisodeChain,
        "tribal_episode_replay": shapes.Replay,
        "tribal_episodes_search": shapes.EpisodeSearch,
        "tribal_episode_decisions": shapes.EpisodeDecisions,
        "tribal_context": shapes.Context,
        "tribal_patterns": shapes.Patterns,
        "tribal_projects": shapes.ProjectList,
        "tribal_entities": shapes.EntityList,
        "tribal_entity": shapes.EntityDetail,
        "tribal_sessions": shapes.SessionList,
        "tribal_causes": shapes.CauseList,
        "tribal_causal_path": shapes.CausalPath,
        "tribal_cause_add": shapes.CauseAddResult,
    }
    async with connect(fake) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for tool in tools.values():
        expected = outputs.get(tool.name, shapes.Success)
        assert tool.output_schema == expected.model_json_schema(mode="serialization"), tool.name
        for name, prop in tool.input_schema.get("properties", {}).items():
            fields = [r.argument_schema(name) for r in requests if name in r.model_fields]
            assert fields, f"{tool.name}.{name} is no request field"
            plain = {k: v for k, v in prop.items() if k not in ("title", "description")}
            assert any(
                plain == {k: v for k, v in f.items() if k != "description"} for f in fields
            ), f"{tool.name}.{name}: {prop}"


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (NotFound("no memory with id x"), ["no memory with id x", "tribal_recall"]),
        (
            FeatureDisabled(EPISODES_DISABLED, "set episodes.enabled: true and restart"),
            [EPISODES_DISABLED, "set episodes.enabled: true and restart"],
        ),
        (Unavailable("the store is locked by another process"), ["locked", "retry"]),
    ],
)
async def test_tribal_errors_become_tool_errors(
    fake: FakeAPI, exc: Exception, expected: list[str]
) -> None:
    async with connect(fake) as client:
        fake.raise_next = exc
        message = error_of(await client.call_tool("tribal_stats", {}))
        for part in expected:
            assert part in message


async def test_unexpected_exception_is_a_generic_logged_error(
    fake: FakeAPI, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect(fake) as client:
        fake.raise_next = RuntimeError("secret internal detail")
        with caplog.at_level(logging.ERROR, logger="tribalmemory.mcp"):
            message = error_of(await client.call_tool("tribal_stats", {}))
        assert INTERNAL_ERROR in message
        assert "secret internal detail" not in message
        assert any(
            "secret internal detail" in (r.exc_text or "")
            or (r.exc_info and "secret internal detail" in str(r.exc_info[1]))
            for r in caplog.records
        )
        ok(await client.call_tool("tribal_stats", {}))  # the server keeps serving


async def test_provider_failures_and_async_provider() -> None:
    def broken() -> Any:
        raise RuntimeError("no runtime")

    async with Client(build_mcp_server(broken)) as client:
        assert INTERNAL_ERROR in error_of(await client.call_tool("tribal_stats", {}))

    api = FakeAPI()
    resets: list[int] = []

    async def provider() -> FakeAPI:
        return api

    async with Client(
        build_mcp_server(provider, on_unavailable=lambda: resets.append(1))
    ) as client:
        assert ok(await client.call_tool("tribal_stats", {}))["embedding_model"] == "m"
        api.raise_next = Unavailable("daemon gone")
        error_of(await client.call_tool("tribal_stats", {}))
        assert resets == [1]
        api.raise_next = NotFound("nope")
        error_of(await client.call_tool("tribal_stats", {}))
        assert resets == [1]


async def test_sync_api_methods_and_non_dict_results() -> None:
    class SyncAPI:
        def stats(self) -> Any:
            return {
                "total_memories": 3,
                "by_source_type": {},
                "embedding_model": "m",
                "episodes": None,
            }

        def forget(self, memory_id: Any) -> Any:
            return None  # not a result: must not turn into a success

    async with Client(build_mcp_server(lambda: SyncAPI())) as client:
        assert ok(await client.call_tool("tribal_stats", {}))["total_memories"] == 3
        message = error_of(await client.call_tool("tribal_forget", {"memory_id": "x"}))
        assert INTERNAL_ERROR in message


class FakeDaemonClient(FakeAPI):
    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


async def test_stdio_connection_starts_once_and_rechecks_after_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tribalmemory.client
    from tribalmemory.mcp_stdio import DaemonConnection

    started: list[FakeDaemonClient] = []

    def ensure_daemon(config: Config, config_path: Any = None) -> FakeDaemonClient:
        assert config_path == "cfg.yaml"
        started.append(FakeDaemonClient())
        return started[-1]

    monkeypatch.setattr(tribalmemory.client, "ensure_daemon", ensure_daemon)
    connection = DaemonConnection(make_config(tmp_path), "cfg.yaml")
    async with Client(build_mcp_server(connection.get, on_unavailable=connection.reset)) as client:
        assert started == []  # nothing is started before the first tool call
        ok(await client.call_tool("tribal_stats", {}))
        ok(await client.call_tool("tribal_stats", {}))
        assert len(started) == 1
        started[0].raise_next = Unavailable("cannot reach the daemon at http://127.0.0.1:1")
        message = error_of(await client.call_tool("tribal_stats", {}))
        assert "cannot reach the daemon" in message
        ok(await client.call_tool("tribal_stats", {}))  # ensure_daemon ran again
        assert len(started) == 2 and started[0].closed and not started[1].closed
    await connection.aclose()
    assert started[1].closed


async def test_stdio_connection_reports_why_the_daemon_did_not_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tribalmemory.client
    from tribalmemory.mcp_stdio import DaemonConnection

    def ensure_daemon(config: Config, config_path: Any = None) -> Any:
        raise OSError("port 18790 is in use by another program")

    monkeypatch.setattr(tribalmemory.client, "ensure_daemon", ensure_daemon)
    connection = DaemonConnection(make_config(tmp_path))
    async with Client(build_mcp_server(connection.get, on_unavailable=connection.reset)) as client:
        message = error_of(await client.call_tool("tribal_stats", {}))
    assert "could not reach or start the Tribal Memory daemon" in message
    assert "port 18790 is in use" in message


# -- a real TribalAPI -------------------------------------------------------------------------


def _storage_ready() -> bool:
    try:
        from tribalmemory.storage import open_store  # type: ignore[attr-defined]  # noqa: F401
    except ImportError:
        return False
    return True


needs_store = pytest.mark.skipif(
    not _storage_ready(), reason="tribalmemory.storage.open_store is not available yet"
)


def make_config(tmp_path: Path, episodes: bool = False) -> Config:
    config = Config(data_dir=str(tmp_path / "data"))
    config.episodes.enabled = episodes
    return config


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Any]:
    from tribalmemory.runtime import start_runtime

    started = await start_runtime(make_config(tmp_path))
    try:
        yield started
    finally:
        await started.stop()


ON_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
"""For the tests that take the module's shared runtimes (they live on the module's loop)."""


@pytest.fixture(scope="module")
def module_mcp(module_runtime: Any) -> Any:
    """The MCP server over :func:`module_runtime` (building one takes ~0.4 s of schemas);
    each test connects its own client session to it."""
    return build_mcp_server(lambda: module_runtime.api)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_runtime(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:
    """``runtime``, one for all the module's tests that take it: for calls that must fail,
    which change nothing another test could read (a failure that stored something fails its
    own test). Starting a runtime per case would buy nothing."""
    from tribalmemory.runtime import start_runtime

    started = await start_runtime(make_config(tmp_path_factory.mktemp("mcp")))
    try:
        yield started
    finally:
        await started.stop()


@needs_store
async def test_remember_recall_stats_forget(runtime: Any) -> None:
    async with connect(runtime.api) as client:
        stored = ok(
            await client.call_tool(
                "tribal_remember",
                {
                    "content": "Run the billing service tests with `make test-billing`; "
                    "plain pytest misses the fixtures.",
                    "tags": ["billing", "testing"],
                    "context": "repo acme/billing",
                },
            )
        )
        assert set(stored) >= REMEMBER_KEYS
        assert stored["success"] is True and stored["duplicate_of"] is None
        assert stored["error"] is None and stored["episode_id"] is None
        memory_id = stored["memory_id"]
        assert str(uuid.UUID(memory_id)) == memory_id

        other = ok(
            await client.call_tool(
                "tribal_remember",
                {
                    "content": "The staging database is rebuilt every Sunday night.",
                    "source_type": "AUTO_CAPTURE",
                },
            )
        )
        assert other["success"] is True and other["memory_id"] != memory_id

        found = ok(
            await client.call_tool(
                "tribal_recall", {"query": "how do I run the billing tests", "limit": 5}
            )
        )
        assert set(found) == {"results", "query", "count", "context", "episodes", "period"}
        assert found["query"] == "how do I run the billing tests"
        assert found["count"] == len(found["results"]) == 2  # both stored memories rank
        best = found["results"][0]
        assert set(best) >= {"memory_id", "similarity_score", "memory"}
        assert best["memory_id"] == memory_id
        assert 0.0 <= best["similarity_score"] <= 1.0
        assert set(best["memory"]) >= MEMORY_KEYS
        assert best["memory"]["id"] == memory_id
        assert best["memory"]["tags"] == ["billing", "testing"]
        assert best["memory"]["context"] == "repo acme/billing"
        assert best["memory"]["source_type"] == "USER_EXPLICIT"

        tagged = ok(
            await client.call_tool("tribal_recall", {"query": "database", "tags": ["testing"]})
        )
        assert [r["memory_id"] for r in tagged["results"]] == [memory_id]

        stats = ok(await client.call_tool("tribal_stats", {}))
        assert stats["total_memories"] == 2
        assert stats["by_source_type"]["USER_EXPLICIT"] == 1
        assert stats["by_source_type"]["AUTO_CAPTURE"] == 1
        assert isinstance(stats["embedding_model"], str) and stats["embedding_model"]

        gone = ok(await client.call_tool("tribal_forget", {"memory_id": memory_id}))
        assert gone == {"success": True, "memory_id": memory_id}
        assert ok(await client.call_tool("tribal_stats", {}))["total_memories"] == 1
        again = error_of(await client.call_tool("tribal_forget", {"memory_id": memory_id}))
        assert f"no memory with id {memory_id}" in again and "What to do:" in again


@needs_store
async def test_tribal_correct_hides_the_old_memory(runtime: Any) -> None:
    async with connect(runtime.api) as client:
        old = ok(await client.call_tool("tribal_remember", {"content": "Deploys need 2 approvals"}))
        fixed = ok(
            await client.call_tool(
                "tribal_correct",
                {"memory_id": old["memory_id"], "content": "Deploys need 1 approval since May"},
            )
        )
        assert fixed["success"] is True
        query = {"query": "how many approvals do deploys need"}
        found = ok(await client.call_tool("tribal_recall", query))
        assert [r["memory_id"] for r in found["results"]] == [fixed["memory_id"]]
        both = ok(await client.call_tool("tribal_recall", query | {"include_superseded": True}))
        hidden = [r for r in both["results"] if r["memory_id"] == old["memory_id"]]
        assert hidden and hidden[0]["memory"]["superseded_by"] == fixed["memory_id"]


@needs_store
async def test_tribal_ingest_conversation_stores_turns_once(runtime: Any) -> None:
    """The client is the author of messages without a name; a re-send stores nothing; a bad
    message is a tool error naming it, with nothing stored."""
    messages = [
        {"role": "user", "content": "Which port does the staging API listen on?", "name": "ana"},
        {"role": "assistant", "content": "The staging API listens on port 8443 behind nginx."},
        {"role": "user", "content": "thanks!"},
    ]
    async with connect(runtime.api) as client:
        call = {"conversation_id": "chat-9", "messages": messages}
        done = ok(await client.call_tool("tribal_ingest_conversation", call))
        assert (done["turns"], done["stored"], done["folded"]) == (2, 2, 1)
        again = ok(await client.call_tool("tribal_ingest_conversation", call))
        assert (again["stored"], again["existing"]) == (0, 2)
        answer = runtime.service.store.get([done["memory_ids"][1]])[0]
        assert answer.content == (
            "assistant: The staging API listens on port 8443 behind nginx.\nuser: thanks!"
        )
        assert answer.source_instance == "mcp"  # the MCP client's name (clientInfo)
        bad = {"conversation_id": "chat-10", "messages": [{"role": "bot", "content": "x"}]}
        problem = error_of(await client.call_tool("tribal_ingest_conversation", bad))
        assert "messages[0]: role must be one of" in problem
        assert ok(await client.call_tool("tribal_stats", {}))["total_memories"] == 2


@needs_store
async def test_duplicate_is_reported_not_stored(runtime: Any) -> None:
    async with connect(runtime.api) as client:
        text = "Feature flags live in config/flags.yaml and are read at start-up."
        first = ok(await client.call_tool("tribal_remember", {"content": text}))
        second = ok(await client.call_tool("tribal_remember", {"content": text}))
        assert second["success"] is False
        assert second["memory_id"] is None
        assert second["duplicate_of"] == first["memory_id"]
        assert "skip_dedup" in second["error"]
        forced = ok(
            await client.call_tool("tribal_remember", {"content": text, "skip_dedup": True})
        )
        assert forced["success"] is True and forced["memory_id"] != first["memory_id"]
        assert ok(await client.call_tool("tribal_stats", {}))["total_memories"] == 2


@ON_MODULE_LOOP
@needs_store
@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("tribal_remember", {"content": "   "}, "content must not be empty"),
        ("tribal_remember", {"content": 42}, "content must be a string"),
        ("tribal_remember", {"content": "x", "source_type": "GOSSIP"}, "unknown source_type"),
        (
            "tribal_remember",
            {"content": "x", "source_type": "EPISODE_SUMMARY"},
            "written by the episode engine only",
        ),
        ("tribal_remember", {"content": "x", "tags": "solo"}, "tags must be a list of strings"),
        ("tribal_remember", {"content": "x", "tags": ["a\x00b"]}, "control character U+0000"),
        ("tribal_remember", {"content": "x", "skip_dedup": "yes"}, "skip_dedup must be true"),
        ("tribal_recall", {"query": ""}, "query must not be empty"),
        ("tribal_recall", {"query": "x", "limit": 500}, "limit must be from 1 to 50, got 500"),
        ("tribal_recall", {"query": "x", "limit": 0}, "limit must be from 1 to 50, got 0"),
        ("tribal_recall", {"query": "x", "limit": "many"}, "limit must be an integer"),
        ("tribal_recall", {"query": "x", "min_relevance": 2}, "min_relevance must be from"),
        ("tribal_recall", {"query": "x", "after": "last tuesday"}, "not an ISO 8601 timestamp"),
        ("tribal_forget", {"memory_id": "not-a-uuid"}, "is not a memory id"),
        ("tribal_forget", {"memory_id": str(uuid.uuid4())}, "no memory with id"),
    ],
)
async def test_memory_tool_errors(
    module_mcp: Any, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with Client(module_mcp) as client:
        message = error_of(await client.call_tool(tool, arguments))
        assert expected in message
        assert "What to do:" in message
        assert ok(await client.call_tool("tribal_stats", {}))["total_memories"] == 0


@ON_MODULE_LOOP
@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("tribal_recall", {"query": "x", "after": None}),
        ("tribal_recall", {"query": "x", "before": None}),
        ("tribal_episodes_search", {"query": "x", "time_start": None}),
        ("tribal_episodes_search", {"query": "x", "time_end": None}),
    ],
)
async def test_dates_outside_the_utc_range_are_tool_errors(
    module_episode_mcp: Any, tool: str, arguments: dict[str, Any], moment: str
) -> None:
    sent = {k: (moment if v is None else v) for k, v in arguments.items()}
    async with Client(module_episode_mcp) as client:
        message = error_of(await client.call_tool(tool, sent))
    assert "outside the supported range" in message and INTERNAL_ERROR not in message


@ON_MODULE_LOOP
@needs_store
@pytest.mark.parametrize("tool", sorted(EPISODE_CALLS))
async def test_episode_tools_when_feature_disabled(module_mcp: Any, tool: str) -> None:
    async with Client(module_mcp) as client:
        message = error_of(await client.call_tool(tool, EPISODE_CALLS[tool]))
        assert EPISODES_DISABLED in message
        assert "episodes.enabled" in message


# -- episode tools through the real engine ---------------------------------------------------


async def start_episode_runtime(data: Path) -> Any:
    from tribalmemory.runtime import start_runtime

    config = make_config(data, episodes=True)
    config.episodes.detector_strategy = "embedding"
    config.episodes.summary_debounce_seconds = 0
    return await start_runtime(config, run_scheduler=False)


@pytest.fixture
async def episode_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    started = await start_episode_runtime(tmp_path)
    try:
        yield started
    finally:
        await started.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def module_episode_runtime(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:
    """``episode_runtime`` shared like :func:`module_runtime`."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        started = await start_episode_runtime(tmp_path_factory.mktemp("mcp-episodes"))
        try:
            yield started
        finally:
            await started.stop()


@pytest.fixture(scope="module")
def module_episode_mcp(module_episode_runtime: Any) -> Any:
    """The MCP server over :func:`module_episode_runtime`, like :func:`module_mcp`."""
    return build_mcp_server(lambda: module_episode_runtime.api)


async def test_episode_tools_shapes(episode_runtime: Any) -> None:
    async with connect(episode_runtime.api) as c:
        first = ok(await c.call_tool("tribal_remember", {"content": "Billing tests need make."}))
        second = ok(await c.call_tool("tribal_remember", {"content": "Lunch is at noon."}))
        mid, other = first["memory_id"], second["memory_id"]
        created = ok(
            await c.call_tool(
                "tribal_episode_create",
                {"title": "  Billing fixtures ", "memory_ids": [mid, mid.upper()]},
            )
        )
        eid = created["episode_id"]
        assert created == {"success": True, "episode_id": eid, "memory_count": 1}

        listed = ok(await c.call_tool("tribal_episodes_list", {"status": "active", "limit": 10}))
        assert set(listed) == {"episodes", "count", "status"}
        assert listed["status"] == "active" and [e["id"] for e in listed["episodes"]] == [eid]
        assert set(listed["episodes"][0]) >= LIST_ITEM_KEYS
        assert listed["episodes"][0]["title"] == "Billing fixtures"
        closed = ok(await c.call_tool("tribal_episodes_list", {"status": "closed"}))
        assert closed["count"] == 0

        got = ok(await c.call_tool("tribal_episode_get", {"episode_id": eid}))
        assert set(got) == {"episode", "memory_ids", "history", "timeline", "entities"}
        assert got["timeline"] is None
        assert set(got["episode"]) >= DETAIL_KEYS and got["memory_ids"] == [mid]
        added = ok(await c.call_tool("tribal_episode_add", {"episode_id": eid, "memory_id": other}))
        assert added == {"success": True, "added": True, "moved_from": None}  # it was a seed
        again = ok(await c.call_tool("tribal_episode_add", {"episode_id": eid, "memory_id": other}))
        assert again == {"success": True, "added": False, "moved_from": None}
        timeline = ok(
            await c.call_tool("tribal_episode_get", {"episode_id": eid, "include_timeline": True})
        )["timeline"]
        assert [item["memory_id"] for item in timeline] == [mid, other]
        removed = ok(
            await c.call_tool("tribal_episode_remove", {"episode_id": eid, "memory_id": mid})
        )
        assert removed == {"success": True}
        for tool in ("tribal_episode_regenerate", "tribal_episode_close"):
            assert ok(await c.call_tool(tool, {"episode_id": eid})) == {"success": True}
        after = ok(await c.call_tool("tribal_episode_get", {"episode_id": eid}))
        assert after["memory_ids"] == [other] and after["episode"]["status"] == "closed"


@ON_MODULE_LOOP
@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "tribal_episode_create",
            {"title": "", "memory_ids": [str(uuid.uuid4())]},
            "title must not be empty",
        ),
        (
            "tribal_episode_create",
            {"title": "   ", "memory_ids": [str(uuid.uuid4())]},
            "title must not be empty",
        ),
        (
            "tribal_episode_create",
            {"title": "t", "memory_ids": []},
            "memory_ids must be a non-empty list",
        ),
        ("tribal_episode_create", {"title": "t", "memory_ids": ["nope"]}, "is not a memory id"),
        (
            "tribal_episode_create",
            {"title": "t" * 201, "memory_ids": [str(uuid.uuid4())]},
            "title has 201 characters; the limit is 200",
        ),
        (
            "tribal_episodes_list",
            {"status": "open"},
            "status must be one of active, closed, archived",
        ),
        ("tribal_episodes_list", {"limit": 101}, "limit must be from 1 to 100, got 101"),
        ("tribal_episodes_list", {"limit": 0}, "limit must be from 1 to 100, got 0"),
        ("tribal_episode_get", {"episode_id": "episode 7"}, "is not an episode id like"),
        (
            "tribal_episode_get",
            {"episode_id": "ep-0123456789ab", "include_timeline": "yes"},
            "include_timeline must be true or false",
        ),
        (
            "tribal_episode_add",
            {"episode_id": "ep-0123456789ab", "memory_id": "12"},
            "is not a memory id",
        ),
        ("tribal_episode_close", {"episode_id": 5}, "must be an episode id like"),
        ("tribal_episode_replay", {"topic": "x", "limit": 21}, "limit must be from 1 to 20"),
        ("tribal_episodes_search", {"query": "x", "status": "done"}, "status must be one of"),
    ],
)
async def test_episode_validation_errors(
    module_episode_mcp: Any, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with Client(module_episode_mcp) as episode_client:
        message = error_of(await episode_client.call_tool(tool, arguments))
        assert expected in message and "What to do:" in message
        assert ok(await episode_client.call_tool("tribal_episodes_list", {}))["count"] == 0


async def test_episode_ids_unknown_and_normalised(episode_runtime: Any) -> None:
    async with connect(episode_runtime.api) as episode_client:
        for tool, arguments in EPISODE_CALLS.items():
            if "episode_id" not in arguments:
                continue
            args = dict(arguments, episode_id="ep-doesnotexist")
            if "memory_id" in args:
                stored = ok(await episode_client.call_tool("tribal_remember", {"content": tool}))
                args["memory_id"] = stored["memory_id"]
            message = error_of(await episode_client.call_tool(tool, args))
            assert "no episode with id ep-doesnotexist" in message, tool
            assert "tribal_episodes_list" in message
        stored = ok(await episode_client.call_tool("tribal_remember", {"content": "Deploys: Fri"}))
        eid = ok(
            await episode_client.call_tool(
                "tribal_episode_create", {"title": "t", "memory_ids": [stored["memory_id"]]}
            )
        )["episode_id"]
        for spelling in (eid.upper(), f"episode:{eid}", f"Episode:{eid.upper()}"):
            got = ok(await episode_client.call_tool("tribal_episode_get", {"episode_id": spelling}))
            assert got["episode"]["id"] == eid
        malformed = error_of(
            await episode_client.call_tool("tribal_episode_get", {"episode_id": "ep-1/2"})
        )
        assert "only letters, digits" in malformed


# -- every tool against the real episode engine ----------------------------------------------


async def test_every_tool_against_the_real_engine(tmp_path: Path) -> None:
    from tribalmemory.runtime import start_runtime

    config = make_config(tmp_path, episodes=True)
    config.episodes.detector_strategy = "embedding"
    config.episodes.summary_debounce_seconds = 0
    runtime = await start_runtime(config, run_scheduler=False)
    texts = [
        "Refresh tokens rotate on every use; a reused refresh token revokes the family.",
        "Two browser tabs call /auth/refresh at once and the second reuses the rotated "
        "refresh token, which logs the user out.",
        "Fix: accept the previous refresh token for a 10 second grace window.",
    ]
    try:
        async with connect(runtime.api) as client:
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            ids = []
            for text in texts:
                stored = ok(
                    await client.call_tool("tribal_remember", {"content": text, "tags": ["auth"]})
                )
                ids.append(stored["memory_id"])
            await runtime.episodes.worker.drain(30)
            created = ok(
                await client.call_tool(
                    "tribal_episode_create", {"title": "Refresh token race", "memory_ids": ids[:2]}
                )
            )
            episode_id = created["episode_id"]
            assert created["memory_count"] == 2
            added = ok(
                await client.call_tool(
                    "tribal_episode_add", {"episode_id": episode_id, "memory_id": ids[2]}
                )
            )
            assert added["success"] is True and added["added"] is True
            got = ok(
                await client.call_tool(
                    "tribal_episode_get", {"episode_id": episode_id, "include_timeline": True}
                )
            )
            assert got["memory_ids"] == ids and set(got["episode"]) >= DETAIL_KEYS
            listed_eps = ok(await client.call_tool("tribal_episodes_list", {}))
            assert episode_id in [e["id"] for e in listed_eps["episodes"]]
            assert ok(
                await client.call_tool(
                    "tribal_episode_remove", {"episode_id": episode_id, "memory_id": ids[2]}
                )
            ) == {"success": True}
            for tool in ("tribal_episode_regenerate", "tribal_episode_close"):
                assert ok(await client.call_tool(tool, {"episode_id": episode_id})) == {
                    "success": True
                }
            await runtime.episodes.worker.drain(30)
            chain = ok(await client.call_tool("tribal_episode_chain", {"episode_id": episode_id}))
            assert [e["id"] for e in chain["chain"]] == [episode_id]
            replay = ok(
                await client.call_tool("tribal_episode_replay", {"topic": "refresh token race"})
            )
            assert episode_id in [e["id"] for e in replay["episodes"]]
            found = ok(
                await client.call_tool(
                    "tribal_episodes_search", {"query": "refresh token", "status": "closed"}
                )
            )
            assert [e["id"] for e in found["episodes"]] == [episode_id]
            recalled = ok(
                await client.call_tool("tribal_recall", {"query": "refresh token", "limit": 10})
            )
            # the members answer (a summary is shown beside them only when it adds), each
            # naming its episode
            assert episode_id in {r["memory"]["episode_id"] for r in recalled["results"]}
    finally:
        await runtime.stop()


# -- stdio: `tribalmemory mcp` against a daemon ------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _missing(*modules: str) -> str | None:
    """Why the stdio tests cannot run yet (a module of another part is missing), or None."""
    if not _storage_ready():
        return "tribalmemory.storage.open_store is not available yet"
    for module in modules:
        try:
            __import__(module)
        except ImportError as exc:
            return f"{module} is not available yet ({exc})"
    return None


def _console_script() -> str | None:
    return shutil.which("tribalmemory", path=str(Path(sys.executable).parent))


DAEMON_PARTS = ("tribalmemory.client", "tribalmemory.interfaces.http", "uvicorn")
CLI_MISSING = _missing(*DAEMON_PARTS, "tribalmemory.cli.main") or (
    None if _console_script() else "the tribalmemory console script is not installed"
)

# How an MCP client launches the stdio server: the CLI command, and the module entry point
# (the same run_stdio; usable before the CLI exists).
COMMANDS = {
    "cli": pytest.param(
        lambda home: [str(_console_script()), "mcp"],
        id="tribalmemory-mcp",
        marks=pytest.mark.skipif(CLI_MISSING is not None, reason=str(CLI_MISSING)),
    ),
    "module": pytest.param(
        lambda home: [
            sys.executable,
            "-m",
            "tribalmemory.mcp_stdio",
            str(home / "config.yaml"),
        ],
        id="python-m",
    ),
}


def write_home(tmp_path: Path) -> tuple[Path, int, dict[str, str]]:
    """A private TRIBAL_MEMORY_HOME whose config.yaml uses a free port; its environment."""
    home = tmp_path / "home"
    home.mkdir()
    port = _free_port()
    (home / "config.yaml").write_text(
        f"server:\n  port: {port}\nepisodes:\n  enabled: false\n", encoding="utf-8"
    )
    env = dict(os.environ, TRIBAL_MEMORY_HOME=str(home))
    for name in ("TRIBAL_MEMORY_CONFIG", "TRIBAL_MEMORY_TOKEN"):
        env.pop(name, None)
    return home, port, env


@contextlib.contextmanager
def serving(tmp_path: Path) -> Iterator[tuple[Path, int, dict[str, str], Any]]:
    """The daemon app (REST + /mcp) under uvicorn in a thread, on the home's port; the home,
    port, environment and app."""
    import uvicorn

    from tribalmemory.config import load_config
    from tribalmemory.interfaces.http import create_app

    home, port, env = write_home(tmp_path)
    config = load_config(home / "config.yaml")
    config.data_dir = str(home)
    app = create_app(config)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive(), "the daemon did not start"
        assert time.monotonic() < deadline, "the daemon did not start within 60 s"
        time.sleep(0.05)
    try:
        yield home, port, env, app
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[Path, int, dict[str, str]]]:
    with serving(tmp_path) as (home, port, env, _app):
        yield home, port, env


async def test_the_daemon_builds_its_mcp_endpoint_on_the_first_request(tmp_path: Path) -> None:
    """The daemon answers without the MCP server (the mcp SDK and 34 tools' schemas: about
    1.3 s of CPU at every start, which `tribalmemory mcp` agents never use); two agents that
    connect at once to /mcp both wait for its one build and are served."""
    import httpx

    from tribalmemory.interfaces.mcp_http import McpEndpoint

    with serving(tmp_path) as (_home, port, _env, app):
        (endpoint,) = [r.endpoint for r in app.routes if getattr(r, "path", "") == "/mcp"]
        assert isinstance(endpoint, McpEndpoint)
        async with httpx.AsyncClient(trust_env=False) as http:
            stats = await http.get(f"http://127.0.0.1:{port}/v1/stats")
        assert stats.status_code == 200 and endpoint.server is None

        async def agent() -> set[str]:
            async with Client(f"http://127.0.0.1:{port}/mcp") as connected:
                return {t.name for t in (await connected.list_tools()).tools}

        assert await asyncio.gather(agent(), agent()) == [TOOLS, TOOLS]
        built = endpoint.server
        assert built is not None
        assert await agent() == TOOLS and endpoint.server is built


@pytest.mark.skipif(_missing(*DAEMON_PARTS) is not None, reason=str(_missing(*DAEMON_PARTS)))
@pytest.mark.parametrize("command", COMMANDS.values())
async def test_stdio_agent_and_http_agent_share_one_memory(
    daemon: tuple[Path, int, dict[str, str]], command: Any
) -> None:
    """One agent over stdio, another over the daemon's /mcp: both see the same memories."""
    home, port, env = daemon
    argv = command(home)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(home))
    async with Client(params, read_timeout_seconds=120) as stdio_agent:
        assert {t.name for t in (await stdio_agent.list_tools()).tools} == TOOLS
        stored = ok(
            await stdio_agent.call_tool(
                "tribal_remember",
                {
                    "content": "Release notes are generated by scripts/relnotes.py from PR labels.",
                    "tags": ["release"],
                },
            )
        )
        assert stored["success"] is True
        # errors cross the daemon's HTTP API and come back as the same tool errors
        bad = error_of(await stdio_agent.call_tool("tribal_forget", {"memory_id": "x"}))
        assert "is not a memory id" in bad and "What to do:" in bad
        unknown = str(uuid.uuid4())
        missing = error_of(await stdio_agent.call_tool("tribal_forget", {"memory_id": unknown}))
        assert f"no memory with id {unknown}" in missing
        disabled = error_of(await stdio_agent.call_tool("tribal_episodes_list", {}))
        assert EPISODES_DISABLED in disabled and "episodes.enabled" in disabled
        out_of_range = error_of(
            await stdio_agent.call_tool("tribal_recall", {"query": "x", "limit": 500})
        )
        assert "limit must be from 1 to 50" in out_of_range

        # the stdio agent's memories are in its working directory's project; an HTTP agent
        # names it (without one it reads the default project, which holds nothing)
        project = from_directory(home)
        async with Client(f"http://127.0.0.1:{port}/mcp") as http_agent:
            query = {"query": "how are release notes made"}
            assert ok(await http_agent.call_tool("tribal_recall", query))["results"] == []
            found = ok(await http_agent.call_tool("tribal_recall", query | {"project": project}))
            assert found["results"][0]["memory_id"] == stored["memory_id"]
            assert found["results"][0]["memory"]["tags"] == ["release"]
            assert found["results"][0]["memory"]["project"] == project
            gone = ok(
                await http_agent.call_tool("tribal_forget", {"memory_id": stored["memory_id"]})
            )
            assert gone == {"success": True, "memory_id": stored["memory_id"]}
        assert ok(await stdio_agent.call_tool("tribal_stats", {}))["total_memories"] == 0


@pytest.mark.skipif(_missing(*DAEMON_PARTS) is not None, reason=str(_missing(*DAEMON_PARTS)))
@pytest.mark.parametrize("command", COMMANDS.values())
async def test_stdio_stdout_carries_only_protocol(
    daemon: tuple[Path, int, dict[str, str]], command: Any
) -> None:
    """Every stdout line of the stdio server is JSON-RPC, from start-up to shutdown."""
    home, _port, env = daemon
    argv = command(home)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(home),
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    async def send(message: dict[str, Any]) -> None:
        stdin.write((json.dumps(message) + "\n").encode())
        await stdin.drain()

    async def reply(request_id: int) -> dict[str, Any]:
        while True:
            line = await asyncio.wait_for(stdout.readline(), 120)
            assert line, "stdout closed before the reply"
            message = json.loads(line)
            assert message.get("jsonrpc") == "2.0", message
            if message.get("id") == request_id:
                return message

    try:
        await send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            }
        )
        assert (await reply(1))["result"]["serverInfo"]["name"] == "tribal-memory"
        await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "tribal_remember",
                    "arguments": {"content": "stdout purity check"},
                },
            }
        )
        result = (await reply(2))["result"]
        assert result.get("isError") is not True, result
        assert result["structuredContent"]["success"] is True
        await send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "tribal_forget", "arguments": {"memory_id": "nope"}},
            }
        )
        assert (await reply(3))["result"]["isError"] is True
        stdin.close()
        rest, errors = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    for line in rest.decode().splitlines():
        assert json.loads(line).get("jsonrpc") == "2.0", line
    assert proc.returncode == 0, errors.decode()[-2000:]


def _processes_in(folder: Path) -> list[int]:
    """Pids of processes whose working directory is inside ``folder`` (the test's temp dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cwd = Path(os.readlink(entry / "cwd"))
            except OSError:
                continue
            if cwd == folder or folder in cwd.parents:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(CLI_MISSING is not None, reason=str(CLI_MISSING))
async def test_tribalmemory_mcp_starts_the_daemon_when_none_runs(tmp_path: Path) -> None:
    """No daemon yet: `tribalmemory mcp` starts one (ensure_daemon) and works through it."""
    home, port, env = write_home(tmp_path)
    params = StdioServerParameters(
        command=str(_console_script()), args=["mcp"], env=env, cwd=str(tmp_path)
    )  # only the daemon runs inside home
    try:
        async with Client(params, read_timeout_seconds=120) as agent:
            stored = ok(
                await agent.call_tool(
                    "tribal_remember",
                    {"content": "The nightly job rotates the API keys at 02:00 UTC."},
                )
            )
            assert stored["success"] is True
        async with Client(f"http://127.0.0.1:{port}/mcp") as http_agent:
            query = {"query": "when are API keys rotated", "project": from_directory(tmp_path)}
            found = ok(await http_agent.call_tool("tribal_recall", query))
            assert found["results"][0]["memory_id"] == stored["memory_id"]
        assert _processes_in(home), "the daemon should outlive the stdio server"
    finally:
        # the daemon outlives the stdio server by design: stop the one this test started
        stopped = subprocess.run(
            [str(_console_script()), "service", "stop"],
            env=env,
            cwd=str(home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        for pid in _processes_in(home):  # safety net: nothing this test started may survive
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while _processes_in(home) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
    assert stopped.returncode == 0, stopped.stderr
    assert not _processes_in(home)
