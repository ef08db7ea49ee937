"""The typed rows the store returns: an episode (:class:`EpisodeRow`), a job (:class:`Job`)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass, field
from typing import Any


def new_episode_id() -> str:
    return "ep-" + uuid.uuid4().hex[:16]


@dataclass
class EpisodeRow:
    id: str
    title: str
    title_source: str
    summary: str
    summary_kind: str
    summary_status: str
    summary_memory_id: str | None
    llm_summary: str
    llm_summary_mark: int | None
    needs_full: bool
    since_regen: int
    status: str
    created_at: float
    updated_at: float
    closed_at: float | None
    last_activity: float
    parent_episode_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    user_metadata: dict[str, Any] = field(default_factory=dict)
    structured: dict[str, Any] = field(default_factory=dict)
    project: str = "default"
    memory_count: int = 0
    first_activity: float | None = None

    @property
    def outcome(self) -> str | None:
        """The episode's outcome: its structured record's, else its metadata's (None: not
        known). The one rule for every view of an episode (list, get, replay, patterns); the
        ``outcome`` filter of :meth:`.Episodes.find` applies it in SQL."""
        found = self.structured.get("outcome") or self.metadata.get("outcome")
        return str(found) if found else None

    @classmethod
    def from_sql(cls, row: sqlite3.Row) -> EpisodeRow:
        data = dict(row)
        data["metadata"] = json.loads(data.get("metadata") or "{}")
        data["user_metadata"] = json.loads(data.get("user_metadata") or "{}")
        data["structured"] = json.loads(data.get("structured") or "{}")
        data["needs_full"] = bool(data["needs_full"])
        return cls(**data)

    @classmethod
    def new(cls, title: str, title_source: str, now: float, **values: Any) -> EpisodeRow:
        """A new active episode created at ``now``: no summary, no parent, not closed;
        ``values`` set any other column."""
        defaults: dict[str, Any] = {
            "id": new_episode_id(),
            "summary": "",
            "summary_kind": "extractive",
            "summary_status": "current",
            "summary_memory_id": None,
            "llm_summary": "",
            "llm_summary_mark": None,
            "needs_full": False,
            "since_regen": 0,
            "status": "active",
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
            "last_activity": now,
            "parent_episode_id": None,
        }
        return cls(title=title, title_source=title_source, **{**defaults, **values})


@dataclass
class Job:
    id: int
    kind: str
    key: str
    payload: dict[str, Any]
    not_before: float
    created_at: float
    attempts: int
    gen: int = 0

    @classmethod
    def from_sql(cls, row: sqlite3.Row) -> Job:
        return cls(
            id=row["id"],
            kind=row["kind"],
            key=row["key"],
            payload=json.loads(row["payload"]),
            not_before=row["not_before"],
            created_at=row["created_at"],
            attempts=row["attempts"],
            gen=row["gen"],
        )
