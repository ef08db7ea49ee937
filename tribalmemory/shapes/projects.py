"""The projects memories are kept in."""

from __future__ import annotations

from pydantic import Field

from .base import (
    Response,
)
from .fields import (
    Timestamp,
)


class ProjectInfo(Response):
    name: str
    memories: int = Field(description="Memories stored in it (shared ones included).")
    shared_memories: int = Field(description="Of those, the ones every project sees.")
    episodes: int = Field(description="Its episodes (0 when the episode engine is off).")
    last_activity_at: Timestamp | None = Field(
        description="The newest created_at of its memories (memory time)."
    )


class ProjectList(Response):
    projects: list[ProjectInfo] = Field(description="Most recently active first.")
    count: int
