"""Doubted entities (issue 43): an entity no mention vouches for leaves the entity list
(``include_doubted`` brings it back) and is still found by its name. A mention the extraction
was unsure of vouches for nothing; a name the rules alone found, in memories an LLM's final
record read without listing it, neither; a sure mention no record read, or one a record gave,
keeps it; a record doubts names only. Through the real litellm client and the fake provider."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

from fakellm import FakeLLM, final_naming
from helpers_runtime import settle, story_episode
from helpers_schema import older_store

from tribalmemory.entities import judged_mentions
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.episodes.summaries import reviewed
from tribalmemory.episodes.summariser import SummaryOutcome
from tribalmemory.llm.prompts.limits import HEAD_MEMORIES, MAX_MEMORIES
from tribalmemory.models import Memory, SourceType
from tribalmemory.runtime import Runtime
from tribalmemory.timeutil import from_epoch

Make = Callable[..., Awaitable[Runtime]]

STORY = [
    (
        "The nightly import stalls in the Kestrel cluster; Priya Raman is on it.",
        "2026-03-02T09:00:00Z",
    ),
    (
        "Priya Raman moved the nightly import; orders-svc drains it in 4 min.",
        "2026-03-02T10:00:00Z",
    ),
    ("Fixed: the nightly import finishes before the backups now.", "2026-03-02T11:00:00Z"),
]
"""The rules find two names (``Priya Raman``, ``Kestrel``) and a system (``orders-service``),
and are sure of each."""


async def listed(rt: Runtime, **query: object) -> dict[str, bool]:
    """Listed entity -> doubted."""
    found = await rt.api.entities_list(project="shop", **query)
    return {e["name"]: e["doubted"] for e in found["entities"]}


async def test_a_name_the_final_record_left_out_is_doubted_and_still_found_by_name(
    engine_runtime: Make, fake_llm_env: FakeLLM
) -> None:
    assert judged_mentions(STORY[0][0])[1] == set()  # the rules' names, sure of each
    assert set(judged_mentions(STORY[0][0])[0]) == {"kestrel", "priya-raman"}
    fake_llm_env.responder = final_naming(["Priya Raman", "nightly import"])
    rt = await engine_runtime()
    episode_id, ids = await story_episode(rt, STORY, "Nightly import stalls")
    # no record has read the memories yet: nothing is doubted
    assert await listed(rt) == {"priya-raman": False, "kestrel": False, "orders-service": False}

    await rt.api.episode_close(episode_id)
    await settle(rt)
    after = await listed(rt)
    assert "kestrel" not in after
    assert after["priya-raman"] is False and after["orders-service"] is False
    assert (await listed(rt, include_doubted=True))["kestrel"] is True
    assert "kestrel" not in await listed(rt, query="kest")
    assert (await listed(rt, query="kest", include_doubted=True)) == {"kestrel": True}
    assert "kestrel" not in await listed(rt, kind="name")
    # found by its name, with the episodes and memories that name it
    found = await rt.api.entity_get("Kestrel", project="shop")
    assert found["entity"]["doubted"] is True
    assert [m["memory_id"] for m in found["memories"]] == [ids[0]]
    assert [e["episode_id"] for e in found["episodes"]] == [episode_id]
    assert (await rt.api.recall("Kestrel", entity="Kestrel", project="shop"))["results"]
    got = await rt.api.episode_get(episode_id, include_entities=True)
    assert {e["name"]: e["doubted"] for e in got["entities"]} == {
        "kestrel": True,
        "priya-raman": False,
        "orders-service": False,
        "nightly-import": False,  # a name of the record, which the members write
    }

    # a later memory naming it, that no record has read, keeps it
    later = await rt.api.remember(
        "The Kestrel cluster is slow again.", created_at="2026-03-09T09:00:00Z", project="shop"
    )
    await settle(rt)
    assert (await listed(rt))["kestrel"] is False
    # ... until it is forgotten: doubted again
    await rt.api.forget(later["memory_id"])
    assert "kestrel" not in await listed(rt)


async def test_forgetting_a_memory_a_record_read_drops_what_the_record_said_of_it(
    engine_runtime: Make, fake_llm_env: FakeLLM
) -> None:
    fake_llm_env.responder = final_naming(["Priya Raman"])
    rt = await engine_runtime()
    episode_id, ids = await story_episode(rt, STORY, "Nightly import stalls")
    await rt.api.episode_close(episode_id)
    await settle(rt)
    store = rt.episodes.store
    rows = dict(store.db.execute("SELECT memory_id, names FROM reviewed"))
    assert {k: json.loads(v) for k, v in rows.items()} == dict.fromkeys(ids, ["priya-raman"])
    await rt.api.forget(ids[0])
    assert {r[0] for r in store.db.execute("SELECT memory_id FROM reviewed")} == set(ids[1:])


async def test_without_an_llm_only_what_the_extraction_is_unsure_of_is_doubted(
    engine_runtime: Make,
) -> None:
    unsure = "The import moved to Leeds."  # a place that is not the team's: no entity
    assert judged_mentions(unsure) == ({"leeds": ("name", ["Leeds"])}, {"leeds"})
    rt = await engine_runtime()
    episode_id, _ = await story_episode(rt, [*STORY, (unsure, "2026-03-02T12:00:00Z")], "Import")
    await rt.api.episode_close(episode_id)
    await settle(rt)
    assert await listed(rt) == {"kestrel": False, "priya-raman": False, "orders-service": False}
    assert (await listed(rt, include_doubted=True))["leeds"] is True
    assert (await rt.api.entity_get("Leeds", project="shop"))["entity"]["doubted"] is True
    assert rt.episodes.store.db.execute("SELECT COUNT(*) FROM reviewed").fetchone()[0] == 0


def test_a_name_is_doubted_only_when_every_mention_is_the_rules_in_a_memory_read_without_it(
    tmp_path: Path,
) -> None:
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    leeds = {"leeds": ("name", ["Leeds"])}
    system = {"orders-service": ("system", ["orders-svc"])}

    def doubted(name: str) -> bool:
        row = entities.get("p", name)
        assert row is not None
        return bool(row["doubted"])

    try:
        with store.transaction() as db:
            entities.record_memory(db, "p", "m1", 10.0, leeds | system)
            entities.record_memory(db, "p", "m2", 20.0, leeds)
            entities.review(db, {"m1": []})
        assert not doubted("leeds")  # m2 was not read
        with store.transaction() as db:
            entities.review(db, {"m2": ["orders-service"]})
        assert doubted("leeds") and not doubted("orders-service")  # a record doubts names only
        assert [r["name"] for r in entities.listing("p", None)] == ["orders-service"]
        assert [r["name"] for r in entities.listing("p", None, include_doubted=True)] == [
            "leeds",
            "orders-service",
        ]
        with store.transaction() as db:  # a later record gives it: it replaces the first
            entities.review(db, {"m2": ["leeds"]})
        assert not doubted("leeds")
        with store.transaction() as db:
            entities.review(db, {"m2": []})
            entities.add_named(db, "p", "m3", 30.0, leeds)  # a record gave it in m3
            entities.review(db, {"m3": []})  # (and a later one did not: its mention stays)
        assert not doubted("leeds")
    finally:
        store.close()


def test_an_entity_only_unsure_mentions_name_is_doubted_until_a_sure_one_comes(
    tmp_path: Path,
) -> None:
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    found = {"leeds": ("name", ["Leeds"]), "orders-service": ("system", ["orders-svc"])}

    def doubted() -> dict[str, bool]:
        return {
            r["name"]: bool(r["doubted"]) for r in entities.listing("p", None, include_doubted=True)
        }

    try:
        with store.transaction() as db:
            entities.record_memory(db, "p", "m1", 10.0, found, unsure={"leeds", "orders-service"})
        assert doubted() == {"leeds": True, "orders-service": True}  # of any kind
        assert entities.listing("p", None) == []
        with store.transaction() as db:  # another unsure mention: still doubted
            entities.record_memory(db, "p", "m2", 20.0, found, unsure={"leeds", "orders-service"})
        assert doubted() == {"leeds": True, "orders-service": True}
        with store.transaction() as db:  # a sure one vouches
            entities.record_memory(db, "p", "m3", 30.0, found, unsure={"leeds"})
        assert doubted() == {"leeds": True, "orders-service": False}
        with store.transaction() as db:  # and an unsure one after it takes nothing away
            entities.record_memory(db, "p", "m4", 40.0, found, unsure={"leeds", "orders-service"})
        assert doubted() == {"leeds": True, "orders-service": False}
        with store.transaction() as db:
            entities.forget_memory(db, "m4")
        with store.transaction() as db:
            entities.forget_memory(db, "m3")  # ... until it is forgotten
        assert doubted() == {"leeds": True, "orders-service": True}
        with store.transaction() as db:  # the memory's entities found again, now sure of both
            entities.record_memory(db, "p", "m2", 20.0, found)
        assert doubted() == {"leeds": False, "orders-service": False}
        with store.transaction() as db:  # a record that gives an unsure name vouches for it
            entities.record_memory(db, "p", "m2", 20.0, found, unsure={"leeds"})
            entities.review(db, {"m1": ["leeds"]})
        assert doubted() == {"leeds": False, "orders-service": False}
        with store.transaction() as db:
            entities.review(db, {"m1": []})
        assert doubted() == {"leeds": True, "orders-service": False}
    finally:
        store.close()


def test_a_database_from_before_the_sure_column_opens_with_its_mentions_sure(
    tmp_path: Path,
) -> None:
    mention = "INSERT INTO mentions VALUES ('p', 'leeds', 'm1', 10.0, 'name', '[]', 'rules')"
    entity = "INSERT INTO entities VALUES ('p', 'leeds', 'name', 10.0, 10.0, '[\"Leeds\"]', 1, 0)"
    store = older_store(tmp_path, ("sure INTEGER",), (mention, entity))
    try:
        entities = store.entities
        with store.transaction() as db:  # judged again from its mentions: the old one is sure
            entities.record_memory(
                db, "p", "m2", 20.0, {"leeds": ("name", ["Leeds"])}, (), {"leeds"}
            )
        assert [(r["name"], r["doubted"]) for r in entities.listing("p", None)] == [("leeds", 0)]
    finally:
        store.close()


def memory(n: int, source_type: SourceType = SourceType.USER_EXPLICIT) -> Memory:
    return Memory(
        id=f"m{n}",
        content=f"memory {n}",
        source_type=source_type,
        source_instance="test",
        tags=[],
        context=None,
        created_at=from_epoch(float(n)),
        updated_at=from_epoch(float(n)),
        metadata={},
        project="p",
    )


def test_a_record_reads_the_members_its_prompt_shows() -> None:
    members = [memory(n) for n in range(MAX_MEMORIES + 5)]
    members[1] = memory(1, SourceType.EPISODE_SUMMARY)
    named = {"m0": {"leeds": ("name", ["Leeds"])}, "m2": {"hull": ("name", ["Hull"])}}
    outcome = SummaryOutcome(
        "t",
        "s",
        {"entities": ["Leeds", "Hull"], "tools_used": ["Orders Svc"], "participants": ["Ana Ruiz"]},
    )
    read = reviewed(members, outcome, named)
    shown = [f"m{n}" for n in range(HEAD_MEMORIES)]
    shown += [f"m{n}" for n in range(HEAD_MEMORIES + 5, MAX_MEMORIES + 5)]
    assert sorted(read) == sorted(set(shown) - {"m1"})  # the engine's own memory: not read
    # every member read gets the record's names, as listed and as written in any member
    assert set(map(tuple, read.values())) == {("ana-ruiz", "hull", "leeds", "orders-service")}
    assert reviewed(members, SummaryOutcome("t", "s", None), named) == {}
    assert reviewed(members, None, named) == {}


def test_a_database_from_before_doubts_opens_with_nothing_doubted(tmp_path: Path) -> None:
    mention = "INSERT INTO mentions VALUES ('p', 'leeds', 'm1', 10.0, 'name', '[]', 'rules')"
    entity = "INSERT INTO entities VALUES ('p', 'leeds', 'name', 10.0, 10.0, '[\"Leeds\"]', 1)"
    store = older_store(
        tmp_path, ("doubted INTEGER", "sure INTEGER"), (mention, entity), tables=("reviewed",)
    )
    try:
        entities = store.entities
        assert [r["name"] for r in entities.listing("p", None)] == ["leeds"]
        with store.transaction() as db:
            entities.review(db, {"m1": []})
        assert entities.listing("p", None) == []
        row = entities.get("p", "leeds")
        assert row is not None and row["doubted"] == 1
    finally:
        store.close()
