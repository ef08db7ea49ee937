"""Memories: remember, recall, list, correct, forget, mark used."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import (
    OpenResponse,
    Request,
    Response,
)
from .fields import (
    PROJECT_DOC,
    SCOPED_DOC,
    WHEN,
    AccessCount,
    EpisodeId,
    LastAccessed,
    MemoryId,
    ProjectName,
    ProjectScope,
    Retrievability,
    SourceTypeName,
    Tags,
    Timestamp,
    WritableSourceType,
    scope_filter,
)
from .limits import (
    EPISODE_CONTEXT,
    MAX_BATCH,
    MAX_CONTEXT_CHARS,
    MAX_ENTITY_CHARS,
    MAX_FUTURE_SECONDS,
    MAX_RUN_CHARS,
    MAX_SESSION_CHARS,
    MAX_SOURCE_INSTANCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MEMORIES_LIMIT,
    MIN_RELEVANCE,
    RECALL_LIMIT,
    bounded,
)

# -- requests: memories ------------------------------------------------------------------------


class RememberRequest(Request):
    content: str = Field(
        description="The knowledge to store, self-contained: readable later without this "
        "conversation. Name the files, services, commands or errors someone would search for. "
        "At most server.max_content_chars characters."
    )
    source_type: WritableSourceType | None = Field(
        None,
        description="Where it came from: USER_EXPLICIT (the user said it; the default), "
        "AUTO_CAPTURE (noticed by an agent), CORRECTION (corrects earlier knowledge), "
        "CROSS_INSTANCE, LEGACY or UNKNOWN. Either case is accepted.",
    )
    source_instance: str | None = Field(
        None,
        max_length=MAX_SOURCE_INSTANCE_CHARS,
        description="Who stores it (an agent or tool name); "
        "default: memory.default_source_instance.",
    )
    tags: Tags | None = Field(
        None, description=f'Labels, e.g. ["auth", "deploy"]; at most {MAX_TAGS} tags.'
    )
    context: str | None = Field(
        None,
        max_length=MAX_CONTEXT_CHARS,
        description="A short note on where this was learned (task, repository, file).",
    )
    created_at: Timestamp | None = Field(
        None,
        description=f"When it was learned: {WHEN}; default now. At most "
        f"{MAX_FUTURE_SECONDS // 60} minutes ahead of the server's clock.",
    )
    skip_dedup: bool = Field(
        False,
        description="Store it even when a near-identical memory exists. Use it only when the "
        "text really says something new.",
    )
    session: str | None = Field(
        None,
        max_length=MAX_SESSION_CHARS,
        description="The client session this memory comes from (any stable name of at most "
        f"{MAX_SESSION_CHARS} characters): it joins the episode the session declared with "
        "POST /v1/episodes/start when it fits. Kept in the memory's metadata.session.",
    )
    project: ProjectName | None = Field(None, description=PROJECT_DOC)
    shared: bool = Field(
        False,
        description="Every project sees it (a team-wide convention, a user preference); it "
        "still belongs to its own project's episodes.",
    )
    run: str | None = Field(
        None,
        max_length=MAX_RUN_CHARS,
        description="The run it comes from (a CI job, one invocation of an agent: any stable "
        f"name of at most {MAX_RUN_CHARS} characters). Kept in the memory's metadata.run; "
        "reads filter by it.",
    )


PLAIN_IMPORT_FIELDS = (
    "content",
    "created_at",
    "tags",
    "source_instance",
    "project",
    "source_type",
    "context",
    "shared",
    "session",
    "run",
)
"""The keys of a plain import line (``tribalmemory import`` of JSON lines without an export
header): the fields of :class:`RememberRequest` that describe a memory, checked as remember
checks them; ``content`` is required."""


class RememberBatchRequest(Request):
    memories: list[RememberRequest] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description="The memories; all are validated before any is stored.",
    )


class RecallRequest(Request):
    query: str = Field(
        description="What you want to know, as a question or keywords, e.g. 'how do we deploy "
        "the billing service' or 'pytest fixture timeout error'."
    )
    limit: int = bounded(
        RECALL_LIMIT,
        "Maximum number of memories written by users and agents; an episode summary, lesson "
        "or decision that ranks among them comes beside them, never in place of one.",
    )
    min_relevance: float = bounded(
        MIN_RELEVANCE,
        "Drop results whose similarity_score is below this. Good matches often score only "
        "0.3 to 0.6, so keep it low (0 keeps all).",
    )
    tags: Tags | None = Field(None, description="Only memories with at least one of these tags.")
    source_types: list[SourceTypeName] | None = Field(
        None, description="Only memories of these source types."
    )
    after: Timestamp | None = Field(
        None, description=f"Only memories created at or after this time: {WHEN}."
    )
    before: Timestamp | None = Field(
        None, description=f"Only memories created before this time: {WHEN}."
    )
    include_superseded: bool = Field(
        False,
        description="Also return memories that a correction superseded (left out by default).",
    )
    episode_id: EpisodeId | None = Field(
        None, description="Only the members of this episode (404 when it does not exist)."
    )
    entity: str | None = Field(
        None,
        max_length=MAX_ENTITY_CHARS,
        description="Only the memories naming this entity (any alias, e.g. 'orders-svc'; "
        "see GET /v1/entities); none when no memory names it.",
    )
    episode_context: int = bounded(
        EPISODE_CONTEXT,
        "How many threads to attach as context: the episodes of the best results, best first, "
        "each in a line (title and gist); 0 attaches none. A thread whose summary is among the "
        "results, or that holds a single memory, is not repeated.",
    )
    group_by_episode: bool = Field(
        False,
        description="Also group the results by thread: episodes lists the episodes the results "
        "belong to, best first, each with its title and its results (null when false).",
    )
    query_dates: bool = Field(
        True,
        description="When the query names a period ('on 3 May 2023', 'in March', 'last week') "
        "and neither after nor before is given, the memories dated in it (from 4 days before "
        "to 7 days after) come first; period in the answer says which. false: the query's "
        "words alone.",
    )
    project: ProjectScope | None = Field(None, description=SCOPED_DOC)
    source_instance: str | None = scope_filter("source_instance")
    session: str | None = scope_filter("session")
    run: str | None = scope_filter("run")


class MemoriesListQuery(Request):
    tag: str | None = Field(
        None, max_length=MAX_TAG_CHARS, description="Only memories with this tag."
    )
    source_type: SourceTypeName | None = Field(
        None, description="Only memories of this source type."
    )
    since: Timestamp | None = Field(
        None, description=f"Only memories created at or after this time: {WHEN}."
    )
    until: Timestamp | None = Field(
        None, description=f"Only memories created before this time: {WHEN}."
    )
    episode_id: EpisodeId | None = Field(None, description="Only the members of this episode.")
    limit: int = bounded(MEMORIES_LIMIT, "Memories per page.")
    cursor: str | None = Field(
        None,
        max_length=200,
        description="next_cursor of the previous page; omit for the newest memories.",
    )
    project: ProjectScope | None = Field(None, description=SCOPED_DOC)
    source_instance: str | None = scope_filter("source_instance")
    session: str | None = scope_filter("session")
    run: str | None = scope_filter("run")


class ExportQuery(Request):
    """The query of ``GET /v1/export`` (a streamed route, outside the route table)."""

    since: Timestamp | None = Field(
        None, description=f"Only memories created at or after this time: {WHEN}."
    )
    vectors: bool = Field(False, description="Include each memory's vector.")
    project: ProjectName | None = Field(
        None, description="Only this project's memories and episodes; default: every project."
    )
    source_instance: str | None = scope_filter("source_instance")
    session: str | None = scope_filter("session")
    run: str | None = scope_filter("run")


class CorrectRequest(Request):
    memory_id: MemoryId = Field(description="The memory this one corrects (kept as history).")
    content: str = Field(description="The corrected knowledge, self-contained.")
    source_instance: str | None = Field(
        None, max_length=MAX_SOURCE_INSTANCE_CHARS, description="Who stores the correction."
    )
    tags: Tags | None = Field(None, description="Labels; default: the corrected memory's tags.")
    context: str | None = Field(
        None, max_length=MAX_CONTEXT_CHARS, description="Where the correction was learned."
    )


class ForgetRequest(Request):
    memory_id: MemoryId = Field(description="The memory to delete, a UUID.")


class Memory(OpenResponse):
    id: MemoryId
    content: str
    source_type: SourceTypeName
    source_instance: str
    tags: list[str]
    context: str | None
    created_at: Timestamp
    updated_at: Timestamp
    supersedes: MemoryId | None
    superseded_by: MemoryId | None = Field(
        None,
        description="The correction that superseded this memory; recall leaves it out unless "
        "include_superseded is true.",
    )
    metadata: dict[str, Any]
    project: str = Field(description="The project it belongs to.")
    shared: bool = Field(description="Every project sees it.")
    episode_id: str | None = Field(
        None, description="The episode the memory belongs to (null without the episode engine)."
    )
    episode_status: (
        Literal["assigned", "pending", "unassigned", "summary", "lesson", "decision", "fact"] | None
    ) = Field(
        None,
        description="assigned, pending (detection still running), unassigned, or summary, "
        "lesson, decision, fact (the memory is an episode's summary, or one of its lessons, "
        "decisions or facts); null without the episode engine.",
    )
    access_count: AccessCount = None
    last_accessed_at: LastAccessed = None
    retrievability: Retrievability = None


class RememberResult(OpenResponse):
    success: bool
    memory_id: MemoryId | None
    duplicate_of: MemoryId | None
    episode_id: str | None
    error: str | None
    episode_status: Literal["assigned", "pending", "unassigned"] | None = None


class RememberBatchResult(Response):
    results: list[RememberResult]
    count: int
    stored: int


class RecallHit(Response):
    memory_id: MemoryId
    similarity_score: float = Field(ge=0.0, le=1.0)
    memory: Memory


class RecallGroup(Response):
    episode_id: str
    title: str | None = Field(description="The episode's title (null: not written yet).")
    similarity_score: float = Field(ge=0.0, le=1.0, description="Its best result's score.")
    memory_ids: list[MemoryId] = Field(description="Its results, in the order of results.")


class RecallContext(Response):
    episode_id: str
    title: str | None = Field(description="The episode's title (null: not written yet).")
    gist: str = Field(
        description="What the thread is about, from its summary, in about one memory's worth "
        "of text together with the title (GET /v1/episodes/{id} reads it whole)."
    )
    memory_count: int = Field(ge=0, description="Its members: the results' thread, in full.")


class RecallPeriod(Response):
    text: str = Field(description="The words of the query that name the period.")
    after: Timestamp = Field(description="Memories dated at or after this time come first...")
    before: Timestamp = Field(description="... up to this time (the period widened).")


class RecallResult(Response):
    results: list[RecallHit]
    query: str
    count: int
    period: RecallPeriod | None = Field(
        description="The period the query names, whose memories come first (query_dates); "
        "null when it names none."
    )
    context: list[RecallContext] = Field(
        description="The threads of the best results (episode_context of them), best first; "
        "empty without the episode engine."
    )
    episodes: list[RecallGroup] | None = Field(
        description="With group_by_episode: the episodes of the results, ordered by their best "
        "result; results in no episode are in none. Null otherwise."
    )


class MemoryList(Response):
    memories: list[Memory] = Field(description="Newest first (created_at, then id).")
    count: int
    next_cursor: str | None = Field(
        description="Pass it as cursor for the next page; null on the last page."
    )


class ForgetResult(Response):
    success: bool
    memory_id: MemoryId


class UsedResult(Response):
    success: bool
    memory_id: MemoryId
    episode_id: str | None = Field(description="Its episode, which counts the use too.")
    access_count: int | None
    last_accessed_at: Timestamp | None
    retrievability: float | None
