"""Races never 500 and counts equal real membership (issue 18, point 2): concurrent forget,
episode add, create and delete through the API on the real service and episode engine; and the
reconciliation of dangling memberships at start and on the scheduler's tick."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest

from tribalmemory.config import config_from_dict
from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.errors import TribalError
from tribalmemory.runtime import Runtime, start_runtime

ROUNDS = 25


def make_config(tmp_path: Path) -> Any:
    return config_from_dict(
        {
            "data_dir": str(tmp_path / "data"),
            "episodes": {"detector_strategy": "embedding", "summary_debounce_seconds": 0},
        }
    )


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = await start_runtime(make_config(tmp_path), run_scheduler=False)
    yield runtime
    await runtime.stop()


async def status(call: Awaitable[Any]) -> int:
    """The HTTP status the call answers with: 200, or a TribalError's (anything else raises)."""
    try:
        await call
    except TribalError as exc:
        assert exc.status in (404, 409), f"{exc.status}: {exc.message}"
        assert exc.message
        return exc.status
    return 200


async def both(round: int, first: Awaitable[Any], second: Awaitable[Any]) -> tuple[int, int]:
    """The statuses of two calls run concurrently, started in the other order every other
    round (so each gets to check first)."""
    if round % 2:
        got_second, got_first = await asyncio.gather(status(second), status(first))
    else:
        got_first, got_second = await asyncio.gather(status(first), status(second))
    return got_first, got_second


async def remember(rt: Runtime, text: str) -> str:
    result = await rt.api.remember(f"{text} {uuid.uuid4().hex}", skip_dedup=True)
    return str(result["memory_id"])


async def assert_counts_are_real(rt: Runtime) -> None:
    """Every membership is of an existing memory, and every count is its real membership."""
    store = rt.episodes.store
    members = store.all_member_ids()
    existing = {m.id for m in await rt.service.get_many(members)}
    assert set(members) <= existing, "memberships of forgotten memories"
    for row in store.episodes(limit=10_000):
        assert row.memory_count == len(store.member_ids(row.id)) >= 1, row.id
        listed = await rt.api.episode_get(row.id)
        assert listed["episode"]["memory_count"] == len(listed["memory_ids"])


async def test_forget_races_episode_add(rt: Runtime) -> None:
    anchor = await remember(rt, "billing export anchor")
    episode = (await rt.api.episode_create("Billing export", [anchor]))["episode_id"]
    seen = set()
    for round in range(ROUNDS):
        memory = await remember(rt, "billing export detail")
        forgot, added = await both(
            round, rt.api.forget(memory), rt.api.episode_add(episode, memory)
        )
        assert forgot == 200  # the memory existed: forget always succeeds
        seen.add(added)
        assert memory not in rt.episodes.store.member_ids(episode)
    assert seen <= {200, 404}
    await assert_counts_are_real(rt)


async def test_forget_races_episode_create(rt: Runtime) -> None:
    seen = set()
    for round in range(ROUNDS):
        first = await remember(rt, "search reindex step")
        second = await remember(rt, "search reindex check")
        forgot, created = await both(
            round, rt.api.forget(first), rt.api.episode_create("Search reindex", [first, second])
        )
        assert forgot == 200
        seen.add(created)
        assert rt.episodes.store.episode_of(first) is None
    assert seen <= {200, 404}
    await assert_counts_are_real(rt)


async def test_episode_delete_races_episode_add(rt: Runtime) -> None:
    seen = set()
    for round in range(ROUNDS):
        anchor = await remember(rt, "cache warmup anchor")
        memory = await remember(rt, "cache warmup detail")
        episode = (await rt.api.episode_create("Cache warmup", [anchor]))["episode_id"]
        deleted, added = await both(
            round, rt.api.episode_delete(episode), rt.api.episode_add(episode, memory)
        )
        assert deleted == 200
        seen.add(added)
        assert rt.episodes.store.episode(episode) is None
        assert rt.episodes.store.episode_of(memory) != episode
    assert seen <= {200, 404}
    await assert_counts_are_real(rt)


def inject_dangling(data: Path, episode_id: str) -> str:
    """A membership of a memory that does not exist, written straight into the episode DB."""
    ghost = str(uuid.uuid4())
    store = EpisodeStore(data / "episodes.sqlite3")
    try:
        with store.transaction() as db:
            store.add_member(db, episode_id, ghost, 0.0, 0.0)
    finally:
        store.close()
    return ghost


async def test_dangling_memberships_are_removed_at_start(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    rt = await start_runtime(config, run_scheduler=False)
    try:
        ids = [await remember(rt, "queue retry policy") for _ in range(2)]
        episode = (await rt.api.episode_create("Queue retries", ids))["episode_id"]
    finally:
        await rt.stop()
    ghost = inject_dangling(config.data_path, episode)
    rt = await start_runtime(config, run_scheduler=False)
    try:
        assert rt.episodes.store.episode_of(ghost) is None
        got = await rt.api.episode_get(episode)
        assert got["episode"]["memory_count"] == 2 and sorted(got["memory_ids"]) == sorted(ids)
        await assert_counts_are_real(rt)
    finally:
        await rt.stop()


async def test_dangling_memberships_are_removed_on_the_tick(rt: Runtime) -> None:
    ids = [await remember(rt, "nightly vacuum job") for _ in range(2)]
    episode = (await rt.api.episode_create("Nightly vacuum", ids))["episode_id"]
    ghost = str(uuid.uuid4())
    store = rt.episodes.store
    with store.transaction() as db:
        store.add_member(db, episode, ghost, 0.0, 0.0)
    assert (await rt.api.episode_get(episode))["episode"]["memory_count"] == 3
    await rt.episodes.engine.tick()
    assert store.episode_of(ghost) is None
    assert (await rt.api.episode_get(episode))["episode"]["memory_count"] == 2
