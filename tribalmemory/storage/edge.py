"""Embedded backend: one Qdrant Edge shard (``qdrant_edge``) in a local folder.

Layout of the store folder::

    store.json   model name, dimension and the active shard (the commit record), and the
                 shard's state: open or closed, memories and segment folders (see below)
    lock         held (flock) by the process that has the store open
    shard-<n>/   the Qdrant Edge shard: WAL, segments, payload indexes

Opening never deletes what it cannot account for. A damaged store.json, one naming a missing
shard, a shard that fails to load, a segment folder that store.json lists but that is gone, or
(after a clean close) another number of memories than at the close raise DamagedDataError:
Qdrant Edge itself loads a shard without its segments as an almost empty one. Only shard
folders left by a rebuild are deleted, once the active shard has opened and passed the checks.

Writes go to the shard's write-ahead log before ``update`` returns, so an upserted memory
survives a crash of the process (kill -9). ``flush`` (done on close) also persists segments
and is what protects against power loss; see docs/storage.md.

New points land in one plain segment that queries scan exactly in float32. ``optimize()``
seals it, once it holds :data:`SEAL_SIZE` memories, into a segment whose int8-quantized
vectors are scanned about twice as fast (hits are rescored with the float vectors). No HNSW
graph is built: building one holds the GIL for minutes at 100k memories, sealing a segment
takes about a second. The daemon calls ``optimize()`` at quiet moments
(:meth:`EdgeStore.needs_maintenance`, ``service/maintenance.py``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from ..models import Memory
from ..plural import counted
from ..timeutil import to_epoch, to_iso, utc_now
from . import lexical
from .base import (
    DENSE,
    FLOAT_FIELDS,
    HNSW_EF,
    KEYWORD_FIELDS,
    MAX_PROJECTS,
    SPARSE,
    UNSCOPED_DEFAULTS,
    MemoryFilter,
    SearchHit,
    StorageError,
    StoreInfo,
    check_rows,
    ensure_same_model,
    from_payload,
    metadata_field,
    point_id,
    point_ids,
    project_conditions,
    rrf_fuse,
    search_depth,
    source_values,
    store_locked,
    to_payload,
    unit_query,
)
from .integrity import DamagedDataError, write_json_atomically

log = logging.getLogger("tribalmemory.storage")

META_FILE = "store.json"
LOCK_FILE = "lock"
FORMAT = 1
UPSERT_CHUNK = 256
# Points read per hold of the store's lock: a background job reading a 600-member episode held
# it 3-5 ms at once, and a request's duplicate check and write waited that long behind it.
READ_CHUNK = 64
SEAL_SIZE = 10_000  # memories per sealed segment: what one optimize() has to convert
FORCE_SEAL = 2 * SEAL_SIZE  # unsealed memories at which maintenance seals even when busy
SEAL_BYTES_PER_MEMORY = 8192  # disk per sealed memory, generously (vectors, payload, indexes)
OVERSAMPLING = 2.0  # int8 candidates per wanted hit, rescored with the float vectors
_SHARD_DIR = re.compile(r"^shard-(\d+)$")
# hnsw_ef only matters for HNSW segments of stores optimized by older versions, until their
# first optimize() converts them.
_PARAMS = qe.SearchParams(
    hnsw_ef=HNSW_EF,
    quantization=qe.QuantizationSearchParams(rescore=True, oversampling=OVERSAMPLING),
)


class FolderLock:
    """An exclusive, non-blocking ``flock`` on a file; released on close or process exit."""

    def __init__(self, path: Path, location: str) -> None:
        self.path = path
        self.location = location
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the engine's WAL lock still applies
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise store_locked(self.location, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _read_meta(root: Path) -> dict[str, Any] | None:
    path = root / META_FILE
    if not path.exists():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        meta["model_name"], meta["dim"], meta["shard"]  # noqa: B018 - required keys
        if not _SHARD_DIR.match(str(meta["shard"])):
            raise ValueError(f"shard {meta['shard']!r} is not a shard folder name")
        int(meta["dim"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedDataError(path, f"is damaged ({type(exc).__name__}: {exc})") from None
    return meta


def _write_meta(
    root: Path, model_name: str, dim: int, shard: str, state: dict[str, Any] | None = None
) -> None:
    """Atomically replace store.json (write, fsync, rename, fsync the folder)."""
    meta: dict[str, Any] = {
        "format": FORMAT,
        "backend": "edge",
        "model_name": model_name,
        "dim": dim,
        "shard": shard,
        "lexical": lexical.SIGNATURE,
        "written_at": to_iso(utc_now()),
    }
    if state is not None:
        meta["state"] = state
    write_json_atomically(root / META_FILE, meta)


def segment_folders(shard: Path) -> list[str]:
    """The segment folders of a shard, sorted."""
    folder = shard / "segments"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


# What every segment folder of Qdrant Edge 0.9 holds (plain and sealed alike); the indexes
# (payload_index, vector_index-*) are rebuilt when missing.
SEGMENT_PARTS = (
    "segment.json",
    "payload_storage",
    f"vector_storage-{DENSE}",
    f"vector_storage-{SPARSE}",
)


def incomplete_segments(shard: Path) -> list[str]:
    """Segment folders lacking ``version.info`` or one of :data:`SEGMENT_PARTS`."""
    parts = ("version.info", *SEGMENT_PARTS)
    return [
        name
        for name in segment_folders(shard)
        if not all((shard / "segments" / name / part).exists() for part in parts)
    ]


def segments_problem(state: dict[str, Any] | None, shard: Path) -> str | None:
    """What is wrong with the shard's segment folders compared with the state store.json
    recorded, or None. Checked before loading: Qdrant Edge deletes a segment folder that lacks
    its ``version.info`` while it loads, as if it were an unfinished one.

    ``state``: ``open`` (in use: after a crash its WAL replays writes), ``points`` (memories
    when recorded), ``segments`` (folders when recorded; null while optimize() was replacing
    them, when an unfinished segment is expected after a crash)."""
    if not state or state.get("segments") is None:
        return None  # written by an older version, or a crash during optimize()
    present = segment_folders(shard)
    missing = sorted(set(state["segments"]) - set(present))
    if missing:
        return (
            f"lacks {len(missing)} of the {len(state['segments'])} segment folders it had "
            f"({', '.join(missing)}): the memories in them would be lost"
        )
    unfinished = [n for n in present if not (shard / "segments" / n / "version.info").exists()]
    if unfinished:
        return (
            f"has segment folders without their version.info ({', '.join(unfinished)}), which "
            "Qdrant Edge would delete as unfinished when loading"
        )
    for name in present:
        lacking = [e for e in SEGMENT_PARTS if not (shard / "segments" / name / e).exists()]
        if lacking:
            return (
                f"has a segment folder ({name}) without its {', '.join(lacking)}: Qdrant Edge "
                "would load it with those memories' fields or vectors missing"
            )
    return None


def sample_problem(shard: qe.EdgeShard, dim: int, size: int = 16) -> str | None:
    """A few memories read back whole (payload and dense vector), or what they lack: Qdrant
    Edge loads a segment whose payload or vector files are gone, with empty ones."""
    records, _ = shard.scroll(qe.ScrollRequest(limit=size, with_payload=True, with_vector=[DENSE]))
    for record in records:
        payload = record.payload or {}
        if not {"id", "content"} <= set(payload):
            return (
                f"has memories without their fields (point {record.id}): payload files are damaged"
            )
        vector = (record.vector or {}).get(DENSE) if isinstance(record.vector, dict) else None
        if not isinstance(vector, list) or len(vector) != dim:
            return (
                f"has memories without their vector (point {record.id}): vector files are damaged"
            )
    return None


def count_problem(state: dict[str, Any] | None, points: int) -> str | None:
    """After a clean close the shard must load with as many memories as it held then."""
    if not state or state.get("open") or state.get("points") is None:
        return None
    if points != state["points"]:
        return (
            f"holds {counted(points, 'memory')}, but held {state['points']} when it was closed "
            "(segment files were removed or damaged)"
        )
    return None


def _kilobytes(points: int, dim: int) -> int:
    """Qdrant's segment thresholds are in KB of float32 dense vectors."""
    return points * dim * 4 // 1024


def _shard_config(dim: int) -> qe.EdgeConfig:
    seal = _kilobytes(SEAL_SIZE, dim)
    return qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        # m=0: no HNSW graph. Sealed segments are scanned exhaustively over int8 vectors.
        hnsw_config=qe.HnswIndexConfig(
            m=0, ef_construct=64, full_scan_threshold=10000, payload_m=0
        ),
        quantization_config=qe.ScalarQuantizationConfig(
            type=qe.ScalarType.Int8, quantile=0.99, always_ram=True
        ),
        # Seal the plain segment at SEAL_SIZE points; never merge into bigger segments, so
        # that no optimize() converts more than about SEAL_SIZE (+ what waited) points.
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=seal, max_segment_size=seal),
    )


def _open_shard(path: Path, dim: int, location: str) -> qe.EdgeShard:
    """Create the shard, or load it with the current settings (older shards are converted
    by their next optimize())."""
    try:
        if path.is_dir() and any(path.iterdir()):
            return qe.EdgeShard.load(str(path), _shard_config(dim))
        return qe.EdgeShard.create(str(path), _shard_config(dim))
    except Exception as exc:
        if "WouldBlock" in str(exc):
            raise store_locked(location) from None
        raise DamagedDataError(path, f"cannot be loaded ({exc})") from exc


def edge_filter(where: MemoryFilter | None) -> qe.Filter | None:
    """MemoryFilter as a Qdrant Edge filter (None when it has no condition)."""
    if where is None:
        return None
    must: list[Any] = []
    must_not: list[Any] = []
    if where.ids is not None:
        must.append(qe.HasIdCondition(set(point_ids(where.ids))))
    if where.tags_any:
        must.append(qe.FieldCondition("tags", match=qe.MatchAny(list(where.tags_any))))
    if where.source_types:
        must.append(
            qe.FieldCondition("source_type", match=qe.MatchAny(source_values(where.source_types)))
        )
    if where.exclude_source_types:
        must_not.append(
            qe.FieldCondition(
                "source_type", match=qe.MatchAny(source_values(where.exclude_source_types))
            )
        )
    if where.after is not None or where.before is not None:
        must.append(
            qe.FieldCondition(
                "created_ts",
                range=qe.RangeFloat(
                    gte=to_epoch(where.after) if where.after else None,
                    lt=to_epoch(where.before) if where.before else None,
                ),
            )
        )
    for key, value in where.metadata_equals.items():
        must.append(qe.FieldCondition(metadata_field(key), match=qe.MatchValue(value)))
    if where.exclude_superseded:
        must.append(qe.IsEmptyCondition("superseded_by"))
    for key, values in project_conditions(where):
        must.append(qe.FieldCondition(key, match=qe.MatchAny(values)))
    if not must and not must_not:
        return None
    return qe.Filter(must=must or None, must_not=must_not or None)


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
        try:
            meta = _read_meta(root)
            shards = sorted(p.name for p in root.iterdir() if _SHARD_DIR.match(p.name))
            if meta is None:
                if shards:
                    raise DamagedDataError(
                        root / META_FILE,
                        f"is missing, but the folder holds shard data ({', '.join(shards)})",
                    )
                meta = {"model_name": model_name, "dim": dim, "shard": "shard-1"}
                _write_meta(root, model_name, dim, "shard-1")
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
            shard = _open_shard(shard_dir, int(meta["dim"]), location)
            points = int(shard.count(qe.CountRequest(exact=True)))
            problem = count_problem(meta.get("state"), points) or sample_problem(
                shard, int(meta["dim"])
            )
            if problem:
                raise DamagedDataError(shard_dir, problem)
            _remove_stale_shards(root, keep=meta["shard"])
            info = StoreInfo(
                model_name=meta["model_name"],
                dim=int(meta["dim"]),
                backend="edge",
                location=location,
            )
            store = cls(root, shard, meta["shard"], info, folder_lock)
            store._ensure_indexes()
            store._migrate_projects()
            store._record_state(in_use=True, points=points)
            return store
        except BaseException:
            if shard is not None:
                shard.close()
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
            _write_meta(self.root, self.info.model_name, self.info.dim, self._shard_name, state)
        except OSError as exc:
            log.warning("could not record the store's state in %s: %s", META_FILE, exc)

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
        for memory, row in zip(memories, rows, strict=True):
            pid = point_id(memory.id)
            if pid is None:
                raise ValueError(f"memory id {memory.id!r} is not a UUID")
            vector = {DENSE: row, SPARSE: lexical.document_vector(memory.content)}
            points.append(qe.Point(pid, vector, to_payload(memory)))
        with self._lock:
            shard = self._live()
            for start in range(0, len(points), UPSERT_CHUNK):
                chunk = points[start : start + UPSERT_CHUNK]
                shard.update(qe.UpdateOperation.upsert_points(chunk))
            self._unsealed += len(points)
            self._maintenance_due = True

    def get(self, ids: list[str]) -> list[Memory]:
        records = self._retrieve(point_ids(ids), True, False)
        found = {str(r.id): from_payload(r.payload) for r in records}
        return [found[p] for p in map(point_id, ids) if p in found]

    def get_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        records = self._retrieve(point_ids(ids), ["id"], [DENSE])
        return {(r.payload or {}).get("id", str(r.id)): _dense(r.vector) for r in records}

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
                self._maintenance_due = True  # enough deletions make a segment worth vacuuming

    def search(
        self, text: str, vector: np.ndarray, limit: int, where: MemoryFilter | None = None
    ) -> list[SearchHit]:
        if limit <= 0:
            return []
        query = unit_query(vector, self.info.dim)
        flt = edge_filter(where)
        depth = search_depth(limit)
        requests = [
            qe.QueryRequest(
                limit=depth,
                query=qe.Query.Nearest(query.tolist(), using=DENSE),
                filter=flt,
                params=_PARAMS,
                with_payload=False,
                with_vector=False,
            )
        ]
        sparse = lexical.query_vector(text)
        if sparse is not None:
            requests.append(
                qe.QueryRequest(
                    limit=depth,
                    query=qe.Query.Nearest(sparse, using=SPARSE),
                    filter=flt,
                    with_payload=False,
                    with_vector=False,
                )
            )
        with self._lock:
            shard = self._live()
            ranked = [[(str(p.id), float(p.score)) for p in shard.query(r)] for r in requests]
            best = rrf_fuse(ranked)[:limit]
            records = shard.retrieve([pid for pid, _ in best], True, [DENSE]) if best else []
        found = {str(r.id): r for r in records}
        kept = [(found[pid], score) for pid, score in best if pid in found]
        if not kept:
            return []
        cosines = np.stack([_dense(r.vector) for r, _ in kept]) @ query
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
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(query.tolist(), using=DENSE),
            filter=edge_filter(where),
            params=_PARAMS,
            with_payload=True,
            with_vector=False,
        )
        with self._lock:
            points = self._live().query(request)
        return [SearchHit(from_payload(p.payload), float(p.score), float(p.score)) for p in points]

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
        shard = _open_shard(path, dim, self.info.location)
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
        _write_meta(self.root, target.info.model_name, target.info.dim, target._shard_name, state)
        old = self._shard_name
        lock, self._folder_lock = self._folder_lock, None  # store.json names the new shard now
        self.close()
        if lock is not None:
            lock.release()
        shutil.rmtree(self.root / old, ignore_errors=True)

    def abort_rebuild(self, target: EdgeStore) -> None:
        target.close()
        shutil.rmtree(self.root / target._shard_name, ignore_errors=True)


def _dense(vector: Any) -> np.ndarray:
    """The dense part of a returned point's vectors."""
    return np.asarray(vector[DENSE], dtype=np.float32)


def _remove_stale_shards(root: Path, keep: str) -> None:
    """Delete shard folders store.json does not name (an interrupted or finished rebuild)."""
    for path in root.iterdir():
        if path.is_dir() and _SHARD_DIR.match(path.name) and path.name != keep:
            shutil.rmtree(path, ignore_errors=True)
