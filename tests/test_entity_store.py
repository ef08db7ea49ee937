"""Entities stored and served (issue 43): mentions written in the background right after the
engine decides a memory (never inside the request; durable across kill -9; reads wait for
them), aliases meeting in one entity, its episodes from memberships, forget taking away what
only the forgotten memory supported, project isolation on every route and tool, recall's
``entity`` filter restricting the search in the store, each episode's entities on the episodes
list and search (one read a page), and bad input refused."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers_http import EPISODES, write_config
from helpers_runtime import SETTLE_SECONDS, killed_after_remember, settle
from starlette.testclient import TestClient
from test_cli import run, run_json
from test_http import error
from test_import_pages import open_runtime
from test_mcp import connect, error_of, ok

from tribalmemory.entities import mentions_of
from tribalmemory.episodes import entity_work
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.errors import InvalidInput, NotFound
from tribalmemory.runtime import Runtime
from tribalmemory.timeutil import to_iso

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
Make = Callable[..., Awaitable[Runtime]]


async def remember(rt: Runtime, text: str, minute: int, project: str = "shop") -> str:
    stored = await rt.api.remember(
        text, created_at=to_iso(T0 + timedelta(minutes=minute)), project=project
    )
    assert stored["success"], stored
    memory_id: str = stored["memory_id"]
    return memory_id


async def test_a_known_service_written_in_lower_case_prose_is_a_mention(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    await remember(rt, "The orders-svc times out on checkout after the 2.4 deploy.", 0)
    prose = await remember(rt, "Raised the orders service retry budget; the timeouts stopped.", 3)

    found = await rt.api.entity_get("orders-service", project="shop")
    assert sorted(found["entity"]["aliases"]) == ["orders service", "orders-svc"]
    assert prose in {m["memory_id"] for m in found["memories"]}


async def test_aliases_meet_in_one_entity_with_its_episodes(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    first = await remember(rt, "The orders-svc times out on checkout after the 2.4 deploy.", 0)
    second = await remember(rt, "Raised the Orders Service retry budget to stop the timeouts.", 3)
    other = await remember(rt, "Renamed the ledger-db backups folder.", 400)
    created = await rt.api.episode_create("orders timeouts", [first, second])

    found = await rt.api.entity_get("orders-svc", project="shop")
    entity = found["entity"]
    assert entity["name"] == "orders-service" and entity["kind"] == "system"
    assert sorted(entity["aliases"]) == ["Orders Service", "orders-svc"]
    assert entity["mentions"] == 2
    assert entity["first_seen_at"] == to_iso(T0)
    assert entity["last_seen_at"] == to_iso(T0 + timedelta(minutes=3))
    assert [e["episode_id"] for e in found["episodes"]] == [created["episode_id"]]
    assert found["episodes"][0]["mentions"] == 2
    assert [m["memory_id"] for m in found["memories"]] == [second, first]  # newest first
    assert other not in {m["memory_id"] for m in found["memories"]}
    # any spelling finds it; the same answer
    assert (await rt.api.entity_get("Orders Service", project="shop")) == found
    assert (await rt.api.entity_get("orders_service", project="shop")) == found

    listed = await rt.api.entities_list(project="shop")
    names = [e["name"] for e in listed["entities"]]
    assert names[0] == "orders-service"  # most mentioned first
    assert "ledger-db" in names
    queried = await rt.api.entities_list(query="Orders svc", project="shop")
    assert [e["name"] for e in queried["entities"]] == ["orders-service"]
    systems = await rt.api.entities_list(kind="version", project="shop")
    assert [e["name"] for e in systems["entities"]] == []

    got = await rt.api.episode_get(created["episode_id"], include_entities=True)
    assert got["entities"][0] == {
        "name": "orders-service",
        "kind": "system",
        "mentions": 2,
        "doubted": False,
    }
    assert (await rt.api.episode_get(created["episode_id"]))["entities"] is None


async def test_the_episodes_list_filters_by_an_entity_named_by_any_alias(
    engine_runtime: Make,
) -> None:
    """``episodes_list(entity=...)`` without an LLM: the episodes one of whose memories names
    the entity (it read only the LLM record's names, so it found nothing here), by any
    spelling, with the other filters and within its project."""
    rt = await engine_runtime()
    first = await remember(rt, "The orders-svc times out on checkout after the 2.4 deploy.", 0)
    second = await remember(rt, "Raised the Orders Service retry budget to stop the timeouts.", 3)
    ledger = await remember(rt, "Renamed the ledger-db backups folder.", 400)
    orders = (await rt.api.episode_create("orders timeouts", [first, second]))["episode_id"]
    backups = (await rt.api.episode_create("ledger backups", [ledger]))["episode_id"]
    elsewhere = await remember(rt, "The orders-svc pods restart nightly.", 9, "beta")
    beta = await rt.api.episode_create("orders restarts", [elsewhere])  # in its memory's project

    for spelling in ("orders-svc", "Orders Service", "orders_service"):
        listed = await rt.api.episodes_list(entity=spelling, project="shop")
        assert [e["id"] for e in listed["episodes"]] == [orders], spelling
    listed = await rt.api.episodes_list(entity="ledger-db", project="shop")
    assert [e["id"] for e in listed["episodes"]] == [backups]
    assert (await rt.api.episodes_list(entity="no-such-svc", project="shop"))["episodes"] == []
    tagged = await rt.api.episodes_list(entity="orders-svc", tag="no-such-tag", project="shop")
    assert tagged["episodes"] == []
    listed = await rt.api.episodes_list(entity="orders-svc", project="beta")
    assert [e["id"] for e in listed["episodes"]] == [beta["episode_id"]]
    async with connect(rt.api) as agent:
        got = ok(await agent.call_tool("tribal_episodes_list", {"entity": "orders service"}))
        assert got["episodes"] == []  # the default project holds none
        got = ok(
            await agent.call_tool(
                "tribal_episodes_list", {"entity": "orders service", "project": "shop"}
            )
        )
        assert [e["id"] for e in got["episodes"]] == [orders]


async def test_a_short_name_after_its_full_name_is_the_same_entity(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    full = await remember(rt, "Call notes: Greg Mallory owns the refund rules.", 0)
    short = await remember(rt, "Sent the refund rules draft to Greg for sign-off.", 5)
    found = await rt.api.entity_get("Greg Mallory", project="shop")
    assert found["entity"]["name"] == "greg-mallory"
    assert sorted(found["entity"]["aliases"]) == ["Greg", "Greg Mallory"]
    assert sorted(m["memory_id"] for m in found["memories"]) == sorted([full, short])
    assert (await rt.api.entity_get("Greg", project="shop")) == found  # by its short name


async def test_a_bare_file_name_names_its_known_path_and_is_read_by_it(
    engine_runtime: Make,
) -> None:
    """Once a file is written with its folder, its bare name in a later memory names the same
    entity (only one known path ends in it), and the entity is read by either spelling; a
    recall filtered by the bare name searches the memories of the path."""
    rt = await engine_runtime()
    first = await remember(rt, "Engine/Core/Math.h pulls in windows.h for every unit.", 0)
    second = await remember(rt, "Split Math.h so the renderer stops rebuilding.", 3)
    found = await rt.api.entity_get("Engine/Core/Math.h", project="shop")
    assert found["entity"]["name"] == "engine/core/math.h"
    assert sorted(found["entity"]["aliases"]) == ["Engine/Core/Math.h", "Math.h"]
    assert [m["memory_id"] for m in found["memories"]] == [second, first]
    assert (await rt.api.entity_get("Math.h", project="shop")) == found  # by its alias
    hits = await rt.api.recall("renderer rebuilding", entity="math.h", project="shop")
    assert {h["memory_id"] for h in hits["results"]} <= {first, second}
    assert second in {h["memory_id"] for h in hits["results"]}


async def test_forget_removes_what_only_the_forgotten_memory_named(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    gone = await remember(rt, "The ledger-db failover left orders-svc without writes.", 0)
    kept = await remember(rt, "Orders Service writes are back after the failover.", 5)
    await rt.api.forget(gone)

    with pytest.raises(NotFound, match="no entity 'ledger-db' in project shop"):
        await rt.api.entity_get("ledger-db", project="shop")
    orders = (await rt.api.entity_get("orders-service", project="shop"))["entity"]
    assert orders["mentions"] == 1 and orders["aliases"] == ["Orders Service"]
    assert orders["first_seen_at"] == to_iso(T0 + timedelta(minutes=5))
    found = await rt.api.entity_get("orders-service", project="shop")
    assert [m["memory_id"] for m in found["memories"]] == [kept]
    listed = [e["name"] for e in (await rt.api.entities_list(project="shop"))["entities"]]
    assert "ledger-db" not in listed


async def test_recall_entity_filter_searches_only_the_memories_naming_it(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    for i in range(4):  # closer to the query than the one naming the entity
        await remember(rt, f"Checkout timeouts on the payment page, attempt {i}.", i * 300)
    naming = await remember(rt, "The billing-api was slow during checkout.", 2000)
    plain = await rt.api.recall("checkout timeouts on the payment page", limit=1, project="shop")
    assert plain["results"][0]["memory_id"] != naming
    # the filter restricts the search: a page of one still holds the memory naming it
    hit = await rt.api.recall(
        "checkout timeouts on the payment page", limit=1, entity="Billing API", project="shop"
    )
    assert [r["memory_id"] for r in hit["results"]] == [naming]
    none = await rt.api.recall("checkout", entity="no-such-service", project="shop")
    assert none["results"] == []
    with pytest.raises(InvalidInput, match="entity"):
        await rt.api.recall("checkout", entity="   ", project="shop")


async def test_a_name_never_stored_is_answered_by_the_memories_that_write_it(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    first = await remember(rt, "Moved the bookings table to the new shard.", 0)
    second = await remember(rt, "The bookings replication lag is under a second again.", 3)
    await remember(rt, "The rebookings report is late.", 6)  # a longer word: not it
    elsewhere = await remember(rt, "The bookings export failed.", 9, "beta")
    created = await rt.api.episode_create("bookings shard", [first, second])
    every = await rt.api.entities_list(project="shop", include_doubted=True, limit=100)
    assert "bookings" not in [e["name"] for e in every["entities"]]  # the rules never stored it

    found = await rt.api.entity_get("Bookings", project="shop")
    assert found["entity"] == {
        "name": "bookings",
        "kind": "written",
        "aliases": ["bookings"],
        "first_seen_at": to_iso(T0),
        "last_seen_at": to_iso(T0 + timedelta(minutes=3)),
        "mentions": 2,
        "doubted": True,
    }
    assert [m["memory_id"] for m in found["memories"]] == [second, first]  # newest first
    assert found["memory_count"] == 2
    assert [(e["episode_id"], e["mentions"]) for e in found["episodes"]] == [
        (created["episode_id"], 2)
    ]
    with pytest.raises(NotFound, match="no memory of the project writes the name"):
        await rt.api.entity_get("BOOKINGS", project="shop")  # capitals are matched as written
    # recall's entity filter searches the same memories
    hit = await rt.api.recall("shard lag", entity="bookings", project="shop")
    assert {r["memory_id"] for r in hit["results"]} == {first, second}
    # each project its own
    beta = await rt.api.entity_get("bookings", project="beta")
    assert [m["memory_id"] for m in beta["memories"]] == [elsewhere]
    async with connect(rt.api) as agent:
        tool = ok(await agent.call_tool("tribal_entity", {"name": "bookings", "project": "beta"}))
        assert tool["memory_count"] == 1 and tool["entity"]["kind"] == "written"
    # forgotten, no longer written
    await rt.api.forget(elsewhere)
    with pytest.raises(NotFound, match="in project beta"):
        await rt.api.entity_get("bookings", project="beta")


async def test_projects_never_see_each_others_entities(engine_runtime: Make) -> None:
    rt = await engine_runtime()
    mine = await remember(rt, "The payouts-service queue is stuck on PROJ-4411.", 0, "alpha")
    assert (await rt.api.entity_get("payouts-service", project="alpha"))["entity"]["mentions"] == 1
    assert (await rt.api.entities_list(project="beta"))["entities"] == []
    assert (await rt.api.entities_list(query="payouts", project="beta"))["entities"] == []
    with pytest.raises(NotFound, match="in project beta"):
        await rt.api.entity_get("payouts-service", project="beta")
    recalled = await rt.api.recall("payouts queue", entity="payouts-service", project="beta")
    assert recalled["results"] == []
    found = await rt.api.recall("payouts queue", entity="payouts-service", project="alpha")
    assert [r["memory_id"] for r in found["results"]] == [mine]

    async with connect(rt.api) as agent:
        listed = ok(await agent.call_tool("tribal_entities", {"project": "alpha"}))
        assert "payouts-service" in [e["name"] for e in listed["entities"]]
        assert ok(await agent.call_tool("tribal_entities", {"project": "beta"}))["entities"] == []
        one = ok(await agent.call_tool("tribal_entity", {"name": "PROJ-4411", "project": "alpha"}))
        assert one["entity"]["kind"] == "ticket"
        text = error_of(
            await agent.call_tool("tribal_entity", {"name": "payouts-service", "project": "beta"})
        )
        assert "no entity 'payouts-service' in project beta" in text
        bad = error_of(await agent.call_tool("tribal_entities", {"project": "*"}))
        assert "project" in bad


async def test_episode_list_and_search_carry_each_episodes_entities(engine_runtime: Make) -> None:
    """Issue 43: only one episode's GET gave its entities. The list and search give each
    episode its own (as that GET does), read in one query for the page; another project's
    episode naming the same entity keeps its own count."""
    rt = await engine_runtime()
    orders = [
        await remember(rt, "The orders-svc times out on checkout after the 2.4 deploy.", 0),
        await remember(rt, "Raised the Orders Service retry budget; PROJ-812 tracks it.", 3),
    ]
    ledger = [await remember(rt, "Renamed the ledger-db backups folder to nightly.", 400)]
    plain = [await remember(rt, "lunch is at noon on most days.", 800)]
    elsewhere = [
        await remember(rt, "The orders-svc checkout timeouts hit the beta shop too.", 5, "beta")
    ]
    made = {}
    for title, ids in (
        ("orders timeouts", orders),
        ("ledger backups", ledger),
        ("lunch", plain),
        ("beta orders timeouts", elsewhere),
    ):
        made[title] = (await rt.api.episode_create(title, ids))["episode_id"]
    await settle(rt)

    async def own(episode_id: str) -> list[dict[str, Any]]:
        found = (await rt.api.episode_get(episode_id, include_entities=True))["entities"]
        assert found is not None
        return found

    reads: list[str] = []
    db = rt.episodes.store.db
    db.set_trace_callback(lambda sql: reads.append(sql) if "JOIN mentions" in sql else None)
    try:
        listed = await rt.api.episodes_list(project="*", include_entities=True, limit=100)
        assert len(reads) == 1, reads  # one query for the page, not one an episode
    finally:
        db.set_trace_callback(None)
    by_id = {e["id"]: e["entities"] for e in listed["episodes"]}
    assert set(made.values()) <= set(by_id)
    for episode_id in made.values():
        assert by_id[episode_id] == await own(episode_id)
    assert by_id[made["orders timeouts"]][0] == {
        "name": "orders-service",
        "kind": "system",
        "mentions": 2,
        "doubted": False,
    }
    assert {e["name"] for e in by_id[made["orders timeouts"]]} >= {"orders-service", "proj-812"}
    assert by_id[made["beta orders timeouts"]] == [
        {
            "name": "orders-service",
            "kind": "system",
            "mentions": 1,
            "doubted": False,
        }  # beta's own mention
    ]
    assert "ledger-db" in {e["name"] for e in by_id[made["ledger backups"]]}
    assert by_id[made["lunch"]] == []  # names nothing: an empty list, not null
    shop = await rt.api.episodes_list(project="shop", include_entities=True)
    assert made["beta orders timeouts"] not in {e["id"] for e in shop["episodes"]}
    without = await rt.api.episodes_list(project="shop")
    assert {e["entities"] is None for e in without["episodes"]} == {True}

    found = await rt.api.episodes_search(
        "orders service checkout timeouts", project="shop", include_entities=True
    )
    hits = {e["id"]: e["entities"] for e in found["episodes"]}
    assert made["orders timeouts"] in hits and made["beta orders timeouts"] not in hits
    for episode_id, entities in hits.items():
        assert entities == await own(episode_id)
    plain_search = await rt.api.episodes_search("orders service checkout timeouts", project="shop")
    assert {e["entities"] is None for e in plain_search["episodes"]} == {True}
    with pytest.raises(InvalidInput, match="include_entities must be true or false"):
        await rt.api.episodes_list(include_entities="yes")
    with pytest.raises(InvalidInput, match="include_entities must be true or false"):
        await rt.api.episodes_search("orders", include_entities=1)

    async with connect(rt.api) as agent:
        args = {"project": "shop", "include_entities": True}
        tool = ok(await agent.call_tool("tribal_episodes_list", args))
        assert {e["id"]: e["entities"] for e in tool["episodes"]} == {
            e["id"]: e["entities"] for e in shop["episodes"]
        }
        args["query"] = "orders service checkout timeouts"
        tool = ok(await agent.call_tool("tribal_episodes_search", args))
        assert {e["id"]: e["entities"] for e in tool["episodes"]} == hits


def test_http_routes_answer_404_and_400(client: TestClient) -> None:
    stored = client.post(
        "/v1/remember",
        json={"content": "The search-api crashed on v3.2.1 again.", "project": "alpha"},
    )
    assert stored.status_code == 200, stored.text
    listed = client.get("/v1/entities", params={"project": "alpha"}).json()
    assert {e["name"] for e in listed["entities"]} == {"search-api"}  # unsure of the release
    params = {"project": "alpha", "include_doubted": "true"}
    listed = client.get("/v1/entities", params=params).json()
    assert {"search-api", "v3.2.1"} <= {e["name"] for e in listed["entities"]}
    one = client.get("/v1/entities/Search%20API", params={"project": "alpha"})
    assert one.status_code == 200 and one.json()["entity"]["name"] == "search-api"
    error(client.get("/v1/entities/search-api", params={"project": "beta"}), 404, "no entity")
    client.post("/v1/remember", json={"content": "Edited src/app.py today.", "project": "alpha"})
    path = client.get("/v1/entities/src%2Fapp.py", params={"project": "alpha"})  # a slash in it
    assert path.status_code == 200 and path.json()["entity"]["kind"] == "path", path.text
    assert client.get("/v1/entities", params={"project": "beta"}).json()["entities"] == []
    error(client.get("/v1/entities", params={"limit": "0"}), 400, "limit")
    error(client.get("/v1/entities", params={"kind": "planet"}), 400, "kind")
    error(client.get("/v1/entities", params={"project": "*"}), 400, "project")
    error(client.get("/v1/entities", params={"colour": "red"}), 400, "colour")
    error(client.get("/v1/entities/" + "x" * 300), 413, "name has 300 characters")
    error(client.get("/v1/entities/x", params={"limit": "many"}), 400, "limit")
    error(client.post("/v1/recall", json={"query": "x", "entity": 5}), 422, "entity")
    error(client.get("/v1/episodes/ep-000000000000", params={"include_entities": "maybe"}), 400)
    error(client.get("/v1/episodes", params={"include_entities": "maybe"}), 400)
    made = client.post(
        "/v1/episodes", json={"title": "search crash", "memory_ids": [stored.json()["memory_id"]]}
    )
    listed = client.get("/v1/episodes", params={"project": "alpha", "include_entities": "true"})
    named = {e["id"]: e["entities"] for e in listed.json()["episodes"]}[made.json()["episode_id"]]
    assert {"search-api", "v3.2.1"} <= {n["name"] for n in named}
    body = {"query": "search-api crash", "include_entities": "maybe"}
    error(client.post("/v1/episodes/search", json=body), 422, "include_entities")


def test_entities_off_without_the_episode_engine(client_no_episodes: TestClient) -> None:
    error(client_no_episodes.get("/v1/entities"), 501, "Episode feature not enabled")
    error(
        client_no_episodes.post("/v1/recall", json={"query": "x", "entity": "orders"}),
        501,
        "Episode feature not enabled",
    )


async def held_entity_work(rt: Runtime) -> tuple[Any, asyncio.Event]:
    """The runtime's entity work, held before its next page until the event is set (the
    first pass, at start, is done)."""
    work = rt.episodes.engine.entity_work
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
    gate = asyncio.Event()

    async def held() -> None:
        await gate.wait()

    work.turn = held
    return work, gate


async def test_a_memorys_entities_are_found_in_the_background_not_in_the_request(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    work, gate = await held_entity_work(rt)
    store = rt.episodes.store
    memory_id = await remember(rt, "The orders-svc crashed on PROJ-77 again.", 0)
    # acknowledged and decided while the entity work is held: nothing written yet
    assert store.detections.states([memory_id])[memory_id] != "pending"
    assert store.entities.names_of(memory_id) == set()
    assert rt.api.health()["episodes"]["entities_waiting"] == 1
    gate.set()
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
    assert store.entities.names_of(memory_id) == {("shop", "orders-service"), ("shop", "proj-77")}
    assert rt.api.health()["episodes"]["entities_waiting"] == 0


async def test_an_entity_read_waits_for_the_memories_acknowledged_before_it(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    await held_entity_work(rt)  # the background work never gets its turn
    first = await remember(rt, "The ledger-db failover left orders-svc without writes.", 0)
    second = await remember(rt, "Orders Service writes are back after the failover.", 5)
    found = await rt.api.entity_get("orders-service", project="shop")
    assert [m["memory_id"] for m in found["memories"]] == [second, first]
    assert rt.api.health()["episodes"]["entities_waiting"] == 0
    third = await remember(rt, "The billing-api was slow during checkout.", 9)
    hit = await rt.api.recall("checkout", entity="billing-api", project="shop")
    assert [r["memory_id"] for r in hit["results"]] == [third]


async def test_memories_from_before_entities_get_theirs_at_the_next_start(
    engine_runtime: Make, tmp_path: Any
) -> None:
    rt = await engine_runtime()
    older = await remember(rt, "The orders-svc deploy of v2.4.0 failed on the canary.", 0)
    await remember(rt, "Rolled the Orders Service back to v2.3.9.", 5)
    await rt.stop()
    # the database of a version from before entities were stored
    with sqlite3.connect(tmp_path / "data" / "episodes.sqlite3") as db:
        db.execute("DELETE FROM mentions")
        db.execute("DELETE FROM entities")
        db.execute("DROP TABLE entity_waiting")
        db.execute("DELETE FROM meta WHERE key IN ('entities_backfilled', 'entities_queued')")
    rt = await engine_runtime()
    await asyncio.wait_for(rt.episodes.engine.entity_work.idle.wait(), SETTLE_SECONDS)
    queue = rt.api.health()["episodes"]
    assert (queue["entities_waiting"], queue["entities_error"]) == (0, None)
    found = await rt.api.entity_get("orders-svc", project="shop")
    assert sorted(found["entity"]["aliases"]) == ["Orders Service", "orders-svc"]
    assert found["memories"][-1]["memory_id"] == older
    listing = await rt.api.entities_list(kind="version", project="shop", include_doubted=True)
    assert listing["count"] == 2


async def test_entity_work_that_fails_says_why_and_tries_again(
    engine_runtime: Make, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    rt = await engine_runtime()
    work, gate = await held_entity_work(rt)
    original = entity_work.record_memory_entities

    def failing(store: Any, memory: Any) -> bool:
        raise OSError("the disk is gone")

    monkeypatch.setattr(entity_work, "record_memory_entities", failing)
    await remember(rt, "The orders-svc deploy failed.", 0)
    # the read answers with what is stored: no entity yet, the memory that writes the name
    early = await rt.api.entity_get("orders-svc", project="shop")
    assert early["entity"]["kind"] == "written"
    with pytest.raises(NotFound):  # nor by another spelling: that is a stored entity's alias
        await rt.api.entity_get("orders-service", project="shop")
    queue = rt.api.health()["episodes"]
    assert queue["entities_waiting"] == 1
    assert queue["entities_error"] == "OSError: the disk is gone"
    assert "finding the entities of 1 waiting memories stopped" in caplog.text
    assert "entity read answered while 1 memories still wait" in caplog.text
    monkeypatch.setattr(entity_work, "record_memory_entities", original)
    gate.set()
    work.wake()  # as the next decision would
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
    queue = rt.api.health()["episodes"]
    assert (queue["entities_waiting"], queue["entities_error"]) == (0, None)
    stored = (await rt.api.entity_get("orders-service", project="shop"))["entity"]
    assert (stored["kind"], stored["mentions"]) == ("system", 1)


async def test_the_entity_work_reads_no_memory_it_was_handed(
    engine_runtime: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decision hands its memory to the entity work: finding its entities reads nothing
    back from the memory store (a read there competes with the requests)."""
    rt = await engine_runtime()
    host = rt.episodes.engine.state.host
    original = host.get_memories

    async def unread(ids: list[str]) -> list[Any]:
        raise AssertionError(f"the entity work read {ids} back from the store")

    monkeypatch.setattr(host, "get_memories", unread)
    await remember(rt, "The orders-svc deploy failed.", 0)
    await asyncio.wait_for(rt.episodes.engine.entity_work.idle.wait(), SETTLE_SECONDS)
    assert rt.api.health()["episodes"]["entities_error"] is None
    monkeypatch.setattr(host, "get_memories", original)  # the read below lists its memories
    stored = (await rt.api.entity_get("orders-service", project="shop"))["entity"]
    assert (stored["kind"], stored["mentions"]) == ("system", 1)


async def test_a_text_the_extraction_fails_on_holds_up_nothing(
    engine_runtime: Make, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    rt = await engine_runtime()
    work, gate = await held_entity_work(rt)
    extract = entity_work.judged_mentions

    def fragile(text: str, known: Any) -> Any:
        if "cursed" in text:
            raise ValueError("cannot read this text")
        return extract(text, known)

    monkeypatch.setattr(entity_work, "judged_mentions", fragile)
    bad = await remember(rt, "A cursed note about the orders-svc.", 0)
    good = await remember(rt, "The orders-svc deploy failed.", 1)
    gate.set()
    work.wake()
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
    queue = rt.api.health()["episodes"]
    assert (queue["entities_waiting"], queue["entities_error"]) == (0, None)
    assert f"finding the entities of memory {bad} failed (ValueError" in caplog.text
    assert rt.episodes.store.entities.names_of(bad) == set()
    found = await rt.api.entity_get("orders-service", project="shop")
    assert [m["memory_id"] for m in found["memories"]] == [good]


async def test_a_memory_forgotten_while_its_entities_wait_gets_none(
    engine_runtime: Make,
) -> None:
    rt = await engine_runtime()
    work, gate = await held_entity_work(rt)
    gone = await remember(rt, "The ledger-db failover left orders-svc without writes.", 0)
    await rt.api.forget(gone)
    assert rt.api.health()["episodes"]["entities_waiting"] == 0
    gate.set()
    work.wake()
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
    assert rt.episodes.store.entities.names_of(gone) == set()
    assert (await rt.api.entities_list(project="shop"))["entities"] == []


KILLER = """
import asyncio, os, signal, sys
from pathlib import Path
from tribalmemory.config import load_config
from tribalmemory.episodes.detection import Detection
from tribalmemory.runtime import start_runtime

async def killed(self, *args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # stored, its detect job durable, nothing decided

Detection.apply = killed

async def main():
    runtime = await start_runtime(load_config(Path(sys.argv[1])), run_scheduler=False)
    await runtime.api.remember("The orders-svc crashed on PROJ-77 again.", project="shop")

asyncio.run(main())
"""


async def test_a_memory_killed_before_its_decision_gets_its_entities_at_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "data"
    config = write_config(folder, episodes=EPISODES)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["TRIBAL_MEMORY_HOME"] = str(folder)
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, str(config)], env=env, capture_output=True, timeout=120
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    runtime = await open_runtime(folder, monkeypatch)
    try:
        assert await runtime.episodes.worker.drain(SETTLE_SECONDS)  # the resumed detect job
        found = await runtime.api.entity_get("Orders Service", project="shop")
        assert found["entity"]["aliases"] == ["orders-svc"]
        [memory] = found["memories"]
        states = runtime.episodes.store.detections.states([memory["memory_id"]])
        assert states[memory["memory_id"]] != "pending"
        assert (await runtime.api.entity_get("proj-77", project="shop"))["entity"]["mentions"] == 1
    finally:
        await runtime.stop()


async def test_a_memory_killed_right_after_its_remember_gets_its_entities_at_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 once remember() answered, the entity work held: the memory waits in the
    database, and the entity work of the next start finds its entities."""
    folder = tmp_path / "data"
    config = write_config(folder, episodes=EPISODES)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["TRIBAL_MEMORY_HOME"] = str(folder)
    script = killed_after_remember("The orders-svc crashed on PROJ-77 again.", "shop")
    killed = subprocess.run(
        [sys.executable, "-c", script, str(config)], env=env, capture_output=True, timeout=120
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    acknowledged = json.loads(killed.stdout.decode().strip().splitlines()[-1])
    memory_id = acknowledged["result"]["memory_id"]
    assert acknowledged["mentions"] == []  # none written when it was acknowledged
    runtime = await open_runtime(folder, monkeypatch)
    try:
        work = runtime.episodes.engine.entity_work
        await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)  # the background, no read
        assert runtime.episodes.store.entities.names_of(memory_id) == {
            ("shop", "orders-service"),
            ("shop", "proj-77"),
        }
        assert runtime.api.health()["episodes"]["entities_waiting"] == 0
        found = await runtime.api.entity_get("orders-svc", project="shop")
        assert [m["memory_id"] for m in found["memories"]] == [memory_id]
    finally:
        await runtime.stop()


def test_cli_lists_and_shows_entities(tm_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # no daemon answers: each command opens the store itself
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = str(write_config(tm_home, server={"port": port}, episodes=EPISODES))
    for text in ("The orders-svc times out on checkout.", "Orders Service retries raised to 5."):
        assert run(capsys, "remember", text, "--project", "shop", "--config", config)[0] == 0
    listed = run_json(capsys, "entities", "--project", "shop", "--config", config)
    assert listed["entities"][0]["name"] == "orders-service"
    code, out, _ = run(capsys, "entities", "orders-svc", "--project", "shop", "--config", config)
    assert code == 0 and "orders-service (system): 2 memories" in out
    assert "Orders Service, orders-svc" in out
    code, _, err = run(capsys, "entities", "ledger-db", "--project", "shop", "--config", config)
    assert code == 1 and "no entity 'ledger-db' in project shop" in err
    for text in ("Norvane Tagus bunkered at Sines.", "The Tagus lost 4 kn after cleaning."):
        assert run(capsys, "remember", text, "--project", "shop", "--config", config)[0] == 0
    code, out, _ = run(capsys, "entities", "Norvane Tagus", "--project", "shop", "--config", config)
    assert code == 0 and "norvane-tagus (name): 1 memory" in out
    assert "also written as: tagus (2 memories in all)" in out
    elsewhere = run_json(capsys, "entities", "--project", "other", "--config", config)
    assert elsewhere["entities"] == []


def test_a_memory_written_again_replaces_its_mentions(tmp_path: Path) -> None:
    """A resumed detect job writes a memory's entities again, maybe with other known names:
    its mentions are replaced, never added twice, and the aliases only it gave go."""
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    try:
        with store.transaction() as db:
            entities.record_memory(
                db, "p", "m1", 10.0, mentions_of("We asked the Orders Service team.")
            )
            entities.record_memory(db, "p", "m2", 20.0, mentions_of("The orders-svc is up."))
        with store.transaction() as db:  # m2 again: the same mention, then another text
            entities.record_memory(db, "p", "m2", 20.0, mentions_of("The orders-svc is up."))
        row = entities.get("p", "orders-service")
        assert row is not None and row["mentions"] == 2
        assert json.loads(row["aliases"]) == ["Orders Service", "orders-svc"]
        with store.transaction() as db:
            entities.record_memory(db, "p", "m2", 20.0, mentions_of("Nothing named here."))
        row = entities.get("p", "orders-service")
        assert row is not None and row["mentions"] == 1 and row["last_seen"] == 10.0
        assert json.loads(row["aliases"]) == ["Orders Service"]
    finally:
        store.close()


def test_the_known_names_are_the_most_mentioned_and_bounded(tmp_path: Path) -> None:
    """The extraction runs one pattern per known name over each memory: the names passed are
    the project's most mentioned, at most KNOWN_NAMES, so its cost does not grow with the
    project."""
    from tribalmemory.episodes.store.entities import KNOWN_NAMES

    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    names = [f"Person{chr(65 + i // 26)}{chr(97 + i % 26)}" for i in range(KNOWN_NAMES + 1)]
    try:
        with store.transaction() as db:
            for i, name in enumerate(names):
                times = 3 if i < KNOWN_NAMES else 2  # the last is mentioned least
                for k in range(times):
                    found = {name.lower(): ("name", [name])}
                    entities.record_memory(db, "p", f"m{i}-{k}", float(i), found)
        known = entities.known("p")
        assert len(known) == KNOWN_NAMES and names[-1] not in known
        assert set(known) == set(names[:KNOWN_NAMES])
        assert entities.known("other") == frozenset()  # per project
        paths = [f"src/m{i:03d}.py" for i in range(KNOWN_NAMES + 1)]
        with store.transaction() as db:  # file paths: as many again, the most mentioned
            for i, path in enumerate(paths):
                for k in range(2 if i < KNOWN_NAMES else 1):
                    entities.record_memory(db, "p", f"f{i}-{k}", 1.0, {path: ("path", [path])})
        known = entities.known("p")
        assert known - set(names) == set(paths[:KNOWN_NAMES])
    finally:
        store.close()


def test_the_known_names_are_read_once_until_a_change_can_alter_them(tmp_path: Path) -> None:
    """Each memory's extraction asks for its project's known names: they are read from SQL
    once and kept until a change makes a name, a system or a file path known or not known, or
    changes a known name's aliases (forget included); other changes keep them."""
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    reads: list[str] = []
    store.db.set_trace_callback(lambda sql: reads.append(sql) if "kind = 'name'" in sql else None)

    def record(memory_id: str, found: dict[str, tuple[str, list[str]]]) -> None:
        with store.transaction() as db:
            entities.record_memory(db, "p", memory_id, 1.0, found)

    def known_read() -> tuple[frozenset[str], int]:
        before = len(reads)
        known = entities.known("p")
        return known, len(reads) - before

    try:
        assert known_read() == (frozenset(), 1)
        assert known_read() == (frozenset(), 0)  # kept
        priya = {"priya": ("name", ["Priya"])}
        record("m1", priya)  # a first mention: Priya becomes known
        assert known_read() == (frozenset({"Priya"}), 1)
        record("m2", {"ledger-db": ("system", ["ledger-db"])})  # a system: by its name
        assert known_read() == (frozenset({"Priya", "ledger-db"}), 1)
        record("m3", {"docs": ("path", ["docs/"])})  # a folder, not a file: kept
        record("m4", priya)  # one more mention of a known name: kept (the limit is not cut)
        record("m2b", {"ledger-db": ("system", ["Ledger DB"])})  # a system's alias: kept
        assert known_read() == (frozenset({"Priya", "ledger-db"}), 0)
        with store.transaction() as db:
            entities.forget_memory(db, "m2")
            entities.forget_memory(db, "m2b")
        assert known_read() == (frozenset({"Priya"}), 1)  # no mention left: not known
        record("m5", {"priya": ("name", ["Priya S"])})  # a new alias
        assert known_read() == (frozenset({"Priya", "Priya S"}), 1)
        math = {"engine/core/math.h": ("path", ["Engine/Core/Math.h"])}
        record("m6", math)  # a file in a folder: known by its canonical name
        assert known_read() == (frozenset({"Priya", "Priya S", "engine/core/math.h"}), 1)
        record("m7", {"engine/core/math.h": ("path", ["Math.h"])})  # a path's alias: kept
        assert known_read() == (frozenset({"Priya", "Priya S", "engine/core/math.h"}), 0)
        record("m8", {"v5.12": ("version", ["5.12"])})  # a two-part release: kept
        assert known_read()[1] == 0
        record("m9", {"v5.12.0": ("version", ["5.12.0"])})  # a release of three parts
        assert known_read() == (
            frozenset({"Priya", "Priya S", "engine/core/math.h", "v5.12.0"}),
            1,
        )
        with store.transaction() as db:
            for memory_id in ("m1", "m4", "m5", "m6", "m7", "m8", "m9"):
                entities.forget_memory(db, memory_id)
        assert known_read() == (frozenset(), 1)  # forgotten: no mention left
    finally:
        store.close()


def test_the_acronyms_used_as_a_kind_of_thing_are_known_until_forgotten(tmp_path: Path) -> None:
    """A memory that writes an acronym as a kind of thing (``each NRF``) teaches the project's
    extraction that it names nothing; written again it adds no second use, and forgetting the
    one memory that wrote it takes it away (the known set is read again each time)."""
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    text = "Polled from each NRF."

    def record(memory_id: str, content: str, project: str = "p") -> None:
        from tribalmemory.entities.acronyms import kind_words

        with store.transaction() as db:
            entities.record_memory(
                db, project, memory_id, 1.0, mentions_of(content), kind_words(content)
            )

    try:
        assert "nrf" in mentions_of("The NRF is down.", entities.known("p"))
        record("m1", text)
        record("m1", text)  # a resumed job writes it again
        assert "NRFs" in entities.known("p") and "NRFs" not in entities.known("other")
        assert "nrf" not in mentions_of("The NRF is down.", entities.known("p"))
        rows = store.db.execute("SELECT COUNT(*) FROM kind_words").fetchone()[0]
        assert rows == 1
        with store.transaction() as db:
            entities.forget_memory(db, "m1")
        assert "NRFs" not in entities.known("p")
        assert "nrf" in mentions_of("The NRF is down.", entities.known("p"))
    finally:
        store.close()


async def test_an_imported_episode_s_members_get_their_entities(
    engine_runtime: Make, tmp_path: Path
) -> None:
    """Members of an exported episode are stored by the import without the write-time hooks
    (no detection): the restore queues their entities for the entity work."""
    from tribalmemory.config import config_from_dict
    from tribalmemory.portability import exporter, importer
    from tribalmemory.runtime import start_runtime

    source = await engine_runtime()
    texts = [
        "The orders-svc times out on checkout after the 2.4 deploy.",
        "The orders-svc checkout timeouts come from the new retry budget of the 2.4 deploy.",
        "Rolled the orders-svc retry budget back: checkout timeouts are gone since the deploy.",
    ]
    ids = [await remember(source, text, minute) for minute, text in enumerate(texts)]
    await settle(source)
    episode = source.episodes.store.memberships.episode_of(ids[0])
    assert episode is not None  # the import restores this episode, members without hooks
    export = tmp_path / "export.jsonl"
    lines = [line async for line in exporter.export_lines(source.api, vectors=True)]
    export.write_text("".join(lines), encoding="utf-8")

    config = config_from_dict(
        {"data_dir": str(tmp_path / "fresh"), "episodes": {"detector_strategy": "embedding"}}
    )
    fresh = await start_runtime(config, run_scheduler=False)
    try:
        done = await importer.apply(fresh.api, export)
        assert done.episodes_created == 1, done.to_json()
        members = [r["memory_id"] for r in fresh.episodes.store.memberships.members(episode)]
        assert fresh.episodes.store.jobs.count("detect") == 0  # restored, not detected
        found = await fresh.api.entity_get("orders-svc", project="shop")
        naming = {m["memory_id"] for m in found["memories"]}
        assert set(members) <= naming, (members, naming)
        assert fresh.api.health()["episodes"]["entities_waiting"] == 0
    finally:
        await fresh.stop()
