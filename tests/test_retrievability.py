"""Retrievability: the FSRS math against hand-computed values, the access statistics file,
updates on recall and on "used", persistence across a restart, re-ranking on and off, and bad
input. The real runtime (store, embedder, episode engine) and the real app."""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers_http import unique
from mcp import Client

from tribalmemory import retrievability as fsrs
from tribalmemory.config import ConfigError, config_from_dict
from tribalmemory.interfaces.mcp_server import build_mcp_server
from tribalmemory.runtime import start_runtime
from tribalmemory.service.access import ACCESS_FILE, AccessStats, reranked
from tribalmemory.service.hookspecs import hookimpl
from tribalmemory.shapes import RecallRequest
from tribalmemory.timeutil import to_iso

pytest_plugins = ["helpers_http"]

DAY = fsrs.DAY_SECONDS
NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
S0, D0 = fsrs.INITIAL_STABILITY, fsrs.INITIAL_DIFFICULTY

# -- the math -------------------------------------------------------------------------------------


def test_forgetting_curve_hand_values() -> None:
    assert fsrs.retrievability(0, 5.0) == 1.0
    # R(S, S) = (1 + 19/81)^-0.5 = (100/81)^-0.5 = 0.9 exactly (float rounding only)
    assert fsrs.retrievability(S0, S0) == pytest.approx(0.9, abs=1e-12)
    # 1 + 19/81 · t/S = 4 when t = 243/19 · S: R = 4^-0.5 = 0.5
    assert fsrs.retrievability(243 / 19 * 2.0, 2.0) == pytest.approx(0.5, abs=1e-12)
    assert fsrs.retrievability(-3, 2.0) == 1.0  # a clock set back counts as no time
    assert fsrs.retrievability(1, 0.0) == fsrs.retrievability(1, fsrs.MIN_STABILITY)


def test_stability_growth_hand_values() -> None:
    # e^1.6474 · (11 − 5.1618) · 3.7145^−0.1367 · (e^(1.0461 · 0.1) − 1)
    #   = 5.1933 · 5.8382 · 0.83578 · 0.110277 = 2.7944  →  S' = 3.7145 · 3.7944 = 14.095
    good = fsrs.next_stability(S0, D0, 0.9, fsrs.USED, key_moment=False)
    assert good == pytest.approx(14.0950, abs=5e-4)  # 4 digits of the hand computation
    hard = fsrs.next_stability(S0, D0, 0.9, fsrs.ACCESS, key_moment=False)
    assert hard == pytest.approx(S0 * (1 + 0.2272 * 2.79458), abs=5e-4)  # 6.0729
    key = fsrs.next_stability(S0, D0, 0.9, fsrs.USED, key_moment=True)
    assert key == pytest.approx(S0 * (1 + 1.5 * 2.79458), abs=5e-4)  # 19.2852
    assert fsrs.next_stability(S0, D0, 1.0, fsrs.USED, False) == S0  # nothing forgotten: no gain
    low = fsrs.next_stability(S0, D0, 0.5, fsrs.USED, False)
    assert low > good  # grows more when R was low


def test_difficulty_and_clamping() -> None:
    assert fsrs.next_difficulty(D0, fsrs.USED) == pytest.approx(D0, abs=1e-12)
    # 0.031 · D0 + 0.969 · (D0 + 0.8975) = D0 + 0.8696775
    assert fsrs.next_difficulty(D0, fsrs.ACCESS) == pytest.approx(D0 + 0.8696775, abs=1e-9)
    assert fsrs.next_difficulty(10.0, fsrs.ACCESS) == fsrs.MAX_DIFFICULTY
    huge = fsrs.next_stability(fsrs.MAX_STABILITY, 1.0, 0.0, fsrs.USED, True)
    assert huge == fsrs.MAX_STABILITY
    assert fsrs.rerank_factor(0.0, 0.5) == 0.5 and fsrs.rerank_factor(1.0, 0.5) == 1.0
    assert fsrs.rerank_factor(0.4, 0.25) == pytest.approx(0.55, abs=1e-12)
    with pytest.raises(ValueError, match="grade"):
        fsrs.review(fsrs.Stats(), 4, 0.0, 0.0, False)


def test_a_recall_then_a_use_is_one_good_review() -> None:
    created = 0.0
    shown_at = 10 * DAY
    shown = fsrs.review(fsrs.Stats(), fsrs.ACCESS, shown_at, created, False)
    assert (shown.access_count, shown.use_count, shown.last_grade) == (1, 0, fsrs.ACCESS)
    used = fsrs.review(shown, fsrs.USED, shown_at + 600, created, False)
    direct = fsrs.review(fsrs.Stats(), fsrs.USED, shown_at, created, False)
    assert (used.access_count, used.use_count) == (1, 1)
    assert used.stability == direct.stability > shown.stability
    assert used.reviewed_at == shown_at and used.last_accessed_at == shown_at + 600
    late = fsrs.review(shown, fsrs.USED, shown_at + 2 * DAY, created, False)  # past the window
    assert (late.access_count, late.use_count) == (2, 1)
    again = fsrs.review(used, fsrs.USED, shown_at + 700, created, False)  # no second upgrade
    assert again.access_count == 2


# -- the statistics file --------------------------------------------------------------------------


def test_statistics_persist_and_are_deleted(tmp_path: Path) -> None:
    path = tmp_path / ACCESS_FILE
    stats = AccessStats(path, clock=lambda: NOW)
    stats.record([("a", 0.0, False), ("b", 0.0, True)], fsrs.ACCESS)
    stats.record([("a", 0.0, False)], fsrs.ACCESS)
    stats.close()
    reopened = AccessStats(path)
    found = reopened.get(["a", "b", "c"])
    assert set(found) == {"a", "b"} and found["a"].access_count == 2
    assert found["a"].last_accessed_at == NOW.timestamp()
    reopened.delete(["a"])
    assert set(reopened.get(["a", "b"])) == {"b"}
    reopened.close()


def test_an_unusable_file_is_reported_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / ACCESS_FILE
    path.write_bytes(b"this is not a sqlite database" * 100)
    with caplog.at_level(logging.WARNING, "tribalmemory.access"):
        stats = AccessStats(path)
    assert not stats.available and stats.health()["state"] == "unavailable"
    assert "recall goes on without access statistics" in caplog.text
    assert stats.record([("a", 0.0, False)], fsrs.USED) == {} and stats.get(["a"]) == {}


def test_reranked_orders_by_relevance_times_retrievability() -> None:
    from tribalmemory.models import Memory, RecallHit, SourceType

    def hit(mid: str, score: float) -> RecallHit:
        memory = Memory(
            id=mid,
            content=mid,
            source_type=SourceType.USER_EXPLICIT,
            source_instance="t",
            tags=[],
            context=None,
            created_at=NOW - timedelta(days=100),
            updated_at=NOW,
        )
        return RecallHit(memory=memory, similarity_score=score)

    fresh = fsrs.Stats(access_count=3, reviewed_at=NOW.timestamp(), stability=50.0)
    hits = [hit("a", 0.8), hit("b", 0.6)]
    # a: never accessed, 100 days at S0: R = (1 + 19/81 · 100/3.7145)^-0.5 = 0.3904
    #    → 0.8 · (0.5 + 0.5 · 0.3904) = 0.5562 < b: 0.6 · 1.0
    order = reranked(hits, {"b": fresh}, NOW.timestamp(), 0.5)
    assert [h.memory.id for h in order] == ["b", "a"]
    assert [h.memory.id for h in reranked(hits, {"b": fresh}, NOW.timestamp(), 1.0)] == [
        "a",
        "b",
    ]  # floor 1: relevance alone


def test_rerank_settings_are_validated() -> None:
    assert config_from_dict({"recall": {"rerank": "retrievability"}}).recall.rerank == (
        "retrievability"
    )
    with pytest.raises(ConfigError, match="recall.rerank"):
        config_from_dict({"recall": {"rerank": "recency"}})
    with pytest.raises(ConfigError, match="recall.rerank_floor"):
        config_from_dict({"recall": {"rerank_floor": 1.5}})


# -- through the runtime --------------------------------------------------------------------------


def runtime_config(data: Path, rerank: str = "none") -> Any:
    settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0}
    return config_from_dict(
        {"data_dir": str(data), "episodes": settings, "recall": {"rerank": rerank}}
    )


@pytest.fixture
async def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runtime = await start_runtime(runtime_config(tmp_path / "data"), run_scheduler=False)
    runtime.service.access.clock = lambda: NOW
    yield runtime
    await runtime.stop()


@pytest.fixture
async def rt_plain(tmp_path: Path) -> Any:
    """Episodes off: no summary memory can join the results between two recalls."""
    config = runtime_config(tmp_path / "data")
    config.episodes.enabled = False
    runtime = await start_runtime(config)
    runtime.service.access.clock = lambda: NOW
    yield runtime
    await runtime.stop()


async def remember(rt: Any, content: str, days_ago: float = 0) -> str:
    when = to_iso(NOW - timedelta(days=days_ago))
    stored = await rt.api.remember(content, created_at=when, skip_dedup=True)
    assert stored["success"], stored
    return str(stored["memory_id"])


async def test_recall_counts_an_access_and_used_a_use(rt: Any) -> None:
    mid = await remember(rt, "The billing service deploys with make deploy-billing", 30)
    before = await rt.api.get_memory(mid)
    assert before["access_count"] == 0 and before["last_accessed_at"] is None
    # never accessed: counts from its creation 30 days ago at S0
    expected = fsrs.retrievability(30, S0)  # (1 + 19/81 · 30/3.7145)^-0.5 = 0.4630
    assert before["retrievability"] == pytest.approx(expected, abs=5e-5)  # rounded to 4 places

    found = await rt.api.recall("how do we deploy billing")
    assert found["results"][0]["memory_id"] == mid
    shown = found["results"][0]["memory"]
    assert shown["access_count"] == 1 and shown["last_accessed_at"] == to_iso(NOW)
    assert shown["retrievability"] == 1.0  # reviewed just now
    after_recall = rt.service.access.get([mid])[mid]

    used = await rt.api.memory_used(mid)
    assert used["success"] and used["access_count"] == 1  # the recall's review, upgraded
    after_use = rt.service.access.get([mid])[mid]
    assert after_use.use_count == 1 and after_use.stability > after_recall.stability

    later = NOW + timedelta(days=20)
    rt.service.access.clock = lambda: later
    fresh = (await rt.api.get_memory(mid))["retrievability"]
    assert fresh == pytest.approx(fsrs.retrievability(20, after_use.stability), abs=5e-5)
    assert fresh > fsrs.retrievability(20, after_recall.stability)  # use kept it fresher


async def test_an_access_to_a_member_counts_for_its_episode(rt: Any) -> None:
    ids = [
        await remember(rt, "Postgres staging runs on port 6543", 3),
        await remember(rt, "The staging Postgres password rotates monthly", 3),
    ]
    created = await rt.api.episode_create("staging postgres", ids)
    eid = created["episode_id"]
    episode = (await rt.api.episode_get(eid))["episode"]
    assert episode["access_count"] == 0 and episode["last_accessed_at"] is None

    await rt.api.recall("staging postgres port", limit=2)  # both members: one episode access
    episode = (await rt.api.episode_get(eid))["episode"]
    assert episode["access_count"] == 1 and episode["last_accessed_at"] == to_iso(NOW)
    listed = {e["id"]: e for e in (await rt.api.episodes_list())["episodes"]}
    assert listed[eid]["access_count"] == 1 and listed[eid]["retrievability"] == 1.0

    await rt.api.memory_used(ids[0])
    assert rt.service.access.get([eid])[eid].use_count == 1

    await rt.api.episode_delete(eid)
    assert rt.service.access.get([eid]) == {}


async def test_forget_removes_the_statistics(rt: Any) -> None:
    mid = await remember(rt, unique("a memory to forget"))
    await rt.api.memory_used(mid)
    assert mid in rt.service.access.get([mid])
    await rt.api.forget(mid)
    assert rt.service.access.get([mid]) == {}
    with sqlite3.connect(rt.config.data_path / ACCESS_FILE) as db:
        assert db.execute("SELECT count(*) FROM access_stats WHERE id = ?", (mid,)).fetchone() == (
            0,
        )


async def test_statistics_survive_a_restart(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = runtime_config(tmp_path / "data")
    first = await start_runtime(config, run_scheduler=False)
    try:
        first.service.access.clock = lambda: NOW
        mid = await remember(first, "Deploys freeze on Fridays after 3 pm")
        await first.api.recall("deploy freeze friday")
        await first.api.memory_used(mid)
    finally:
        await first.stop()
    second = await start_runtime(config, run_scheduler=False)
    try:
        second.service.access.clock = lambda: NOW
        memory = await second.api.get_memory(mid)
        assert memory["access_count"] == 1 and memory["last_accessed_at"] == to_iso(NOW)
        assert second.service.access.get([mid])[mid].use_count == 1
    finally:
        await second.stop()


STREAM = [
    "Kafka consumer lag alert fires when the billing consumer falls behind",
    "Kafka consumer group rebalancing pauses the billing consumer",
    "Kafka consumer lag on billing is fixed by raising max.poll.records",
    "Kafka billing consumer restarts clear a stuck offset commit",
    "Kafka topics for billing keep seven days of retention",
]


async def order(rt: Any, query: str, limit: int) -> list[tuple[str, float]]:
    found = await rt.api.recall(query, limit=limit)
    return [(r["memory_id"], r["similarity_score"]) for r in found["results"]]


async def test_rerank_none_changes_nothing(rt_plain: Any) -> None:
    rt = rt_plain
    ids = [await remember(rt, text, 200) for text in STREAM]
    query = "kafka billing consumer lag"
    first = await order(rt, query, 5)
    for _ in range(3):  # make the last-ranked memory the most used one
        await rt.api.memory_used(first[-1][0])
        rt.service.access.clock = lambda: NOW + timedelta(days=2)
    again = await order(rt, query, 5)
    assert again == first  # ids and scores, in the same order
    plain = await rt.service.recall(RecallRequest(query=query, limit=5), rerank=False)
    assert [(h.memory.id, h.similarity_score) for h in plain] == first
    assert set(ids) == {mid for mid, _ in first}


async def test_rerank_retrievability_lifts_used_memories(rt_plain: Any) -> None:
    rt = rt_plain
    for text in STREAM:
        await remember(rt, text, 200)
    query = "kafka billing consumer lag"
    plain = await rt.service.recall(
        RecallRequest(query=query, limit=5)
    )  # the service's: counts no access
    base = [(h.memory.id, h.similarity_score) for h in plain]
    top, last = base[0][0], base[-1][0]
    # the others were never accessed (R from 200 days ago: 0.28); ``last`` was used 3 times
    assert base[-1][1] > 0.64 * base[0][1], base  # so that re-ranking can lift it
    for day in (0, 10, 20):
        rt.service.access.clock = lambda day=day: NOW + timedelta(days=day)
        await rt.api.memory_used(last)
    rt.config.recall.rerank = "retrievability"
    hits = await rt.service.recall(
        RecallRequest(query=query, limit=5)
    )  # counts no access: the others stay stale
    assert hits[0].memory.id == last  # used on three days: now first
    assert {h.memory.id: h.similarity_score for h in hits} == dict(base)  # scores unchanged
    # limit 2 through the API: the used memory climbs from the 5th place into the results
    # (the candidate pool is 3 × 2, so it holds all five)
    assert (await order(rt, query, 2))[0][0] == last
    rt.config.recall.rerank = "none"
    assert await order(rt, query, 5) == base and base[0][0] == top  # off again: as before


# -- the interfaces -------------------------------------------------------------------------------


def test_http_used_route_and_bad_ids(client: Any, runtime: Any) -> None:
    stored = client.post("/v1/remember", json={"content": unique("http used"), "skip_dedup": True})
    mid = stored.json()["memory_id"]
    used = client.post(f"/v1/memories/{mid}/used")
    assert used.status_code == 200, used.text
    body = used.json()
    assert body["success"] and body["memory_id"] == mid and body["access_count"] == 1
    assert body["retrievability"] == 1.0 and body["last_accessed_at"] is not None
    got = client.get(f"/v1/memory/{mid}").json()
    assert got["access_count"] == 1 and "retrievability" in got
    missing = client.post("/v1/memories/00000000-0000-4000-8000-000000000000/used")
    assert missing.status_code == 404 and "no memory with id" in missing.json()["error"]
    bad = client.post("/v1/memories/not-a-memory/used")
    assert bad.status_code == 400 and "not a memory id" in bad.json()["error"]
    health = client.get("/v1/health").json()
    assert health["access"] == {"state": "ok", "reason": ""}
    assert math.isfinite(got["retrievability"])


async def test_mcp_tribal_used(rt: Any) -> None:
    mid = await remember(rt, unique("mcp used"))
    async with Client(build_mcp_server(lambda: rt.api)) as client:
        result = await client.call_tool("tribal_used", {"memory_id": mid})
        assert result.is_error is False
        assert result.structured_content["access_count"] == 1
        missing = await client.call_tool(
            "tribal_used", {"memory_id": "00000000-0000-4000-8000-000000000000"}
        )
        assert missing.is_error is True


async def test_export_leaves_the_statistics_out(rt: Any) -> None:
    from tribalmemory.portability.exporter import export_lines

    ids = [
        await remember(rt, "Exported: the queue retries three times", 1),
        await remember(rt, "Exported: the queue backs off exponentially", 1),
    ]
    await rt.api.episode_create("queue retries", ids)
    await rt.api.recall("queue retries")
    await rt.api.memory_used(ids[0])
    lines = [json.loads(line) async for line in export_lines(rt.api)]
    kinds = {line["type"] for line in lines}
    assert {"memory", "episode"} <= kinds
    for line in lines:
        assert not {"access_count", "last_accessed_at", "retrievability"} & set(line), line


def test_key_moments_are_the_surprising_members(tmp_path: Path) -> None:
    from tribalmemory.episodes import lifecycle
    from tribalmemory.episodes.store import EpisodeRow, EpisodeStore

    store = EpisodeStore(tmp_path / "episodes.sqlite3")
    try:
        with store.transaction() as db:
            store.episodes.insert(db, EpisodeRow.new("t", "user", 1.0, id="ep-a"))
            store.add_member(db, "ep-a", "calm", 1.0, 1.0, 0.9, surprise=0.1)
            store.add_member(db, "ep-a", "edge", 2.0, 1.0, 0.3, surprise=lifecycle.KEY_MOMENT)
            store.add_member(db, "ep-a", "manual", 3.0, 1.0)  # placed by hand: no surprise
        found = store.memberships.surprising(
            ["calm", "edge", "manual", "absent"], lifecycle.KEY_MOMENT
        )
        assert found == ["edge"]
        assert store.memberships.surprising([], lifecycle.KEY_MOMENT) == []
    finally:
        store.close()


class KeyMomentPlugin:
    """A plugin naming one memory a key moment (the hook the episode plugin implements)."""

    name = "key-moment"

    def __init__(self) -> None:
        self.key: set[str] = set()

    @hookimpl
    def key_moments(self, memories: list[Any]) -> list[str]:
        return [m.id for m in memories if m.id in self.key]


async def test_a_key_moment_grows_faster(tmp_path: Path) -> None:
    plugin = KeyMomentPlugin()
    config = runtime_config(tmp_path / "data")
    config.episodes.enabled = False
    runtime = await start_runtime(config, plugins=[plugin])
    try:
        runtime.service.access.clock = lambda: NOW
        key = await remember(runtime, "Surprise: the cache was never enabled in production", 10)
        plain = await remember(runtime, "The cache TTL for product pages is one hour", 10)
        plugin.key.add(key)
        await runtime.api.memory_used(key)
        await runtime.api.memory_used(plain)
        found = runtime.service.access.get([key, plain])
        # both reviewed at R = R(10 days, S0); the key moment's growth is 1.5 times larger
        plain_growth = found[plain].stability / S0 - 1
        key_growth = found[key].stability / S0 - 1
        assert key_growth == pytest.approx(1.5 * plain_growth, rel=1e-9)
    finally:
        await runtime.stop()


async def test_backup_and_restore_keep_the_statistics(rt: Any, tmp_path: Path) -> None:
    from tribalmemory.portability.backup import backup, restore

    mid = await remember(rt, unique("backed up and used"))
    await rt.api.memory_used(mid)
    made = await backup(rt.config, rt.service, tmp_path / "backup")
    assert ACCESS_FILE in made["files"]
    restored = runtime_config(tmp_path / "restored")
    restore(tmp_path / "backup", restored, force=False)
    again = await start_runtime(restored, run_scheduler=False)
    try:
        assert again.service.access.get([mid])[mid].use_count == 1
    finally:
        await again.stop()
