"""The seed pool: seeds by project in time order, and the recent ones a decision scores."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np

from tribalmemory.episodes.detector import MemoryFeatures, eligible_seeds
from tribalmemory.episodes.seeds import SeedPool

T0 = datetime(2026, 3, 1, tzinfo=UTC)
HOUR = 3600.0


def seed(memory_id: str, hours: float) -> MemoryFeatures:
    return MemoryFeatures.from_text(
        memory_id, np.ones(4) / 2, f"note {memory_id}", (), "agent", T0 + timedelta(hours=hours)
    )


def pool_of(projects: dict[str, str]) -> SeedPool:
    return SeedPool(lambda memory_id: projects.get(memory_id, "default"))


def test_recent_gives_the_latest_seeds_of_the_project_within_the_window_either_side() -> None:
    projects = {f"b{k}": "billing" for k in range(3)}
    pool = pool_of(projects)
    for k, hours in enumerate((0, 10, 20)):
        pool[f"a{k}"] = seed(f"a{k}", hours)
        pool[f"b{k}"] = seed(f"b{k}", hours)
    around = (T0 + timedelta(hours=12)).timestamp()
    ids = [s.id for s in pool.recent("default", around, 8 * HOUR, limit=10)]
    assert ids == ["a1", "a2"]  # 0 h is 12 h before, out of the window; 20 h is 8 h after, in
    assert [s.id for s in pool.recent("default", around, 12 * HOUR, limit=2)] == ["a1", "a2"]
    assert [s.id for s in pool.recent("default", around, 12 * HOUR, limit=3)] == [
        "a0",
        "a1",
        "a2",
    ]
    assert [s.id for s in pool.recent("default", around, 12 * HOUR, 3, exclude="a1")] == [
        "a0",
        "a2",
    ]
    assert [s.id for s in pool.recent("billing", around, 8 * HOUR, limit=10)] == ["b1", "b2"]
    assert pool.recent("elsewhere", around, 8 * HOUR, limit=10) == []


def test_pop_expire_and_reset_keep_the_index_and_the_mapping_in_step() -> None:
    pool = pool_of({})
    for k in range(6):
        pool[f"m{k}"] = seed(f"m{k}", k)
    assert pool.pop("m3") is not None and pool.pop("m3") is None and "m3" not in pool
    pool["m1"] = seed("m1", 10)  # set again with a later time: it moves, never doubles
    assert pool.expire((T0 + timedelta(hours=2)).timestamp()) == ["m0"]  # m2 at 2 h stays
    assert sorted(pool) == ["m1", "m2", "m4", "m5"] and len(pool) == 4
    around = (T0 + timedelta(hours=5)).timestamp()
    assert [s.id for s in pool.recent("default", around, 10 * HOUR, 10)] == [
        "m2",
        "m4",
        "m5",
        "m1",
    ]
    pool.clear()
    assert len(pool) == 0 and pool.recent("default", around, 10 * HOUR, 10) == []


def test_recent_matches_the_detectors_own_filter_and_sort_on_a_shuffled_pool() -> None:
    """What the decision scored before the pool had an index: every seed of the project in the
    window (:func:`eligible_seeds`), the most recent ``limit`` of them."""
    rng = random.Random(3)
    projects = {f"m{k}": rng.choice(["p1", "p2"]) for k in range(400)}
    pool = pool_of(projects)
    seeds = [seed(f"m{k}", rng.uniform(0, 24 * 30)) for k in range(400)]
    for s in rng.sample(seeds, len(seeds)):
        pool[s.id] = s
    for _ in range(50):
        at = T0 + timedelta(hours=rng.uniform(0, 24 * 30))
        mine = [s for s in seeds if projects[s.id] == "p1"]
        expected = sorted(eligible_seeds(mine, at, 3), key=lambda s: s.created_at)[-40:]
        got = pool.recent("p1", at.timestamp(), 3 * 24 * HOUR, limit=40)
        assert [s.id for s in got] == [s.id for s in expected]
