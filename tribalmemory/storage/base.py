"""The storage contract every backend (embedded Qdrant Edge, Qdrant server) fulfils:
:class:`MemoryStore`, and the optional parts only some backends have (:class:`MaintainedStore`,
:class:`FolderStore`)."""

from __future__ import annotations

import bisect
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np

from ..models import ENGINE_WRITTEN, Memory, SourceType
from ..timeutil import to_epoch


class StorageError(RuntimeError):
    """The store cannot be opened or used; the message says what to do."""


class StoreLockedError(StorageError):
    """Another process holds the embedded store."""


class ModelMismatchError(StorageError):
    """The store was written by another embedding model or dimension."""


@dataclass
class MemoryFilter:
    """Conditions combined with AND; an empty filter matches every memory."""

    ids: list[str] | None = None
    tags_any: list[str] | None = None
    source_types: list[SourceType] | None = None
    exclude_source_types: list[SourceType] | None = None
    after: datetime | None = None  # created_at >= after
    before: datetime | None = None  # created_at < before
    metadata_equals: dict[str, str] = field(default_factory=dict)  # e.g. {"episode_id": "ep-1"}
    metadata_present: list[str] = field(default_factory=list)  # these metadata keys are set
    source_instance: str | None = None  # stored by this agent
    exclude_superseded: bool = False  # leave out memories a correction superseded
    project: str | None = None  # this project's memories ...
    include_shared: bool = True  # ... plus the shared ones of every project (when project)
    shared_only: bool = False  # only shared memories


@dataclass
class SearchHit:
    """A search result: fused rank score (see :func:`rrf_fuse`) plus the dense cosine to the
    query (−1..1)."""

    memory: Memory
    score: float
    cosine: float


@dataclass
class StoreInfo:
    model_name: str
    dim: int
    backend: str
    location: str


class MemoryStore(Protocol):
    """Memories with a dense vector (cosine) and a BM25 sparse vector (IDF modifier)."""

    info: StoreInfo

    def upsert(self, memories: list[Memory], vectors: np.ndarray) -> None:
        """Insert or replace memories (by id) with their dense vectors; durable on return."""

    def get(self, ids: list[str]) -> list[Memory]:
        """The memories with these ids, in the given order; unknown ids are left out."""

    def get_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """Dense vectors by id; unknown ids are left out."""

    def delete(self, ids: list[str]) -> None:
        """Remove memories; unknown ids are ignored."""

    def search(
        self, text: str, vector: np.ndarray, limit: int, where: MemoryFilter | None = None
    ) -> list[SearchHit]:
        """Hybrid search: the ``limit`` best of dense + BM25 fused with :func:`rrf_fuse`, best
        first, and the engine-written memories ranked among them (:func:`fuse_kinds`: at most
        :func:`engine_share` of ``limit`` more); the same query on the same store always gives
        the same list."""

    def dense_search(
        self, vector: np.ndarray, limit: int, where: MemoryFilter | None = None
    ) -> list[SearchHit]:
        """Nearest neighbours by cosine only (score == cosine), best first."""

    def term_search(self, text: str, limit: int, where: MemoryFilter | None = None) -> list[Memory]:
        """Up to ``limit`` memories written by users or agents that share a BM25 term with
        ``text`` (``storage/lexical.py``: lower case, stemmed, stop words left out), best BM25
        score first: every such memory when fewer share one. Empty when ``text`` has no
        term."""

    def count(self, where: MemoryFilter | None = None) -> int: ...

    def scroll(self, where: MemoryFilter | None = None, batch_size: int = 256) -> Iterator[Memory]:
        """Every matching memory, in no particular order."""

    def newest(self, where: MemoryFilter | None, limit: int) -> list[Memory]:
        """Up to ``limit`` matching memories, newest ``created_at`` first (memories with the
        same ``created_at`` in no particular order)."""

    def project_counts(self) -> dict[str, int]:
        """Memories by project (shared ones counted in their own project)."""

    def optimize(self) -> bool:
        """Build the search indexes now (may block for minutes); True if work was done."""

    def close(self) -> None: ...

    def begin_rebuild(self, model_name: str, dim: int) -> Self:
        """A new, empty store beside this one for vectors of ``model_name`` (``dim``); nothing
        changes until :meth:`finish_rebuild` (``storage/reembed.py`` fills it)."""

    def finish_rebuild(self, target: Self) -> None:
        """Make ``target`` the store in one atomic step; closes both."""

    def abort_rebuild(self, target: Self) -> None:
        """Drop ``target``; this store stays as it was."""


@runtime_checkable
class MaintainedStore(Protocol):
    """A store that needs upkeep at quiet moments, which the daemon runs
    (``service/maintenance.py``): the embedded store seals new memories. Optional: a Qdrant
    server indexes by itself, so :class:`~.server.ServerStore` has none of this. Check with
    ``isinstance(store, MaintainedStore)``."""

    def needs_maintenance(self, idle_seconds: float) -> bool:
        """Whether :meth:`optimize` is worth calling now (the store idle ``idle_seconds``)."""

    def optimize_needs_bytes(self) -> int:
        """Disk space :meth:`optimize` may need."""

    def optimize(self) -> bool:
        """Do the upkeep now (blocks meanwhile); True if work was done."""


@runtime_checkable
class FolderStore(Protocol):
    """A store kept whole in one local folder, which a backup copies with :attr:`lock` held
    (``portability/backup.py``). Optional: the embedded store is one, a Qdrant server (backed
    up with its own snapshots) is not. Check with ``isinstance(store, FolderStore)``."""

    root: Path

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """Held, no call reads or writes the store."""

    def flush(self) -> None:
        """Persist everything written so far to the folder."""


# -- Shared by the backends: the point layout both of them store ----------------------------

DENSE = "dense"  # named dense vector (cosine)
SPARSE = "bm25"  # named sparse vector (BM25 term weights, IDF modifier): written memories
ENGINE_SPARSE = "bm25_engine"  # the same, for the engine-written memories (see sparse_field)
SPARSE_LAYOUT = 2
"""Where a store keeps its BM25 vectors, recorded with it as ``lexical_layout``: absent (1),
every memory's in :data:`SPARSE`; 2, an engine-written memory's in :data:`ENGINE_SPARSE`.
A store opened without 2 recorded is migrated (docs/storage.md, *Search*)."""
LAYOUT_KEY = "lexical_layout"  # in the store's metadata, beside "lexical" (the BM25 signature)
RRF_K = 60  # reciprocal rank fusion constant: score = sum of 1 / (RRF_K + rank)
HNSW_EF = 128  # HNSW search breadth, once an index is built (see docs/storage.md)
KEYWORD_FIELDS = (
    "tags",
    "source_type",
    "metadata.episode_id",
    "superseded_by",
    "project",
    "scope",
    "source_instance",
    "metadata.session",
    "metadata.run",
)
FLOAT_FIELDS = ("created_ts",)
_METADATA_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


SHARED_SCOPE = "*"
"""``scope`` of a shared memory; any other memory's scope is its project. One keyword
condition (scope is P or ``*``) then finds what project P sees."""


def scope_of(memory: Memory) -> str:
    return SHARED_SCOPE if memory.shared else memory.project


def to_payload(memory: Memory) -> dict[str, Any]:
    """Every Memory field, plus ``created_ts`` (epoch seconds) and ``scope``; source_type
    lower-case."""
    payload = memory.to_json()
    payload["source_type"] = memory.source_type.value
    payload["created_ts"] = to_epoch(memory.created_at)
    payload["scope"] = scope_of(memory)
    return payload


def scoped(where: MemoryFilter, scopes: dict[str, str]) -> MemoryFilter:
    """``where`` narrowed by the scope filters of a read (``validation.scopes``): the agent
    (source_instance), and the session and run kept in a memory's metadata."""
    where.source_instance = scopes.get("source_instance", where.source_instance)
    for key in ("session", "run"):
        if key in scopes:
            where.metadata_equals[key] = scopes[key]
    return where


def project_conditions(where: MemoryFilter) -> list[tuple[str, list[str]]]:
    """The keyword conditions (field, any of values) of a filter's project scoping."""
    found: list[tuple[str, list[str]]] = []
    if where.project is not None:
        if where.include_shared:
            found.append(("scope", [where.project, SHARED_SCOPE]))
        else:
            found.append(("project", [where.project]))
    if where.shared_only:
        found.append(("scope", [SHARED_SCOPE]))
    return found


MAX_PROJECTS = 100_000  # distinct projects a facet query counts (far more than anyone has)

UNSCOPED_DEFAULTS = {"project": "default", "shared": False, "scope": "default"}
"""What a memory stored before projects existed gets (the migration sets it at open)."""


def sparse_field(source_type: SourceType, engine_field: str = ENGINE_SPARSE) -> str:
    """The sparse field a memory's BM25 vector is stored in: ``engine_field`` for one the
    engine wrote (:data:`~tribalmemory.models.ENGINE_WRITTEN`), :data:`SPARSE` for the others.

    Qdrant takes a field's IDF (each term's document frequency, and the number of documents:
    the points with a vector in that field) over that field alone, so the memories users and
    agents wrote are scored as if no engine-written memory were stored, and the engine-written
    ones among themselves. ``engine_field`` is :data:`SPARSE` only on a Qdrant server too old
    to add a field to a collection (the former layout)."""
    return engine_field if source_type in ENGINE_WRITTEN else SPARSE


def from_payload(payload: dict[str, Any] | None) -> Memory:
    return Memory.from_json(payload or {})


def point_id(memory_id: str) -> str | None:
    """The canonical UUID string Qdrant stores as the point id; None if not a UUID."""
    try:
        return str(uuid.UUID(str(memory_id).strip()))
    except ValueError:
        return None


def point_ids(memory_ids: Iterable[str]) -> list[str]:
    """Canonical, de-duplicated point ids in order; non-UUIDs are left out."""
    seen: dict[str, None] = {}
    for memory_id in memory_ids:
        pid = point_id(memory_id)
        if pid is not None:
            seen.setdefault(pid, None)
    return list(seen)


def metadata_field(key: str) -> str:
    """``metadata.<key>``; keys are letters, digits, ``_`` and ``-`` (no dots)."""
    if not isinstance(key, str) or not _METADATA_KEY.match(key):
        raise ValueError(f"metadata key {key!r}: use 1-64 letters, digits, '_' or '-'")
    return f"metadata.{key}"


def source_values(types: Iterable[SourceType | str] | None) -> list[str]:
    return [SourceType.parse(t).value for t in types or ()]


def check_rows(vectors: Any, rows: int, dim: int) -> np.ndarray:
    """``vectors`` as float32 of shape (rows, dim), all finite and each of a length float32
    can hold (cosine normalises them: a longer one would become zeros); else ValueError."""
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            array = np.asarray(vectors, dtype=np.float32)
        except OverflowError:  # an integer beyond any float
            raise ValueError("vectors contain a number beyond float32") from None
        if array.ndim != 2 or array.shape != (rows, dim):
            raise ValueError(f"expected vectors of shape ({rows}, {dim}), got {array.shape}")
        lengths = np.einsum("ij,ij->i", array, array)  # squared, in float32
        if not (np.isfinite(array).all() and np.isfinite(lengths).all()):
            raise ValueError("vectors contain NaN, infinity or numbers beyond float32")
    return array


def unit_query(vector: np.ndarray, dim: int) -> np.ndarray:
    """The query as a float32 unit vector of length ``dim`` (cosine needs no more)."""
    query = check_rows(np.asarray(vector).reshape(1, -1), 1, dim).reshape(dim)
    norm = float(np.linalg.norm(query))
    return query / norm if norm > 0 else query


def search_depth(limit: int) -> int:
    """How many candidates each prefetch (dense, BM25) hands to the fusion."""
    return max(4 * limit, 50)


TIE_MARGIN = 16
"""Candidates asked of the store beyond a list's depth, so that a tie at the depth is seen
whole (:func:`whole_ties`)."""


def whole_ties(
    hits: list[tuple[str, float]], depth: int, asked: int | None = None
) -> list[tuple[str, float]]:
    """A store's list (best first, ``asked`` at most) cut at ``depth`` without cutting a tie: a
    full list (``asked`` of them) loses the points tying its last score (the store returns an
    arbitrary part of a tie at its own cut, which differs between stores built apart), and
    points tying the ``depth``-th score stay past it. So the list is the same whatever order
    the store keeps equal scores in (a query of names alone ties dozens of memories in BM25)."""
    if asked is not None and hits and len(hits) >= asked:
        last = hits[-1][1]
        hits = [hit for hit in hits if hit[1] != last]
    if len(hits) <= depth:
        return hits
    edge = hits[depth - 1][1]
    return hits[:depth] + [hit for hit in hits[depth:] if hit[1] == edge]


def kind_filters(where: MemoryFilter | None) -> tuple[MemoryFilter | None, MemoryFilter | None]:
    """``where`` split in two: the memories users and agents wrote, and those the engine wrote
    from others (:data:`~tribalmemory.models.ENGINE_WRITTEN`); None for a part ``where``
    leaves nothing of. A hybrid search fetches each part's candidates to its own depth, so
    engine-written memories never push a written one out of the candidates (:func:`fuse_kinds`)."""
    where = where or MemoryFilter()
    excluded = set(where.exclude_source_types or ())
    wanted = set(where.source_types or SourceType) - excluded
    engine = replace(where, source_types=sorted(wanted & ENGINE_WRITTEN), exclude_source_types=None)
    if where.source_types:
        plain = replace(where, source_types=sorted(wanted - ENGINE_WRITTEN))
    else:  # a condition that also keeps a memory of a type this version does not know
        plain = replace(where, exclude_source_types=sorted(excluded | ENGINE_WRITTEN))
    return (plain if plain.source_types != [] else None), (engine if engine.source_types else None)


ENGINE_SHARE = 5
"""A search returns at most one engine-written memory for every this many it was asked for,
beside the written ones (recall shows a summary rarely, and reading one costs more than a
memory: measured, returning as many as ``limit`` made recall at 10,000 memories 1.4 times as
slow)."""


def engine_share(limit: int) -> int:
    """How many engine-written memories a search of ``limit`` returns at most."""
    return max(1, limit // ENGINE_SHARE)


def fuse_kinds(
    written: Sequence[Sequence[tuple[str, float]]],
    engine: Sequence[Sequence[tuple[str, float]]],
    limit: int,
) -> list[tuple[str, float]]:
    """A hybrid search's best, its lists (dense, then BM25) fetched apart for the memories
    users wrote and those the engine wrote (either may be empty: a part the filter leaves
    out), fused by :func:`rrf_fuse` with the engine-written ones ranked apart: the ``limit``
    best written memories and the engine-written ones ranked among them (at most
    :func:`engine_share` of ``limit``), so what the engine wrote never takes a written
    memory's place among the candidates."""
    if not any(written) or not any(engine):  # one kind found: plain fusion
        return rrf_fuse(written if any(written) else engine)[:limit]
    apart = frozenset(pid for hits in engine for pid, _ in hits)
    ranked = [[*mine, *theirs] for mine, theirs in zip(written, engine, strict=True)]
    best: list[tuple[str, float]] = []
    taken = {True: 0, False: 0}  # engine-written, written
    most = {True: engine_share(limit), False: limit}
    for pid, score in rrf_fuse(ranked, apart=apart):
        if taken[False] == limit:
            break
        if taken[pid in apart] < most[pid in apart]:
            best.append((pid, score))
            taken[pid in apart] += 1
    return best


def split_fused(
    ranked: Sequence[Sequence[tuple[str, float]]], apart: AbstractSet[str], depth: int, limit: int
) -> list[tuple[str, float]]:
    """:func:`fuse_kinds` of lists (dense, then BM25) that hold both kinds, the points of
    ``apart`` (engine-written memories) told from the others by id, each kind cut to
    ``depth`` in each list (a tie at the cut kept whole: :func:`whole_ties`)."""
    if not apart:
        return rrf_fuse(ranked)[:limit]
    written = [whole_ties([h for h in hits if h[0] not in apart], depth) for hits in ranked]
    engine = [whole_ties([h for h in hits if h[0] in apart], depth) for hits in ranked]
    return fuse_kinds(written, engine, limit)


def rrf_fuse(
    ranked: Iterable[Iterable[tuple[str, float]]],
    k: int = RRF_K,
    apart: frozenset[str] = frozenset(),
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of ``(point id, score)`` lists, best first.

    A point's fused score is the sum over the lists of ``1 / (k + rank)``, its rank in a list
    one more than the number of points that list scores higher (equal scores share a rank);
    equal fused scores are ordered by the rank in the first list (the dense one: the cosine
    recall shows), then by id. So no tie depends on the ids but that of two points every list
    scores alike (a copy of one text): the same store gives the same list every time (Qdrant's
    own fusion did not: measured 16 of 60 queries), and two stores of the same memories under
    other ids give the same ranking (ids are random UUIDs: breaking ties by them made a
    replayed benchmark differ run to run).

    The points of ``apart`` (memories the engine wrote from others: episode summaries,
    lessons, decisions) are ranked apart: the others rank among themselves only, as if
    ``apart`` were not stored, and a point of ``apart`` takes the rank it would have among
    them (one more than the number of them a list scores higher). So an engine-written memory
    never pushes a written one down a list: it can take a place in the fused order, never
    reorder the memories around it.
    """
    fused: dict[str, float] = {}
    first: dict[str, int] = {}
    for index, hits in enumerate(ranked):
        for pid, rank in ranks_apart(list(hits), apart).items():
            fused[pid] = fused.get(pid, 0.0) + 1.0 / (k + rank)
            if index == 0:
                first[pid] = rank
    unranked = len(first) + 1
    return sorted(fused.items(), key=lambda item: (-item[1], first.get(item[0], unranked), item[0]))


def ranks_apart(hits: list[tuple[str, float]], apart: frozenset[str]) -> dict[str, int]:
    """Each point's rank by score (:func:`shared_ranks`) among the points not in ``apart``;
    a point of ``apart`` ranks one more than the number of those scored higher."""
    if not apart:
        return shared_ranks(hits)
    ranks = shared_ranks([hit for hit in hits if hit[0] not in apart])
    below = sorted(-score for pid, score in hits if pid not in apart)  # best first, negated
    for pid, score in hits:
        if pid in apart:
            ranks[pid] = 1 + bisect.bisect_left(below, -score)
    return ranks


def shared_ranks(hits: Iterable[tuple[str, float]]) -> dict[str, int]:
    """Each point's rank by score, best 1; equal scores share the best rank they span."""
    ordered = sorted(hits, key=lambda hit: -hit[1])
    ranks: dict[str, int] = {}
    for position, (pid, score) in enumerate(ordered, start=1):
        tied = position > 1 and score == ordered[position - 2][1]
        ranks[pid] = ranks[ordered[position - 2][0]] if tied else position
    return ranks


def ensure_same_model(
    location: str, stored_model: str, stored_dim: int, model_name: str, dim: int
) -> None:
    """Raise ModelMismatchError unless the store was written by this model and dimension."""
    if stored_model == model_name and int(stored_dim) == dim:
        return
    raise ModelMismatchError(
        f"the store at {location} was written by embedding model {stored_model!r} "
        f"({stored_dim} dims), but embedding.model is {model_name!r} ({dim} dims). "
        f"Run `tribalmemory reembed` to rebuild the vectors with {model_name!r}, "
        f"or set embedding.model back to {stored_model!r}."
    )


def store_locked(location: str, holder: str = "") -> StoreLockedError:
    who = f" (pid {holder})" if holder else ""
    return StoreLockedError(
        f"another Tribal Memory process (probably the daemon){who} holds {location}; "
        "stop it or use the daemon"
    )
