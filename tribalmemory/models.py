"""The host's data types: memories, source types and recall hits."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from .projects import DEFAULT_PROJECT
from .timeutil import parse_iso, to_iso


class SourceType(StrEnum):
    """Where a memory came from. Written upper-case in JSON, accepted in either case."""

    USER_EXPLICIT = "user_explicit"
    AUTO_CAPTURE = "auto_capture"
    CORRECTION = "correction"
    CROSS_INSTANCE = "cross_instance"
    LEGACY = "legacy"
    UNKNOWN = "unknown"
    EPISODE_SUMMARY = "episode_summary"
    LESSON = "lesson"
    DECISION = "decision"
    FACT = "fact"

    @classmethod
    def parse(cls, value: object) -> SourceType:
        """Accept ``USER_EXPLICIT`` or ``user_explicit``; raise ``ValueError`` otherwise."""
        if isinstance(value, SourceType):
            return value
        if isinstance(value, str):
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        allowed = ", ".join(member.name for member in cls)
        raise ValueError(f"unknown source_type {value!r}; allowed: {allowed}")

    @property
    def json_name(self) -> str:
        return self.name


ENGINE_WRITTEN = frozenset(
    {SourceType.EPISODE_SUMMARY, SourceType.LESSON, SourceType.DECISION, SourceType.FACT}
)
"""Source types only the episode engine writes: an episode's summary, lessons, decisions and
facts."""


def new_memory_id() -> str:
    return str(uuid.uuid4())


@dataclass
class Memory:
    """One stored memory. ``metadata`` is free-form data that plugins attach."""

    id: str
    content: str
    source_type: SourceType
    source_instance: str
    tags: list[str]
    context: str | None
    created_at: datetime
    updated_at: datetime
    supersedes: str | None = None
    superseded_by: str | None = None  # set by correct(): recall leaves it out by default
    metadata: dict[str, Any] = field(default_factory=dict)
    project: str = DEFAULT_PROJECT  # scoped reads see their project's memories ...
    shared: bool = False  # ... and the shared ones of every project

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "source_type": self.source_type.json_name,
            "source_instance": self.source_instance,
            "tags": list(self.tags),
            "context": self.context,
            "created_at": to_iso(self.created_at),
            "updated_at": to_iso(self.updated_at),
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "metadata": dict(self.metadata),
            "project": self.project,
            "shared": self.shared,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Memory:
        return cls(
            id=data["id"],
            content=data["content"],
            source_type=SourceType.parse(data["source_type"]),
            source_instance=data.get("source_instance") or "unknown",
            tags=list(data.get("tags") or []),
            context=data.get("context"),
            created_at=parse_iso(data["created_at"]),
            updated_at=parse_iso(data["updated_at"]),
            supersedes=data.get("supersedes"),
            superseded_by=data.get("superseded_by"),
            metadata=dict(data.get("metadata") or {}),
            project=data.get("project") or DEFAULT_PROJECT,  # stored before projects existed
            shared=bool(data.get("shared", False)),
        )


@dataclass
class RecallHit:
    """One recall result: the memory and its fused relevance score (0–1)."""

    memory: Memory
    similarity_score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory.id,
            "similarity_score": round(self.similarity_score, 6),
            "memory": self.memory.to_json(),
        }
