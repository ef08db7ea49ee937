"""Entities named by the LLM's record (issue 43): the names of a summary's metadata become
mentions (source ``llm``) of the members that write them, with no call of their own, through
the real litellm client and the fake provider; the rules' pass keeps them, forget takes them,
and a database from before the source column opens with its mentions as the rules'."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from fakellm import FakeLLM, final_naming
from helpers_runtime import settle, story_episode
from helpers_schema import older_store

from tribalmemory.entities import mentions_of
from tribalmemory.episodes import entity_work
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.errors import NotFound
from tribalmemory.runtime import Runtime

Make = Callable[..., Awaitable[Runtime]]

STORY = [
    ("The nightly import stalls at the invoice step again.", "2026-03-02T09:00:00Z"),
    ("Moved the nightly import onto zorbctl; zorbctl drains it in 4 min.", "2026-03-02T10:00:00Z"),
    ("Fixed: the nightly import finishes before the backups now.", "2026-03-02T11:00:00Z"),
]
NAMED = ["zorbctl", "quuxmesh", "API", "nightly import"]
"""The record's entities: a tool the rules miss (one member writes it), one no member writes,
a generic acronym and a phrase (every member writes it)."""


async def closed_episode(rt: Runtime) -> tuple[str, list[str]]:
    episode_id, ids = await story_episode(rt, STORY, "Nightly import stalls")
    await rt.api.episode_close(episode_id)
    await settle(rt)
    return episode_id, ids


def sources(store: EpisodeStore, name: str) -> dict[str, str]:
    rows = store.db.execute(
        "SELECT memory_id, source FROM mentions WHERE project = 'shop' AND name = ?", (name,)
    )
    return {r[0]: r[1] for r in rows}


async def test_a_name_of_the_llm_s_record_is_an_entity_of_the_member_writing_it(
    engine_runtime: Make, fake_llm_env: FakeLLM
) -> None:
    fake_llm_env.responder = final_naming(NAMED)
    rt = await engine_runtime()
    episode_id, ids = await closed_episode(rt)
    metadata = (await rt.api.episode_get(episode_id))["episode"]["metadata"]
    assert metadata["source"] == "llm" and metadata["entities"] == NAMED
    # the rules alone miss the tool
    assert "zorbctl" not in mentions_of(STORY[1][0])

    found = await rt.api.entity_get("zorbctl", project="shop")
    assert found["entity"]["kind"] == "name" and found["entity"]["mentions"] == 1
    assert found["entity"]["aliases"] == ["zorbctl"]
    assert [m["memory_id"] for m in found["memories"]] == [ids[1]]
    assert found["memories"][0]["episode_id"] == episode_id
    assert [e["episode_id"] for e in found["episodes"]] == [episode_id]
    phrase = await rt.api.entity_get("nightly import", project="shop")
    assert sorted(m["memory_id"] for m in phrase["memories"]) == sorted(ids)
    store = rt.episodes.store
    assert sources(store, "zorbctl") == {ids[1]: "llm"}
    # a name no member writes, and one that names no one thing, add nothing
    for absent in ("quuxmesh", "API"):
        with pytest.raises(NotFound):
            await rt.api.entity_get(absent, project="shop")
    got = await rt.api.episode_get(episode_id, include_entities=True)
    assert {"name": "zorbctl", "kind": "name", "mentions": 1, "doubted": False} in got["entities"]
    # no call of its own: one final summary call, the summary purposes only
    purposes = [r.purpose for r in fake_llm_env.requests]
    assert set(purposes) <= {"classify", "merge", "update", "regenerate", "final"}
    assert purposes.count("final") == 1


async def test_a_tool_the_llm_s_record_lists_as_used_is_an_entity_of_the_member_writing_it(
    engine_runtime: Make, fake_llm_env: FakeLLM
) -> None:
    fake_llm_env.responder = final_naming(["zorbctl", "quuxmesh"], key="tools_used")
    rt = await engine_runtime()
    episode_id, ids = await closed_episode(rt)
    metadata = (await rt.api.episode_get(episode_id))["episode"]["metadata"]
    assert metadata["tools_used"] == ["zorbctl", "quuxmesh"]
    found = await rt.api.entity_get("zorbctl", project="shop")
    assert [m["memory_id"] for m in found["memories"]] == [ids[1]]
    assert sources(rt.episodes.store, "zorbctl") == {ids[1]: "llm"}
    with pytest.raises(NotFound):  # no member writes it
        await rt.api.entity_get("quuxmesh", project="shop")


async def test_forgetting_the_only_memory_an_llm_named_entity_rests_on_removes_it(
    engine_runtime: Make, fake_llm_env: FakeLLM
) -> None:
    fake_llm_env.responder = final_naming(NAMED)
    rt = await engine_runtime()
    _, ids = await closed_episode(rt)
    store = rt.episodes.store
    assert sources(store, "zorbctl") == {ids[1]: "llm"}
    await rt.api.forget(ids[1])
    with pytest.raises(NotFound, match="no entity 'zorbctl' in project shop"):
        await rt.api.entity_get("zorbctl", project="shop")
    assert sources(store, "zorbctl") == {}
    phrase = await rt.api.entity_get("nightly import", project="shop")
    assert sorted(m["memory_id"] for m in phrase["memories"]) == sorted([ids[0], ids[2]])


async def test_the_rules_pass_keeps_the_mention_and_learns_the_name(
    engine_runtime: Make, fake_llm_env: FakeLLM
) -> None:
    """The memory's entities found again by the rules (a resumed job) keep the LLM's mention:
    the name is now one of the project's known names, so the rules find it (their row replaces
    the LLM's, counted once), and so they do in a later memory writing it."""
    fake_llm_env.responder = final_naming(NAMED)
    rt = await engine_runtime()
    episode_id, ids = await closed_episode(rt)
    store = rt.episodes.store
    [memory] = await rt.episodes.engine.state.host.get_memories([ids[1]])
    with store.transaction() as db:
        store.entities.wait(db, memory.id)
    assert entity_work.record_memory_entities(store, memory)
    assert sources(store, "zorbctl") == {ids[1]: "rules"}
    found = await rt.api.entity_get("zorbctl", project="shop")
    assert found["entity"]["mentions"] == 1
    assert [m["memory_id"] for m in found["memories"]] == [ids[1]]

    text = "The month-end run needs a bigger zorbctl queue."
    assert "zorbctl" not in mentions_of(text)  # the rules alone miss it
    later = await rt.api.remember(
        text,
        created_at="2026-03-09T09:00:00Z",
        project="shop",
    )
    found = await rt.api.entity_get("zorbctl", project="shop")
    assert [m["memory_id"] for m in found["memories"]] == [later["memory_id"], ids[1]]
    assert sources(store, "zorbctl")[later["memory_id"]] == "rules"
    assert found["episodes"][-1]["episode_id"] == episode_id


def test_the_rules_replace_their_own_rows_and_an_llm_row_they_now_find(tmp_path: Path) -> None:
    """``record_memory`` replaces the memory's rows of the rules only; an LLM's row of a name the
    rules now find becomes theirs (counted once). ``add_named`` adds only names the memory does
    not mention yet."""
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    text = "The orders-svc calls zorbctl."
    try:
        with store.transaction() as db:
            entities.record_memory(db, "p", "m1", 10.0, mentions_of(text))
            entities.add_named(
                db,
                "p",
                "m1",
                10.0,
                {"zorbctl": ("name", ["zorbctl"]), "orders-service": ("name", ["orders-svc"])},
            )
        rows = dict(store.db.execute("SELECT name, source FROM mentions WHERE memory_id = 'm1'"))
        assert rows == {"orders-service": "rules", "zorbctl": "llm"}
        orders = entities.get("p", "orders-service")
        assert orders is not None and orders["kind"] == "system" and orders["mentions"] == 1

        with store.transaction() as db:  # the rules again, knowing nothing more: kept
            entities.record_memory(db, "p", "m1", 10.0, mentions_of(text))
        rows = dict(store.db.execute("SELECT name, source FROM mentions WHERE memory_id = 'm1'"))
        assert rows == {"orders-service": "rules", "zorbctl": "llm"}

        with store.transaction() as db:  # the rules now know the name: their row replaces it
            entities.record_memory(db, "p", "m1", 10.0, mentions_of(text, ["zorbctl"]))
        rows = dict(store.db.execute("SELECT name, source FROM mentions WHERE memory_id = 'm1'"))
        assert rows == {"orders-service": "rules", "zorbctl": "rules"}
        zorbctl = entities.get("p", "zorbctl")
        assert zorbctl is not None and zorbctl["mentions"] == 1

        with store.transaction() as db:  # a memory naming nothing by the rules any more
            entities.record_memory(db, "p", "m1", 10.0, {})
        assert entities.names_of("m1") == set()
        assert entities.get("p", "zorbctl") is None
    finally:
        store.close()


def test_a_database_from_before_the_source_column_opens_with_its_mentions_as_the_rules(
    tmp_path: Path,
) -> None:
    mention = "INSERT INTO mentions VALUES ('p', 'orders-service', 'm1', 10.0, 'system', '[]')"
    entity = (
        "INSERT INTO entities VALUES ('p', 'orders-service', 'system', 10.0, 10.0, "
        "'[\"orders-svc\"]', 1)"
    )
    store = older_store(
        tmp_path,
        ("source TEXT NOT NULL DEFAULT 'rules'", "doubted INTEGER", "sure INTEGER"),
        (mention, entity),
    )
    try:
        entities = store.entities
        assert {k for k, v in entities.sources_of("m1").items() if v == "rules"} == {
            ("p", "orders-service")
        }
        with store.transaction() as db:
            entities.add_named(db, "p", "m1", 10.0, {"zorbctl": ("name", ["zorbctl"])})
        assert {k for k, v in entities.sources_of("m1").items() if v == "llm"} == {("p", "zorbctl")}
        with store.transaction() as db:
            entities.record_memory(db, "p", "m1", 10.0, mentions_of("The orders-svc is up."))
        assert entities.names_of("m1") == {("p", "orders-service"), ("p", "zorbctl")}
    finally:
        store.close()


async def test_an_imported_episode_keeps_the_names_of_its_llm_record(
    engine_runtime: Make, fake_llm_env: FakeLLM, tmp_path: Path
) -> None:
    """An export carries the summary's metadata: the import gives the members the names it
    lists, as the summary did, without an LLM on the importing side."""
    from tribalmemory.config import config_from_dict
    from tribalmemory.portability import exporter, importer
    from tribalmemory.runtime import start_runtime

    fake_llm_env.responder = final_naming(NAMED)
    source = await engine_runtime()
    episode_id, ids = await closed_episode(source)
    export = tmp_path / "export.jsonl"
    lines = [line async for line in exporter.export_lines(source.api, vectors=True)]
    export.write_text("".join(lines), encoding="utf-8")

    config = config_from_dict({"data_dir": str(tmp_path / "fresh")})
    fresh = await start_runtime(config, run_scheduler=False)
    try:
        done = await importer.apply(fresh.api, export)
        assert done.episodes_created == 1, done.to_json()
        found = await fresh.api.entity_get("zorbctl", project="shop")
        assert [m["memory_id"] for m in found["memories"]] == [ids[1]]
        assert [e["episode_id"] for e in found["episodes"]] == [episode_id]
        # the rules, once the record taught them the name, find it too: their row replaces it
        assert sources(fresh.episodes.store, "zorbctl") == {ids[1]: "rules"}
        assert "zorbctl" not in mentions_of(STORY[1][0])  # the rules alone miss it
        assert fresh.api.health()["episodes"]["entities_waiting"] == 0
    finally:
        await fresh.stop()


def test_a_record_s_names_are_read_up_to_what_an_answer_may_hold() -> None:
    """An export's metadata is not checked as a model's answer is: only the first
    LIST_MAX_ITEMS names of each list are matched against the members."""
    from tribalmemory.episodes.summaries import llm_named
    from tribalmemory.llm.prompts.limits import LIST_MAX_ITEMS
    from tribalmemory.models import Memory

    at = STORY[1][1]
    memory = Memory.from_json(
        {"id": "m1", "content": STORY[1][0], "source_type": "user_explicit", "created_at": at}
        | {"updated_at": at}
    )
    filler = [f"quux{i}" for i in range(LIST_MAX_ITEMS)]
    assert llm_named([memory], {"entities": ["zorbctl"]}) == {
        "m1": {"zorbctl": ("name", ["zorbctl"])}
    }
    assert llm_named([memory], {"entities": [*filler, "zorbctl"]}) == {}
    assert llm_named([memory], {"entities": filler, "tools_used": ["zorbctl"]})["m1"]
    assert llm_named([memory], {"entities": "zorbctl"}) == {}  # not a list
