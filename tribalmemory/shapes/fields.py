"""Field types shared by the shapes: timestamps, ids, projects, tags, access statistics."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from ..projects import (
    ALL_PROJECTS,
    DEFAULT_PROJECT,
    MAX_PROJECT_CHARS,
    PROJECT_PATTERN,
    SCOPE_PATTERN,
)
from .limits import (
    EPISODE_ID_PATTERN,
    MAX_EPISODE_ID_CHARS,
    MAX_RUN_CHARS,
    MAX_SESSION_CHARS,
    MAX_SOURCE_INSTANCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    SOURCE_TYPES,
    WRITABLE_SOURCE_TYPES,
)

# -- value schemas -----------------------------------------------------------------------------

Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
MemoryId = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]
EpisodeId = Annotated[
    str,
    WithJsonSchema(
        {"type": "string", "pattern": EPISODE_ID_PATTERN, "maxLength": MAX_EPISODE_ID_CHARS}
    ),
]
SourceTypeName = Annotated[str, WithJsonSchema({"type": "string", "enum": list(SOURCE_TYPES)})]
WritableSourceType = Annotated[
    str, WithJsonSchema({"type": "string", "enum": list(WRITABLE_SOURCE_TYPES)})
]
ProjectName = Annotated[
    str,
    WithJsonSchema({"type": "string", "pattern": PROJECT_PATTERN, "maxLength": MAX_PROJECT_CHARS}),
]
ProjectScope = Annotated[
    str,
    WithJsonSchema({"type": "string", "pattern": SCOPE_PATTERN, "maxLength": MAX_PROJECT_CHARS}),
]
"""A read's project: a :data:`ProjectName`, or ``*`` for every project."""
PROJECT_DOC = (
    f"The project (a short name: letters, digits, '-', '_', '.'; at most {MAX_PROJECT_CHARS}; "
    f"any case, kept lower-case); default: {DEFAULT_PROJECT}. One project: "
    f"'{ALL_PROJECTS}' (all projects) is only for reads."
)
SCOPED_DOC = (
    "Only this project's memories and the shared ones (shared: true) of every project; "
    f"'{ALL_PROJECTS}': the memories of every project; default: {DEFAULT_PROJECT}."
)
EPISODES_SCOPED_DOC = (
    f"Only this project's episodes; '{ALL_PROJECTS}': every project's; default: {DEFAULT_PROJECT}."
)
Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS)]

WHEN = "ISO 8601 date or time, e.g. 2025-03-01 or 2025-03-01T09:00:00Z (no zone means UTC)"


AccessCount = Annotated[
    int | None,
    Field(
        description="Times a recall returned it or a client marked it used (null: access "
        "statistics unavailable, see /v1/health access)."
    ),
]
LastAccessed = Annotated[
    Timestamp | None,
    Field(description="When it was last returned by a recall or marked used (null: never)."),
]
Retrievability = Annotated[
    float | None,
    Field(
        ge=0.0,
        le=1.0,
        description="FSRS-style probability that it is still fresh now, 0–1: decays with time "
        "since the last access, more slowly the more often it was recalled and used.",
    ),
]
"""Access statistics of a memory or an episode (see docs/http.md#retrievability)."""


# -- scopes: who stored a memory, in which client session and which run ------------------------

SCOPES: dict[str, tuple[int, str]] = {
    "source_instance": (MAX_SOURCE_INSTANCE_CHARS, "stored by this agent (its source_instance)"),
    "session": (MAX_SESSION_CHARS, "of this client session (its metadata.session)"),
    "run": (MAX_RUN_CHARS, "of this run (its metadata.run)"),
}
"""The scope filters of the reads, by name: the longest value and what they keep."""


def scope_filter(name: str, subject: str = "Only memories") -> Any:
    """Field metadata of the scope filter ``name`` (:data:`SCOPES`); ``subject`` says what is
    kept ("Only episodes with a memory")."""
    chars, what = SCOPES[name]
    return Field(
        None,
        min_length=1,
        max_length=chars,
        description=f"{subject} {what}, matched exactly (at most {chars} characters).",
    )
