"""Scopes (issue 42 item 3): ``run`` on every write path, the ``source_instance`` (agent),
``session`` and ``run`` filters on every read (recall, memories list, episodes list, episode
search, replay, export) applied in the store's filter, ``GET /v1/sessions`` a page at a time,
project isolation, and bad values refused. On the real engine (embedding detector, no LLM),
the real app, MCP and CLI."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers_runtime import settle
from mcp import Client
from starlette.testclient import TestClient
from test_episodes_compose import IOS
from test_episodes_engine import AUTH, DB
from test_storage_contract import T0, memory, open_backend, unit_vectors

from tribalmemory.errors import InvalidInput, PayloadTooLarge
from tribalmemory.interfaces.mcp_server import build_mcp_server
from tribalmemory.portability import exporter
from tribalmemory.runtime import Runtime
from tribalmemory.storage.base import MemoryFilter

LONG = "x" * 201  # one more than MAX_SESSION_CHARS / MAX_RUN_CHARS / MAX_SOURCE_INSTANCE_CHARS
BETA = [
    IOS[1],
    "iOS client: the Swift networking layer now waits for the single-flight refresh token "
    "request before it retries the failed call.",
]
UNSESSIONED = "The staging database is rebuilt every Sunday night by the ops cron job."


@dataclass
class Seeded:
    """What :func:`seed` stored: memory ids by what they are."""

    auth: list[str]  # alpha, session s-1, claude-code, run r-1 (3 March)
    ios: str  # alpha, session s-1, codex, run r-1 (6 March)
    db: list[str]  # alpha, session s-2, codex, run r-2 (5 March)
    beta: list[str]  # beta, session s-1, claude-code, run r-1 (7 March)
    loose: str  # alpha, no session, no run (8 March)

    @property
    def s1(self) -> set[str]:
        return {*self.auth, self.ios}


async def put(rt: Runtime, text: str, when: str, **fields: Any) -> str:
    result = await rt.api.remember(text, created_at=when, **fields)
    assert result["success"], result
    return str(result["memory_id"])


async def seed(rt: Runtime) -> Seeded:
    """Two sessions of project alpha (one of them also in project beta, by name), two agents,
    two runs, and a memory of no session newer than all of them; episodes settled."""
    one = {"project": "alpha", "session": "s-1", "run": "r-1"}
    auth = [
        await put(rt, text, f"2025-03-03T{9 + i:02d}:00:00Z", source_instance="claude-code", **one)
        for i, text in enumerate(AUTH)
    ]
    two = {"project": "alpha", "session": "s-2", "run": "r-2", "source_instance": "codex"}
    db = [await put(rt, text, f"2025-03-05T{9 + i:02d}:00:00Z", **two) for i, text in enumerate(DB)]
    ios = await put(rt, IOS[0], "2025-03-06T09:00:00Z", source_instance="codex", **one)
    three = {"project": "beta", "session": "s-1", "run": "r-1", "source_instance": "claude-code"}
    beta = [
        await put(rt, text, f"2025-03-07T{9 + i:02d}:00:00Z", **three)
        for i, text in enumerate(BETA)
    ]
    loose = await put(
        rt, UNSESSIONED, "2025-03-08T09:00:00Z", source_instance="claude-code", project="alpha"
    )
    await settle(rt)
    return Seeded(auth, ios, db, beta, loose)


@pytest.fixture
async def rt(engine_runtime: Any, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runtime: Runtime = await engine_runtime()
    return runtime


async def episodes_of(rt: Runtime, ids: set[str]) -> set[str]:
    found = {(await rt.api.get_memory(i))["episode_id"] for i in ids}
    assert None not in found, "every seeded memory is in an episode once settled"
    return found


# -- the store's filter (both backends) --------------------------------------------------------


@pytest.mark.parametrize("backend", ["edge", "server"])
def test_store_filters_by_agent_session_run_and_session_presence(backend: str, tmp_path) -> None:
    from tribalmemory.storage.base import scoped

    store = open_backend(backend, tmp_path)
    try:
        items = [
            memory("a", source_instance="x", metadata={"session": "s", "run": "r"}),
            memory("b", source_instance="y", metadata={"session": "s"}),
            memory("c", source_instance="x", metadata={"run": "r"}),
            memory("d", source_instance="x", created_at=T0),
        ]
        store.upsert(items, unit_vectors(4))

        def contents(scopes: dict[str, str], **where: Any) -> set[str]:
            return {m.content for m in store.scroll(scoped(MemoryFilter(**where), scopes))}

        assert contents({"source_instance": "x"}) == {"a", "c", "d"}
        assert contents({"session": "s"}) == {"a", "b"}
        assert contents({"run": "r", "source_instance": "x"}) == {"a", "c"}
        assert contents({}, metadata_present=["session"]) == {"a", "b"}
        assert store.count(scoped(MemoryFilter(), {"session": "s", "run": "r"})) == 1
    finally:
        store.close()


# -- writes keep the run -----------------------------------------------------------------------


async def test_run_is_kept_by_remember_batch_and_conversations(rt: Runtime) -> None:
    one = await rt.api.remember("Deploys go through the release train", run=" ci-77 ")
    got = await rt.api.get_memory(one["memory_id"])
    assert got["metadata"] == {"run": "ci-77"}  # kept stripped, like session
    batch = await rt.api.remember_batch(
        [{"content": "The train leaves on Tuesdays", "run": "ci-78", "session": "s-9"}]
    )
    got = await rt.api.get_memory(batch["results"][0]["memory_id"])
    assert got["metadata"] == {"session": "s-9", "run": "ci-78"}
    ingested = await rt.api.ingest_conversation(
        conversation_id="c-1",
        messages=[{"role": "user", "content": "Why did the nightly build fail on arm64?"}],
        session="s-9",
        run="job-5",
    )
    got = await rt.api.get_memory(ingested["memory_ids"][0])
    assert got["metadata"]["run"] == "job-5" and got["metadata"]["session"] == "s-9"


def test_plain_import_lines_keep_session_and_run(client: TestClient) -> None:
    line = {"content": "Imported: the VPN needs the new profile", "session": "s-i", "run": "r-i"}
    done = client.post(
        "/v1/import",
        headers={"Content-Type": "application/x-ndjson"},
        content=(json.dumps(line) + "\n").encode(),
    )
    assert done.status_code == 200, done.text
    listed = client.get("/v1/memories", params={"run": "r-i"}).json()["memories"]
    assert [m["metadata"] for m in listed] == [{"session": "s-i", "run": "r-i"}]


# -- reads filter ------------------------------------------------------------------------------


async def test_recall_filters_in_the_search_and_keeps_projects_apart(rt: Runtime) -> None:
    s = await seed(rt)
    query = "refresh token logout"

    async def found(**filters: Any) -> set[str]:
        result = await rt.api.recall(query, limit=50, **filters)
        return {hit["memory_id"] for hit in result["results"]}

    assert await found(project="alpha", session="s-1") == s.s1
    assert await found(project="alpha", session="s-2") == set(s.db)  # off topic, still found
    assert await found(project="alpha", source_instance="codex") == {*s.db, s.ios}
    assert await found(project="alpha", run="r-1") == s.s1  # beta's r-1 stays in beta
    assert await found(project="beta", session="s-1") == set(s.beta)
    assert await found(project="*", session="s-1") == s.s1 | set(s.beta)
    assert await found(project="alpha", session="s-1", source_instance="codex") == {s.ios}
    assert await found(project="alpha", session="s-3") == set()


async def test_list_filters_give_full_pages(rt: Runtime) -> None:
    s = await seed(rt)
    seen: list[str] = []
    cursor = None
    sizes = []
    while True:
        page = await rt.api.memories_list(project="alpha", session="s-1", limit=2, cursor=cursor)
        sizes.append(page["count"])
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sizes == [2, 2, 1]  # five memories of s-1: no page is short
    assert seen[0] == s.ios and set(seen) == s.s1  # newest first
    by_run = await rt.api.memories_list(project="alpha", run="r-2", limit=100)
    assert {m["id"] for m in by_run["memories"]} == set(s.db)
    by_agent = await rt.api.memories_list(project="alpha", source_instance="claude-code")
    assert {m["id"] for m in by_agent["memories"]} == {*s.auth, s.loose}
    beta = await rt.api.memories_list(project="beta", session="s-1")
    assert [m["id"] for m in beta["memories"]] == s.beta[::-1]


async def test_episodes_list_and_replay_filter_by_their_members(rt: Runtime) -> None:
    s = await seed(rt)

    async def listed(**filters: Any) -> set[str]:
        result = await rt.api.episodes_list(limit=100, **filters)
        return {e["id"] for e in result["episodes"]}

    s1 = await episodes_of(rt, s.s1)
    s2 = await episodes_of(rt, set(s.db))
    assert s1.isdisjoint(s2)
    assert await listed(project="alpha", session="s-1") == s1
    assert await listed(project="alpha", session="s-2") == s2
    assert await listed(project="alpha", run="r-2") == s2
    codex = await episodes_of(rt, {*s.db, s.ios})
    assert await listed(project="alpha", source_instance="codex") == codex
    assert await listed(project="beta", session="s-1") == await episodes_of(rt, set(s.beta))
    assert await listed(project="alpha", session="s-3") == set()

    async def replayed(topic: str, **filters: Any) -> set[str]:
        result = await rt.api.episodes_replay(topic, limit=20, project="alpha", **filters)
        return {e["id"] for e in result["episodes"]}

    auth_episode = (await rt.api.get_memory(s.auth[0]))["episode_id"]
    db_episode = (await rt.api.get_memory(s.db[0]))["episode_id"]
    assert auth_episode in await replayed("refresh token logout")
    assert auth_episode in await replayed("refresh token logout", session="s-1")
    assert auth_episode not in await replayed("refresh token logout", session="s-2")
    assert db_episode in await replayed("Postgres migration with pgloader")
    assert await replayed("Postgres migration with pgloader", run="r-1") <= s1
    assert await replayed("Postgres migration with pgloader", session="s-3") == set()


async def test_episode_search_filters_by_its_members_as_the_list_does(rt: Runtime) -> None:
    """Issue 42: episode search took no scope filter. An episode matches when one of its
    members matches: the episodes list's rule, so search finds within what the list shows."""
    s = await seed(rt)
    query = "refresh token logout"

    async def searched(**filters: Any) -> set[str]:
        result = await rt.api.episodes_search(query, limit=50, project="alpha", **filters)
        return {e["id"] for e in result["episodes"]}

    async def listed(**filters: Any) -> set[str]:
        result = await rt.api.episodes_list(limit=100, project="alpha", **filters)
        return {e["id"] for e in result["episodes"]}

    auth_episode = (await rt.api.get_memory(s.auth[0]))["episode_id"]
    assert auth_episode in await searched()
    for filters in (
        {"session": "s-1"},
        {"session": "s-2"},
        {"run": "r-2"},
        {"source_instance": "claude-code"},
        {"source_instance": "codex", "session": "s-1"},
    ):
        found = await searched(**filters)
        assert found <= await listed(**filters), filters
    assert auth_episode in await searched(session="s-1")
    assert auth_episode in await searched(source_instance="claude-code")
    assert auth_episode not in await searched(session="s-2")
    assert auth_episode not in await searched(run="r-2")
    assert await searched(session="s-3") == set()
    # beta's session s-1 matches in beta only
    beta = await rt.api.episodes_search(query, limit=50, project="beta", session="s-1")
    assert {e["id"] for e in beta["episodes"]} == await episodes_of(rt, set(s.beta))
    assert {e["project"] for e in beta["episodes"]} == {"beta"}
    every = await rt.api.episodes_search(query, limit=50, project="*", session="s-1")
    assert {e["project"] for e in every["episodes"]} == {"alpha", "beta"}


async def test_export_keeps_the_selected_memories_and_their_episodes(rt: Runtime) -> None:
    s = await seed(rt)
    lines = [
        json.loads(line)
        async for line in exporter.export_lines(rt.api, project="alpha", scopes={"run": "r-2"})
    ]
    memories = {r["id"] for r in lines if r["type"] == "memory"}
    episodes = {r["id"] for r in lines if r["type"] == "episode"}
    assert memories == set(s.db)
    assert episodes == await episodes_of(rt, set(s.db))
    assert lines[-1] == {"type": "end", "memories": 4, "episodes": len(episodes), "causes": 0}


# -- the sessions ------------------------------------------------------------------------------


async def test_sessions_newest_activity_first_with_their_agents_and_episodes(
    rt: Runtime,
) -> None:
    s = await seed(rt)
    alpha = (await rt.api.sessions(project="alpha"))["sessions"]
    assert [(x["project"], x["session"]) for x in alpha] == [("alpha", "s-1"), ("alpha", "s-2")]
    first, second = alpha
    assert first["source_instances"] == ["claude-code", "codex"] and first["runs"] == ["r-1"]
    assert first["memory_count"] == 5
    assert first["first_memory_at"] == "2025-03-03T09:00:00Z"
    assert first["last_memory_at"] == "2025-03-06T09:00:00Z"
    assert set(first["episode_ids"]) == await episodes_of(rt, s.s1)
    ios_episode = (await rt.api.get_memory(s.ios))["episode_id"]
    assert first["episode_ids"][0] == ios_episode  # the episode of its newest memory first
    assert second["source_instances"] == ["codex"] and second["memory_count"] == 4
    assert set(second["episode_ids"]) == await episodes_of(rt, set(s.db))
    beta = (await rt.api.sessions(project="beta"))["sessions"]
    assert [(x["project"], x["session"], x["memory_count"]) for x in beta] == [("beta", "s-1", 2)]
    every = (await rt.api.sessions(project="*"))["sessions"]
    assert [(x["project"], x["session"]) for x in every] == [
        ("beta", "s-1"),
        ("alpha", "s-1"),
        ("alpha", "s-2"),
    ]
    assert [x["session"] for x in (await rt.api.sessions(project="*", limit=1))["sessions"]] == [
        "s-1"
    ]
    assert (await rt.api.sessions(project="gamma"))["sessions"] == []


async def test_a_shared_memory_lists_its_session_in_its_own_project_only(rt: Runtime) -> None:
    await put(
        rt,
        "Team rule: squash merges only",
        "2025-03-03T09:00:00Z",
        project="alpha",
        session="s-shared",
        shared=True,
    )
    assert [x["session"] for x in (await rt.api.sessions(project="alpha"))["sessions"]] == [
        "s-shared"
    ]
    assert (await rt.api.sessions(project="beta"))["sessions"] == []


async def pages(rt: Runtime, limit: int, **query: Any) -> list[list[tuple[str, str]]]:
    """Every page of the sessions list, following next_cursor to its end."""
    found: list[list[tuple[str, str]]] = []
    cursor = None
    while True:
        page = await rt.api.sessions(limit=limit, cursor=cursor, **query)
        assert page["count"] == len(page["sessions"])
        found.append([(x["project"], x["session"]) for x in page["sessions"]])
        cursor = page["next_cursor"]
        if cursor is None:
            return found
        assert len(found) < 50, "the cursor does not move"


async def test_sessions_page_past_the_limit_in_a_stable_order(rt: Runtime) -> None:
    """Issue 42: GET /v1/sessions stopped at its limit. Sessions whose memories interleave
    (one that was active long ago and again last) and that share their last instant page in
    the order of the whole list, each once, the last page's next_cursor null."""

    def at(day: int, hour: int = 9) -> str:
        return f"2025-04-0{day}T{hour:02d}:00:00Z"

    plan = [  # (session, project, day, hour): s-old's newest memory is the newest of all
        ("s-old", "alpha", 1, 9),
        ("s-mid", "alpha", 2, 9),
        ("s-tie-a", "alpha", 3, 9),
        ("s-tie-b", "alpha", 3, 9),
        ("s-tie-c", "alpha", 3, 9),
        ("s-beta", "beta", 4, 9),
        ("s-mid", "alpha", 5, 9),
        ("s-old", "alpha", 6, 8),  # right below its newest: met first on the next page
        ("s-old", "alpha", 6, 9),
    ]
    for i, (session, project, day, hour) in enumerate(plan):
        text = f"Note {i} of the session {session}"
        await put(rt, text, at(day, hour), project=project, session=session)

    whole = (await rt.api.sessions(project="alpha", limit=100))["sessions"]
    order = [("alpha", x["session"]) for x in whole]
    assert order[:2] == [("alpha", "s-old"), ("alpha", "s-mid")]
    assert sorted(order[2:]) == [("alpha", "s-tie-a"), ("alpha", "s-tie-b"), ("alpha", "s-tie-c")]
    assert (await rt.api.sessions(project="alpha", limit=100))["next_cursor"] is None
    for limit in (1, 2, 4):
        paged = await pages(rt, limit, project="alpha")
        assert [x for page in paged for x in page] == order, limit  # each once, in order
        assert [len(page) for page in paged[:-1]] == [limit] * (len(paged) - 1)
        assert paged[-1]  # no empty last page: next_cursor is null as soon as none is left
    every = [x for page in await pages(rt, 2, project="*") for x in page]
    assert every[:2] == [("alpha", "s-old"), ("alpha", "s-mid")]
    assert sorted(every) == sorted([*order, ("beta", "s-beta")])
    assert await pages(rt, 1, project="beta") == [[("beta", "s-beta")]]

    # a session listed on an earlier page that gains a memory is not shown again
    first = await rt.api.sessions(project="alpha", limit=2)
    await put(rt, "A late note of s-mid", at(7), project="alpha", session="s-mid")
    rest = await rt.api.sessions(project="alpha", limit=100, cursor=first["next_cursor"])
    assert [x["session"] for x in rest["sessions"]] == [s for _, s in order[2:]]


async def test_a_bad_sessions_cursor_is_refused(rt: Runtime) -> None:
    await put(rt, "A note", "2025-04-01T09:00:00Z", session="s-1")
    for bad in ("nonsense!", "", "x" * 201, 7):
        with pytest.raises(InvalidInput, match="cursor is not one this server gave"):
            await rt.api.sessions(cursor=bad)
    await put(rt, "Another note", "2025-04-02T09:00:00Z", session="s-2")
    listed = await rt.api.memories_list(limit=1)
    assert listed["next_cursor"] is not None
    with pytest.raises(InvalidInput, match="one of the memories list, not of the sessions"):
        await rt.api.sessions(cursor=listed["next_cursor"])
    page = await rt.api.sessions(limit=1)
    assert page["next_cursor"] is not None
    with pytest.raises(InvalidInput, match="one of the sessions list, not of the memories"):
        await rt.api.memories_list(cursor=page["next_cursor"])


# -- bad values --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["source_instance", "session", "run"])
async def test_empty_or_too_long_filters_are_refused(rt: Runtime, name: str) -> None:
    for call in (
        lambda **f: rt.api.recall("anything", **f),
        lambda **f: rt.api.memories_list(**f),
        lambda **f: rt.api.episodes_list(**f),
        lambda **f: rt.api.episodes_search("anything", **f),
        lambda **f: rt.api.episodes_replay("anything", **f),
    ):
        with pytest.raises(InvalidInput, match=f"{name} must not be empty"):
            await call(**{name: " "})
        with pytest.raises(PayloadTooLarge, match=f"{name} has 201 characters"):
            await call(**{name: LONG})


@pytest.mark.parametrize("name", ["session", "run"])
async def test_remember_refuses_a_blank_session_or_run(rt: Runtime, name: str) -> None:
    for blank in ("", "  "):
        with pytest.raises(InvalidInput, match=f"{name} must not be empty"):
            await rt.api.remember("The billing queue drains at night.", **{name: blank})
    assert (await rt.api.memories_list())["memories"] == []  # nothing stored without it


def test_http_doors_take_the_filters_and_refuse_bad_values(client: TestClient) -> None:
    for i, session in enumerate(["s-a", "s-a", "s-b"]):
        stored = client.post(
            "/v1/remember",
            json={
                "content": f"HTTP memory {i} about the billing queue",
                "session": session,
                "run": "r-h",
                "created_at": f"2025-03-0{i + 1}T10:00:00Z",
            },
        )
        assert stored.status_code == 200, stored.text
    listed = client.get("/v1/memories", params={"session": "s-a", "limit": 1}).json()
    assert listed["count"] == 1 and listed["next_cursor"] is not None
    found = client.post("/v1/recall", json={"query": "billing queue", "session": "s-b"}).json()
    assert [h["memory"]["metadata"]["session"] for h in found["results"]] == ["s-b"]
    sessions = client.get("/v1/sessions").json()
    assert [(x["session"], x["memory_count"]) for x in sessions["sessions"]] == [
        ("s-b", 1),
        ("s-a", 2),
    ]
    exported = client.get("/v1/export", params={"session": "s-a"})
    assert exported.status_code == 200
    kinds = [json.loads(line)["type"] for line in exported.text.splitlines()]
    assert kinds.count("memory") == 2

    empty = client.get("/v1/memories", params={"session": ""})
    assert empty.status_code == 400 and "session must not be empty" in empty.json()["error"]
    long = client.get("/v1/episodes", params={"run": LONG})
    assert long.status_code == 413 and "run has 201 characters" in long.json()["error"]
    body = client.post("/v1/recall", json={"query": "x", "source_instance": ""})
    assert body.status_code == 422 and "source_instance" in body.json()["error"]
    export = client.get("/v1/export", params={"session": " "})
    assert export.status_code == 400 and "session must not be empty" in export.json()["error"]
    limit = client.get("/v1/sessions", params={"limit": 0})
    assert limit.status_code == 400 and "limit" in limit.json()["error"]
    first = client.get("/v1/sessions", params={"limit": 1}).json()
    assert [x["session"] for x in first["sessions"]] == ["s-b"]
    second = client.get("/v1/sessions", params={"limit": 1, "cursor": first["next_cursor"]})
    assert [x["session"] for x in second.json()["sessions"]] == ["s-a"]
    assert second.json()["next_cursor"] is None
    cursor = client.get("/v1/sessions", params={"cursor": "not-a-cursor"})
    assert cursor.status_code == 400 and "cursor is not one" in cursor.json()["error"]
    searched = client.post("/v1/episodes/search", json={"query": "billing", "session": ""})
    assert searched.status_code == 422 and "session" in searched.json()["error"]
    other = client.get("/v1/sessions", params={"agent": "x"})
    assert other.status_code == 400 and "agent" in other.json()["error"]


# -- MCP and CLI -------------------------------------------------------------------------------


async def test_mcp_reads_filter_by_agent_and_list_sessions(rt: Runtime) -> None:
    s = await seed(rt)
    async with Client(build_mcp_server(lambda: rt.api)) as agent:
        recalled = await agent.call_tool(
            "tribal_recall",
            {"query": "refresh token", "limit": 50, "project": "alpha", "source_instance": "codex"},
        )
        assert recalled.is_error is not True, recalled.content
        ids = {h["memory_id"] for h in recalled.structured_content["results"]}
        assert ids == {*s.db, s.ios}
        listed = await agent.call_tool(
            "tribal_episodes_list", {"project": "alpha", "session": "s-2"}
        )
        assert {e["id"] for e in listed.structured_content["episodes"]} == await episodes_of(
            rt, set(s.db)
        )
        replay = await agent.call_tool(
            "tribal_episode_replay",
            {"topic": "refresh token logout", "project": "alpha", "session": "s-2"},
        )
        auth_episode = (await rt.api.get_memory(s.auth[0]))["episode_id"]
        assert auth_episode not in {e["id"] for e in replay.structured_content["episodes"]}
        searched = await agent.call_tool(
            "tribal_episodes_search",
            {"query": "refresh token logout", "project": "alpha", "session": "s-2"},
        )
        assert searched.is_error is not True, searched.content
        assert auth_episode not in {e["id"] for e in searched.structured_content["episodes"]}
        searched = await agent.call_tool(
            "tribal_episodes_search",
            {"query": "refresh token logout", "project": "alpha", "session": "s-1"},
        )
        assert auth_episode in {e["id"] for e in searched.structured_content["episodes"]}
        sessions = await agent.call_tool("tribal_sessions", {"project": "alpha"})
        assert [x["session"] for x in sessions.structured_content["sessions"]] == ["s-1", "s-2"]
        first = await agent.call_tool("tribal_sessions", {"project": "alpha", "limit": 1})
        assert [x["session"] for x in first.structured_content["sessions"]] == ["s-1"]
        cursor = first.structured_content["next_cursor"]
        second = await agent.call_tool(
            "tribal_sessions", {"project": "alpha", "limit": 1, "cursor": cursor}
        )
        assert [x["session"] for x in second.structured_content["sessions"]] == ["s-2"]
        assert second.structured_content["next_cursor"] is None
        refused = await agent.call_tool("tribal_sessions", {"project": "alpha", "limit": 101})
        assert refused.is_error is True
        refused = await agent.call_tool("tribal_sessions", {"cursor": "not-a-cursor"})
        assert refused.is_error is True and "cursor is not one" in str(refused.content)


def test_cli_sessions_recall_and_export_take_the_filters(tm_home: Path, capsys: Any) -> None:
    from helpers_http import write_config
    from test_cli import run, run_json

    config = str(write_config(tm_home, server={"port": 1}))  # nothing answers: local mode
    for text, session in (
        ("CLI: the cache warms at 06:00", "s-c"),
        ("CLI: cache TTL is 5 min", ""),
    ):
        argv = ["remember", text, "--run", "r-c", "--config", config]
        assert run(capsys, *argv, *(["--session", session] if session else []))[0] == 0
    listed = run_json(capsys, "sessions", "--config", config)
    assert [(x["session"], x["runs"]) for x in listed["sessions"]] == [("s-c", ["r-c"])]
    argv = ["remember", "CLI: the CDN purges at 07:00", "--session", "s-d", "--config", config]
    assert run(capsys, *argv)[0] == 0
    code, out, _ = run(capsys, "sessions", "--limit", "1", "--config", config)
    assert code == 0 and "s-d" in out and "s-c" not in out
    cursor = out.strip().splitlines()[-1].removeprefix("more: --cursor ")
    assert cursor != out.strip().splitlines()[-1]  # the table says how to read on
    rest = run_json(capsys, "sessions", "--limit", "1", "--cursor", cursor, "--config", config)
    assert [x["session"] for x in rest["sessions"]] == ["s-c"] and rest["next_cursor"] is None
    code, _, err = run(capsys, "sessions", "--cursor", "nope", "--config", config)
    assert code != 0 and "cursor is not one" in err
    found = run_json(capsys, "recall", "cache", "--session", "s-c", "--config", config)
    assert [h["memory"]["content"] for h in found["results"]] == ["CLI: the cache warms at 06:00"]
    code, out, _ = run(capsys, "export", "--session", "s-c", "--config", config)
    assert code == 0
    kinds = [json.loads(line)["type"] for line in out.splitlines()]
    assert kinds.count("memory") == 1
    code, _, err = run(capsys, "recall", "cache", "--run", "", "--config", config)
    assert code != 0 and "run must not be empty" in err
