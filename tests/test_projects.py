"""Projects: names, the working directory's project, migration of stores written before
projects existed (both backends and the episode database), isolation of reads and episodes,
shared memories, GET /v1/projects, and the CLI and MCP defaults."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_http import write_config
from starlette.testclient import TestClient
from test_episodes_engine import AUTH, DB, Clock
from test_mcp import FakeAPI, error_of, ok

from tribalmemory import projects
from tribalmemory.cli.main import main
from tribalmemory.config import config_from_dict
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.errors import BadName, Conflict
from tribalmemory.interfaces.mcp_server import build_mcp_server
from tribalmemory.models import Memory, SourceType
from tribalmemory.runtime import Runtime, start_runtime
from tribalmemory.storage.base import MemoryFilter
from tribalmemory.storage.edge import EdgeStore
from tribalmemory.storage.server import ServerStore
from tribalmemory.timeutil import utc_now

DIM = 8
BAD_NAMES = ["has space", "a/b", "x" * 65, "", "   ", "ünï", ".", ".."]

# -- names and the working directory ----------------------------------------------------------


def test_names_are_checked_and_lower_cased() -> None:
    assert projects.normalise("  Billing-API_v2.1 ") == "billing-api_v2.1"
    for bad in BAD_NAMES:
        with pytest.raises(ValueError, match="is not a valid name"):
            projects.normalise(bad)
    assert projects.slug("My Repo (old)") == "my-repo-old"
    assert projects.slug("...") == "default" and projects.slug("x" * 80) == "x" * 64


def git_repo(root: Path, name: str) -> Path:
    """A git repository ``root/name`` with a sub-folder ``src/deep``; returns the sub-folder."""
    repo = root / name
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    return repo / "src" / "deep"


def test_the_working_directory_names_the_project(tmp_path: Path) -> None:
    inside = git_repo(tmp_path, "Payments Service")
    assert projects.from_directory(inside) == "payments-service"  # the repository's top level
    plain = tmp_path / "Notes_2025"
    plain.mkdir()
    assert projects.from_directory(plain) == "notes_2025"  # no repository: the folder itself
    assert projects.choose(None, {}, inside) == "payments-service"
    assert projects.choose(None, {projects.ENV_VAR: "Ops"}, inside) == "ops"
    assert projects.choose("Given", {projects.ENV_VAR: "ops"}, inside) == "given"
    with pytest.raises(ValueError, match="not a valid name"):
        projects.choose(None, {projects.ENV_VAR: "bad name"}, inside)


# -- migration of stores written before projects ----------------------------------------------


def memory(content: str, project: str = "default", shared: bool = False) -> Memory:
    now = utc_now()
    return Memory(
        str(uuid.uuid4()),
        content,
        SourceType.USER_EXPLICIT,
        "test",
        [],
        None,
        now,
        now,
        project=project,
        shared=shared,
    )


def vectors(count: int) -> np.ndarray:
    return np.random.default_rng(7).normal(size=(count, DIM)).astype(np.float32)


OLD_KEYS = ["project", "shared", "scope"]  # what a memory stored before projects lacks


def old_edge_store(path: Path, count: int) -> list[str]:
    """An embedded store as the previous release left it: no project fields, no indexes."""
    import qdrant_edge as qe

    from tribalmemory.storage.base import point_ids

    stored = [memory(f"old memory {i}") for i in range(count)]
    store = EdgeStore.open(path, "m", DIM)
    store.upsert(stored, vectors(count))
    shard = store._live()
    shard.update(qe.UpdateOperation.delete_payload(point_ids(m.id for m in stored), OLD_KEYS))
    for name in ("project", "scope"):
        shard.update(qe.UpdateOperation.delete_field_index(name))
    store.close()
    return [m.id for m in stored]


def test_an_old_edge_store_moves_into_default_with_indexes(tmp_path: Path) -> None:
    ids = old_edge_store(tmp_path / "store", 5)
    store = EdgeStore.open(tmp_path / "store", "m", DIM, check_model=False)
    try:
        assert store.count(MemoryFilter(project="default")) == 5
        assert store.count(MemoryFilter(project="other")) == 0
        assert {m.project for m in store.get(ids)} == {"default"}
        indexed = store._live().info().payload_schema
        assert {"project", "scope"} <= set(indexed)
        assert store.project_counts() == {"default": 5}
    finally:
        store.close()
    store = EdgeStore.open(tmp_path / "store", "m", DIM)  # again: nothing left to change
    try:
        assert store.count(MemoryFilter(project="default")) == 5
    finally:
        store.close()


def test_an_interrupted_edge_migration_is_finished_by_the_next_open(tmp_path: Path) -> None:
    """A migration cut short (kill -9) leaves some memories unscoped: opening again finishes
    them, and the ones done before are left as they are."""
    import qdrant_edge as qe

    from tribalmemory.storage.base import point_ids

    ids = old_edge_store(tmp_path / "store", 6)
    store = EdgeStore.open(tmp_path / "store", "m", DIM, check_model=False)
    shard = store._live()  # undo the migration of half of them, as if cut short
    shard.update(qe.UpdateOperation.delete_payload(point_ids(ids[:3]), OLD_KEYS))
    assert store.count(MemoryFilter(project="default")) == 3
    store.close()
    store = EdgeStore.open(tmp_path / "store", "m", DIM)
    try:
        assert store.count(MemoryFilter(project="default")) == 6
    finally:
        store.close()


def test_an_old_server_store_moves_into_default(tmp_path: Path) -> None:
    """The qdrant-client path (here its in-process mode): the same migration at attach."""
    stored = [memory(f"old memory {i}") for i in range(4)]
    store = ServerStore.open_local(tmp_path / "q", "memories", "m", DIM)
    store.upsert(stored, vectors(4))
    client, name = store._client, store._name
    client.delete_payload(name, keys=OLD_KEYS, points=[m.id for m in stored])
    assert store.count(MemoryFilter(project="default")) == 0  # old: nothing is scoped
    store.close()
    store = ServerStore.open_local(tmp_path / "q", "memories", "m", DIM)
    try:
        assert store.count(MemoryFilter(project="default")) == 4
        assert {m.project for m in store.get([m.id for m in stored])} == {"default"}
        assert store.project_counts() == {"default": 4}
    finally:
        store.close()


def test_both_backends_scope_reads(tmp_path: Path) -> None:
    stores = [
        EdgeStore.open(tmp_path / "edge", "m", DIM),
        ServerStore.open_local(tmp_path / "q", "memories", "m", DIM),
    ]
    for store in stores:
        try:
            items = [memory("a", "alpha"), memory("b", "beta"), memory("s", "beta", shared=True)]
            store.upsert(items, vectors(3))
            seen = {p: {m.content for m in store.scroll(MemoryFilter(project=p))} for p in "ab"}
            assert {m.content for m in store.scroll(MemoryFilter(project="alpha"))} == {"a", "s"}
            assert {m.content for m in store.scroll(MemoryFilter(project="beta"))} == {"b", "s"}
            own = MemoryFilter(project="alpha", include_shared=False)
            assert [m.content for m in store.scroll(own)] == ["a"]
            shared = MemoryFilter(project="beta", include_shared=False, shared_only=True)
            assert store.count(shared) == 1 and seen  # filters combine
            assert store.project_counts() == {"alpha": 1, "beta": 2}
        finally:
            store.close()


def test_an_old_episode_database_moves_into_default(tmp_path: Path) -> None:
    path = tmp_path / "episodes.sqlite3"
    with sqlite3.connect(path) as db:  # the episodes table before projects
        db.execute(
            "CREATE TABLE episodes (id TEXT PRIMARY KEY, title TEXT NOT NULL, title_source TEXT "
            "NOT NULL, summary TEXT NOT NULL DEFAULT '', summary_kind TEXT NOT NULL DEFAULT "
            "'extractive', summary_status TEXT NOT NULL DEFAULT 'current', summary_memory_id "
            "TEXT, llm_summary TEXT NOT NULL DEFAULT '', llm_summary_mark INTEGER, needs_full "
            "INTEGER NOT NULL DEFAULT 0, since_regen INTEGER NOT NULL DEFAULT 0, status TEXT NOT "
            "NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, closed_at REAL, "
            "last_activity REAL NOT NULL, parent_episode_id TEXT, metadata TEXT NOT NULL "
            "DEFAULT '{}', user_metadata TEXT NOT NULL DEFAULT '{}', structured TEXT NOT NULL "
            "DEFAULT '{}')"
        )
        db.execute(
            "INSERT INTO episodes (id, title, title_source, status, created_at, updated_at, "
            "last_activity) VALUES ('ep-old', 'Old', 'keyword', 'closed', 1, 1, 5)"
        )
    for _ in range(2):  # opening twice changes nothing more
        store = EpisodeStore(path)
        try:
            row = store.episodes.get("ep-old")
            assert row is not None and row.project == "default"
            assert store.episodes.project_stats() == {"default": (1, 5.0)}
            assert [r.id for r in store.episodes.find(None, 10, 0, {"project": "default"})] == [
                "ep-old"
            ]
            assert store.episodes.find(None, 10, 0, {"project": "other"}) == []
            indexes = {r[1] for r in store.db.execute("PRAGMA index_list(episodes)")}
            assert "episodes_project" in indexes
        finally:
            store.close()


# -- isolation through the real engine ---------------------------------------------------------


@pytest.fixture
async def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0}
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
    runtime = await start_runtime(config, clock=Clock(), run_scheduler=False)
    yield runtime
    await runtime.stop()


async def settle(rt: Runtime) -> None:
    assert await rt.episodes.worker.drain(30), "episode work did not settle"


async def store_threads(rt: Runtime) -> dict[str, list[str]]:
    """The same auth thread stored in projects alpha and beta at the same times (identical
    text: dedup is per project), plus beta's database thread; ids by project."""
    ids: dict[str, list[str]] = {"alpha": [], "beta": []}
    for i in range(4):
        when = f"2025-03-0{3 + i}T09:00:00Z"
        for project in ("alpha", "beta"):
            stored = await rt.api.remember(AUTH[i], created_at=when, project=project)
            assert stored["success"], stored
            ids[project].append(stored["memory_id"])
        stored = await rt.api.remember(
            DB[i], created_at=f"2025-03-0{3 + i}T14:00:00Z", project="Beta"
        )
        ids["beta"].append(stored["memory_id"])
    await settle(rt)
    return ids


async def episode_members(rt: Runtime, project: str) -> dict[str, list[str]]:
    listed = (await rt.api.episodes_list(project=project))["episodes"]
    assert all(e["project"] == project for e in listed)
    return {e["id"]: (await rt.api.episode_get(e["id"]))["memory_ids"] for e in listed}


async def test_an_episode_never_spans_two_projects(rt: Runtime) -> None:
    ids = await store_threads(rt)
    alpha, beta = await episode_members(rt, "alpha"), await episode_members(rt, "beta")
    # the same thread in both projects: two episodes, each of one project's memories only
    assert sorted(len(m) for m in alpha.values()) == [4]
    assert sorted(len(m) for m in beta.values()) == [4, 4]
    assert {m for ms in alpha.values() for m in ms} == set(ids["alpha"])
    assert {m for ms in beta.values() for m in ms} == set(ids["beta"])
    assert (await rt.api.episodes_list())["episodes"] == []  # nothing in default
    for episode_id in alpha:
        detail = await rt.api.episode_get(episode_id)
        summary = await rt.api.get_memory(detail["episode"]["summary_memory_id"])
        assert summary["project"] == "alpha"  # its summary is scoped like its members


async def test_manual_edits_keep_episodes_in_one_project(rt: Runtime) -> None:
    ids = await store_threads(rt)
    alpha = next(iter(await episode_members(rt, "alpha")))
    beta = next(iter(await episode_members(rt, "beta")))
    with pytest.raises(Conflict, match="several projects"):
        await rt.api.episode_create("mixed", [ids["alpha"][0], ids["beta"][0]])
    with pytest.raises(Conflict, match="belongs to project beta, episode .* to alpha"):
        await rt.api.episode_add(alpha, ids["beta"][0])
    with pytest.raises(Conflict, match="never spans two projects"):
        await rt.api.episode_merge(alpha, beta)
    assert len((await rt.api.episode_get(alpha))["memory_ids"]) == 4  # nothing changed


async def test_reads_see_their_project_and_shared_memories(rt: Runtime) -> None:
    ids = await store_threads(rt)
    rule = await rt.api.remember(
        "Team rule: every refresh token change needs a security review before merge.",
        project="ops",
        shared=True,
    )
    query = "refresh token rotation logout"
    for project in ("alpha", "beta"):
        found = await rt.api.recall(query, limit=50, project=project)
        seen = {h["memory_id"] for h in found["results"]}
        other = set(ids["beta" if project == "alpha" else "alpha"])
        assert not seen & other, f"{project} sees another project's memories"
        assert rule["memory_id"] in seen  # shared: every project sees it
        assert {h["memory"]["project"] for h in found["results"]} <= {project, "ops"}
        listed = (await rt.api.memories_list(project=project, limit=100))["memories"]
        assert {m["id"] for m in listed} == set(ids[project]) | {rule["memory_id"]}
    assert (await rt.api.recall(query, project="nobody"))["results"][0]["memory_id"] == rule[
        "memory_id"
    ]
    default = (await rt.api.memories_list(limit=100))["memories"]
    assert [m["id"] for m in default] == [rule["memory_id"]]  # default: only the shared one


async def test_episode_reads_are_scoped(rt: Runtime) -> None:
    await store_threads(rt)
    alpha = set(await episode_members(rt, "alpha"))
    beta = set(await episode_members(rt, "beta"))
    for project, own in (("alpha", alpha), ("beta", beta)):
        searched = await rt.api.episodes_search("refresh token logout", project=project)
        assert searched["count"] >= 1 and {e["id"] for e in searched["episodes"]} <= own
        replay = await rt.api.episodes_replay("refresh token logout", project=project)
        assert replay["count"] >= 1 and {e["id"] for e in replay["episodes"]} <= own
        context = await rt.api.context("multi-tab logout", project=project)
        assert context["active"] and {a["id"] for a in context["active"]} <= own
    assert (await rt.api.episodes_search("refresh token logout", project="gamma"))["count"] == 0
    assert (await rt.api.context(project="gamma"))["active"] == []


async def test_patterns_are_scoped(rt: Runtime) -> None:
    """The same lesson on every closed episode: beta's two episodes make a pattern of beta;
    alpha's one episode makes none (a pattern rests on two episodes), and neither project's
    pattern counts the other's episodes."""
    await store_threads(rt)
    lesson = "Accept the previous refresh token for a short grace window after rotation."
    members = {p: await episode_members(rt, p) for p in ("alpha", "beta")}
    for project in ("alpha", "beta"):
        for episode_id in members[project]:
            await rt.api.episode_update(  # one title: the lesson memories read the same
                episode_id,
                title="Token grace window",
                structured={"outcome": "success", "lessons": [{"text": lesson}]},
            )
            await rt.api.episode_close(episode_id)
    await settle(rt)
    beta = (await rt.api.patterns(project="beta"))["patterns"]
    assert len(beta) == 1 and {e["id"] for e in beta[0]["episodes"]} == set(members["beta"])
    assert (await rt.api.patterns(project="alpha"))["patterns"] == []
    assert (await rt.api.patterns())["patterns"] == []  # default has no episodes


async def test_projects_are_listed_with_counts(rt: Runtime) -> None:
    await store_threads(rt)
    await rt.api.remember("The on-call rota lives in PagerDuty.", project="ops", shared=True)
    listed = await rt.api.projects()
    by_name = {p["name"]: p for p in listed["projects"]}
    assert set(by_name) == {"alpha", "beta", "ops"} and listed["count"] == 3
    alpha, beta, ops = by_name["alpha"], by_name["beta"], by_name["ops"]
    # memories count the engine's summary memories too (one per episode)
    assert (alpha["memories"], alpha["episodes"], alpha["shared_memories"]) == (4 + 1, 1, 0)
    assert (beta["memories"], beta["episodes"]) == (8 + 2, 2)
    assert (ops["memories"], ops["episodes"], ops["shared_memories"]) == (1, 0, 1)
    assert alpha["last_activity_at"] == "2025-03-06T09:00:00Z"  # memory time
    assert beta["last_activity_at"] == "2025-03-06T14:00:00Z"


# -- interfaces: bad names, /v1/projects, MCP and CLI defaults ----------------------------------


async def test_bad_names_are_refused_everywhere_in_the_api(rt: Runtime) -> None:
    calls = [
        lambda p: rt.api.remember("x", project=p),
        lambda p: rt.api.recall("x", project=p),
        lambda p: rt.api.memories_list(project=p),
        lambda p: rt.api.episodes_list(project=p),
        lambda p: rt.api.episodes_search("x", project=p),
        lambda p: rt.api.episodes_replay("x", project=p),
        lambda p: rt.api.context(project=p),
        lambda p: rt.api.patterns(project=p),
        lambda p: rt.api.episode_start("x", "s", project=p),
    ]
    for call in calls:
        for bad in ("has space", "x" * 65, 7):
            with pytest.raises(BadName, match="project"):
                await call(bad)


def test_http_projects_and_bad_names(client: TestClient) -> None:
    stored = client.post(
        "/v1/remember", json={"content": "Deploys go through Argo CD.", "project": "Web"}
    )
    assert stored.status_code == 200 and stored.json()["success"]
    memory = client.get(f"/v1/memory/{stored.json()['memory_id']}").json()
    assert (memory["project"], memory["shared"]) == ("web", False)
    assert client.post("/v1/recall", json={"query": "deploys"}).json()["results"] == []
    found = client.post("/v1/recall", json={"query": "deploys", "project": "web"}).json()
    assert [h["memory_id"] for h in found["results"]] == [stored.json()["memory_id"]]
    listed = client.get("/v1/projects").json()
    assert [(p["name"], p["memories"], p["episodes"]) for p in listed["projects"]] == [
        ("web", 1, 0)
    ]
    for response in (
        client.post("/v1/remember", json={"content": "x", "project": "no spaces please"}),
        client.post("/v1/recall", json={"query": "x", "project": "a/b"}),
        client.get("/v1/memories", params={"project": "x" * 65}),
        client.get("/v1/episodes", params={"project": "bad name"}),
        client.get("/v1/export", params={"project": "bad name"}),
    ):
        assert response.status_code == 400, response.text
        assert "project" in response.json()["error"] and "not a valid name" in response.text


async def test_mcp_fills_the_server_project_and_the_call_overrides_it() -> None:
    from mcp import Client

    fake = FakeAPI()
    async with Client(build_mcp_server(lambda: fake, project="from-cwd")) as agent:
        ok(await agent.call_tool("tribal_remember", {"content": "a"}))
        assert fake.calls[-1][1]["project"] == "from-cwd"
        ok(await agent.call_tool("tribal_remember", {"content": "b", "project": "Other"}))
        assert fake.calls[-1][1]["project"] == "Other"  # the API checks and lower-cases it


async def test_mcp_bad_project_is_a_tool_error(rt: Runtime) -> None:
    from mcp import Client

    async with Client(build_mcp_server(lambda: rt.api)) as agent:
        message = error_of(
            await agent.call_tool("tribal_recall", {"query": "x", "project": "bad name"})
        )
        assert "project 'bad name' is not a valid name" in message and "What to do:" in message
        listed = ok(await agent.call_tool("tribal_projects", {}))
        assert listed == {"projects": [], "count": 0}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith("{") else out), err


def test_cli_takes_the_project_of_the_working_directory(
    tm_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = str(write_config(tm_home, server={"port": 1}, episodes={"enabled": False}))
    inside = git_repo(tmp_path, "Billing")
    monkeypatch.chdir(inside)
    code, stored, _ = run_cli(
        capsys, "remember", "Invoices close at 18:00.", "--json", "--config", config
    )
    assert code == 0
    code, found, _ = run_cli(capsys, "recall", "invoices", "--json", "--config", config)
    assert found["results"][0]["memory"]["project"] == "billing"
    plain = tmp_path / "Scratch"
    plain.mkdir()
    monkeypatch.chdir(plain)  # another folder: another project, which does not see billing's
    code, found, _ = run_cli(capsys, "recall", "invoices", "--json", "--config", config)
    assert found["results"] == []
    code, found, _ = run_cli(
        capsys, "recall", "invoices", "--project", "BILLING", "--json", "--config", config
    )
    assert found["results"][0]["memory_id"] == stored["memory_id"]
    monkeypatch.setenv(projects.ENV_VAR, "billing")
    code, found, _ = run_cli(capsys, "recall", "invoices", "--json", "--config", config)
    assert found["results"][0]["memory_id"] == stored["memory_id"]
    code, listed, _ = run_cli(capsys, "projects", "--json", "--config", config)
    assert [p["name"] for p in listed["projects"]] == ["billing"]
    code, _, err = run_cli(capsys, "recall", "x", "--project", "bad name", "--config", config)
    assert code == 2 and "project 'bad name' is not a valid name" in err


async def test_a_verdict_naming_another_projects_episode_is_not_carried_out(rt: Runtime) -> None:
    """The LLM's batch mixes projects; a verdict that names another project's episode (or
    seed) is turned into a new seed where it is carried out."""
    from tribalmemory.episodes.matching import Placement

    await store_threads(rt)
    alpha = next(iter(await episode_members(rt, "alpha")))
    stored = await rt.api.remember(
        "Refresh token grace window is 10 seconds in the gamma service too.",
        project="gamma",
        created_at="2025-03-06T10:00:00Z",
    )
    await settle(rt)
    engine = rt.episodes.engine
    memory = (await engine.state.host.get_memories([stored["memory_id"]]))[0]
    vector = (await engine.state.host.get_vectors([memory.id]))[memory.id]
    features = engine.state.matcher.memory(memory, vector)
    assert not engine.state.same_project(memory, "join", alpha)
    async with engine.state.detect_lock:
        await engine.detection.apply(memory, features, Placement("join", alpha, 1.0, 1.0))
    assert engine.state.store.memberships.episode_of(memory.id) is None
    assert len((await rt.api.episode_get(alpha))["memory_ids"]) == 4


async def test_the_active_cap_counts_each_project_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for one active episode, a new thread in beta closes beta's older one and
    leaves alpha's open."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = {
        "detector_strategy": "embedding",
        "summary_debounce_seconds": 0,
        "max_active_episodes": 1,
    }
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
    runtime = await start_runtime(config, clock=Clock(), run_scheduler=False)
    try:
        for project, texts in (("alpha", AUTH[:2]), ("beta", AUTH[:2]), ("beta", DB[:2])):
            for i, text in enumerate(texts):
                await runtime.api.remember(
                    text, created_at=f"2025-03-03T{10 + i}:00:00Z", project=project
                )
            await settle(runtime)
        status = {
            p: sorted(e["status"] for e in (await runtime.api.episodes_list(project=p))["episodes"])
            for p in ("alpha", "beta")
        }
        assert status == {"alpha": ["active"], "beta": ["active", "closed"]}
    finally:
        await runtime.stop()


async def test_idle_closing_counts_memory_time_of_the_episodes_own_project(rt: Runtime) -> None:
    """A memory closes the episodes that were idle when it was made, in its own project only:
    alpha's episode of 1-2 March survives beta's memory of 19 March (17 days later, past the
    14-day window) and is closed by alpha's own memory of that day."""
    for i in range(2):
        stored = await rt.api.remember(
            AUTH[i], created_at=f"2025-03-0{1 + i}T10:00:00Z", project="alpha"
        )
    await settle(rt)
    episode_id = stored["episode_id"]
    assert episode_id is not None
    await rt.api.remember(DB[0], created_at="2025-03-19T10:00:00Z", project="beta")
    await settle(rt)
    assert (await rt.api.episode_get(episode_id))["episode"]["status"] == "active"
    await rt.api.remember(DB[1], created_at="2025-03-19T11:00:00Z", project="alpha")
    await settle(rt)
    assert (await rt.api.episode_get(episode_id))["episode"]["status"] == "closed"
