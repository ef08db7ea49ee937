"""Qdrant server backend (qdrant-client): a collection on a Qdrant server or cluster.

Also runs on qdrant-client's in-process mode (``":memory:"`` or a folder), which speaks the
same API; the tests use that. The collection name from the config is an alias that points to
a physical collection ``<name>__<suffix>``, so ``reembed`` can build a new collection and switch
the alias in one atomic step. The embedding model and dimension live in the collection's
metadata (needs Qdrant >= 1.16).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from ..models import ENGINE_WRITTEN, Memory
from ..timeutil import to_epoch, to_iso, utc_now
from . import lexical
from .base import (
    DENSE,
    ENGINE_SPARSE,
    FLOAT_FIELDS,
    HNSW_EF,
    KEYWORD_FIELDS,
    LAYOUT_KEY,
    MAX_PROJECTS,
    SPARSE,
    SPARSE_LAYOUT,
    TIE_MARGIN,
    UNSCOPED_DEFAULTS,
    MemoryFilter,
    SearchHit,
    StorageError,
    StoreInfo,
    check_rows,
    ensure_same_model,
    from_payload,
    fuse_kinds,
    kind_filters,
    metadata_field,
    point_id,
    point_ids,
    project_conditions,
    search_depth,
    source_values,
    sparse_field,
    store_locked,
    to_payload,
    unit_query,
    whole_ties,
)

log = logging.getLogger("tribalmemory.storage")

META_KEY = "tribalmemory"
FORMAT = 1
UPSERT_CHUNK = 256
_PARAMS = models.SearchParams(hnsw_ef=HNSW_EF)


def server_filter(where: MemoryFilter | None) -> models.Filter | None:
    """MemoryFilter as a qdrant-client filter (None when it has no condition)."""
    if where is None:
        return None
    must: list[Any] = []
    must_not: list[Any] = []
    if where.ids is not None:
        wanted: list[Any] = point_ids(where.ids)
        must.append(models.HasIdCondition(has_id=wanted))
    if where.tags_any:
        must.append(models.FieldCondition(key="tags", match=models.MatchAny(any=where.tags_any)))
    if where.source_types:
        must.append(
            models.FieldCondition(
                key="source_type", match=models.MatchAny(any=source_values(where.source_types))
            )
        )
    if where.exclude_source_types:
        must_not.append(
            models.FieldCondition(
                key="source_type",
                match=models.MatchAny(any=source_values(where.exclude_source_types)),
            )
        )
    if where.after is not None or where.before is not None:
        must.append(
            models.FieldCondition(
                key="created_ts",
                range=models.Range(
                    gte=to_epoch(where.after) if where.after else None,
                    lt=to_epoch(where.before) if where.before else None,
                ),
            )
        )
    for key, value in where.metadata_equals.items():
        must.append(
            models.FieldCondition(key=metadata_field(key), match=models.MatchValue(value=value))
        )
    for key in where.metadata_present:
        must_not.append(
            models.IsEmptyCondition(is_empty=models.PayloadField(key=metadata_field(key)))
        )
    if where.source_instance is not None:
        must.append(
            models.FieldCondition(
                key="source_instance", match=models.MatchValue(value=where.source_instance)
            )
        )
    if where.exclude_superseded:
        must.append(models.IsEmptyCondition(is_empty=models.PayloadField(key="superseded_by")))
    for key, values in project_conditions(where):
        must.append(models.FieldCondition(key=key, match=models.MatchAny(any=values)))
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


def _read_meta(client: QdrantClient, alias: str) -> tuple[str, dict[str, Any]] | None:
    """(physical collection, Tribal Memory metadata) of ``alias``; None if it does not exist."""
    physical = next(
        (a.collection_name for a in client.get_aliases().aliases if a.alias_name == alias), None
    )
    if physical is None:
        if not client.collection_exists(alias):
            return None
        physical = alias  # a plain collection of that name
    config = client.get_collection(physical).config
    meta = (getattr(config, "metadata", None) or {}).get(META_KEY)
    if not isinstance(meta, dict) or "model_name" not in meta or "dim" not in meta:
        raise StorageError(
            f"collection {alias!r} exists but was not created by Tribal Memory; "
            "set storage.collection to another name"
        )
    return physical, meta


def _new_name(alias: str) -> str:
    return f"{alias}__{uuid.uuid4().hex[:8]}"


def _create(client: QdrantClient, name: str, model_name: str, dim: int, local: bool) -> str:
    """Create a physical collection with the model recorded in its metadata."""
    meta = {
        "format": FORMAT,
        "model_name": model_name,
        "dim": dim,
        "lexical": lexical.SIGNATURE,
        LAYOUT_KEY: SPARSE_LAYOUT,
        "written_at": to_iso(utc_now()),
    }
    bm25 = models.SparseVectorParams(modifier=models.Modifier.IDF)
    client.create_collection(
        name,
        vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
        sparse_vectors_config={SPARSE: bm25, ENGINE_SPARSE: bm25},
        metadata={META_KEY: meta},
    )
    ensure_indexes(client, name, local)
    return name


def ensure_indexes(client: QdrantClient, name: str, local: bool) -> None:
    """Create the payload indexes the collection lacks (a collection made by an older
    version lacks ``project`` and ``scope``)."""
    if local:  # the in-process mode ignores payload indexes (and warns)
        return
    existing = client.get_collection(name).payload_schema or {}
    wanted = [(f, models.PayloadSchemaType.KEYWORD) for f in KEYWORD_FIELDS]
    wanted += [(f, models.PayloadSchemaType.FLOAT) for f in FLOAT_FIELDS]
    for field, schema in wanted:
        if field not in existing:
            client.create_payload_index(name, field, schema, wait=True)


def migrate_projects(client: QdrantClient, name: str) -> None:
    """Memories stored before projects existed go into ``default`` (not shared): one
    set-payload of the points without ``scope``, which a re-run after a crash finishes."""
    unscoped = models.Filter(
        must=[models.IsEmptyCondition(is_empty=models.PayloadField(key="scope"))]
    )
    if client.count(name, count_filter=unscoped, exact=True).count:
        client.set_payload(name, dict(UNSCOPED_DEFAULTS), points=unscoped, wait=True)


def separate_engine_bm25(client: QdrantClient, name: str, meta: dict[str, Any]) -> str:
    """The field the engine-written memories' BM25 vectors are in (:func:`~.base.sparse_field`):
    ``bm25_engine``, which a collection created before it existed gets (Qdrant >= 1.18 adds
    a field to a collection), its engine-written memories' vectors moved there from ``bm25``
    as they are, and then SPARSE_LAYOUT recorded in its metadata. A rerun after a crash
    finishes the move: a moved vector leaves none in ``bm25`` to find. On an older server,
    ``bm25`` (the former layout: the written memories' IDF counts the engine-written ones)."""
    if meta.get(LAYOUT_KEY) == SPARSE_LAYOUT:
        return ENGINE_SPARSE
    fields = client.get_collection(name).config.params.sparse_vectors or {}
    if ENGINE_SPARSE not in fields:
        config = models.SparseVectorConfig(modifier=models.Modifier.IDF)
        try:
            client.create_vector_name(
                name, ENGINE_SPARSE, models.SparseVectorNameConfig(sparse=config), wait=True
            )
        except Exception as exc:  # an older server has no such call
            log.warning(
                "store: cannot add the sparse field %s to collection %s (%s): the memories you "
                "wrote are scored with an IDF that counts episode summaries too. Qdrant 1.18 or "
                "later adds the field at the next start; `tribalmemory reembed` builds a "
                "collection that has it",
                ENGINE_SPARSE,
                name,
                exc,
            )
            return SPARSE
    left = models.Filter(
        must=[
            models.FieldCondition(
                key="source_type", match=models.MatchAny(any=source_values(ENGINE_WRITTEN))
            ),
            models.HasVectorCondition(has_vector=SPARSE),
        ]
    )
    offset: Any = None
    while True:
        records, offset = client.scroll(
            name, scroll_filter=left, limit=UPSERT_CHUNK, offset=offset, with_vectors=[SPARSE]
        )
        found = {r.id: r.vector[SPARSE] for r in records if isinstance(r.vector, dict)}
        if found:
            moved = [
                models.PointVectors(id=pid, vector={ENGINE_SPARSE: _sparse(vector)})
                for pid, vector in found.items()
            ]
            client.update_vectors(name, moved, wait=True)
            ids: list[Any] = list(found)
            client.delete_vectors(name, [SPARSE], models.PointIdsList(points=ids), wait=True)
        if offset is None:
            break
    client.update_collection(name, metadata={META_KEY: {**meta, LAYOUT_KEY: SPARSE_LAYOUT}})
    return ENGINE_SPARSE


def _dense(vector: Any) -> np.ndarray:
    return np.asarray(vector[DENSE], dtype=np.float32)


def _sparse(vector: Any) -> models.SparseVector:
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))


class ServerStore:
    """Memories in one Qdrant collection (reached through an alias)."""

    def __init__(
        self,
        client: QdrantClient,
        alias: str,
        name: str,
        info: StoreInfo,
        *,
        local: bool,
        lock: Any = None,
        owns_client: bool = True,
        engine_sparse: str = ENGINE_SPARSE,
    ) -> None:
        self.info = info
        self._client = client
        self._alias = alias  # the configured collection name
        self._name = name  # the physical collection this object reads and writes
        self._local = local
        # qdrant-client's in-process mode is not thread-safe; an HTTP client is.
        self._lock: Any = lock or (threading.RLock() if local else contextlib.nullcontext())
        self._owns_client = owns_client
        self._params = None if local else _PARAMS  # the in-process mode is always exact
        self._closed = False
        self._engine_sparse = engine_sparse  # see separate_engine_bm25

    @classmethod
    def attach(
        cls,
        client: QdrantClient,
        collection: str,
        model_name: str,
        dim: int,
        *,
        location: str,
        local: bool = False,
        check_model: bool = True,
    ) -> ServerStore:
        """Use ``client``'s collection (created if missing); the store then owns the client."""
        try:
            found = _read_meta(client, collection)
        except StorageError:
            raise
        except Exception as exc:
            raise StorageError(
                f"cannot reach Qdrant at {location}: {exc}. Check storage.qdrant_url and "
                "storage.qdrant_api_key (or QDRANT_API_KEY), or unset qdrant_url to use the "
                "embedded store"
            ) from exc
        if found is None:
            name = _create(client, _new_name(collection), model_name, dim, local)
            client.update_collection_aliases(
                change_aliases_operations=[
                    models.CreateAliasOperation(
                        create_alias=models.CreateAlias(collection_name=name, alias_name=collection)
                    )
                ]
            )
            meta: dict[str, Any] = {"model_name": model_name, "dim": dim}
            engine_sparse = ENGINE_SPARSE
        else:
            name, meta = found
            if check_model:
                ensure_same_model(location, meta["model_name"], meta["dim"], model_name, dim)
            ensure_indexes(client, name, local)
            migrate_projects(client, name)
            engine_sparse = separate_engine_bm25(client, name, meta)
        info = StoreInfo(
            model_name=meta["model_name"], dim=int(meta["dim"]), backend="qdrant", location=location
        )
        return cls(client, collection, name, info, local=local, engine_sparse=engine_sparse)

    @classmethod
    def connect(
        cls,
        url: str,
        api_key: str | None,
        collection: str,
        model_name: str,
        dim: int,
        *,
        check_model: bool = True,
    ) -> ServerStore:
        """A store on the Qdrant server at ``url``."""
        client = QdrantClient(url=url, api_key=api_key or None, timeout=30)
        try:
            return cls.attach(
                client,
                collection,
                model_name,
                dim,
                location=f"{url} ({collection})",
                check_model=check_model,
            )
        except BaseException:
            client.close()
            raise

    @classmethod
    def open_local(
        cls,
        path: str | Path,
        collection: str,
        model_name: str,
        dim: int,
        *,
        check_model: bool = True,
    ) -> ServerStore:
        """qdrant-client's in-process mode in a folder, or ``":memory:"`` (tests)."""
        location = str(path)
        try:
            client = (
                QdrantClient(location) if location == ":memory:" else QdrantClient(path=location)
            )
        except RuntimeError as exc:
            if "already accessed" in str(exc):
                raise store_locked(location) from None
            raise StorageError(f"cannot open {location}: {exc}") from exc
        try:
            return cls.attach(
                client,
                collection,
                model_name,
                dim,
                location=location,
                local=True,
                check_model=check_model,
            )
        except BaseException:
            client.close()
            raise

    # -- internals ----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"the store at {self.info.location} is closed")

    # -- the MemoryStore contract ---------------------------------------------------------

    def upsert(self, memories: list[Memory], vectors: np.ndarray) -> None:
        rows = check_rows(vectors, len(memories), self.info.dim).tolist()
        points = []
        for memory, row in zip(memories, rows, strict=True):
            pid = point_id(memory.id)
            if pid is None:
                raise ValueError(f"memory id {memory.id!r} is not a UUID")
            field = sparse_field(memory.source_type, self._engine_sparse)
            vector = {DENSE: row, field: _sparse(lexical.document_vector(memory.content))}
            points.append(models.PointStruct(id=pid, vector=vector, payload=to_payload(memory)))
        with self._lock:
            self._check_open()
            for start in range(0, len(points), UPSERT_CHUNK):
                self._client.upsert(self._name, points[start : start + UPSERT_CHUNK], wait=True)

    def get(self, ids: list[str]) -> list[Memory]:
        wanted = point_ids(ids)
        if not wanted:
            return []
        with self._lock:
            self._check_open()
            records = self._client.retrieve(
                self._name, wanted, with_payload=True, with_vectors=False
            )
        found = {str(r.id): from_payload(r.payload) for r in records}
        return [found[p] for p in map(point_id, ids) if p in found]

    def get_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        wanted = point_ids(ids)
        if not wanted:
            return {}
        with self._lock:
            self._check_open()
            records = self._client.retrieve(
                self._name, wanted, with_payload=["id"], with_vectors=[DENSE]
            )
        return {(r.payload or {}).get("id", str(r.id)): _dense(r.vector) for r in records}

    def delete(self, ids: list[str]) -> None:
        wanted: list[Any] = point_ids(ids)
        if wanted:
            with self._lock:
                self._check_open()
                self._client.delete(self._name, models.PointIdsList(points=wanted), wait=True)

    def search(
        self, text: str, vector: np.ndarray, limit: int, where: MemoryFilter | None = None
    ) -> list[SearchHit]:
        if limit <= 0:
            return []
        query = unit_query(vector, self.info.dim)
        depth = search_depth(limit)
        asked = depth + TIE_MARGIN
        parts = [
            self._hybrid_requests(query, text, asked, server_filter(part), field) if part else []
            for part, field in zip(kind_filters(where), (SPARSE, self._engine_sparse), strict=True)
        ]
        with self._lock:
            self._check_open()
            written, engine = (
                [
                    whole_ties([(str(p.id), float(p.score)) for p in answer.points], depth, asked)
                    for answer in self._client.query_batch_points(self._name, requests)
                ]
                if requests
                else []
                for requests in parts
            )
            best = fuse_kinds(written, engine, limit)
            records = (
                self._client.retrieve(
                    self._name, [pid for pid, _ in best], with_payload=True, with_vectors=[DENSE]
                )
                if best
                else []
            )
        found = {str(r.id): r for r in records}
        return [
            SearchHit(
                from_payload(found[pid].payload),
                score,
                float(np.dot(_dense(found[pid].vector), query)),
            )
            for pid, score in best
            if pid in found
        ]

    def _hybrid_requests(
        self, query: np.ndarray, text: str, depth: int, flt: models.Filter | None, field: str
    ) -> list[models.QueryRequest]:
        """A hybrid search's requests, ``depth`` candidates each: the dense one, and the BM25
        one (in the sparse ``field``) when ``text`` has terms."""
        requests = [
            models.QueryRequest(
                query=query.tolist(), using=DENSE, limit=depth, filter=flt, params=self._params
            )
        ]
        sparse = lexical.query_vector(text)
        if sparse is not None:
            requests.append(
                models.QueryRequest(query=_sparse(sparse), using=field, limit=depth, filter=flt)
            )
        return requests

    def dense_search(
        self, vector: np.ndarray, limit: int, where: MemoryFilter | None = None
    ) -> list[SearchHit]:
        if limit <= 0:
            return []
        query = unit_query(vector, self.info.dim)
        with self._lock:
            self._check_open()
            points = self._client.query_points(
                self._name,
                query=query.tolist(),
                using=DENSE,
                query_filter=server_filter(where),
                search_params=self._params,
                limit=limit,
                with_payload=True,
                with_vectors=False,
            ).points
        return [SearchHit(from_payload(p.payload), float(p.score), float(p.score)) for p in points]

    def term_search(self, text: str, limit: int, where: MemoryFilter | None = None) -> list[Memory]:
        sparse = lexical.query_vector(text)
        if limit <= 0 or sparse is None:
            return []
        written, _ = kind_filters(where)  # a store of layout 1 keeps every memory's in SPARSE
        if written is None:
            return []
        with self._lock:
            self._check_open()
            points = self._client.query_points(
                self._name,
                query=_sparse(sparse),
                using=SPARSE,
                query_filter=server_filter(written),
                limit=limit,
                with_payload=True,
                with_vectors=False,
            ).points
        return [from_payload(p.payload) for p in points]

    def count(self, where: MemoryFilter | None = None) -> int:
        with self._lock:
            self._check_open()
            return self._client.count(
                self._name, count_filter=server_filter(where), exact=True
            ).count

    def scroll(self, where: MemoryFilter | None = None, batch_size: int = 256) -> Iterator[Memory]:
        flt = server_filter(where)
        offset: Any = None
        while True:
            with self._lock:
                self._check_open()
                records, offset = self._client.scroll(
                    self._name,
                    scroll_filter=flt,
                    limit=batch_size,
                    offset=offset,
                    with_payload=True,
                    with_vectors=False,
                )
            for record in records:
                yield from_payload(record.payload)
            if offset is None:
                return

    def project_counts(self) -> dict[str, int]:
        with self._lock:
            self._check_open()
            found = self._client.facet(self._name, "project", limit=MAX_PROJECTS, exact=True)
        return {str(h.value): int(h.count) for h in found.hits}

    def newest(self, where: MemoryFilter | None, limit: int) -> list[Memory]:
        with self._lock:
            self._check_open()
            records, _ = self._client.scroll(
                self._name,
                scroll_filter=server_filter(where),
                limit=limit,
                with_payload=True,
                with_vectors=False,
                order_by=models.OrderBy(key="created_ts", direction=models.Direction.DESC),
            )
        return [from_payload(record.payload) for record in records]

    def optimize(self) -> bool:
        """The server indexes by itself; nothing to do."""
        return False

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._owns_client:
                    self._client.close()

    def __enter__(self) -> ServerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- rebuild (used by reembed) --------------------------------------------------------

    def begin_rebuild(self, model_name: str, dim: int) -> ServerStore:
        """A new physical collection; the alias keeps pointing to the old one until finish."""
        with self._lock:
            name = _create(self._client, _new_name(self._alias), model_name, dim, self._local)
        info = StoreInfo(
            model_name=model_name, dim=dim, backend="qdrant", location=self.info.location
        )
        return ServerStore(
            self._client,
            self._alias,
            name,
            info,
            local=self._local,
            lock=self._lock,
            owns_client=False,
        )

    def finish_rebuild(self, target: ServerStore) -> None:
        """Point the alias at ``target``'s collection (one atomic call), drop the old, close."""
        old = self._name
        with self._lock:
            actions: list[Any] = []
            if old == self._alias:  # a plain collection holds the name: drop it first
                self._client.delete_collection(old)
            else:
                actions.append(
                    models.DeleteAliasOperation(
                        delete_alias=models.DeleteAlias(alias_name=self._alias)
                    )
                )
            actions.append(
                models.CreateAliasOperation(
                    create_alias=models.CreateAlias(
                        collection_name=target._name, alias_name=self._alias
                    )
                )
            )
            self._client.update_collection_aliases(change_aliases_operations=actions)
            if old != self._alias:
                self._client.delete_collection(old)
        target.close()
        self.close()

    def abort_rebuild(self, target: ServerStore) -> None:
        with self._lock:
            self._client.delete_collection(target._name)
        target.close()
