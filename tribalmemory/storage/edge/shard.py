"""The Qdrant Edge shard: its settings (plain segments sealed into int8-quantized ones, no
HNSW graph) and creating or loading it."""

from __future__ import annotations

from pathlib import Path

import qdrant_edge as qe

from ..base import DENSE, SPARSE, store_locked
from ..integrity import DamagedDataError

SEAL_SIZE = 10_000  # memories per sealed segment: what one optimize() has to convert


def _kilobytes(points: int, dim: int) -> int:
    """Qdrant's segment thresholds are in KB of float32 dense vectors."""
    return points * dim * 4 // 1024


def shard_config(dim: int) -> qe.EdgeConfig:
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


def open_shard(path: Path, dim: int, location: str) -> qe.EdgeShard:
    """Create the shard, or load it with the current settings (older shards are converted
    by their next optimize())."""
    try:
        if path.is_dir() and any(path.iterdir()):
            return qe.EdgeShard.load(str(path), shard_config(dim))
        return qe.EdgeShard.create(str(path), shard_config(dim))
    except Exception as exc:
        if "WouldBlock" in str(exc):
            raise store_locked(location) from None
        raise DamagedDataError(path, f"cannot be loaded ({exc})") from exc
