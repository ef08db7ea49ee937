"""The storage contract, run against both backends.

``edge``: the embedded Qdrant Edge store in a temporary folder. ``server``: the Qdrant server
code path, through qdrant-client's in-process mode in a folder (``path=``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tribalmemory.config import Config
from tribalmemory.embeddings.embedder import BUNDLED_DIM, BUNDLED_MODEL, Embedder, load_embedder
from tribalmemory.models import Memory, SourceType, new_memory_id
from tribalmemory.shapes import RememberRequest
from tribalmemory.storage import (
    EdgeStore,
    MemoryFilter,
    ModelMismatchError,
    StorageError,
    StoreLockedError,
    open_store,
    reembed,
)
from tribalmemory.storage.base import whole_ties
from tribalmemory.storage.reembed import reembed_store

BACKENDS = ["edge", "server"]
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[1]

Opener = Callable[..., Any]


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return load_embedder()


def open_backend(
    backend: str,
    folder: Path,
    model_name: str = BUNDLED_MODEL,
    dim: int = BUNDLED_DIM,
    **kwargs: Any,
) -> Any:
    if backend == "edge":
        return EdgeStore.open(folder / "store", model_name, dim, **kwargs)
    from tribalmemory.storage.server import ServerStore

    return ServerStore.open_local(folder / "qdrant", "memories", model_name, dim, **kwargs)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def opener(backend: str, tmp_path: Path) -> Iterator[Opener]:
    """Opens the test's store (same location every time); closes what is left open."""
    opened: list[Any] = []

    def _open(model_name: str = BUNDLED_MODEL, dim: int = BUNDLED_DIM, **kwargs: Any) -> Any:
        store = open_backend(backend, tmp_path, model_name, dim, **kwargs)
        opened.append(store)
        return store

    yield _open
    for store in opened:
        store.close()


@pytest.fixture(scope="module", params=BACKENDS)
def scratch(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    store = open_backend(request.param, tmp_path_factory.mktemp(f"scratch-{request.param}"))
    yield store
    store.close()


@pytest.fixture
def store(scratch: Any) -> Any:
    """An empty store (one per backend, emptied between tests: creating one costs ~0.5 s)."""
    scratch.delete([m.id for m in scratch.scroll()])
    assert scratch.count() == 0
    return scratch


def memory(content: str, **fields: Any) -> Memory:
    values: dict[str, Any] = {
        "id": new_memory_id(),
        "content": content,
        "source_type": SourceType.USER_EXPLICIT,
        "source_instance": "test",
        "tags": [],
        "context": None,
        "created_at": T0,
        "updated_at": T0,
        "supersedes": None,
        "metadata": {},
    }
    values.update(fields)
    return Memory(**values)


def unit_vectors(count: int, seed: int = 0, dim: int = BUNDLED_DIM) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


# -- corpus for filters: six memories with distinct tags, types, times and metadata ---------

CORPUS = [
    ("alpha notes", ["red"], SourceType.USER_EXPLICIT, 0, {"episode_id": "ep-1"}),
    ("beta notes", ["red", "blue"], SourceType.AUTO_CAPTURE, 1, {"episode_id": "ep-1"}),
    ("gamma notes", ["blue"], SourceType.CORRECTION, 2, {"episode_id": "ep-2"}),
    ("delta notes", [], SourceType.EPISODE_SUMMARY, 3, {"episode_id": "ep-2", "kind": "x"}),
    ("epsilon notes", ["green"], SourceType.LEGACY, 4, {}),
    ("zeta notes", ["green", "red"], SourceType.AUTO_CAPTURE, 5, {"kind": "x"}),
]


def corpus_memories() -> list[Memory]:
    return [
        memory(
            text, tags=tags, source_type=kind, created_at=T0 + timedelta(days=day), metadata=meta
        )
        for text, tags, kind, day, meta in CORPUS
    ]


@pytest.fixture
def corpus(store: Any) -> list[Memory]:
    memories = corpus_memories()
    store.upsert(memories, unit_vectors(len(memories)))
    return memories


@pytest.fixture(scope="module", params=BACKENDS)
def corpus_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """One read-only corpus store per backend, shared by the filter tests."""
    store = open_backend(request.param, tmp_path_factory.mktemp(request.param))
    memories = corpus_memories()
    store.upsert(memories, unit_vectors(len(memories)))
    yield store
    store.close()


def names(memories: list[Memory]) -> set[str]:
    return {m.content.split()[0] for m in memories}


FILTER_CASES: list[tuple[str, MemoryFilter, set[str]]] = [
    ("tags any", MemoryFilter(tags_any=["blue", "green"]), {"beta", "gamma", "epsilon", "zeta"}),
    (
        "source types",
        MemoryFilter(source_types=[SourceType.AUTO_CAPTURE, SourceType.LEGACY]),
        {"beta", "epsilon", "zeta"},
    ),
    (
        "exclude",
        MemoryFilter(exclude_source_types=[SourceType.EPISODE_SUMMARY, SourceType.AUTO_CAPTURE]),
        {"alpha", "gamma", "epsilon"},
    ),
    ("after (inclusive)", MemoryFilter(after=T0 + timedelta(days=4)), {"epsilon", "zeta"}),
    ("before (exclusive)", MemoryFilter(before=T0 + timedelta(days=1)), {"alpha"}),
    (
        "after+before, other zone",
        MemoryFilter(
            after=(T0 + timedelta(days=1)).astimezone(timezone(timedelta(hours=-7))),
            before=T0 + timedelta(days=3),
        ),
        {"beta", "gamma"},
    ),
    ("metadata", MemoryFilter(metadata_equals={"episode_id": "ep-2"}), {"gamma", "delta"}),
    (
        "metadata two keys",
        MemoryFilter(metadata_equals={"episode_id": "ep-2", "kind": "x"}),
        {"delta"},
    ),
    (
        "combined",
        MemoryFilter(
            tags_any=["red"],
            exclude_source_types=[SourceType.USER_EXPLICIT],
            after=T0 + timedelta(days=1),
        ),
        {"beta", "zeta"},
    ),
    ("empty filter", MemoryFilter(), {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}),
]


# -- writes and reads -------------------------------------------------------------------------


def test_round_trip_keeps_every_field(store: Any) -> None:
    ist = timezone(timedelta(hours=5, minutes=30))
    original = memory(
        "Deploy window is Tuesday 14:00 UTC",
        source_type=SourceType.CORRECTION,
        source_instance="laptop-1",
        tags=["ops", "deploy"],
        context="from the standup",
        created_at=datetime(2024, 12, 31, 23, 59, 58, 123456, tzinfo=ist),
        updated_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
        supersedes=new_memory_id(),
        metadata={
            "episode_id": "ep-7",
            "count": 3,
            "ok": True,
            "none": None,
            "nested": {"list": [1, "two", None], "f": 1.5},
        },
    )
    store.upsert([original], unit_vectors(1))
    [loaded] = store.get([original.id])
    assert loaded == original  # dataclass equality; datetimes compare as instants
    assert loaded.created_at.utcoffset() == timedelta(0)
    assert loaded.created_at == datetime(2024, 12, 31, 18, 29, 58, 123456, tzinfo=UTC)
    assert loaded.metadata["nested"] == {"list": [1, "two", None], "f": 1.5}


def test_get_follows_requested_order_and_skips_unknown(store: Any, corpus: list[Memory]) -> None:
    a, b, c = corpus[0], corpus[1], corpus[2]
    got = store.get([c.id, a.id, str(uuid.uuid4()), "not-a-uuid", b.id.upper()])
    assert [m.id for m in got] == [c.id, a.id, b.id]
    assert store.get([]) == []


def test_upsert_replaces_by_id(store: Any) -> None:
    first = memory("first version")
    store.upsert([first], unit_vectors(1))
    second = memory("second version", id=first.id, tags=["new"])
    store.upsert([second], unit_vectors(1, seed=1))
    assert store.count() == 1
    assert store.get([first.id]) == [second]
    assert store.count(MemoryFilter(tags_any=["new"])) == 1


def test_get_vectors_returns_stored_unit_vectors(store: Any) -> None:
    memories = [memory("one"), memory("two")]
    vectors = unit_vectors(2) * 3.0  # not unit length: cosine storage normalises
    store.upsert(memories, vectors)
    got = store.get_vectors([memories[1].id, str(uuid.uuid4())])
    assert list(got) == [memories[1].id]
    np.testing.assert_allclose(got[memories[1].id], vectors[1] / 3.0, atol=1e-5)


def test_delete_removes_and_ignores_unknown(store: Any, corpus: list[Memory]) -> None:
    store.delete([corpus[0].id, str(uuid.uuid4()), "not-a-uuid"])
    assert store.count() == len(corpus) - 1
    assert store.get([corpus[0].id, corpus[1].id]) == [corpus[1]]
    store.delete([])
    assert store.count() == len(corpus) - 1


def test_upsert_rejects_bad_input(store: Any) -> None:
    with pytest.raises(ValueError, match="shape"):
        store.upsert([memory("x")], unit_vectors(1, dim=8))
    with pytest.raises(ValueError, match="shape"):
        store.upsert([memory("x"), memory("y")], unit_vectors(1))
    with pytest.raises(ValueError, match="UUID"):
        store.upsert([memory("x", id="legacy-17")], unit_vectors(1))
    with pytest.raises(ValueError, match="metadata key"):
        store.count(MemoryFilter(metadata_equals={"a.b": "c"}))
    assert store.count() == 0


# -- filters ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "where", "expected"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_count_with_filter(
    corpus_store: Any, case: str, where: MemoryFilter, expected: set[str]
) -> None:
    assert corpus_store.count(where) == len(expected)
    assert names(list(corpus_store.scroll(where, batch_size=2))) == expected


@pytest.mark.parametrize(
    ("case", "where", "expected"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_search_applies_filter(
    corpus_store: Any, case: str, where: MemoryFilter, expected: set[str]
) -> None:
    query = unit_vectors(1, seed=9)[0]
    assert names([h.memory for h in corpus_store.search("notes", query, 20, where)]) == expected
    assert names([h.memory for h in corpus_store.dense_search(query, 20, where)]) == expected


def test_ids_filter(corpus_store: Any) -> None:
    ids = [m.id for m in corpus_store.scroll()]
    assert corpus_store.count(MemoryFilter(ids=[ids[2], ids[4].upper()])) == 2
    assert names(corpus_store.get(ids[2:3])) == names(
        list(corpus_store.scroll(MemoryFilter(ids=ids[2:3])))
    )
    assert corpus_store.count(MemoryFilter(ids=[])) == 0  # an empty id list matches nothing
    assert corpus_store.count(MemoryFilter(ids=["not-a-uuid"])) == 0


def test_scroll_returns_each_memory_once(store: Any) -> None:
    memories = [memory(f"memory {i}") for i in range(11)]
    store.upsert(memories, unit_vectors(11))
    seen = [m.id for m in store.scroll(batch_size=3)]
    assert sorted(seen) == sorted(m.id for m in memories)


# -- search -----------------------------------------------------------------------------------

TARGET = "Priya owns Krakatoa, the internal codename for the ledger migration."
DISTRACTORS = [
    "When production breaks at night, alert the SRE on call via PagerDuty.",
    "Severity-one problems go straight to the duty commander.",
    "Downtime postmortems are written within two business days.",
    "If the website goes down, phone Marco; he runs the emergency bridge.",
    "Service interruptions must be announced in the status channel.",
    "During an emergency, the platform lead decides on rollbacks.",
    "Alerts for the API gateway go to the infrastructure rotation.",
    "Customers are notified by email when the service is unavailable.",
    "The team lunch is on Fridays at the Thai place downstairs.",
    "Alice prefers dark mode and vim keybindings.",
]
QUERY = "site outage escalation: who should be paged first? Krakatoa"


def test_hybrid_lifts_exact_lexical_match(store: Any, embedder: Embedder) -> None:
    memories = [memory(text) for text in [TARGET, *DISTRACTORS]]
    store.upsert(memories, embedder.embed([m.content for m in memories]))
    query = embedder.embed_one(QUERY)
    dense = [h.memory.content for h in store.dense_search(query, 11)]
    assert dense.index(TARGET) >= 3, "the test needs a target that dense search ranks low"
    hits = store.search(QUERY, query, 5)
    assert hits[0].memory.content == TARGET
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_search_cosine_is_dense_cosine(store: Any, embedder: Embedder) -> None:
    memories = [memory(text) for text in [TARGET, *DISTRACTORS]]
    vectors = embedder.embed([m.content for m in memories])
    store.upsert(memories, vectors)
    query = embedder.embed_one(QUERY)
    expected = {m.id: float(v @ query) for m, v in zip(memories, vectors, strict=True)}
    hits = store.search(QUERY, query, 11)
    assert len(hits) == 11
    for hit in hits:
        assert hit.cosine == pytest.approx(expected[hit.memory.id], abs=1e-4)
        assert 0 < hit.score < 0.05  # an RRF score (1 / (60 + rank) per list), not a cosine
    dense = store.dense_search(query, 3)
    assert [h.memory.id for h in dense] == sorted(expected, key=expected.get, reverse=True)[:3]
    for hit in dense:
        assert hit.score == hit.cosine == pytest.approx(expected[hit.memory.id], abs=1e-4)


@pytest.mark.parametrize("text", ["", "the of and is", "   "])
def test_stopword_query_falls_back_to_dense(corpus_store: Any, text: str) -> None:
    query = unit_vectors(1, seed=5)[0]
    hybrid = [h.memory.id for h in corpus_store.search(text, query, 4)]
    dense = [h.memory.id for h in corpus_store.dense_search(query, 4)]
    assert len(hybrid) == 4 and hybrid == dense


def test_term_search_finds_the_written_memories_sharing_a_term(store: Any) -> None:
    pipeline = memory("The heron pipeline failed twice.", tags=["ops"])
    nest = memory("Herons nest by the river.")  # stemmed: herons is heron
    plain = memory("A plain note about the river.")
    summary = memory("Heron pipeline, summed up.", source_type=SourceType.EPISODE_SUMMARY)
    store.upsert([pipeline, nest, plain, summary], unit_vectors(4))

    found = store.term_search("heron", 10)
    assert {m.id for m in found} == {pipeline.id, nest.id}  # an engine-written one is not
    assert {m.content for m in found} == {pipeline.content, nest.content}  # whole memories
    assert len(store.term_search("heron", 1)) == 1
    assert [m.id for m in store.term_search("heron", 10, MemoryFilter(tags_any=["ops"]))] == [
        pipeline.id
    ]
    only_summaries = MemoryFilter(source_types=[SourceType.EPISODE_SUMMARY])
    assert store.term_search("heron", 10, only_summaries) == []
    assert store.term_search("the of and", 10) == []  # no term left
    assert store.term_search("heron", 0) == []


def test_non_positive_limit_returns_nothing(corpus_store: Any) -> None:
    query = unit_vectors(1)[0]
    assert corpus_store.search("notes", query, 0) == []
    assert corpus_store.dense_search(query, 0) == []


def test_concurrent_use_from_threads(store: Any) -> None:
    errors: list[BaseException] = []
    vectors = unit_vectors(40)

    def writer(start: int) -> None:
        try:
            for i in range(start, start + 20):
                store.upsert([memory(f"thread memory {i}")], vectors[i : i + 1])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for i in range(20):
                store.search("thread memory", vectors[i], 5)
                store.count(MemoryFilter(tags_any=["none"]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(0,)),
        threading.Thread(target=writer, args=(20,)),
        threading.Thread(target=reader),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.count() == 40


# -- lifecycle --------------------------------------------------------------------------------


def test_reopen_returns_everything(opener: Opener) -> None:
    first = opener()
    memories = [memory(f"persisted {i}", tags=[f"t{i % 3}"]) for i in range(30)]
    first.upsert(memories, unit_vectors(30))
    first.delete([memories[0].id])
    first.close()
    second = opener()
    assert second.count() == 29
    assert second.get([m.id for m in memories]) == memories[1:]
    assert second.count(MemoryFilter(tags_any=["t1"])) == 10
    assert second.info.model_name == BUNDLED_MODEL and second.info.dim == BUNDLED_DIM


def test_closed_store_refuses_calls(opener: Opener) -> None:
    store = opener()
    store.close()
    store.close()  # idempotent
    with pytest.raises(StorageError, match="closed"):
        store.count()


def test_other_model_is_refused(opener: Opener) -> None:
    opener().close()
    with pytest.raises(ModelMismatchError) as info:
        opener("BAAI/bge-small-en-v1.5", 384)
    message = str(info.value)
    assert "BAAI/bge-small-en-v1.5" in message and BUNDLED_MODEL in message
    assert "tribalmemory reembed" in message
    with pytest.raises(ModelMismatchError, match="128 dims"):
        opener(BUNDLED_MODEL, 128)


def test_second_open_is_locked(opener: Opener, tmp_path: Path) -> None:
    opener()
    with pytest.raises(StoreLockedError) as info:
        opener()
    assert str(tmp_path) in str(info.value) and "daemon" in str(info.value)


def _child(backend: str, folder: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = f"""
import os, signal, sys, numpy as np
sys.path.insert(0, {str(REPO)!r})
from pathlib import Path
from tests.test_storage_contract import open_backend, memory, unit_vectors
store = open_backend({backend!r}, Path({str(folder)!r}))
{body}
"""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def test_upsert_survives_kill_9(backend: str, tmp_path: Path) -> None:
    body = """
memories = [memory(f"durable {i}") for i in range(50)]
store.upsert(memories, unit_vectors(50))
print(memories[-1].id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
    result = _child(backend, tmp_path, body)
    assert result.returncode == -signal.SIGKILL, result.stderr
    last_id = result.stdout.strip()
    store = open_backend(backend, tmp_path)
    try:
        assert store.count() == 50
        assert [m.content for m in store.get([last_id])] == ["durable 49"]
    finally:
        store.close()


def test_edge_store_locked_by_another_process(tmp_path: Path) -> None:
    store = open_backend("edge", tmp_path)
    try:
        result = _child("edge", tmp_path, "print('opened')")
        assert result.returncode == 1 and "opened" not in result.stdout
        assert "StoreLockedError" in result.stderr
        assert f"pid {os.getpid()}" in result.stderr
    finally:
        store.close()


# -- reembed ----------------------------------------------------------------------------------


class ProjectedEmbedder:
    """Another 'model': the bundled embeddings projected to 64 dims."""

    model_name = "test/projected-64"
    dim = 64

    def __init__(self, base: Embedder) -> None:
        self.base = base
        self.matrix = np.random.default_rng(3).standard_normal((BUNDLED_DIM, 64))
        self.calls = 0

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        rows = self.base.embed(texts) @ self.matrix
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_reembed_keeps_payloads_and_records_model(opener: Opener, embedder: Embedder) -> None:
    first = opener()
    memories = [
        memory(text, tags=["x"], metadata={"episode_id": "ep-1"}) for text in [TARGET, *DISTRACTORS]
    ]
    first.upsert(memories, embedder.embed([m.content for m in memories]))
    first.close()

    new_model = ProjectedEmbedder(embedder)
    progress: list[tuple[int, int]] = []
    done = reembed_store(opener(check_model=False), new_model, lambda d, t: progress.append((d, t)))
    assert done == len(memories) and progress[-1] == (len(memories), len(memories))

    with pytest.raises(ModelMismatchError):
        opener()
    store = opener(new_model.model_name, new_model.dim)
    assert store.info.model_name == new_model.model_name and store.info.dim == 64
    assert store.get([m.id for m in memories]) == memories
    assert store.count(MemoryFilter(metadata_equals={"episode_id": "ep-1"})) == len(memories)
    vectors = store.get_vectors([memories[0].id])
    assert vectors[memories[0].id].shape == (64,)
    query = new_model.embed([QUERY])[0]
    assert store.search(QUERY, query, 1)[0].memory.content == TARGET


def test_reembed_from_config_replaces_the_shard(tmp_path: Path, embedder: Embedder) -> None:
    config = Config(data_dir=str(tmp_path))
    store = open_store(config, BUNDLED_MODEL, BUNDLED_DIM)
    assert isinstance(store, EdgeStore) and store.root == tmp_path / "store"
    memories = [memory(f"config memory {i}") for i in range(300)]  # more than one batch
    store.upsert(memories, unit_vectors(300))
    with pytest.raises(StoreLockedError):
        reembed(config, ProjectedEmbedder(embedder))
    store.close()

    progress: list[tuple[int, int]] = []
    assert reembed(config, ProjectedEmbedder(embedder), lambda d, t: progress.append((d, t))) == 300
    assert progress == [(256, 300), (300, 300)]
    meta = json.loads((tmp_path / "store" / "store.json").read_text())
    assert (meta["model_name"], meta["dim"], meta["shard"]) == ("test/projected-64", 64, "shard-2")
    assert sorted(p.name for p in (tmp_path / "store").iterdir() if p.is_dir()) == ["shard-2"]
    reopened = open_store(config, "test/projected-64", 64)
    try:
        assert reopened.count() == 300
    finally:
        reopened.close()


def test_failed_reembed_leaves_store_as_it_was(
    backend: str, tmp_path: Path, embedder: Embedder
) -> None:
    store = open_backend(backend, tmp_path)
    memories = [memory(f"kept {i}") for i in range(300)]
    store.upsert(memories, unit_vectors(300))
    store.close()

    class Failing(ProjectedEmbedder):
        def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
            if self.calls:
                raise RuntimeError("model crashed")
            return super().embed(texts, batch_size)

    with pytest.raises(RuntimeError, match="model crashed"):
        reembed_store(open_backend(backend, tmp_path, check_model=False), Failing(embedder))
    store = open_backend(backend, tmp_path)
    try:
        assert store.count() == 300 and store.info.dim == BUNDLED_DIM
        assert store.get([memories[0].id]) == [memories[0]]
    finally:
        store.close()


# -- embedded store upkeep: sealing segments at quiet moments ---------------------------------

TOPICS = [
    "billing",
    "auth",
    "deploy",
    "postgres",
    "cache",
    "search",
    "email",
    "queue",
    "payments",
    "invoices",
    "webhooks",
    "uploads",
    "reports",
    "sessions",
    "pricing",
]
PROBLEMS = [
    "times out under load",
    "returns stale results",
    "leaks memory after deploys",
    "double-charges on retry",
    "fails its health checks",
    "drops messages",
    "deadlocks at night",
    "logs secrets",
    "breaks on daylight saving time",
    "ignores the feature flag",
    "rejects unicode names",
    "retries forever",
]
CAUSES = [
    "a missing index",
    "an unbounded cache",
    "a tiny connection pool",
    "clock skew",
    "an N+1 query",
    "a stale DNS entry",
    "a race between workers",
    "a default timeout",
    "a schema change out of order",
    "an off-by-one cursor",
]
PEOPLE = ["Ana", "Bo", "Cy", "Di", "Eve", "Fay", "Gus", "Hal"]


def varied_texts(count: int) -> list[str]:
    """Distinct memories: topic, problem, cause and person vary independently."""
    rng = np.random.default_rng(17)
    seen: set[tuple[int, ...]] = set()
    texts = []
    while len(texts) < count:
        key = (
            int(rng.integers(15)),
            int(rng.integers(12)),
            int(rng.integers(10)),
            int(rng.integers(8)),
        )
        if key in seen:
            continue
        seen.add(key)
        topic, problem, cause, person = key
        texts.append(
            f"The {TOPICS[topic]} service {PROBLEMS[problem]}; {PEOPLE[person]} "
            f"traced it to {CAUSES[cause]}."
        )
    return texts


def ranking(store: Any, embedder: Embedder, queries: list[str]) -> list[list[tuple[str, float]]]:
    """Per query: the dense top-5 and the hybrid top-5 as (id, cosine); hybrid cosines are
    checked against the stored vectors."""
    vectors = embedder.embed(queries)
    out = []
    for text, vector in zip(queries, vectors, strict=True):
        out.append([(h.memory.id, h.cosine) for h in store.dense_search(vector, 5)])
        hybrid = store.search(text, vector, 5)
        stored = store.get_vectors([h.memory.id for h in hybrid])
        for hit in hybrid:
            assert hit.cosine == pytest.approx(float(stored[hit.memory.id] @ vector), abs=1e-5)
        out.append([(h.memory.id, h.cosine) for h in hybrid])
    return out


def assert_same_ranking(
    got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]
) -> None:
    """Dense and hybrid rankings identical, cosines exact. Sealing quantizes only the dense
    vectors (hits are rescored with the float ones), BM25's IDF is taken over the whole shard
    whatever its segments, and the fusion breaks ties the same way (:func:`rrf_fuse`), so nothing
    may move (measured: 16 of 16 runs identical)."""
    assert [[i for i, _ in hits] for hits in got] == [[i for i, _ in hits] for hits in want]
    for got_hits, want_hits in zip(got, want, strict=True):
        assert [c for _, c in got_hits] == pytest.approx([c for _, c in want_hits], abs=1e-5)


QUERIES = [
    "why does billing time out",
    "stale search results",
    "who filed OPS-17",
    "queue drops messages",
    "auth health checks failing",
]


def test_edge_reads_many_points_a_chunk_per_hold_of_its_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long read (a background job's 600 members) lets a request's call take the store's
    lock between chunks; the result is the same as one read's."""
    import tribalmemory.storage.edge.store as edge_store

    monkeypatch.setattr(edge_store, "READ_CHUNK", 4)
    store = EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
    try:
        memories = [memory(f"note {i}") for i in range(10)]
        vectors = unit_vectors(10)
        store.upsert(memories, vectors)
        holds: list[int] = []
        retrieve = store._shard.retrieve

        def counted(*args: Any) -> Any:
            assert store._lock._is_owned()  # every chunk under the lock
            holds.append(len(args[0]))
            return retrieve(*args)

        monkeypatch.setattr(store, "_shard", type("S", (), {"retrieve": staticmethod(counted)}))
        wanted = [m.id for m in reversed(memories)] + [str(uuid.uuid4())]
        assert store.get(wanted) == list(reversed(memories))
        assert holds == [4, 4, 3]  # 11 ids, at most 4 a hold of the lock
        got = store.get_vectors(wanted)
        assert list(got) == [m.id for m in reversed(memories)]
        np.testing.assert_allclose(np.stack(list(got.values())), vectors[::-1], atol=1e-5)
    finally:
        monkeypatch.undo()
        store.close()


def test_edge_optimize_seals_segments_without_changing_results(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tribalmemory.storage.edge.shard as edge_shard

    monkeypatch.setattr(edge_shard, "SEAL_SIZE", 100)
    store = EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
    try:
        texts = varied_texts(250)
        memories = [memory(t, tags=[t.split()[1]]) for t in texts]
        store.upsert(memories, embedder.embed(texts))
        before = ranking(store, embedder, QUERIES)
        assert store.optimize() is True  # the plain segment (250 > SEAL_SIZE) is sealed
        assert store.optimize() is False  # nothing left to do
        assert_same_ranking(ranking(store, embedder, QUERIES), before)
        assert store.count() == 250 and store.count(MemoryFilter(tags_any=["billing"])) == sum(
            t.split()[1] == "billing" for t in texts
        )
        assert store.get([memories[7].id]) == [memories[7]]
        extra = memory("The billing service times out again; ticket OPS-999 by Ana.")
        store.upsert([extra], embedder.embed([extra.content]))  # lands in a new plain segment
        assert store.dense_search(embedder.embed_one(extra.content), 1)[0].memory.id == extra.id
        store.close()
        store = EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
        assert store.count() == 251
        store.delete([extra.id])
        assert_same_ranking(ranking(store, embedder, QUERIES), before)
    finally:
        store.close()


def test_edge_store_with_older_settings_is_converted(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard written with the former settings (HNSW, no quantization) opens with the current
    ones; its next optimize() converts it and results stay the same."""
    import qdrant_edge as qe

    import tribalmemory.storage.edge.shard as edge_shard

    current = edge_shard.shard_config

    def former(dim: int) -> qe.EdgeConfig:  # as before; any size gets its HNSW graph
        config = current(dim)
        return qe.EdgeConfig(
            vectors=config.vectors,
            sparse_vectors=config.sparse_vectors,
            hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=64, full_scan_threshold=10000),
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1),
        )

    monkeypatch.setattr(edge_shard, "shard_config", former)
    texts = varied_texts(200)
    memories = [memory(t) for t in texts]
    with EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM) as old:
        old.upsert(memories, embedder.embed(texts))
        assert old.optimize() is True  # builds an HNSW segment, as the former version did
        before = ranking(old, embedder, QUERIES)
    monkeypatch.setattr(edge_shard, "shard_config", current)
    with EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM) as store:
        saved = json.loads((tmp_path / "store" / "shard-1" / "edge_config.json").read_text())
        assert saved["hnsw_config"]["m"] == 0 and "scalar" in saved["quantization_config"]
        assert store.optimize() is True  # the HNSW segment is rebuilt with the new settings
        assert_same_ranking(ranking(store, embedder, QUERIES), before)
        assert store.get([m.id for m in memories]) == memories


def test_edge_needs_maintenance_after_writes_when_idle_or_many_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tribalmemory.storage.edge.store as edge_store

    store = EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
    try:
        assert store.needs_maintenance(0.0)  # just opened: look once
        assert not store.needs_maintenance(3600.0)  # ... but only when idle
        assert store.optimize() is False
        assert not store.needs_maintenance(0.0)  # nothing written since
        store.upsert([memory("one")], unit_vectors(1))
        assert store.needs_maintenance(0.0) and not store.needs_maintenance(3600.0)
        store.optimize()
        monkeypatch.setattr(edge_store, "FORCE_SEAL", 5)
        store.upsert([memory(f"many {i}") for i in range(5)], unit_vectors(5))
        assert store.needs_maintenance(3600.0)  # enough waiting: due even when busy
        store.optimize()
        assert not store.needs_maintenance(0.0)
        store.delete([store.search("one", unit_vectors(1)[0], 1)[0].memory.id])
        assert store.needs_maintenance(0.0)  # deletions may make a segment worth vacuuming
    finally:
        store.close()
    assert not store.needs_maintenance(0.0)


async def test_maintenance_task_optimizes_only_when_due() -> None:
    import asyncio

    from tribalmemory.service.maintenance import StoreMaintenance

    class Store:
        def __init__(self) -> None:
            self.due = [False, True, False, True]
            self.calls: list[str] = []

        def needs_maintenance(self, idle_seconds: float) -> bool:
            assert idle_seconds == 0.5
            return self.due.pop(0) if self.due else False

        def optimize_needs_bytes(self) -> int:
            return 0

        def optimize(self) -> bool:
            self.calls.append(threading.current_thread().name)
            if len(self.calls) == 1:
                raise RuntimeError("disk full")  # logged and retried later
            return True

    store = Store()
    assert StoreMaintenance.supported(store) and not StoreMaintenance.supported(object())
    task = StoreMaintenance(store, idle_seconds=0.5, interval=0.01)
    task.start()
    for _ in range(300):
        if task.runs:
            break
        await asyncio.sleep(0.01)
    await task.stop()
    assert task.runs == 1 and len(store.calls) == 2
    assert threading.main_thread().name not in store.calls  # never on the event loop


BILLING_NOTE = "Billing tests need make test-billing; plain pytest misses the fixtures"


def store_summaries(store: Any, vector: np.ndarray, count: int = 6) -> None:
    """``count`` episode summaries, all at ``vector`` (more than the duplicate check probes)."""
    summaries = [
        memory(f"Episode: billing tests {i}", source_type=SourceType.EPISODE_SUMMARY)
        for i in range(count)
    ]
    store.upsert(summaries, np.repeat(vector[None, :], count, axis=0))


def test_duplicate_check_skips_nearer_episode_summaries(store: Any, embedder: Embedder) -> None:
    """remember() finds a near-duplicate even when several summaries are nearer to it."""
    import asyncio

    from tribalmemory.service import MemoryService

    text = BILLING_NOTE
    store_summaries(store, embedder.embed_one(text))  # identical vectors: nearest
    original = memory(text + ".")
    store.upsert([original], embedder.embed([original.content]))
    service = MemoryService(Config(), store, embedder)
    result = asyncio.run(service.remember(RememberRequest(content=text)))
    assert result.success is False and result.duplicate_of == original.id
    store.delete([original.id])
    result = asyncio.run(
        service.remember(RememberRequest(content=text))
    )  # only summaries are near: not a duplicate
    assert result.success is True and result.duplicate_of is None


def test_duplicate_check_searches_past_summaries_only_when_they_reach_the_threshold(
    store: Any, embedder: Embedder
) -> None:
    """When the nearest memories are all summaries and the farthest of them is below
    ``dedup_threshold``, no other memory can reach it: the costly filtered search is skipped
    and the memory is stored."""
    import asyncio

    from tribalmemory.service import MemoryService

    text = BILLING_NOTE
    near = embedder.embed_one("Episode: the billing test suite and its make target")
    store_summaries(store, near)
    other = memory("The release train leaves on Thursdays")
    store.upsert([other], embedder.embed([other.content]))
    threshold = Config().memory.dedup_threshold
    assert float(near @ embedder.embed_one(text)) < threshold  # the premise
    searches: list[Any] = []
    real_search = store.dense_search

    def dense_search(vector: Any, limit: int, where: Any = None) -> Any:
        searches.append(where)
        return real_search(vector, limit, where)

    store.dense_search = dense_search
    result = asyncio.run(
        MemoryService(Config(), store, embedder).remember(RememberRequest(content=text))
    )
    assert result.success is True and result.duplicate_of is None
    assert searches == [None]  # the unfiltered probe only


def leaning(cosine: float, axis: int) -> np.ndarray:
    """A unit vector at ``cosine`` to the first axis (the query), leaning towards ``axis``."""
    vector = np.zeros(BUNDLED_DIM, dtype=np.float32)
    vector[0], vector[axis] = cosine, np.sqrt(1.0 - cosine**2)
    return vector


def test_engine_written_memories_never_reorder_the_memories_around_them(store: Any) -> None:
    """Summaries the dense list ranks first but BM25 never finds would push the written
    memories down one list only, which reorders them (fused: B, C, A); ranked apart they keep
    the order they have without the summaries (A, B, C) and take a place of their own."""
    query = leaning(1.0, 1)
    # dense ranks A 1, C 2, B 3; BM25 (one query term, documents of one length) B 1, C 2, A 3
    written = {
        "A": memory("billing notes notes"),
        "C": memory("billing billing notes"),
        "B": memory("billing billing billing"),
    }
    cosines = {"A": 0.9, "C": 0.85, "B": 0.8}
    store.upsert(
        list(written.values()),
        np.stack([leaning(cosines[k], 2 + i) for i, k in enumerate(written)]),
    )
    name = {m.id: key for key, m in written.items()}
    before = [name[h.memory.id] for h in store.search("billing", query, 15)]
    assert before == ["A", "B", "C"]  # A and B tie (ranks 1 + 3), A first in the dense list
    summaries = [
        memory(f"Episode: invoices {i}", source_type=SourceType.EPISODE_SUMMARY) for i in range(3)
    ]
    store.upsert(summaries, np.repeat(query[None, :], 3, axis=0))
    hits = store.search("billing", query, 15)
    assert [name[h.memory.id] for h in hits if h.memory.id in name] == before
    # found, placed apart (15 asked for: at most three engine-written memories come back)
    assert {h.memory.id for h in hits} >= {s.id for s in summaries}


def test_edge_knows_its_engine_written_memories_after_a_restart(
    tmp_path: Path,
) -> None:
    """The embedded store tells engine-written memories apart by id (a set it rebuilds when
    it opens): after a restart they still never reorder the others, and once they are
    deleted the others come back as they were."""
    query = leaning(1.0, 1)
    written = [
        memory("billing notes notes"),
        memory("billing billing notes"),
        memory("billing billing billing"),
    ]
    vectors = np.stack([leaning(c, 2 + i) for i, c in enumerate((0.9, 0.85, 0.8))])
    summaries = [
        memory(f"Episode: invoices {i}", source_type=SourceType.EPISODE_SUMMARY) for i in range(3)
    ]
    store = EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
    store.upsert(written, vectors)
    alone = [h.memory.id for h in store.search("billing", query, 15)]
    store.upsert(summaries, np.repeat(query[None, :], 3, axis=0))
    store.close()
    store = EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
    try:
        hits = [h.memory.id for h in store.search("billing", query, 15)]
        assert [i for i in hits if i in alone] == alone and len(hits) == 6
        store.delete([s.id for s in summaries])
        assert [h.memory.id for h in store.search("billing", query, 15)] == alone
    finally:
        store.close()


# -- BM25 of engine-written memories: a sparse field of their own -----------------------------

# Query "zorblat quuxen": A holds the rarer word once in a long text, B the commoner one three
# times in a short text. Alone, A's rarer word outweighs B's (A first). Counting more memories
# in the IDF puts B first, whether they hold "zorblat" (its document frequency grows) or not
# (the number of documents grows, which narrows the gap between a rare and a common word).
IDF_QUERY = "zorblat quuxen"
IDF_WRITTEN = {
    "A": "zorblat " + " ".join(f"filler{i}" for i in range(19)),
    "B": "quuxen quuxen quuxen",
    "C": "quuxen " + " ".join(f"padding{i}" for i in range(11)),
    "D": "quuxen " + " ".join(f"stuffing{i}" for i in range(13)),
    "E": "the release train leaves on thursdays",
    "F": "alice prefers dark mode",
}
IDF_SUMMARIES = {
    "sharing": [f"Episode {i}: zorblat planning, zorblat review" for i in range(30)],
    "other": [f"Episode {i}: invoices and receipts" for i in range(30)],
}


def idf_memories(kinds: tuple[str, ...]) -> tuple[list[Memory], np.ndarray, dict[str, str]]:
    """The written memories of the IDF case, all at one dense vector (their dense ranks tie:
    BM25 alone orders them), then summaries of ``kinds`` far from the query (cosine 0); and
    the written ones' names by id."""
    written = {name: memory(text) for name, text in IDF_WRITTEN.items()}
    texts = [text for kind in kinds for text in IDF_SUMMARIES[kind]]
    summaries = [memory(t, source_type=SourceType.EPISODE_SUMMARY) for t in texts]
    vectors = [leaning(0.9, 2)] * len(written) + [leaning(0.0, 3 + i) for i in range(len(texts))]
    return [*written.values(), *summaries], np.stack(vectors), {m.id: n for n, m in written.items()}


def written_hits(store: Any, name: dict[str, str], limit: int = 10) -> list[tuple[str, float]]:
    """The written memories a search of the IDF case finds: name and fused score, in order."""
    hits = store.search(IDF_QUERY, leaning(1.0, 1), limit)
    return [(name[h.memory.id], h.score) for h in hits if h.memory.id in name]


@pytest.mark.parametrize("kind", ["sharing", "other"])
def test_engine_written_memories_leave_the_written_ones_bm25_as_it_was(
    opener: Opener, kind: str
) -> None:
    """The written memories' results (ids, order and fused scores, i.e. their BM25 ranks) are
    the same with and without 30 summaries stored, whether these share the query's words
    (document frequency) or not (number of documents)."""
    store = opener()
    memories, vectors, name = idf_memories((kind,))
    store.upsert(memories[: len(name)], vectors[: len(name)])
    before = written_hits(store, name)
    assert [n for n, _ in before][:4] == ["A", "B", "C", "D"]  # the premise
    store.upsert(memories[len(name) :], vectors[len(name) :])
    assert written_hits(store, name) == before
    store.close()
    assert written_hits(opener(), name) == before  # and after a restart


def test_engine_written_memories_are_found_by_their_words_alone(opener: Opener) -> None:
    """A summary whose words match the query, far from it in the dense space, comes back
    before summaries nearer the query that share none of its words: BM25 finds it."""
    store = opener()
    written = [memory(f"note {i} about lunch") for i in range(5)]
    near = [
        memory(f"Episode {i}: invoices", source_type=SourceType.EPISODE_SUMMARY) for i in range(6)
    ]
    target = memory("Episode: zorblat quuxen review", source_type=SourceType.EPISODE_SUMMARY)
    vectors = [leaning(0.8, 2 + i) for i in range(5)] + [leaning(0.7, 10 + i) for i in range(6)]
    store.upsert([*written, *near, target], np.stack([*vectors, leaning(0.0, 30)]))
    hits = store.search(IDF_QUERY, leaning(1.0, 1), 5)  # one engine-written memory at most
    assert [h.memory.id for h in hits if h.memory.id not in {m.id for m in written}] == [target.id]


def test_edge_asks_the_engine_field_only_when_it_holds_engine_written_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One BM25 request per kind the store holds and the filter leaves: a store without
    engine-written memories searches as before (dense + one BM25 request)."""
    store = EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
    asked: list[Any] = []
    shard = store._shard

    class Counting:
        def __getattr__(self, attribute: str) -> Any:
            return getattr(shard, attribute)

        def query(self, request: Any) -> Any:
            asked.append(request)
            return shard.query(request)

    try:
        memories, vectors, _ = idf_memories(("sharing",))
        store.upsert(memories[:6], vectors[:6])
        monkeypatch.setattr(store, "_shard", Counting())
        query = leaning(1.0, 1)
        store.search(IDF_QUERY, query, 10)
        assert len(asked) == 2
        store.upsert(memories[6:], vectors[6:])
        asked.clear()
        assert len(store.search(IDF_QUERY, query, 10)) == 8
        assert len(asked) == 3
        asked.clear()
        store.search(IDF_QUERY, query, 10, MemoryFilter(source_types=[SourceType.USER_EXPLICIT]))
        store.search(IDF_QUERY, query, 10, MemoryFilter(source_types=[SourceType.EPISODE_SUMMARY]))
        assert len(asked) == 4  # dense + the one field each filter leaves
    finally:
        monkeypatch.undo()
        store.close()


def write_former_layout(backend: str, folder: Path, memories: list[Memory], vectors: Any) -> None:
    """A store as the former version wrote it: every memory's BM25 vector in ``bm25``, no
    ``bm25_engine`` field, no layout recorded. Edge: sealed segments (SEAL_SIZE as patched)
    and a plain one."""
    from tribalmemory.storage import lexical
    from tribalmemory.storage.base import DENSE, SPARSE, point_id, to_payload

    rows = [np.asarray(v, dtype=np.float32).tolist() for v in vectors]
    if backend == "edge":
        import qdrant_edge as qe

        from tribalmemory.storage.edge import shard_config, write_meta

        config = shard_config(BUNDLED_DIM)
        former = qe.EdgeConfig(
            vectors=config.vectors,
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            hnsw_config=config.hnsw_config,
            quantization_config=config.quantization_config,
            optimizers=config.optimizers,
        )
        shard = qe.EdgeShard.create(str(folder / "store" / "shard-1"), former)
        points = [
            qe.Point(
                point_id(m.id),
                {DENSE: row, SPARSE: lexical.document_vector(m.content)},
                to_payload(m),
            )
            for m, row in zip(memories, rows, strict=True)
        ]
        shard.update(qe.UpdateOperation.upsert_points(points[:-10]))
        assert shard.optimize()  # sealed segments of both kinds
        shard.update(qe.UpdateOperation.upsert_points(points[-10:]))  # and a plain one
        shard.close()
        write_meta(folder / "store", BUNDLED_MODEL, BUNDLED_DIM, "shard-1")
        assert "lexical_layout" not in json.loads((folder / "store" / "store.json").read_text())
        return
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder / "qdrant"))
    meta = {"format": 1, "model_name": BUNDLED_MODEL, "dim": BUNDLED_DIM, "lexical": "bm25"}
    client.create_collection(
        "memories__former",
        vectors_config={
            DENSE: models.VectorParams(size=BUNDLED_DIM, distance=models.Distance.COSINE)
        },
        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        metadata={"tribalmemory": meta},
    )
    client.update_collection_aliases(
        change_aliases_operations=[
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(
                    collection_name="memories__former", alias_name="memories"
                )
            )
        ]
    )
    client.upsert(
        "memories__former",
        [
            models.PointStruct(
                id=point_id(m.id),
                vector={DENSE: row, SPARSE: models.SparseVector(**_sparse_dict(m.content))},
                payload=to_payload(m),
            )
            for m, row in zip(memories, rows, strict=True)
        ],
    )
    client.close()


def _sparse_dict(text: str) -> dict[str, list[Any]]:
    from tribalmemory.storage import lexical

    vector = lexical.document_vector(text)
    return {"indices": list(vector.indices), "values": list(vector.values)}


def former_idf_store(
    backend: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """The IDF case in the former layout, with 280 summaries (30 sharing the query's words)
    among the written memories; and what a search finds of the written ones on a store that
    holds them alone."""
    import tribalmemory.storage.edge.shard as edge_shard

    monkeypatch.setattr(edge_shard, "SEAL_SIZE", 100)
    memories, vectors, name = idf_memories(("sharing", "other"))
    extra = [
        memory(f"Episode {i}: receipts", source_type=SourceType.EPISODE_SUMMARY) for i in range(220)
    ]
    memories += extra
    vectors = np.concatenate([vectors, np.stack([leaning(0.0, 40 + i) for i in range(220)])])
    order = np.random.default_rng(3).permutation(len(memories))  # kinds mixed in segments
    memories, vectors = [memories[i] for i in order], vectors[order]
    alone = open_backend(backend, folder / "alone")
    try:
        written = [(m, v) for m, v in zip(memories, vectors, strict=True) if m.id in name]
        alone.upsert([m for m, _ in written], np.stack([v for _, v in written]))
        expected = written_hits(alone, name)
    finally:
        alone.close()
    assert [n for n, _ in expected][:4] == ["A", "B", "C", "D"]
    write_former_layout(backend, folder, memories, vectors)
    return expected, name


def test_a_store_of_the_former_layout_is_migrated_at_open(
    opener: Opener, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a store whose summaries' BM25 vectors share the written memories' field moves
    them to a field of their own: the written memories then rank as if no summary were
    stored, the summaries are still found by their words, and opening again changes
    nothing."""
    expected, name = former_idf_store(backend, tmp_path, monkeypatch)
    store = opener()
    assert written_hits(store, name) == expected
    found = [h.memory for h in store.search("zorblat planning", leaning(1.0, 1), 10)]
    summaries = [m.content for m in found if m.id not in name]  # all at cosine 0: BM25 finds
    assert len(summaries) == 2 and all("zorblat planning" in text for text in summaries)
    assert store.count() == 6 + 280
    store.close()
    recorded = layout_recorded(backend, tmp_path)
    assert recorded["lexical_layout"] == 2
    store = opener()
    assert written_hits(store, name) == expected
    store.close()
    assert layout_recorded(backend, tmp_path) == recorded  # no segment rewritten again


def layout_recorded(backend: str, folder: Path) -> dict[str, Any]:
    """What the store recorded of its layout (and, Edge, of its segments)."""
    if backend == "edge":
        meta = json.loads((folder / "store" / "store.json").read_text())
        return {"lexical_layout": meta.get("lexical_layout"), "segments": meta["state"]["segments"]}
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(folder / "qdrant"))
    try:
        config = client.get_collection("memories__former").config
        meta = (config.metadata or {})["tribalmemory"]
        fields = sorted(config.params.sparse_vectors or {})
        return {"lexical_layout": meta.get("lexical_layout"), "fields": fields}
    finally:
        client.close()


def test_edge_migration_interrupted_is_finished_at_the_next_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash while the vectors move (some moved, one chunk with both fields) leaves the
    layout unrecorded; the next open finishes the move and the written memories rank as if
    no summary were stored."""
    import tribalmemory.storage.edge.store as edge_store

    expected, name = former_idf_store("edge", tmp_path, monkeypatch)
    monkeypatch.setattr(edge_store, "UPSERT_CHUNK", 16)
    real = EdgeStore._move_engine_vectors
    updates: list[int] = []

    class Crashing:
        def __init__(self, shard: Any) -> None:
            self.shard = shard

        def __getattr__(self, attribute: str) -> Any:
            return getattr(self.shard, attribute)

        def update(self, operation: Any) -> None:
            if len(updates) == 5:  # the third chunk has its new vectors, not yet its deletion
                raise KeyboardInterrupt("crash")
            updates.append(1)
            self.shard.update(operation)

    monkeypatch.setattr(
        EdgeStore, "_move_engine_vectors", staticmethod(lambda s: real(Crashing(s)))
    )
    with pytest.raises(KeyboardInterrupt):
        EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM)
    assert "lexical_layout" not in json.loads((tmp_path / "store" / "store.json").read_text())
    monkeypatch.setattr(EdgeStore, "_move_engine_vectors", staticmethod(real))
    with EdgeStore.open(tmp_path / "store", BUNDLED_MODEL, BUNDLED_DIM) as store:
        assert written_hits(store, name) == expected
        assert store.count() == 6 + 280
    meta = json.loads((tmp_path / "store" / "store.json").read_text())
    assert meta["lexical_layout"] == 2


def test_doctor_counts_a_shard_of_the_former_layout_without_changing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rebuilding a lost store.json counts each shard's memories; counting loads the shard as
    it is, without adding the engine's BM25 field (the next open of the store migrates it)."""
    from tribalmemory.storage.edge import lacks_engine_field
    from tribalmemory.storage.repair import _shard_points

    former_idf_store("edge", tmp_path, monkeypatch)
    shard = tmp_path / "store" / "shard-1"
    assert lacks_engine_field(shard)
    assert _shard_points(shard, BUNDLED_DIM) == 6 + 280
    assert lacks_engine_field(shard)


def test_server_too_old_to_add_a_field_keeps_the_former_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A Qdrant server that cannot add ``bm25_engine`` to a collection (before 1.18) keeps
    serving it as before, with a warning; once it can, the next open migrates it."""
    from qdrant_client import QdrantClient

    from tribalmemory.storage.server import ServerStore

    expected, name = former_idf_store("server", tmp_path, monkeypatch)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("404 Not Found")

    monkeypatch.setattr(QdrantClient, "create_vector_name", refused)
    store = ServerStore.open_local(tmp_path / "qdrant", "memories", BUNDLED_MODEL, BUNDLED_DIM)
    try:
        assert "cannot add the sparse field bm25_engine" in caplog.text
        assert written_hits(store, name) != expected  # the summaries still count in its IDF
        late = memory("Episode: quuxen retro", source_type=SourceType.EPISODE_SUMMARY)
        store.upsert([late], leaning(0.0, 300)[None, :])  # into bm25, as before
        found = store.search("quuxen retro", leaning(1.0, 1), 10)
        assert late.id in {h.memory.id for h in found}
    finally:
        store.close()
    assert layout_recorded("server", tmp_path) == {"lexical_layout": None, "fields": ["bm25"]}
    monkeypatch.undo()
    store = ServerStore.open_local(tmp_path / "qdrant", "memories", BUNDLED_MODEL, BUNDLED_DIM)
    try:
        assert written_hits(store, name) == expected
        found = store.search("quuxen retro", leaning(1.0, 1), 10)
        assert late.id in {h.memory.id for h in found}
    finally:
        store.close()
    assert layout_recorded("server", tmp_path) == {
        "lexical_layout": 2,
        "fields": ["bm25", "bm25_engine"],
    }


def test_doctor_counts_the_memories_of_a_shard_of_either_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rewriting a lost store.json, ``tribalmemory doctor`` picks the shard folder holding the
    most memories: it loads shards of the former layout and of the current one."""
    import qdrant_edge as qe

    from tribalmemory.storage.repair import _shard_points

    former_idf_store("edge", tmp_path / "former", monkeypatch)
    assert _shard_points(tmp_path / "former" / "store" / "shard-1", BUNDLED_DIM) == 286
    idf = qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)
    current = qe.EdgeConfig(  # the fields of the current layout, written directly
        vectors={"dense": qe.EdgeVectorParams(size=BUNDLED_DIM, distance=qe.Distance.Cosine)},
        sparse_vectors={"bm25": idf, "bm25_engine": idf},
    )
    shard = qe.EdgeShard.create(str(tmp_path / "current"), current)
    row = leaning(1.0, 1).tolist()
    shard.update(qe.UpdateOperation.upsert_points([qe.Point(str(uuid.uuid4()), {"dense": row})]))
    shard.close()
    assert _shard_points(tmp_path / "current", BUNDLED_DIM) == 1
    assert _shard_points(tmp_path / "nothing", BUNDLED_DIM) is None


def test_a_tie_at_the_candidates_cut_gives_the_same_results_however_the_store_was_built(
    backend: str, tmp_path: Path
) -> None:
    """120 memories score alike in BM25 for the query (one mention each, the same length), more
    than a search of 5 takes from that list (50): the store returns an arbitrary part of such a
    tie, which depended on how the store was built; the search keeps or drops the tie whole."""
    words = [a + b for a in "bcdfghjklmnp" for b in "aeiouyxzqw"]
    memories = [
        memory(f"krakatoa field note {w}{w}", id=str(uuid.UUID(int=i + 1)))
        for i, w in enumerate(words)
    ]
    vectors = unit_vectors(len(memories), seed=3)
    query = unit_vectors(1, seed=4)[0]
    answers = []
    for name, order, batch in (("a", range(120), 120), ("b", range(119, -1, -1), 7)):
        built = open_backend(backend, tmp_path / name)
        try:
            picked = list(order)
            for i in range(0, len(picked), batch):
                part = picked[i : i + batch]
                built.upsert([memories[j] for j in part], vectors[part])
            answers.append([h.memory.id for h in built.search("krakatoa", query, 5)])
        finally:
            built.close()
    assert len(answers[0]) == 5
    assert answers[0] == answers[1]


def test_whole_ties_keeps_a_tie_at_the_depth_and_drops_one_the_store_may_have_cut() -> None:
    hits = [("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 2.0), ("e", 1.0), ("f", 1.0)]
    assert whole_ties(hits, 2) == hits[:4]  # b, c, d tie at the depth: all kept
    assert whole_ties(hits, 2, asked=6) == hits[:4]  # full: e, f may go on past the cut
    assert whole_ties(hits, 5, asked=6) == hits[:4]
    assert whole_ties(hits, 5, asked=7) == hits[:6]  # not full: nothing was cut
    assert whole_ties(hits[:2], 1, asked=2) == hits[:1]
