"""The embedded store: :class:`EdgeStore` opens its folder, reads and writes memories on the
shard, and keeps it up (sealing, the rebuild that reembed runs)."""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from ...models import ENGINE_WRITTEN, Memory
from ...timeutil import to_iso, utc_now
from .. import lexical
from ..base import (
    DENSE,
    ENGINE_SPARSE,
    FLOAT_FIELDS,
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
    kind_filters,
    point_id,
    point_ids,
    search_depth,
    source_values,
    sparse_field,
    split_fused,
    to_payload,
    unit_query,
    whole_ties,
)
from ..integrity import DamagedDataError
from .checks import count_problem, sample_problem, segment_folders, segments_problem
from .folder import (
    LOCK_FILE,
    META_FILE,
    SHARD_DIR,
    FolderLock,
    read_meta,
    remove_stale_shards,
    write_meta,
)
from .search import dense, dense_request, edge_filter, hybrid_requests, term_request
from .shard import SEAL_SIZE, open_shard

log = logging.getLogger("tribalmemory.storage")

UPSERT_CHUNK = 256
# Points read per hold of the store's lock: a background job reading a 600-member episode held
# it 3-5 ms at once, and a request's duplicate check and write waited that long behind it.
READ_CHUNK = 64
FORCE_SEAL = 2 * SEAL_SIZE  # unsealed memories at which maintenance seals even when busy
SEAL_BYTES_PER_MEMORY = 8192  # disk per sealed memory, generously (vectors, payload, indexes)


class EdgeStore:
    """The embedded store. Open with :meth:`open`; one process at a time."""

    def __init__(
        self,
        root: Path,
        shard: qe.EdgeShard,
        shard_name: str,
        info: StoreInfo,
        folder_lock: FolderLock | None,
    ) -> None:
        self.root = root
        self.info = info
        self._shard: qe.EdgeShard | None = shard
        self._shard_name = shard_name
        self._folder_lock = folder_lock
        self._lock = threading.RLock()
        self._last_used = time.monotonic()
        self._unsealed = 0  # memories written since the last optimize() (an estimate)
        self._maintenance_due = True  # unknown after open: look once
        self._engine_ids: set[str] = set()  # points of engine-written memories (searched apart)
        self._layout: int | None = SPARSE_LAYOUT  # recorded in store.json; None until migrated

    @classmethod
    def open(
        cls, path: str | Path, model_name: str, dim: int, *, check_model: bool = True
    ) -> EdgeStore:
        """Open or create the store at ``path``.

        Raises StoreLockedError if another process has it open, ModelMismatchError if another
        embedding model or dimension wrote it (unless ``check_model`` is False).
        """
        root = Path(path).expanduser()
        root.mkdir(parents=True, exist_ok=True)
        location = str(root)
        folder_lock = FolderLock(root / LOCK_FILE, location)
        folder_lock.acquire()
        shard: qe.EdgeShard | None = None
        store: EdgeStore | None = None
        try:
            meta = read_meta(root)
            shards = sorted(p.name for p in root.iterdir() if SHARD_DIR.match(p.name))
            if meta is None:
                if shards:
                    raise DamagedDataError(
                        root / META_FILE,
                        f"is missing, but the folder holds shard data ({', '.join(shards)})",
                    )
                meta = {
                    "model_name": model_name,
                    "dim": dim,
                    "shard": "shard-1",
                    LAYOUT_KEY: SPARSE_LAYOUT,
                }
                write_meta(root, model_name, dim, "shard-1", layout=SPARSE_LAYOUT)
            elif check_model:
                ensure_same_model(location, meta["model_name"], meta["dim"], model_name, dim)
            shard_dir = root / meta["shard"]
            if not (shard_dir.is_dir() and any(shard_dir.iterdir())) and (
                meta.get("state") or shards
            ):
                # A store.json without state and no shard at all: creation was interrupted.
                found = ", ".join(shards) if shards else "no shard at all"
                raise DamagedDataError(
                    root / META_FILE,
                    f"names {meta['shard']}, which does not exist; the folder holds {found}",
                )
            problem = segments_problem(meta.get("state"), shard_dir)
            if problem:
                raise DamagedDataError(shard_dir, problem)
            migrate = meta.get(LAYOUT_KEY) != SPARSE_LAYOUT
            shard = open_shard(shard_dir, int(meta["dim"]), location, vacuum=migrate)
            points = int(shard.count(qe.CountRequest(exact=True)))
            problem = count_problem(meta.get("state"), points) or sample_problem(
                shard, int(meta["dim"])
            )
            if problem:
                raise DamagedDataError(shard_dir, problem)
            remove_stale_shards(root, keep=meta["shard"])
            info = StoreInfo(
                model_name=meta["model_name"],
                dim=int(meta["dim"]),
                backend="edge",
                location=location,
            )
            store = cls(root, shard, meta["shard"], info, folder_lock)
            store._ensure_indexes()
            store._migrate_projects()
            if migrate:
                shard = None  # the store's now: it reloads it
                store._separate_engine_bm25()
            store._engine_ids = store._find_engine_ids()
            store._record_state(in_use=True, points=points)
            return store
        except BaseException:
            live = shard if store is None else store._shard
            if live is not None:
                live.close()
            folder_lock.release()
            raise

    # -- internals ----------------------------------------------------------------------

    def _live(self, touch: bool = True) -> qe.EdgeShard:
        if self._shard is None:
            raise StorageError(f"the store at {self.info.location} is closed")
        if touch:
            self._last_used = time.monotonic()
        return self._shard

    def _record_state(self, *, in_use: bool, points: int | None, segments: bool = True) -> None:
        """Write the shard's state into store.json (only the store opened with :meth:`open`
        does: a rebuild's target must not). A failure (e.g. a full disk) is logged: the next
        open then checks less, and nothing is lost."""
        if self._folder_lock is None:
            return
        state = {
            "open": in_use,
            "points": points,
            "segments": segment_folders(self.root / self._shard_name) if segments else None,
            "recorded_at": to_iso(utc_now()),
        }
        try:
            write_meta(
                self.root,
                self.info.model_name,
                self.info.dim,
                self._shard_name,
                state,
                layout=self._layout,
            )
        except OSError as exc:
            log.warning("could not record the store's state in %s: %s", META_FILE, exc)

    def _find_engine_ids(self) -> set[str]:
        """The points of the engine-written memories (ids only, a scroll of the shard)."""
        found: set[str] = set()
        offset: Any = None
        while True:
            request = qe.ScrollRequest(
                offset=offset,
                limit=1024,
                filter=edge_filter(MemoryFilter(source_types=sorted(ENGINE_WRITTEN))),
                with_payload=False,
                with_vector=False,
            )
            with self._lock:
                records, offset = self._live().scroll(request)
            found.update(str(record.id) for record in records)
            if offset is None:
                return found

    def _separate_engine_bm25(self) -> None:
        """Migrate a shard written before engine-written memories had a BM25 field of their
        own (``open_shard`` added the field and loaded the shard with ``vacuum``): their
        vectors move from ``bm25`` to ``bm25_engine`` as they are, every segment holding a
        deleted vector is rewritten (a sealed segment's IDF counts a deleted vector until
        then), and the shard is loaded again with the usual settings (a plain segment's IDF
        counts one until then). A crash at any step leaves what a rerun finishes: a moved
        vector leaves none in ``bm25`` to find, rewriting is idempotent, and SPARSE_LAYOUT is
        recorded only by the next _record_state, after this."""
        started = time.monotonic()
        self._layout = None
        log.info(
            "store: giving engine-written memories a BM25 field of their own (once; about 20 s "
            "for 100,000 memories)"
        )
        with self._lock:
            shard = self._live(touch=False)
            moved = self._move_engine_vectors(shard)
            self._record_state(in_use=True, points=None, segments=False)  # segments change
            shard.optimize()
            self._shard = None
            shard.close()
            self._shard = open_shard(
                self.root / self._shard_name, self.info.dim, self.info.location
            )
            self._layout = SPARSE_LAYOUT
            self._maintenance_due = True
        log.info(
            "store: moved the BM25 vectors of %d engine-written memories to %s (%.1f s)",
            moved,
            ENGINE_SPARSE,
            time.monotonic() - started,
        )

    @staticmethod
    def _move_engine_vectors(shard: qe.EdgeShard) -> int:
        """Move each engine-written memory's vector in ``bm25`` to ``bm25_engine``, a chunk
        at a time (set the new one, then delete the old: a crash between the two leaves a
        point that the next run finds and moves again, to the same vector)."""
        left = qe.Filter(
            must=[
                qe.FieldCondition("source_type", match=qe.MatchAny(source_values(ENGINE_WRITTEN))),
                qe.HasVectorCondition(SPARSE),
            ]
        )
        moved = 0
        offset: Any = None
        while True:
            request = qe.ScrollRequest(
                offset=offset,
                limit=UPSERT_CHUNK,
                filter=left,
                with_payload=False,
                with_vector=[SPARSE],
            )
            records, offset = shard.scroll(request)
            found = {r.id: r.vector[SPARSE] for r in records if isinstance(r.vector, dict)}
            if found:
                vectors = [qe.PointVectors(pid, {ENGINE_SPARSE: v}) for pid, v in found.items()]
                shard.update(qe.UpdateOperation.update_vectors(vectors))
                shard.update(qe.UpdateOperation.delete_vectors(list(found), [SPARSE]))
                moved += len(found)
            if offset is None:
                return moved

    def _ensure_indexes(self) -> None:
        with self._lock:
            shard = self._live(touch=False)
            existing = shard.info().payload_schema
            wanted = [(f, qe.PayloadSchemaType.Keyword) for f in KEYWORD_FIELDS]
            wanted += [(f, qe.PayloadSchemaType.Float) for f in FLOAT_FIELDS]
            for name, schema in wanted:
                if name not in existing:
                    shard.update(qe.UpdateOperation.create_field_index(name, schema))

    def _migrate_projects(self) -> None:
        """Memories stored before projects existed go into ``default`` (not shared). One
        update of the points that have no ``scope``: written to the WAL before it returns, so
        a crash replays it, and running it again finds nothing left to change."""
        with self._lock:
            shard = self._live(touch=False)
            unscoped = qe.Filter(must=[qe.IsEmptyCondition("scope")])
            if shard.count(qe.CountRequest(exact=True, filter=unscoped)):
                shard.update(
                    qe.UpdateOperation.set_payload_by_filter(unscoped, dict(UNSCOPED_DEFAULTS))
                )
                self._maintenance_due = True

    # -- the MemoryStore contract ---------------------------------------------------------

    def upsert(self, memories: list[Memory], vectors: np.ndarray) -> None:
        rows = check_rows(vectors, len(memories), self.info.dim).tolist()
        points = []
        engine: dict[str, bool] = {}  # point id: engine-written
        for memory, row in zip(memories, rows, strict=True):
            pid = point_id(memory.id)
            if pid is None:
                raise ValueError(f"memory id {memory.id!r} is not a UUID")
            sparse = lexical.document_vector(memory.content)
            vector = {DENSE: row, sparse_field(memory.source_type): sparse}
            points.append(qe.Point(pid, vector, to_payload(memory)))
            engine[pid] = memory.source_type in ENGINE_WRITTEN
        with self._lock:
            shard = self._live()
            for start in range(0, len(points), UPSERT_CHUNK):
                chunk = points[start : start + UPSERT_CHUNK]
                shard.update(qe.UpdateOperation.upsert_points(chunk))
            self._unsealed += len(points)
            self._maintenance_due = True
            self._engine_ids.update(pid for pid, written in engine.items() if written)
            self._engine_ids.difference_update(
                pid for pid, written in engine.items() if not written
            )

    def get(self, ids: list[str]) -> list[Memory]:
        records = self._retrieve(point_ids(ids), True, False)
        found = {str(r.id): from_payload(r.payload) for r in records}
        return [found[p] for p in map(point_id, ids) if p in found]

    def get_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        records = self._retrieve(point_ids(ids), ["id"], [DENSE])
        return {(r.payload or {}).get("id", str(r.id)): dense(r.vector) for r in records}

    def _retrieve(self, wanted: list[Any], payload: Any, vectors: Any) -> list[Any]:
        """The points found, :data:`READ_CHUNK` at a time, so that a long read lets other
        calls (a request's) take the lock in between."""
        records: list[Any] = []
        for start in range(0, len(wanted), READ_CHUNK):
            with self._lock:
                records += self._live().retrieve(
                    wanted[start : start + READ_CHUNK], payload, vectors
                )
        return records

    def delete(self, ids: list[str]) -> None:
        wanted: list[Any] = point_ids(ids)
        if wanted:
            with self._lock:
                self._live().update(qe.UpdateOperation.delete_points(wanted))
                self._engine_ids.difference_update(wanted)
                self._maintenance_due = True  # enough deletions make a segment worth vacuuming

    def search(
        self, text: str, vector: np.ndarray, limit: int, where: MemoryFilter | None = None
    ) -> list[SearchHit]:
        if limit <= 0:
            return []
        query = unit_query(vector, self.info.dim)
        flt = edge_filter(where)
        depth = search_depth(limit)
        written, engine = kind_filters(where)
        with self._lock:
            shard = self._live()
            apart = self._engine_ids
            # the dense list deeper by as many engine-written memories as it is likely to hold
            # (a store with episodes holds about one summary for ten memories): the written
            # ones keep their depth unless more are engine-written. Each kind's BM25 list from
            # its own field; the engine's as deep as the room made for it in the dense list,
            # and asked only when the store holds an engine-written memory.
            room = min(len(apart), depth // 2)
            depths = {DENSE: depth + room}
            if written:
                depths[SPARSE] = depth
            if engine and apart:
                depths[ENGINE_SPARSE] = room
            asked = {field: n + TIE_MARGIN for field, n in depths.items()}
            lists = [  # each list cut at its own depth: the limit it asked, less the margin
                whole_ties(
                    [(str(p.id), float(p.score)) for p in shard.query(r)],
                    r.limit - TIE_MARGIN,
                    r.limit,
                )
                for r in hybrid_requests(query, text, flt, asked)
            ]
            # the two fields' BM25 hits as one list: an engine-written hit then ranks against
            # the written ones' BM25 scores there (rrf_fuse's apart ranks); as a list of its
            # own, each would rank first
            ranked = lists[:1] + (
                [[hit for hits in lists[1:] for hit in hits]] if lists[1:] else []
            )
            best = split_fused(ranked, apart, depth, limit)
            records = shard.retrieve([pid for pid, _ in best], True, [DENSE]) if best else []
        found = {str(r.id): r for r in records}
        kept = [(found[pid], score) for pid, score in best if pid in found]
        if not kept:
            return []
        cosines = np.stack([dense(r.vector) for r, _ in kept]) @ query
        return [
            SearchHit(from_payload(r.payload), score, float(cosine))
            for (r, score), cosine in zip(kept, cosines, strict=True)
        ]

    def dense_search(
        self, vector: np.ndarray, limit: int, where: MemoryFilter | None = None
    ) -> list[SearchHit]:
        if limit <= 0:
            return []
        query = unit_query(vector, self.info.dim)
        request = dense_request(query, limit, edge_filter(where))
        with self._lock:
            points = self._live().query(request)
        return [SearchHit(from_payload(p.payload), float(p.score), float(p.score)) for p in points]

    def term_search(self, text: str, limit: int, where: MemoryFilter | None = None) -> list[Memory]:
        sparse = lexical.query_vector(text)
        if limit <= 0 or sparse is None:
            return []
        written, _ = kind_filters(where)
        if written is None:
            return []
        request = term_request(sparse, limit, edge_filter(written))
        with self._lock:
            points = self._live().query(request)
        return [from_payload(p.payload) for p in points]

    def count(self, where: MemoryFilter | None = None) -> int:
        request = qe.CountRequest(exact=True, filter=edge_filter(where))
        with self._lock:
            return int(self._live().count(request))

    def scroll(self, where: MemoryFilter | None = None, batch_size: int = 256) -> Iterator[Memory]:
        flt = edge_filter(where)
        offset: Any = None
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=batch_size, filter=flt, with_payload=True, with_vector=False
            )
            with self._lock:
                records, offset = self._live().scroll(request)
            for record in records:
                yield from_payload(record.payload)
            if offset is None:
                return

    def newest(self, where: MemoryFilter | None, limit: int) -> list[Memory]:
        request = qe.ScrollRequest(
            limit=limit,
            filter=edge_filter(where),
            with_payload=True,
            with_vector=False,
            order_by=qe.OrderBy("created_ts", direction=qe.Direction.Desc),
        )
        with self._lock:
            records, _ = self._live().scroll(request)
        return [from_payload(record.payload) for record in records]

    def project_counts(self) -> dict[str, int]:
        request = qe.FacetRequest(key="project", limit=MAX_PROJECTS, exact=True)
        with self._lock:
            hits = self._live().facet(request).hits
        return {str(h.value): int(h.count) for h in hits}

    def needs_maintenance(self, idle_seconds: float) -> bool:
        """Whether optimize() is worth calling now.

        True after writes (or a fresh open) once the store has not been used for
        ``idle_seconds``, or at once when FORCE_SEAL memories have been written since the last
        optimize(). optimize() itself decides what to do, and returns quickly when there is
        nothing to seal.
        """
        if not self._maintenance_due or self._shard is None:
            return False
        if self._unsealed >= FORCE_SEAL:
            return True
        return time.monotonic() - self._last_used >= idle_seconds

    def optimize_needs_bytes(self) -> int:
        """Disk space optimize() may need: a sealed copy of up to SEAL_SIZE memories, or of all
        that wait unsealed (generously :data:`SEAL_BYTES_PER_MEMORY` each)."""
        return SEAL_BYTES_PER_MEMORY * max(self._unsealed, SEAL_SIZE)

    def optimize(self) -> bool:
        """Seal the plain segment once it holds SEAL_SIZE memories (int8-quantized copy, payload
        and sparse indexes), vacuum segments with many deletions, convert segments written with
        older settings. Returns True if anything was done.

        Holds the GIL while it works: about 1 s per 10k memories sealed on 2 cores; converting
        an older store's HNSW segment takes ~1 s per 20k memories, once.
        """
        with self._lock:
            shard = self._live(touch=False)
            self._record_state(in_use=True, points=None, segments=False)  # segments may change
            worked = bool(shard.optimize())
            self._record_state(in_use=True, points=None)
            self._unsealed = 0
            self._maintenance_due = False
            return worked

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """The store's lock: while it is held, no call reads or writes the shard."""
        return self._lock

    def flush(self) -> None:
        """Persist segments and sync the WAL to disk (power-loss safe up to here); a backup
        copies the folder after this, with the lock held (``portability/backup.py``)."""
        with self._lock:
            self._live(touch=False).flush()

    def close(self) -> None:
        with self._lock:
            if self._shard is not None:
                points = int(self._shard.count(qe.CountRequest(exact=True)))
                self._shard.close()  # flushes segments and acknowledges the WAL
                self._shard = None
                self._record_state(in_use=False, points=points)
            if self._folder_lock is not None:
                self._folder_lock.release()
                self._folder_lock = None

    def __enter__(self) -> EdgeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- rebuild (used by reembed) --------------------------------------------------------

    def begin_rebuild(self, model_name: str, dim: int) -> EdgeStore:
        """A new, empty shard beside the live one; nothing changes until finish_rebuild."""
        name = f"shard-{int(self._shard_name.removeprefix('shard-')) + 1}"
        path = self.root / name
        if path.exists():
            shutil.rmtree(path)  # left over from an interrupted rebuild; never committed
        shard = open_shard(path, dim, self.info.location)
        info = StoreInfo(
            model_name=model_name, dim=dim, backend="edge", location=self.info.location
        )
        target = EdgeStore(self.root, shard, name, info, None)
        target._ensure_indexes()
        return target

    def finish_rebuild(self, target: EdgeStore) -> None:
        """Commit ``target`` as the store (one atomic rename of store.json); close both."""
        target.optimize()
        points = target.count()
        target.close()
        state = {
            "open": False,
            "points": points,
            "segments": segment_folders(self.root / target._shard_name),
            "recorded_at": to_iso(utc_now()),
        }
        write_meta(
            self.root,
            target.info.model_name,
            target.info.dim,
            target._shard_name,
            state,
            layout=SPARSE_LAYOUT,
        )
        old = self._shard_name
        lock, self._folder_lock = self._folder_lock, None  # store.json names the new shard now
        self.close()
        if lock is not None:
            lock.release()
        shutil.rmtree(self.root / old, ignore_errors=True)

    def abort_rebuild(self, target: EdgeStore) -> None:
        target.close()
        shutil.rmtree(self.root / target._shard_name, ignore_errors=True)
