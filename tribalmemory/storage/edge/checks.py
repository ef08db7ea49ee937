"""What opening checks before trusting a shard: its segment folders, a sample of its points,
its number of memories against what store.json recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qdrant_edge as qe

from ...plural import counted
from ..base import DENSE, SPARSE


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
