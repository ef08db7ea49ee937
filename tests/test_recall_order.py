"""Recall order: results come in the order of the score they show, and the same query on the
same store always returns the same list (issue 16, point 5)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tribalmemory.config import config_from_dict
from tribalmemory.models import ENGINE_WRITTEN, SourceType
from tribalmemory.runtime import start_runtime
from tribalmemory.shapes import RecallRequest
from tribalmemory.storage.base import (
    ENGINE_SHARE,
    ENGINE_SPARSE,
    SPARSE,
    MemoryFilter,
    engine_share,
    fuse_kinds,
    kind_filters,
    rrf_fuse,
    sparse_field,
    split_fused,
)


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Any]:
    """The memory service of a runtime with episodes off, in this test's event loop."""
    config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": {"enabled": False}})
    runtime = await start_runtime(config)
    yield runtime.service
    await runtime.stop()


WORDS = (
    "deploy staging database port migration token refresh queue worker cache redis postgres"
).split()


def test_rrf_fuse_breaks_ties_by_the_dense_rank_whatever_the_input_order() -> None:
    dense = [("b", 0.9), ("a", 0.8), ("c", 0.7)]
    sparse = [("a", 5.0), ("b", 4.0), ("d", 3.0)]  # c and d: rank 3 in one list each
    fused = rrf_fuse([dense, sparse])
    # a and b: ranks 1 + 2 either way; b is first in the dense list. c and d: one rank 3 each;
    # c's is the dense one.
    assert [pid for pid, _ in fused] == ["b", "a", "c", "d"]
    assert fused[0][1] == fused[1][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2][1] == fused[3][1] == pytest.approx(1 / 63)
    for _ in range(5):  # the order the engine lists equal scores in does not matter
        shuffled = [random.sample(dense, len(dense)), random.sample(sparse, len(sparse))]
        assert rrf_fuse(shuffled) == fused


def test_rrf_fuse_ranks_do_not_depend_on_the_ids() -> None:
    """Equal scores share a rank, so renaming the points (a store of the same memories under
    other random ids) gives the same ranking, even where a list scores points alike."""
    dense = [("p", 0.9), ("q", 0.8), ("r", 0.7), ("s", 0.6)]
    sparse = [("s", 2.0), ("r", 2.0), ("q", 2.0)]  # one BM25 score for three texts
    renamed = {"p": "z", "q": "y", "r": "x", "s": "w"}
    fused = [pid for pid, _ in rrf_fuse([dense, sparse])]
    again = [
        pid
        for pid, _ in rrf_fuse(
            [[(renamed[p], v) for p, v in dense], [(renamed[p], v) for p, v in sparse]]
        )
    ]
    assert fused == ["q", "r", "s", "p"]  # q, r, s all rank 1 in BM25; then their dense ranks
    assert again == [renamed[p] for p in fused]


def test_rrf_fuse_orders_copies_of_one_text_by_id() -> None:
    """Two points every list scores alike: only their ids can order them."""
    fused = rrf_fuse([[("b", 0.5), ("a", 0.5)], [("b", 1.0), ("a", 1.0)]])
    assert [pid for pid, _ in fused] == ["a", "b"]


@pytest.fixture
async def crowded(service: Any) -> Any:
    """400 memories made of the same 12 words: many equal BM25 and fused scores."""
    rng = random.Random(3)
    items = [
        {"content": " ".join(rng.choice(WORDS) for _ in range(6)), "skip_dedup": True}
        for _ in range(400)
    ]
    await service.remember_batch(items)
    return service


def queries(count: int = 30) -> list[str]:
    rng = random.Random(5)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) for _ in range(count)]


async def test_recall_is_ordered_by_the_shown_score(crowded: Any) -> None:
    for query in queries():
        hits = await crowded.recall(RecallRequest(query=query, limit=10))
        scores = [hit.similarity_score for hit in hits]
        assert len(hits) == 10
        assert scores == sorted(scores, reverse=True), f"{query!r}: not in score order"
        for a, b in zip(hits, hits[1:], strict=False):
            if a.similarity_score == b.similarity_score:
                assert a.memory.id < b.memory.id, "equal scores are ordered by memory id"


async def test_the_same_query_always_returns_the_same_list(crowded: Any) -> None:
    for query in queries():
        lists = set()
        for _ in range(20):
            hits = await crowded.recall(RecallRequest(query=query, limit=10))
            lists.add(tuple((hit.memory.id, hit.similarity_score) for hit in hits))
        assert len(lists) == 1, f"{query!r}: {len(lists)} different lists in 20 runs"


async def test_min_relevance_filters_on_the_shown_score(crowded: Any) -> None:
    every = await crowded.recall(RecallRequest(query="redis cache", limit=50))
    floor = every[len(every) // 2].similarity_score
    kept = await crowded.recall(RecallRequest(query="redis cache", limit=50, min_relevance=floor))
    assert kept == [hit for hit in every if hit.similarity_score >= floor]
    assert all(hit.similarity_score >= floor for hit in kept) and len(kept) < len(every)


def test_rrf_fuse_ranks_the_points_apart_as_if_the_others_stood_alone() -> None:
    """Points of ``apart`` never move the others' ranks: those fuse as without them, and a
    point of ``apart`` takes the rank it would have among them."""
    dense = [("s", 0.99), ("a", 0.9), ("c", 0.85), ("b", 0.8)]
    sparse = [("b", 3.0), ("c", 2.0), ("a", 1.0)]  # s: found by the dense list only
    alone = rrf_fuse([[h for h in dense if h[0] != "s"], sparse])
    fused = rrf_fuse([dense, sparse], apart=frozenset({"s"}))
    assert [pid for pid, _ in fused if pid != "s"] == [pid for pid, _ in alone] == ["a", "b", "c"]
    assert dict(fused)["s"] == pytest.approx(1 / 61)  # dense rank 1 among a, b, c; no BM25
    assert dict(fused)["a"] == dict(alone)["a"]
    # without ``apart``, s pushes the dense ranks down by one: b (ranks 4 + 1) passes a (2 + 3)
    assert [pid for pid, _ in rrf_fuse([dense, sparse]) if pid != "s"] == ["b", "a", "c"]


def test_a_search_fetches_written_and_engine_written_memories_apart() -> None:
    """Each part of a search gets its own filter (and so its own depth of candidates); a part
    the request's filter leaves nothing of is not searched."""
    engine_types = sorted(ENGINE_WRITTEN)
    plain, engine = kind_filters(None)
    assert plain is not None and engine is not None
    assert plain.source_types is None and plain.exclude_source_types == engine_types
    assert engine.source_types == engine_types and engine.exclude_source_types is None
    summaries = MemoryFilter(source_types=[SourceType.EPISODE_SUMMARY], tags_any=["ops"])
    assert kind_filters(summaries) == (None, summaries)
    mine = MemoryFilter(source_types=[SourceType.USER_EXPLICIT, SourceType.LESSON])
    plain, engine = kind_filters(mine)
    assert plain is not None and plain.source_types == [SourceType.USER_EXPLICIT]
    assert engine is not None and engine.source_types == [SourceType.LESSON]
    plain, engine = kind_filters(
        MemoryFilter(exclude_source_types=[SourceType.EPISODE_SUMMARY], project="p")
    )
    assert plain is not None and plain.exclude_source_types == engine_types
    assert engine is not None and engine.project == "p"
    assert SourceType.EPISODE_SUMMARY not in (engine.source_types or [])
    assert kind_filters(MemoryFilter(exclude_source_types=engine_types))[1] is None


def test_engine_written_memories_keep_their_bm25_in_a_field_of_their_own() -> None:
    """Each kind's BM25 vector goes to its own sparse field (so each field's IDF counts that
    kind only); on a server too old to add the field, every vector stays in ``bm25``."""
    for kind in SourceType:
        expected = ENGINE_SPARSE if kind in ENGINE_WRITTEN else SPARSE
        assert sparse_field(kind) == expected
        assert sparse_field(kind, SPARSE) == SPARSE
    assert {sparse_field(k) for k in ENGINE_WRITTEN} == {ENGINE_SPARSE} != {SPARSE}
    assert sparse_field(SourceType.USER_EXPLICIT) == sparse_field(SourceType.LEGACY) == SPARSE


def test_engine_written_memories_never_take_a_written_ones_place_among_the_candidates() -> None:
    """``limit`` written memories come back whatever the engine wrote, with the engine-written
    ones that rank among them (at most one for every ENGINE_SHARE asked for, at least one)."""
    written = [[("a", 0.9), ("b", 0.8), ("c", 0.7)], [("a", 3.0), ("b", 2.0), ("c", 1.0)]]
    engine = [[("s", 0.99), ("t", 0.98), ("u", 0.97)], [("s", 9.0), ("t", 8.0), ("u", 7.0)]]
    # s, t and u each take rank 1 among the written ones in both lists, as a does: equal
    # fused scores go by the dense rank (1 for all four), then by id
    assert [pid for pid, _ in fuse_kinds(written, engine, 2)] == ["a", "s", "b"]
    assert [pid for pid, _ in fuse_kinds(written, engine, 3)] == ["a", "s", "b", "c"]
    assert engine_share(50) == 50 // ENGINE_SHARE and engine_share(1) == 1
    assert [pid for pid, _ in fuse_kinds(written, [], 2)] == ["a", "b"]
    assert [pid for pid, _ in fuse_kinds([], engine, 2)] == ["s", "t"]


def test_lists_of_both_kinds_are_split_by_id_and_the_written_ones_cut_to_the_depth() -> None:
    """One list of both kinds (the embedded store's): the written memories keep ``depth`` of
    their own whatever the engine wrote above them; one kind alone is a plain fusion."""
    dense = [("s", 0.99), ("a", 0.9), ("t", 0.88), ("b", 0.8), ("c", 0.7)]
    sparse = [("t", 9.0), ("b", 3.0), ("a", 2.0), ("s", 1.0), ("c", 0.5)]
    apart = frozenset({"s", "t"})
    fused = split_fused([dense, sparse], apart, depth=2, limit=10)
    # a and b are the two written ones each list keeps; c is past the depth in both
    assert (
        fuse_kinds(
            [[("a", 0.9), ("b", 0.8)], [("b", 3.0), ("a", 2.0)]],
            [[("s", 0.99), ("t", 0.88)], [("t", 9.0), ("s", 1.0)]],
            10,
        )
        == fused
    )
    assert "c" not in dict(fused)
    assert split_fused([dense, sparse], frozenset(), 5, 3) == rrf_fuse([dense, sparse])[:3]
    only = [[("s", 0.99), ("t", 0.88)], [("t", 9.0), ("s", 1.0)]]
    assert split_fused(only, apart, 5, 3) == rrf_fuse(only)
