"""The Qdrant Edge shard: its settings (plain segments sealed into int8-quantized ones, no
HNSW graph) and creating or loading it."""

from __future__ import annotations

from pathlib import Path

import qdrant_edge as qe

from ..base import DENSE, ENGINE_SPARSE, SPARSE, store_locked
from ..integrity import DamagedDataError
from .checks import segment_folders

SEAL_SIZE = 10_000  # memories per sealed segment: what one optimize() has to convert


def _kilobytes(points: int, dim: int) -> int:
    """Qdrant's segment thresholds are in KB of float32 dense vectors."""
    return points * dim * 4 // 1024


def shard_config(dim: int, *, engine_field: bool = True, vacuum: bool = False) -> qe.EdgeConfig:
    """The shard's settings. ``engine_field``: False for a shard written before engine-written
    memories had a BM25 field of their own; ``vacuum``: optimize() rewrites every segment that
    holds a deleted point or vector (whose terms still count in its IDF until then)."""
    seal = _kilobytes(SEAL_SIZE, dim)
    sparse = {SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
    if engine_field:
        sparse[ENGINE_SPARSE] = qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)
    return qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
        sparse_vectors=sparse,
        # m=0: no HNSW graph. Sealed segments are scanned exhaustively over int8 vectors.
        hnsw_config=qe.HnswIndexConfig(
            m=0, ef_construct=64, full_scan_threshold=10000, payload_m=0
        ),
        quantization_config=qe.ScalarQuantizationConfig(
            type=qe.ScalarType.Int8, quantile=0.99, always_ram=True
        ),
        # Seal the plain segment at SEAL_SIZE points; never merge into bigger segments, so
        # that no optimize() converts more than about SEAL_SIZE (+ what waited) points.
        optimizers=qe.EdgeOptimizersConfig(
            indexing_threshold=seal,
            max_segment_size=seal,
            deleted_threshold=0.0 if vacuum else None,
            vacuum_min_vector_number=1 if vacuum else None,
        ),
    )


def lacks_engine_field(path: Path) -> bool:
    """Whether a segment of the shard has no storage for :data:`ENGINE_SPARSE` (a shard
    written before it existed, which the current settings cannot load). A segment folder
    without its ``version.info`` does not count: loading deletes it as unfinished (a crash
    while optimize() wrote it)."""
    segments = path / "segments"
    return any(
        (segments / name / "version.info").exists()
        and not (segments / name / f"vector_storage-{ENGINE_SPARSE}").exists()
        for name in segment_folders(path)
    )


def open_shard(path: Path, dim: int, location: str, *, vacuum: bool = False) -> qe.EdgeShard:
    """Create the shard, or load it with the current settings (older shards are converted
    by their next optimize(); one without :data:`ENGINE_SPARSE` gets it first, empty)."""
    try:
        if path.is_dir() and any(path.iterdir()):
            if lacks_engine_field(path):
                former = qe.EdgeShard.load(str(path), shard_config(dim, engine_field=False))
                try:  # adding it again changes nothing (a rerun after a crash)
                    former.update(
                        qe.UpdateOperation.create_sparse_vector(
                            ENGINE_SPARSE, modifier=qe.Modifier.Idf
                        )
                    )
                finally:
                    former.close()
            return qe.EdgeShard.load(str(path), shard_config(dim, vacuum=vacuum))
        return qe.EdgeShard.create(str(path), shard_config(dim))
    except Exception as exc:
        if "WouldBlock" in str(exc):
            raise store_locked(location) from None
        raise DamagedDataError(path, f"cannot be loaded ({exc})") from exc
