"""Members' features kept by the engine (episodes/feature_cache.py): a memory is tokenised once,
a kept feature is served only for the very text, tags, author, time and vector it came from,
and an episode rebuilt from kept features is the episode built from fresh ones."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from test_episode_vectors import one_episode, settled_members
from test_episodes_engine import (  # noqa: F401 - fixtures
    clock,
    make_runtime,
    settle,
)

from tribalmemory.episodes.feature_cache import FeatureCache
from tribalmemory.models import Memory, SourceType

WHEN = datetime(2025, 3, 3, 10, tzinfo=UTC)


def memory(memory_id: str = "m1", content: str = "Kestrel deploys fail on quota") -> Memory:
    return Memory(
        id=memory_id,
        content=content,
        source_type=SourceType.USER_EXPLICIT,
        source_instance="alice",
        tags=["deploy"],
        context=None,
        created_at=WHEN,
        updated_at=WHEN,
    )


def vector(value: float = 1.0) -> np.ndarray:
    return np.full(4, value, dtype=np.float32)


def test_kept_features_serve_only_the_inputs_they_came_from() -> None:
    cache, kept = FeatureCache(), object()
    original, given = memory(), vector()
    cache.put(original, given, kept)  # type: ignore[arg-type] - any object stands for features
    assert cache.get(memory(), given) is kept  # read again: an equal memory
    assert cache.get(memory(), vector()) is kept  # an equal vector, another array
    changed = [
        replace(original, content="Kestrel deploys fail on disk"),
        replace(original, tags=["deploy", "infra"]),
        replace(original, source_instance="bob"),
        replace(original, created_at=datetime(2025, 3, 4, tzinfo=UTC)),
    ]
    for other in changed:
        assert cache.get(other, given) is None, other
    assert cache.get(original, vector(0.5)) is None  # re-embedded under another model
    assert cache.get(memory("m2"), given) is None


def test_the_least_recently_used_features_leave_first() -> None:
    cache = FeatureCache(capacity=2)
    for name in ("a", "b"):
        cache.put(memory(name), vector(), name)  # type: ignore[arg-type]
    assert cache.get(memory("a"), vector()) == "a"  # "a" used: "b" is now the oldest
    cache.put(memory("c"), vector(), "c")  # type: ignore[arg-type]
    assert len(cache) == 2
    assert cache.get(memory("b"), vector()) is None
    assert cache.get(memory("a"), vector()) == "a" and cache.get(memory("c"), vector()) == "c"
    cache.drop(["a"])
    assert cache.get(memory("a"), vector()) is None and len(cache) == 1


def counting_features(rt: Any, monkeypatch: Any) -> list[str]:
    """The ids whose features the engine computes from now on."""
    computed: list[str] = []
    matcher = rt.episodes.engine.state.matcher
    real = matcher.memory

    def memory_features(memory: Memory, vector: np.ndarray) -> Any:
        computed.append(memory.id)
        return real(memory, vector)

    monkeypatch.setattr(matcher, "memory", memory_features)
    return computed


async def test_an_episode_a_member_left_is_rebuilt_without_tokenising_the_others(
    make_runtime: Any,  # noqa: F811 - the fixture imported above
    monkeypatch: Any,
) -> None:
    rt = await make_runtime()
    ids, episode_id = await one_episode(rt, 4)
    state = rt.episodes.engine.state
    computed = counting_features(rt, monkeypatch)

    await rt.api.episode_remove(episode_id, ids[3])
    await settle(rt)
    assert computed == []  # every remaining member's features were kept from its arrival

    # ... and the rebuilt episode is the one fresh features give, to the bit
    rebuilt = state.active[episode_id]
    members = await rt.service.get_many(ids[:3])
    vectors = await rt.service.vectors(ids[:3])
    fresh = state.matcher.episode(
        episode_id, [state.matcher.memory(m, vectors[m.id]) for m in members]
    )
    assert rebuilt.member_ids == fresh.member_ids and rebuilt.term_counts == fresh.term_counts
    np.testing.assert_array_equal(rebuilt.vector_sum, fresh.vector_sum)
    np.testing.assert_array_equal(rebuilt.vectors, fresh.vectors)


async def test_a_forgotten_memory_leaves_the_kept_features(
    make_runtime: Any,  # noqa: F811 - the fixture imported above
) -> None:
    rt = await make_runtime()
    ids = await settled_members(rt, 3)
    state = rt.episodes.engine.state
    gone = (await rt.service.get_many([ids[2]]))[0]
    vectors = await rt.service.vectors([ids[2]])
    assert state.kept_features.get(gone, vectors[ids[2]]) is not None
    await rt.api.forget(ids[2])
    assert state.kept_features.get(gone, vectors[ids[2]]) is None
