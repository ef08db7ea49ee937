"""Episode edits (PATCH, merge, split, delete), their history and pins, through the real
engine (embedding detector, no LLM), the HTTP routes, the MCP tools and the CLI."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import pytest
from test_episodes_engine import AUTH, DB, Clock
from test_mcp import connect, error_of, ok

from tribalmemory.config import config_from_dict
from tribalmemory.episodes import edits
from tribalmemory.episodes.edits import Pin
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.errors import Conflict, InvalidInput, NotFound, TribalError
from tribalmemory.models import SourceType
from tribalmemory.runtime import Runtime, start_runtime

# -- the rules, pure --------------------------------------------------------------------------


def test_pins_forbid_rejoining_and_moving() -> None:
    pins = [Pin("m1", "ep-a", "out"), Pin("m2", "ep-b", "in")]
    assert not edits.may_join(pins, "m1", "ep-a")
    assert edits.may_join(pins, "m1", "ep-b")  # only the episode it was taken out of
    assert not edits.may_move(pins, "m2", "ep-b")
    assert edits.may_move(pins, "m2", None) and edits.may_move(pins, "m1", "ep-a")
    assert edits.pinned(pins, "ep-a") == {"m1": "out"}


def test_merge_roles_and_split_problems() -> None:
    assert edits.merge_roles("a", 3, "b", 5) == ("b", "a")
    assert edits.merge_roles("a", 5, "b", 3) == ("a", "b")
    assert edits.merge_roles("a", 4, "b", 4) == ("a", "b")  # a tie: the path's episode
    assert edits.split_problem(["m1", "m2"], ["m1"]) is None
    assert "not members" in (edits.split_problem(["m1", "m2"], ["m3"]) or "")
    assert "every member" in (edits.split_problem(["m1", "m2"], ["m2", "m1"]) or "")


def test_session_fit_rule() -> None:
    floor = edits.SESSION_JOIN_FLOOR
    assert edits.session_fits(None, None)  # an empty episode without a topic vector
    assert edits.session_fits(floor, None) and edits.session_fits(0.0, floor + 0.01)
    assert not edits.session_fits(floor - 0.01, floor - 0.02)


def test_pins_are_read_once_the_table_holds_one_and_after_a_reopen(tmp_path) -> None:
    path = tmp_path / "episodes.sqlite3"
    store = EpisodeStore(path)
    try:
        assert store.pins.of(["m1"]) == [] and store.pins.on(["ep-a"]) == []  # none yet
        with store.transaction() as db:
            store.pins.record(db, "m1", "ep-a", "out", 1.0)
        assert [Pin.from_row(r) for r in store.pins.of(["m1"])] == [Pin("m1", "ep-a", "out")]
    finally:
        store.close()
    reopened = EpisodeStore(path)  # a new process: the pin is in the table, not in memory
    try:
        assert [Pin.from_row(r) for r in reopened.pins.on(["ep-a"])] == [Pin("m1", "ep-a", "out")]
    finally:
        reopened.close()


def test_old_database_gains_the_new_column_and_tables(tmp_path) -> None:
    path = tmp_path / "episodes.sqlite3"
    with sqlite3.connect(path) as db:  # the episodes table as the previous release made it
        db.execute(
            "CREATE TABLE episodes (id TEXT PRIMARY KEY, title TEXT NOT NULL, title_source TEXT "
            "NOT NULL, summary TEXT NOT NULL DEFAULT '', summary_kind TEXT NOT NULL DEFAULT "
            "'extractive', summary_status TEXT NOT NULL DEFAULT 'current', summary_memory_id "
            "TEXT, llm_summary TEXT NOT NULL DEFAULT '', llm_summary_mark INTEGER, needs_full "
            "INTEGER NOT NULL DEFAULT 0, since_regen INTEGER NOT NULL DEFAULT 0, status TEXT NOT "
            "NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, closed_at REAL, "
            "last_activity REAL NOT NULL, parent_episode_id TEXT, metadata TEXT NOT NULL "
            "DEFAULT '{}')"
        )
        db.execute(
            "INSERT INTO episodes (id, title, title_source, status, created_at, updated_at, "
            "last_activity, metadata) VALUES ('ep-old', 'Old', 'keyword', 'closed', 1, 1, 1, "
            '\'{"outcome": "done"}\')'
        )
    store = EpisodeStore(path)
    try:
        row = store.episodes.get("ep-old")
        assert row is not None and row.user_metadata == {} and row.metadata == {"outcome": "done"}
        with store.transaction() as db:
            store.episodes.patch_metadata(db, "ep-old", {"owner": "ana"}, 2.0)
            store.history.add(db, "ep-old", "user", "update", {"metadata": {"owner": "ana"}}, 2.0)
            store.episodes.update(db, "ep-old", metadata={"outcome": "fixed"})
        row = store.episodes.get("ep-old")
        assert row is not None
        # the engine's new metadata replaced its own fields; the user's field stayed
        assert row.metadata == {"outcome": "fixed", "owner": "ana"}
        assert [h["action"] for h in store.history.of("ep-old")] == ["update"]
    finally:
        store.close()


# -- the engine -------------------------------------------------------------------------------


@pytest.fixture
async def rt(tmp_path, monkeypatch) -> AsyncIterator[Runtime]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0}
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
    runtime = await start_runtime(config, clock=Clock(), run_scheduler=False)
    yield runtime
    await runtime.stop()


async def settle(rt: Runtime) -> None:
    assert await rt.episodes.worker.drain(30), "episode work did not settle"


async def two_threads(rt: Runtime) -> tuple[str, str, dict[str, list[str]]]:
    """The auth thread (4 memories) and the database thread (3): (auth id, db id, members)."""
    for i in range(4):
        await rt.api.remember(AUTH[i], created_at=f"2025-03-0{3 + i}T09:00:00Z")
        if i < 3:
            await rt.api.remember(DB[i], created_at=f"2025-03-0{3 + i}T14:00:00Z")
    await settle(rt)
    listed = (await rt.api.episodes_list())["episodes"]
    assert sorted(e["memory_count"] for e in listed) == [3, 4]
    auth = next(e["id"] for e in listed if e["memory_count"] == 4)
    db = next(e["id"] for e in listed if e["memory_count"] == 3)
    members = {eid: (await rt.api.episode_get(eid))["memory_ids"] for eid in (auth, db)}
    return auth, db, members


async def summary_ids(rt: Runtime) -> set[str]:
    host = rt.episodes.engine.state.host
    return {m.id for m in await host.memories_of_type(SourceType.EPISODE_SUMMARY)}


async def invariants(rt: Runtime, memory_count: int) -> None:
    """Every memory in one episode at most, none lost; one summary memory per episode with
    members and no other (no orphans)."""
    await settle(rt)
    listed = (await rt.api.episodes_list())["episodes"]
    members = [m for e in listed for m in (await rt.api.episode_get(e["id"]))["memory_ids"]]
    assert len(members) == len(set(members))
    assert len(members) <= memory_count
    expected = {
        (await rt.api.episode_get(e["id"]))["episode"]["summary_memory_id"] for e in listed
    } - {None}
    assert await summary_ids(rt) == expected


async def test_patch_renames_sets_fields_closes_and_reopens(rt: Runtime) -> None:
    auth, _, _ = await two_threads(rt)
    result = await rt.api.episode_update(
        f"EPISODE:{auth.upper()}", title="  Multi-tab logout  ", metadata={"outcome": "fixed"}
    )
    assert result["episode"]["title"] == "Multi-tab logout"
    assert result["episode"]["title_source"] == "user"
    assert result["history"][-1]["actor"] == "user"
    assert result["history"][-1]["details"]["metadata"] == {"outcome": "fixed"}
    await rt.api.episode_regenerate(auth)  # summaries run again: the user's edits stay
    await settle(rt)
    episode = (await rt.api.episode_get(auth))["episode"]
    # the user's metadata field stays (the episode's own outcome is its structured record's)
    assert episode["title"] == "Multi-tab logout" and episode["metadata"]["outcome"] == "fixed"
    summary = await rt.api.get_memory(episode["summary_memory_id"])
    assert summary["content"].startswith("Episode: Multi-tab logout\n")
    await rt.api.episode_update(auth, metadata={"outcome": None})
    assert "outcome" not in (await rt.api.episode_get(auth))["episode"]["metadata"]

    closed = await rt.api.episode_update(auth, status="closed")
    assert closed["episode"]["status"] == "closed" and auth not in rt.episodes.engine.state.active
    reopened = await rt.api.episode_update(auth, status="active")
    assert reopened["episode"]["status"] == "active" and reopened["episode"]["closed_at"] is None
    assert auth in rt.episodes.engine.state.active  # new memories can join it again
    actions = [(h["actor"], h["action"]) for h in reopened["history"]]
    assert actions[0] == ("detector", "create")
    assert ("user", "close") in actions and ("user", "reopen") in actions


async def test_patch_refuses_bad_input(rt: Runtime) -> None:
    auth, _, _ = await two_threads(rt)
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "nothing to change"),
        ({"status": "archived"}, "status must be one of active, closed"),
        ({"status": "open"}, "status must be one of active, closed"),
        ({"title": 7}, "title must be a string"),
        ({"title": "   "}, "title must not be empty"),
        ({"metadata": ["x"]}, "metadata must be a JSON object"),
        ({"metadata": {"has space": 1}}, "field name 'has space' is not allowed"),
        ({"metadata": {f"k{i}": i for i in range(51)}}, "at most 50 fields"),
    ]
    for arguments, message in cases:
        with pytest.raises(InvalidInput, match=message):
            await rt.api.episode_update(auth, **arguments)
    with pytest.raises(NotFound, match="no episode with id ep-doesnotexist"):
        await rt.api.episode_update("ep-doesnotexist", title="x")


async def test_merge_keeps_the_larger_and_the_absorbed_id_names_it(rt: Runtime) -> None:
    auth, db, members = await two_threads(rt)
    gone_summary = (await rt.api.episode_get(db))["episode"]["summary_memory_id"]
    merged = await rt.api.episode_merge(db, auth)  # the path names the smaller one
    assert merged == {"success": True, "episode_id": auth, "absorbed_id": db, "memory_count": 7}
    listed = (await rt.api.episodes_list())["episodes"]
    assert [e["id"] for e in listed] == [auth]
    with pytest.raises(
        NotFound, match=f"no episode with id {db}: it was merged into {auth}"
    ) as caught:
        await rt.api.episode_get(db)
    assert caught.value.detail == {"merged_into": auth}
    with pytest.raises(NotFound):
        await rt.api.get_memory(gone_summary)  # no orphan summary
    moved = members[db][0]
    assert (await rt.api.get_memory(moved))["episode_id"] == auth
    history = (await rt.api.episode_get(auth))["history"]
    assert history[-1]["action"] == "merge" and history[-1]["details"]["absorbed"] == db
    assert sorted(history[-1]["details"]["memory_ids"]) == sorted(members[db])
    await invariants(rt, 7)
    assert (await rt.api.episode_get(auth))["episode"]["summary_status"] == "current"


async def test_an_absorbed_id_follows_its_survivor_merged_or_deleted_in_turn(
    rt: Runtime,
) -> None:
    """The absorbed id once named its survivor even after that one was merged or deleted in
    turn: an id that no longer answered."""
    auth, db, _ = await two_threads(rt)
    await rt.api.episode_merge(db, auth)
    hosts = ["bastion", "vault", "gitlab", "grafana", "kafka", "redis", "minio", "jenkins"]
    bigger = [
        (await rt.api.remember(f"The {host} host rotates its TLS keys every {n + 20} days."))[
            "memory_id"
        ]
        for n, host in enumerate(hosts)  # one more than the survivor's 7: it keeps its id
    ]
    last = (await rt.api.episode_create("Key rotation", bigger))["episode_id"]
    await rt.api.episode_merge(auth, last)
    with pytest.raises(NotFound, match=f"merged into {auth}, then {last}; use {last}") as caught:
        await rt.api.episode_get(db)
    assert caught.value.detail == {"merged_into": last}
    await rt.api.episode_delete(last)
    with pytest.raises(
        NotFound,
        match=f"no episode with id {db}: it was merged into {auth}, then {last}, which was deleted",
    ):
        await rt.api.episode_get(db)


async def test_merge_refuses_itself_and_unknown_ids(rt: Runtime) -> None:
    auth, db, _ = await two_threads(rt)
    with pytest.raises(InvalidInput, match="other_id names the episode itself"):
        await rt.api.episode_merge(auth, f"episode:{auth}")
    with pytest.raises(NotFound, match="no episode with id ep-doesnotexist"):
        await rt.api.episode_merge(auth, "ep-doesnotexist")
    with pytest.raises(InvalidInput, match="other_id"):
        await rt.api.episode_merge(auth, "ep bad")
    assert (await rt.api.episodes_list())["count"] == 2  # nothing changed


async def test_split_makes_an_episode_that_records_where_it_came_from(rt: Runtime) -> None:
    auth, _, members = await two_threads(rt)
    taken = members[auth][2:]
    split = await rt.api.episode_split(auth, taken, title="The grace window fix")
    new = split["episode_id"]
    assert split == {"success": True, "episode_id": new, "split_from": auth, "memory_count": 2}
    got = await rt.api.episode_get(new)
    assert sorted(got["memory_ids"]) == sorted(taken)
    assert got["episode"]["title"] == "The grace window fix"
    assert got["history"][0]["action"] == "split_from"
    assert got["history"][0]["details"] == {"episode_id": auth}
    source = await rt.api.episode_get(auth)
    assert source["memory_ids"] == members[auth][:2]
    assert source["history"][-1]["action"] == "split"
    assert source["history"][-1]["details"] == {"episode_id": new, "memory_ids": taken}
    await invariants(rt, 7)


async def test_split_refuses_non_members_and_every_member(rt: Runtime) -> None:
    auth, db, members = await two_threads(rt)
    with pytest.raises(Conflict, match=f"not members of this episode: {members[db][0]}"):
        await rt.api.episode_split(auth, [members[db][0]])
    with pytest.raises(Conflict, match="at least one memory behind"):
        await rt.api.episode_split(auth, members[auth])
    with pytest.raises(InvalidInput, match="memory_ids must be a non-empty list"):
        await rt.api.episode_split(auth, [])
    with pytest.raises(InvalidInput, match="is not a memory id"):
        await rt.api.episode_split(auth, ["nope"])
    with pytest.raises(InvalidInput, match="title must not be empty"):
        await rt.api.episode_split(auth, members[auth][:1], title="")
    assert (await rt.api.episode_get(auth))["memory_ids"] == members[auth]


async def test_merge_and_split_on_closed_episodes(rt: Runtime) -> None:
    auth, db, members = await two_threads(rt)
    for eid in (auth, db):
        await rt.api.episode_close(eid)
    split = await rt.api.episode_split(db, members[db][:1])
    piece = await rt.api.episode_get(split["episode_id"])
    assert piece["episode"]["status"] == "closed"  # a piece of finished work stays finished
    merged = await rt.api.episode_merge(auth, split["episode_id"])
    survivor = await rt.api.episode_get(merged["episode_id"])
    assert survivor["episode"]["status"] == "closed" and survivor["episode"]["memory_count"] == 5
    assert rt.episodes.engine.state.active == {}
    await invariants(rt, 7)


async def test_detector_respects_the_users_edits(rt: Runtime) -> None:
    auth, db, members = await two_threads(rt)
    removed, placed = members[auth][1], members[auth][2]
    await rt.api.episode_remove(auth, removed)  # pinned out of auth
    await rt.api.episode_add(db, placed)  # pinned into db, although it is about auth
    detection = rt.episodes.engine.detection
    store = rt.episodes.store
    for memory_id in (removed, placed):  # the detector is asked about both again
        with store.transaction() as conn:
            store.detections.record(conn, memory_id, "pending", 0.0)
        memory = (await rt.service.get_many([memory_id]))[0]
        vector = (await rt.service.vectors([memory_id]))[memory_id]
        await detection.detect(memory, vector)
    assert (await rt.api.get_memory(removed))["episode_id"] != auth
    assert (await rt.api.get_memory(placed))["episode_id"] == db
    pins = [Pin.from_row(r) for r in store.pins.of([removed, placed])]
    assert Pin(removed, auth, "out") in pins and Pin(placed, db, "in") in pins
    assert Pin(placed, auth, "out") in pins  # the move took it out of auth too


async def test_concurrent_edits_keep_the_invariants(rt: Runtime) -> None:
    auth, db, members = await two_threads(rt)
    extra = [
        rt.api.remember(AUTH[0] + " (seen again in staging)", created_at="2025-03-08T09:00:00Z"),
        rt.api.remember(DB[3], created_at="2025-03-08T14:00:00Z"),
    ]
    outcomes = await asyncio.gather(
        rt.api.episode_merge(auth, db),
        rt.api.episode_split(auth, members[auth][:1]),
        rt.api.episode_split(db, members[db][:1]),
        rt.api.episode_update(auth, title="Renamed while merging", status="closed"),
        rt.api.episode_remove(db, members[db][2]),
        rt.api.episode_delete(db),
        *extra,
        return_exceptions=True,
    )
    for outcome in outcomes:  # an edit that lost a race says so; nothing else fails
        assert not isinstance(outcome, Exception) or isinstance(outcome, TribalError), outcome
    await invariants(rt, 9)
    stored = {m for ids in members.values() for m in ids}
    for memory_id in stored:  # every memory is still there (edits never delete memories)
        assert (await rt.api.get_memory(memory_id))["id"] == memory_id


# -- HTTP -------------------------------------------------------------------------------------


def http_thread(client: Any) -> tuple[str, list[str]]:
    ids = []
    for i in range(3):
        body = {"content": AUTH[i], "created_at": f"2025-03-0{3 + i}T09:00:00Z"}
        ids.append(client.post("/v1/remember", json=body).json()["memory_id"])
    created = client.post("/v1/episodes", json={"title": "Logouts", "memory_ids": ids})
    assert created.status_code == 200, created.text
    return created.json()["episode_id"], ids


def test_http_edit_routes(client: Any) -> None:
    eid, ids = http_thread(client)
    patched = client.patch(f"/v1/episodes/{eid}", json={"title": "Renamed", "status": "closed"})
    assert patched.status_code == 200, patched.text
    assert patched.json()["episode"]["title"] == "Renamed"
    assert patched.json()["episode"]["status"] == "closed"
    split = client.post(f"/v1/episodes/{eid}/split", json={"memory_ids": ids[:1]})
    assert split.status_code == 200 and split.json()["split_from"] == eid
    other = split.json()["episode_id"]
    merged = client.post(f"/v1/episodes/{other}/merge", json={"other_id": eid})
    assert merged.status_code == 200 and merged.json()["episode_id"] == eid
    gone = client.get(f"/v1/episodes/{other}")
    assert gone.status_code == 404 and gone.json()["detail"] == {"merged_into": eid}
    history = client.get(f"/v1/episodes/{eid}").json()["history"]
    assert [h["action"] for h in history][-2:] == ["split", "merge"]
    assert client.delete(f"/v1/episodes/{eid}").status_code == 200
    deleted = client.get(f"/v1/episodes/{eid}")
    assert deleted.status_code == 404 and "was deleted" in deleted.json()["error"]


@pytest.mark.parametrize(
    ("method", "suffix", "body", "status", "message"),
    [
        ("PATCH", "", {}, 422, "nothing to change"),
        ("PATCH", "", {"name": "x"}, 422, "unknown field 'name'"),
        ("PATCH", "", {"status": "done"}, 422, "status must be one of active, closed"),
        ("PATCH", "", {"metadata": {"a.b": 1}}, 422, "field name 'a.b' is not allowed"),
        ("POST", "/merge", {}, 422, "missing required field: other_id"),
        ("POST", "/merge", {"other_id": "ep-doesnotexist"}, 404, "no episode with id"),
        ("POST", "/split", {"memory_ids": "x"}, 422, "memory_ids must be a non-empty list"),
        (
            "POST",
            "/split",
            {"memory_ids": ["0" * 8 + "-0000-4000-8000-" + "0" * 12]},
            409,
            "not members of this episode",
        ),
    ],
)
def test_http_edit_routes_refuse_bad_input(
    client: Any, method: str, suffix: str, body: dict[str, Any], status: int, message: str
) -> None:
    eid, _ = http_thread(client)
    response = client.request(method, f"/v1/episodes/{eid}{suffix}", json=body)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("PATCH", "", {"title": "x"}),
        ("POST", "/merge", {"other_id": "ep-1"}),
        ("POST", "/split", {"memory_ids": ["0" * 8 + "-0000-4000-8000-" + "0" * 12]}),
    ],
)
def test_http_edit_routes_refuse_bad_and_unknown_ids(
    module_client: Any, method: str, suffix: str, body: dict[str, Any]
) -> None:
    bad = module_client.request(method, f"/v1/episodes/ep%20x{suffix}", json=body)
    assert bad.status_code == 400 and "not an episode id" in bad.json()["error"]
    unknown = module_client.request(method, f"/v1/episodes/EP-DOESNOTEXIST{suffix}", json=body)
    assert unknown.status_code == 404 and "ep-doesnotexist" in unknown.json()["error"]


# -- MCP --------------------------------------------------------------------------------------


async def test_mcp_edit_tools(rt: Runtime) -> None:
    auth, db, members = await two_threads(rt)
    async with connect(rt.api) as client:
        updated = ok(
            await client.call_tool(
                "tribal_episode_update",
                {"episode_id": auth, "title": "Logouts", "metadata": {"outcome": "fixed"}},
            )
        )
        assert updated["episode"]["title"] == "Logouts"
        split = ok(
            await client.call_tool(
                "tribal_episode_split", {"episode_id": auth, "memory_ids": members[auth][:1]}
            )
        )
        message = error_of(
            await client.call_tool(
                "tribal_episode_split", {"episode_id": auth, "memory_ids": members[db][:1]}
            )
        )
        assert "not members of this episode" in message and "tribal_episode_get" in message
        merged = ok(
            await client.call_tool(
                "tribal_episode_merge", {"episode_id": db, "other_id": split["episode_id"]}
            )
        )
        assert merged["episode_id"] == db and merged["memory_count"] == 4
        assert ok(await client.call_tool("tribal_episode_delete", {"episode_id": db}))["success"]
        message = error_of(await client.call_tool("tribal_episode_get", {"episode_id": db}))
        assert f"no episode with id {db}: it was deleted" in message


# -- CLI --------------------------------------------------------------------------------------


def test_cli_rename_split_merge_delete(tm_home: Any, capsys: Any) -> None:
    from helpers_http import write_config
    from test_cli import run, run_json

    config = str(
        write_config(
            tm_home,
            server={"port": 1},
            episodes={"enabled": True, "detector_strategy": "embedding"},
        )
    )
    ids = [run_json(capsys, "remember", AUTH[i], "--config", config)["memory_id"] for i in range(3)]
    eid = run_json(capsys, "episodes", "create", "Logouts", *ids, "--config", config)["episode_id"]
    code, out, err = run(capsys, "episodes", "rename", eid, "Multi-tab logouts", "--config", config)
    assert code == 0 and out.strip() == f"Renamed {eid}: Multi-tab logouts", err
    split = run_json(
        capsys, "episodes", "split", eid, ids[0], "--title", "Part", "--config", config
    )
    assert split["split_from"] == eid and split["memory_count"] == 1
    code, out, err = run(capsys, "episodes", "merge", eid, split["episode_id"], "--config", config)
    assert code == 0 and out.strip() == f"Merged {split['episode_id']} into {eid} (3 memories)"
    code, _, err = run(capsys, "episodes", "split", eid, *ids, "--config", config)
    assert code == 1 and "at least one memory behind" in err
    code, out, _ = run(capsys, "episodes", "delete", eid, "--config", config)
    assert code == 0 and out.startswith("Deleted")
