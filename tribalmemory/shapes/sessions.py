"""Sessions: the client sessions of a project, read off their memories' metadata.session."""

from __future__ import annotations

from pydantic import Field

from ..projects import ALL_PROJECTS, DEFAULT_PROJECT
from .base import Request, Response
from .fields import ProjectScope, Timestamp
from .limits import SESSIONS_LIMIT, bounded


class SessionsQuery(Request):
    limit: int = bounded(SESSIONS_LIMIT, "Sessions per page.")
    cursor: str | None = Field(
        None,
        max_length=200,
        description="next_cursor of the previous page; omit for the sessions of the newest "
        "activity.",
    )
    project: ProjectScope | None = Field(
        None,
        description="Only the sessions of this project's memories (shared ones of other "
        f"projects are theirs); '{ALL_PROJECTS}': every project's; default: {DEFAULT_PROJECT}.",
    )


class SessionInfo(Response):
    session: str = Field(description="The session's name (a memory's metadata.session).")
    project: str = Field(description="The project of its memories.")
    source_instances: list[str] = Field(
        description="The agents that stored its memories (their source_instance), sorted."
    )
    runs: list[str] = Field(description="The runs of its memories (metadata.run), sorted.")
    first_memory_at: Timestamp = Field(description="Its oldest memory's created_at.")
    last_memory_at: Timestamp = Field(description="Its newest memory's created_at.")
    memory_count: int = Field(description="Its memories (episode summaries not counted).")
    episode_ids: list[str] = Field(
        description="The episodes its memories belong to, the one of its newest memory first "
        "(empty without the episode engine)."
    )


class SessionList(Response):
    sessions: list[SessionInfo] = Field(
        description="Newest activity first (last_memory_at; on a tie, the order of the "
        "sessions' newest memories by id)."
    )
    count: int
    next_cursor: str | None = Field(
        description="Pass it as cursor for the next page; null on the last page."
    )
