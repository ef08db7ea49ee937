"""The intent log: a memory noted before it is stored is pending until its decision commits,
and one the process never decided (kill -9) gets its detect job when the database opens."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from helpers_http import write_config
from helpers_runtime import SETTLE_SECONDS, killed_at_decision, run_killed, settle

from tribalmemory.config import load_config
from tribalmemory.episodes.store import EpisodeStore, intents
from tribalmemory.portability import backup
from tribalmemory.runtime import Runtime, start_runtime

Make = Callable[..., Awaitable[Runtime]]


def lines(store: EpisodeStore) -> list[str]:
    return store.intents.path.read_text().splitlines()


def waits(store: EpisodeStore, memory_id: str) -> bool:
    sql = "SELECT 1 FROM entity_waiting WHERE memory_id = ?"
    return store.db.execute(sql, (memory_id,)).fetchone() is not None


@pytest.fixture
def store(tmp_path: Path):
    s = EpisodeStore(tmp_path / "episodes.sqlite3")
    yield s
    s.close()


def test_a_noted_memory_is_fresh_until_its_decision_commits(store: EpisodeStore) -> None:
    store.intents.note("m1", 10.0)
    store.intents.note("m2", 11.0)
    assert len(lines(store)) == 2
    with pytest.raises(RuntimeError), store.transaction() as db:
        store.finish_detection(db, "m1")
        raise RuntimeError("the decision failed")
    assert store.intents.is_fresh("m1") and not waits(store, "m1")  # rolled back: still fresh
    with store.transaction() as db:
        store.detections.record(db, "m1", "standalone", 10.0)
        store.finish_detection(db, "m1")
    assert not store.intents.is_fresh("m1") and waits(store, "m1")  # its entities come next
    assert len(lines(store)) == 2  # m2 is fresh: the log is kept
    with store.transaction() as db:
        store.forget_detection(db, "m2")  # forgotten before its decision
    assert not store.intents.is_fresh("m2") and lines(store) == []  # none fresh: emptied


def test_opening_the_database_gives_an_undecided_memory_its_detect_job(tmp_path: Path) -> None:
    """As after kill -9: the first store is never closed; the log's bytes are in the file."""
    first = EpisodeStore(tmp_path / "episodes.sqlite3")
    first.intents.note("decided", 10.0)
    first.intents.note("stored", 11.0)
    with first.transaction() as db:
        first.detections.record(db, "decided", "seed", 10.0)
        first.finish_detection(db, "decided")
    second = EpisodeStore(tmp_path / "episodes.sqlite3")
    try:
        assert second.detections.states(["decided", "stored"]) == {
            "decided": "seed",
            "stored": "pending",
        }
        assert [job.key for job in second.jobs.due(11.0, set())] == ["stored"]
        assert waits(second, "stored")
        assert lines(second) == [] and not second.intents.fresh
    finally:
        second.close()
        first.close()


def test_a_line_cut_short_is_skipped_and_a_new_database_drops_an_old_log(tmp_path: Path) -> None:
    path = tmp_path / "episodes.sqlite3"
    EpisodeStore(path).close()
    log = tmp_path / "episodes.sqlite3-intents"
    log.write_text('["whole", 5.0]\n["cut", 6')  # the crash came in the second write
    kept = EpisodeStore(path)
    assert kept.detections.states(["whole", "cut"]) == {"whole": "pending"}
    kept.close()
    path.unlink()  # the database is lost; a log beside it is not its own
    log.write_text('["orphan", 7.0]\n')
    fresh = EpisodeStore(path)
    assert fresh.detections.states(["orphan"]) == {} and fresh.jobs.count("detect") == 0
    fresh.close()


def test_a_log_that_never_empties_is_rewritten_with_the_fresh_memories(
    store: EpisodeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(intents, "REWRITE_LINES", 3)
    store.intents.note("slow", 1.0)  # in flight throughout
    for memory_id in ("a", "b"):
        store.intents.note(memory_id, 2.0)
        store.intents.settle(memory_id)
    assert lines(store) == ['["slow", 1.0]']  # rewritten when b settled, at the third line
    store.intents.note("d", 3.0)
    assert [json.loads(line)[0] for line in lines(store)] == ["slow", "d"]  # appends go on


async def test_a_decision_that_fails_leaves_a_detect_job_the_worker_runs(
    engine_runtime: Make, caplog: pytest.LogCaptureFixture
) -> None:
    rt = await engine_runtime()
    detection = rt.episodes.engine.detection
    placement = detection.sittings.placement
    calls = []

    def fails_once(*args, **kwargs):
        calls.append(args[0].id)
        if len(calls) == 1:
            raise RuntimeError("a decision that failed")
        return placement(*args, **kwargs)

    detection.sittings.placement = fails_once  # type: ignore[method-assign]
    result = await rt.api.remember("The orders-svc deploy failed on PROJ-12.", project="shop")
    assert result["success"] and "a decision that failed" in caplog.text
    await settle(rt)
    memory_id = result["memory_id"]
    assert calls == [memory_id, memory_id]  # decided again, by the worker's detect job
    store = rt.episodes.store
    assert store.detections.states([memory_id])[memory_id] != "pending"
    assert store.jobs.count("detect") == 0 and not store.intents.fresh
    await asyncio.wait_for(rt.episodes.engine.entity_work.idle.wait(), SETTLE_SECONDS)
    assert ("shop", "proj-12") in store.entities.names_of(memory_id)


REMEMBER = """
async def remember_all(runtime, path):
    for text in json.loads(path.read_text()):
        await runtime.api.remember(text, project="shop")
"""

TEXTS = [
    "The orders-svc deploy failed on PROJ-12: the migration timed out.",
    "Retried the orders-svc migration for PROJ-12 with a longer lock timeout.",
    "The orders-svc migration for PROJ-12 passed after the lock timeout change.",
]


async def test_a_memory_stored_and_killed_before_its_decision_is_decided_at_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL at the third decision: the third memory is stored and only the intent log knows
    it is undecided. At restart it is pending with its detect job; the worker decides it and
    its entities are found, as for the two decided before the crash."""
    folder = tmp_path / "data"
    config = write_config(folder, episodes={"detector_strategy": "embedding"})
    texts = tmp_path / "texts.json"
    texts.write_text(json.dumps(TEXTS))
    script = killed_at_decision(3, "remember_all(runtime, Path(sys.argv[2]))", REMEMBER)
    run_killed(script, config, texts, folder)
    logged = [json.loads(line)[0] for line in (folder / "episodes.sqlite3-intents").open()]
    assert len(logged) == 1  # the two decided were settled; the log kept the third only

    monkeypatch.setenv("TRIBAL_MEMORY_HOME", str(folder))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runtime = await start_runtime(load_config(config), run_scheduler=False)
    try:
        (stored,) = await runtime.service.get_many(logged)
        assert stored.content == TEXTS[2]
        await settle(runtime)
        store = runtime.episodes.store
        assert store.jobs.count("detect") == 0
        assert store.detections.states([stored.id])[stored.id] != "pending"  # decided now
        memory = await runtime.api.get_memory(stored.id)
        assert memory["episode_status"] != "pending"
        listed = await runtime.api.memories_list(project="shop", limit=10)
        assert len(listed["memories"]) == 3  # each stored once
        await asyncio.wait_for(runtime.episodes.engine.entity_work.idle.wait(), SETTLE_SECONDS)
        assert ("shop", "proj-12") in store.entities.names_of(stored.id)
    finally:
        await runtime.stop()


async def test_a_backup_taken_before_a_decision_is_written_restores_the_memory_undecided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backup between a memory's store write and its decision: the store's copy holds the
    memory, the database's copy not its decision; the intent log's copy makes the restored
    daemon decide it (its entities found)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    episodes = {"detector_strategy": "embedding"}
    source = load_config(write_config(tmp_path / "source", episodes=episodes))
    rt = await start_runtime(source, run_scheduler=False)
    detection = rt.episodes.engine.detection
    decide, entered, gate = detection.detect, asyncio.Event(), asyncio.Event()

    async def held(memory, vector):
        entered.set()  # stored, the write lock released: its decision waits here
        await gate.wait()
        return await decide(memory, vector)

    detection.detect = held  # type: ignore[method-assign]
    try:
        pending = asyncio.create_task(rt.api.remember(TEXTS[0], project="shop"))
        await asyncio.wait_for(entered.wait(), SETTLE_SECONDS)
        made = await backup.backup(source, rt.service, tmp_path / "backup")
        assert "episodes.sqlite3-intents" in made["files"]
        gate.set()
        memory_id = (await pending)["memory_id"]
    finally:
        gate.set()
        await rt.stop()

    restored = load_config(write_config(tmp_path / "restored", episodes=episodes))
    backup.restore(tmp_path / "backup", restored, force=False)
    rt = await start_runtime(restored, run_scheduler=False)
    try:
        await settle(rt)
        store = rt.episodes.store
        assert store.detections.states([memory_id])[memory_id] != "pending"  # decided
        await asyncio.wait_for(rt.episodes.engine.entity_work.idle.wait(), SETTLE_SECONDS)
        assert ("shop", "proj-12") in store.entities.names_of(memory_id)
    finally:
        await rt.stop()
