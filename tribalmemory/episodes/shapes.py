"""JSON shapes of episodes (the documented contract of the list and get operations)."""

from __future__ import annotations

from typing import Any

from ..timeutil import from_epoch, to_iso
from .store import EpisodeRow


def _iso(seconds: float | None) -> str | None:
    return None if seconds is None else to_iso(from_epoch(seconds))


def episode_summary_json(row: EpisodeRow, cost_usd: float) -> dict[str, Any]:
    """An item of ``episodes_list``: the documented keys first, then helpful extras."""
    return {
        "id": row.id,
        "title": row.title,
        "summary": row.summary,
        "status": row.status,
        "project": row.project,
        "memory_count": row.memory_count,
        "created_at": _iso(row.created_at),
        "updated_at": _iso(row.updated_at),
        "closed_at": _iso(row.closed_at),
        "summary_kind": row.summary_kind,
        "summary_status": row.summary_status,
        "last_activity_at": _iso(row.last_activity),
        "time_span": {"start": _iso(row.first_activity), "end": _iso(row.last_activity)},
        "parent_episode_id": row.parent_episode_id,
        "outcome": row.outcome,
        "task": row.structured.get("task"),
        "tags": row.metadata.get("tags", []),
        "cost_usd": round(cost_usd, 6),
    }


def episode_json(row: EpisodeRow, cost_usd: float) -> dict[str, Any]:
    """The ``episode`` object of ``episode_get``."""
    data = episode_summary_json(row, cost_usd)
    data["summary_memory_id"] = row.summary_memory_id
    data["metadata"] = row.metadata
    data["title_source"] = row.title_source
    data["structured"] = row.structured or None
    return data
