"""Members' vectors kept by the engine (episodes/vectors.py): a background job reads from the
store only the vectors the write-time hook did not hand it, and never a stale one."""

from __future__ import annotations

from typing import Any

import numpy as np
from test_episodes_engine import (  # noqa: F401 - fixtures
    AUTH,
    clock,
    episode_of,
    make_runtime,
    remember,
    settle,
)

from tribalmemory.episodes.vectors import VectorCache


def vector(seed: str) -> np.ndarray:
    return np.full(4, float(len(seed)), dtype=np.float32)


class Store:
    """What the cache reads through: records the ids asked for."""

    def __init__(self, missing: tuple[str, ...] = ()) -> None:
        self.asked: list[list[str]] = []
        self.missing = missing

    async def read(self, ids: list[str]) -> dict[str, np.ndarray]:
        self.asked.append(list(ids))
        return {i: vector(i) for i in ids if i not in self.missing}


async def test_kept_vectors_are_served_and_the_others_read_once() -> None:
    cache, store = VectorCache(), Store(missing=("gone",))
    cache.put("a", vector("a"))
    got = await cache.get(["a", "bb", "gone"], store.read)
    assert set(got) == {"a", "bb"}  # a memory the store lacks is left out, as the store does
    assert store.asked == [["bb", "gone"]]
    again = await cache.get(["bb", "a"], store.read)
    assert store.asked == [["bb", "gone"]]  # nothing read the second time
    np.testing.assert_array_equal(again["bb"], vector("bb"))


async def test_the_least_recently_used_vector_leaves_first() -> None:
    cache, store = VectorCache(capacity=2), Store()
    cache.put("a", vector("a"))
    cache.put("b", vector("b"))
    await cache.get(["a"], store.read)  # "a" used: "b" is now the oldest
    cache.put("c", vector("c"))
    assert len(cache) == 2
    await cache.get(["a", "b", "c"], store.read)
    assert store.asked == [["b"]]


async def test_a_read_during_which_a_vector_was_dropped_keeps_nothing() -> None:
    cache = VectorCache()

    async def read(ids: list[str]) -> dict[str, np.ndarray]:
        cache.drop(["summary"])  # the engine rewrote a memory while this read was in flight
        return {i: vector(i) for i in ids}

    got = await cache.get(["summary"], read)
    assert "summary" in got  # answered,
    assert len(cache) == 0  # but not kept: it may predate the write


def counting_reads(rt: Any, monkeypatch: Any) -> list[str]:
    """The ids whose vectors the engine reads from the real store from now on."""
    asked: list[str] = []
    real = rt.service.vectors

    async def vectors(memory_ids: list[str]) -> dict[str, np.ndarray]:
        asked.extend(memory_ids)
        return await real(memory_ids)

    monkeypatch.setattr(rt.service, "vectors", vectors)
    return asked


async def settled_members(rt: Any, count: int) -> list[str]:
    """Remember ``count`` memories of one thread and let the engine settle; their ids."""
    ids = [(await remember(rt, AUTH[i], 3 + i))["memory_id"] for i in range(count)]
    await settle(rt)
    return ids


async def one_episode(rt: Any, count: int) -> tuple[list[str], str]:
    """:func:`settled_members`, which make one episode: their ids and its id."""
    ids = await settled_members(rt, count)
    episode_id = await episode_of(rt, ids[0])
    assert episode_id is not None and all([await episode_of(rt, i) == episode_id for i in ids])
    return ids, episode_id


async def test_summary_jobs_read_no_member_vector_the_engine_already_has(
    make_runtime: Any,  # noqa: F811 - the fixture imported above
    monkeypatch: Any,
) -> None:
    rt = await make_runtime()
    ids, episode_id = await one_episode(rt, 4)
    asked = counting_reads(rt, monkeypatch)
    await rt.api.episode_regenerate(episode_id)
    await settle(rt)
    assert not set(asked) & set(ids)  # every member's vector was kept from before
    summary = (await rt.api.episode_get(episode_id))["episode"]["summary"]
    assert "refresh token" in summary.lower()  # the job did run on them

    # Restarted, the engine has only what it read while loading; the first job reads the
    # rest, and the next one nothing.
    await rt.stop()
    again = await make_runtime()
    asked = counting_reads(again, monkeypatch)
    await again.api.episode_regenerate(episode_id)
    await settle(again)
    first = set(asked) & set(ids)
    asked.clear()
    await again.api.episode_regenerate(episode_id)
    await settle(again)
    assert not set(asked) & set(ids), first


async def test_the_hook_hands_each_new_vector_over(
    make_runtime: Any,  # noqa: F811 - the fixture imported above
) -> None:
    rt = await make_runtime()
    first = (await remember(rt, AUTH[0], 3))["memory_id"]  # a seed: no job reads it

    async def no_read(ids: list[str]) -> dict[str, np.ndarray]:
        raise AssertionError(f"read from the store: {ids}")

    kept = await rt.episodes.engine.state.vectors.get([first], no_read)
    stored = await rt.service.vectors([first])
    # Tolerance: the store keeps the unit vector it was given; float32 rounding only.
    np.testing.assert_allclose(kept[first], stored[first], atol=1e-6)


async def test_a_forgotten_member_is_dropped(
    make_runtime: Any,  # noqa: F811 - the fixture imported above
) -> None:
    rt = await make_runtime()
    ids = await settled_members(rt, 3)
    cache = rt.episodes.engine.state.vectors
    found = await cache.get([ids[2]], rt.service.vectors)
    assert ids[2] in found
    await rt.api.forget(ids[2])
    assert ids[2] not in await cache.get([ids[2]], rt.service.vectors)


async def test_a_rewritten_summary_is_never_served_stale(
    make_runtime: Any,  # noqa: F811 - the fixture imported above
) -> None:
    """The summary memory keeps its id across rewrites: the engine's reads see each new vector."""
    rt = await make_runtime()
    ids = await settled_members(rt, 2)
    episode_id = await episode_of(rt, ids[0])
    summary_id = (await rt.api.episode_get(episode_id))["episode"]["summary_memory_id"]
    host = rt.episodes.engine.state.host
    before = (await host.get_vectors([summary_id]))[summary_id]  # read, and kept
    await remember(rt, AUTH[2], 6)  # joins: the summary is rewritten under the same id
    await settle(rt)
    assert (await rt.api.episode_get(episode_id))["episode"]["memory_count"] == 3
    stored = (await rt.service.vectors([summary_id]))[summary_id]
    assert not np.allclose(before, stored)  # the text, and so the vector, changed
    np.testing.assert_array_equal((await host.get_vectors([summary_id]))[summary_id], stored)
