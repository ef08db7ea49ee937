"""The background entity work yields to requests (issue 38): each turn of the host's
``background_turn`` gives it one slice of work, it still progresses under a request stream
that never pauses, and recording a memory's entities costs the same in a project of any age."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers_runtime import SETTLE_SECONDS

from tribalmemory.episodes import entity_work
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.runtime import Runtime
from tribalmemory.timeutil import to_iso

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
Make = Callable[..., Awaitable[Runtime]]


async def remember(rt: Runtime, text: str, minute: int) -> str:
    stored = await rt.api.remember(
        text, created_at=to_iso(T0 + timedelta(minutes=minute)), project="shop"
    )
    assert stored["success"], stored
    memory_id: str = stored["memory_id"]
    return memory_id


def waiting(rt: Runtime) -> int:
    count: int = rt.api.health()["episodes"]["entities_waiting"]
    return count


async def test_each_turn_gives_the_entity_work_one_slice(
    engine_runtime: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backlog is not worked through on one turn (it used to be, a page of 200 memories
    interleaved with the requests of that moment): after its slice the work waits for its next
    turn. With a slice of zero seconds and one memory a read, one memory a turn."""
    monkeypatch.setattr(entity_work, "SLICE", 0.0)
    monkeypatch.setattr(entity_work, "STEP", 1)
    rt = await engine_runtime()
    work = rt.episodes.engine.entity_work
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)  # the pass at start is done
    arrived, permits, free = asyncio.Event(), asyncio.Queue[None](), asyncio.Event()

    async def held() -> None:
        arrived.set()
        if not free.is_set():
            await permits.get()

    work.turn = held
    work.busy = lambda: True  # requests run throughout: each turn is one slice
    for minute in range(3):
        await remember(rt, f"The orders-svc deploy {minute} failed on PROJ-{77 + minute}.", minute)
    await asyncio.wait_for(arrived.wait(), SETTLE_SECONDS)
    assert waiting(rt) == 3
    for left in (2, 1, 0):
        arrived.clear()
        permits.put_nowait(None)  # one turn
        await asyncio.wait_for(arrived.wait(), SETTLE_SECONDS)  # back for the next one
        assert waiting(rt) == left
    free.set()  # the turns that find nothing more
    permits.put_nowait(None)
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)


async def test_the_entity_work_progresses_while_requests_never_pause(
    engine_runtime: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request in flight throughout: no quiet moment ever comes, and the entity work still
    finds every memory's entities, on the turns forced under load (every 10 ms here instead
    of every second; one memory a turn)."""
    monkeypatch.setattr(entity_work, "SLICE", 0.0)
    monkeypatch.setattr(entity_work, "STEP", 1)
    rt = await engine_runtime()
    activity = rt.service.activity
    activity.busy_interval = 0.01
    work = rt.episodes.engine.entity_work
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
    forced = activity.forced_turns
    with activity.request():  # never ends while the memories wait
        ids = [
            await remember(rt, f"Priya restarted the ledger-db after PROJ-{100 + i}.", i)
            for i in range(5)
        ]
        await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
        assert activity.busy() and waiting(rt) == 0
        assert activity.forced_turns - forced >= len(ids)  # each memory waited for a turn
    store = rt.episodes.store
    assert all(("shop", "ledger-db") in store.entities.names_of(i) for i in ids)


@pytest.mark.parametrize("held", [0, 2], ids=["after a restart", "beyond those held"])
async def test_memories_not_in_hand_are_read_from_the_store_a_page_at_once(
    engine_runtime: Make, monkeypatch: pytest.MonkeyPatch, held: int
) -> None:
    """Memories waiting that the work does not hold (decided before a restart, or beyond
    :data:`~entity_work.HELD`: here 2, the newest) are read from the memory store a page at a
    time, though the work takes them one at a time: one read for all of them, and each of the
    six gets its entities."""
    if held:
        monkeypatch.setattr(entity_work, "HELD", held)
    rt = await engine_runtime()
    work = rt.episodes.engine.entity_work
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
    gate = asyncio.Event()
    work.turn = gate.wait  # held until the memories are out of hand
    ids = [
        await remember(rt, f"Priya paged the ledger-db owners about PROJ-{200 + i}.", i)
        for i in range(6)
    ]
    if not held:
        work._held.clear()  # as after a restart
    host = rt.episodes.engine.state.host
    reads: list[list[str]] = []
    read_memories = host.get_memories

    async def counted(memory_ids: list[str]) -> Any:
        reads.append(list(memory_ids))
        return await read_memories(memory_ids)

    monkeypatch.setattr(host, "get_memories", counted)
    gate.set()
    await asyncio.wait_for(work.idle.wait(), SETTLE_SECONDS)
    out_of_hand = ids[: len(ids) - held]  # the newest ``held`` stayed in hand
    assert len(reads) == 1 and sorted(reads[0]) == sorted(out_of_hand)
    store = rt.episodes.store
    assert all(("shop", f"proj-{200 + i}") in store.entities.names_of(m) for i, m in enumerate(ids))


def test_recording_a_mention_costs_the_same_however_often_the_entity_was_named(
    tmp_path: Path,
) -> None:
    """A new mention updates its entity's row from the stored one: the SQL work of recording
    a memory does not grow with the mentions its entities already have (it recounted them
    all, twice, for each entity the memory names). Counted in SQLite VM steps."""
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    found = {
        "priya": ("name", ["Priya"]),
        "orders-service": ("system", ["orders-svc"]),
        "proj-77": ("ticket", ["PROJ-77"]),
    }
    steps = [0]

    def record(memory_id: str, counted: bool = False) -> None:
        if counted:
            store.db.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1), 10)
        with store.transaction() as db:
            entities.record_memory(db, "p", memory_id, 1.0, found)
        store.db.set_progress_handler(None, 10)

    try:
        for i in range(10):
            record(f"early-{i}")
        record("tenth", counted=True)
        after_ten, steps[0] = steps[0], 0
        for i in range(1000):
            record(f"late-{i}")
        record("thousandth", counted=True)
        # the same statements; a deeper index adds a few steps (recounting added ~450 then)
        assert steps[0] <= after_ten * 1.25
        row = entities.get("p", "priya")
        assert row is not None and row["mentions"] == 1012
    finally:
        store.close()


def test_a_row_kept_by_increments_is_the_row_counted_from_its_mentions(tmp_path: Path) -> None:
    """Increments, rewrites, forgets and a mention of another kind (which may change the
    entity's kind: counted again) leave each entity's row equal to a recount of its mentions,
    aliases included (a file path's bare name and its other cases, read back by any alias),
    and the known set kept across them equal to one read afresh (a new name, a new alias of
    a name and a new file path each change it)."""
    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    entities = store.entities
    priya, orders = ("name", ["Priya"]), ("system", ["orders-svc"])
    math = "engine/core/math.h"
    writes: list[tuple[str, float, dict[str, tuple[str, list[str]]]]] = [
        ("m1", 30.0, {"priya": priya, "orders-service": orders}),
        ("m2", 10.0, {"priya": priya, "orders-service": ("name", ["Orders Service"])}),
        ("m3", 20.0, {"orders-service": orders, "proj-77": ("ticket", ["PROJ-77"])}),
        ("m2", 10.0, {}),  # written again, naming nothing now
        ("m4", 40.0, {"orders-service": orders}),
        # the same name as another kind: counted again, a system on the tie, then increments
        ("m5", 50.0, {"priya": ("system", ["priya-svc"])}),
        ("m6", 60.0, {"priya": ("system", ["priya-svc"])}),
        ("m7", 5.0, {"priya": ("system", ["priya-svc"])}),
        # a name, then a new alias of it by increment: the known names change each time
        ("m8", 45.0, {"ana": ("name", ["Ana"])}),
        ("m9", 46.0, {"ana": ("name", ["Ana K"]), "docs": ("path", ["docs/"])}),
        # a file in a folder (a known path), then its bare file name and another case
        ("m10", 70.0, {math: ("path", ["Engine/Core/Math.h"])}),
        ("m11", 8.0, {math: ("path", ["Math.h"])}),
        ("m12", 80.0, {math: ("path", ["math.h"]), "ana": ("name", ["Ana"])}),
        ("m13", 90.0, {math: ("path", ["Engine\\Core\\Math.h"])}),
        ("m13", 90.0, {math: ("path", ["Math.h"])}),  # written again: an alias dropped
    ]

    def rows() -> set[tuple[str, str, int, float, float, str]]:
        return {
            (r["name"], r["kind"], r["mentions"], r["first_seen"], r["last_seen"], r["aliases"])
            for r in store.db.execute("SELECT * FROM entities")
        }

    try:
        for memory_id, when, found in writes:
            with store.transaction() as db:
                entities.record_memory(db, "p", memory_id, when, found)
            entities.known("p")  # kept across the writes: each must drop it when it can change
        with store.transaction() as db:
            entities.forget_memory(db, "m4")
        stored, kept = rows(), entities.known("p")
        entities._known.clear()
        assert kept == entities.known("p") == {"Ana", "Ana K", "orders-service", "priya", math}
        with store.transaction() as db:  # recount every entity from its mentions
            for (name,) in db.execute("SELECT name FROM entities").fetchall():
                entities._refresh(db, ("p", name), None)
        assert stored == rows()
        assert ("priya", "system", 4, 5.0, 60.0, '["Priya", "priya-svc"]') in stored
        math_row = entities.get("p", math)
        assert math_row is not None and (math_row["mentions"], math_row["first_seen"]) == (4, 8.0)
        assert json.loads(math_row["aliases"]) == ["Engine/Core/Math.h", "Math.h", "math.h"]
        assert entities.by_alias("p", "MATH.H") == [math]  # any case
        assert entities.by_alias("p", "engine\\core\\math.h") == []  # its mention rewritten
        assert entities.by_alias("p", "Ana K") == ["ana"]
    finally:
        store.close()
