"""Every request and response shape of the API, and the request limits, defined once.

- The limits below are what :mod:`tribalmemory.validation` enforces (through
  :class:`~tribalmemory.api.TribalAPI` and the service) and what the schemas advertise.
- ``*Request`` and ``*Query`` models describe what clients send: the OpenAPI request bodies and
  query parameters, the allowed and required field names of each body, and the MCP tools'
  input schemas are generated from them. They are not used to coerce values: the checks in
  :mod:`tribalmemory.validation` do that, with one set of messages for every interface.
- The response models are what the API answers: ``TribalAPI`` builds each response through
  its model (a key that is missing, mistyped or undeclared fails there, not in a client), and
  the OpenAPI response schemas and the MCP tools' output schemas are generated from them.

Every declared key of a response is always present (``null`` when it does not apply).
:class:`Memory`, :class:`RememberResult`, :class:`Health` and :class:`Stats` also carry the keys
that plugins add; every other shape is closed.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from .models import ENGINE_WRITTEN, SourceType
from .projects import (
    ALL_PROJECTS,
    DEFAULT_PROJECT,
    MAX_PROJECT_CHARS,
    PROJECT_PATTERN,
    SCOPE_PATTERN,
)

# -- limits ------------------------------------------------------------------------------------

MAX_TAGS = 50
MAX_TAG_CHARS = 100
MAX_CONTEXT_CHARS = 2000
MAX_SOURCE_INSTANCE_CHARS = 200
MAX_TITLE_CHARS = 200
MAX_TOPIC_CHARS = 2000
MAX_EPISODE_QUERY_CHARS = 2000
MAX_FILTER_CHARS = 200
MAX_BATCH = 1000
MAX_MEMORY_IDS = 1000
MAX_EPISODE_ID_CHARS = 64
MAX_METADATA_FIELDS = 50
MAX_METADATA_CHARS = 10_000
"""A PATCH's metadata: at most this many fields, this many characters as JSON."""
METADATA_KEY_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
MAX_SESSION_CHARS = 200
MAX_FUTURE_SECONDS = 300
# The structured episode record (episodes/structured.py validates the LLM's and users' values).
MAX_TASK_CHARS = 200
MAX_ITEM_CHARS = 300
MAX_OPTION_CHARS = 100
MAX_OPTIONS = 6
MAX_CITED_IDS = 20
MAX_DECISIONS = 20
MAX_EVENTS = 40
MAX_LESSONS = 12
"""How far a memory's ``created_at`` may be ahead of the server's clock (clock skew between
machines); a later time is refused, since it would close episodes that are still active."""
EPISODE_ID_PATTERN = r"^[A-Za-z0-9_:-]+$"
"""Well-formed episode ids (before normalisation); anything else is a 400, not a 404."""
EpisodeStatus = Literal["active", "closed", "archived"]
EditableStatus = Literal["active", "closed"]
EDITABLE_STATUSES: tuple[EditableStatus, ...] = typing.get_args(EditableStatus)
HistoryActor = Literal["user", "detector", "consolidation"]
EPISODE_STATUSES: tuple[EpisodeStatus, ...] = typing.get_args(EpisodeStatus)
Outcome = Literal["success", "failure", "partial", "ongoing", "unknown"]
OUTCOMES: tuple[Outcome, ...] = typing.get_args(Outcome)
EventType = Literal["milestone", "error", "fix", "decision", "discovery", "blocker", "handoff"]
EVENT_TYPES: tuple[EventType, ...] = typing.get_args(EventType)
SOURCE_TYPES = tuple(s.json_name for s in SourceType)
WRITABLE_SOURCE_TYPES = tuple(s.json_name for s in SourceType if s not in ENGINE_WRITTEN)


@dataclass(frozen=True)
class Range:
    """The bounds and default of a numeric argument."""

    low: int | float
    high: int | float
    default: int | float


RECALL_LIMIT = Range(1, 50, 5)
MIN_RELEVANCE = Range(0.0, 1.0, 0.0)
EPISODES_LIMIT = Range(1, 100, 50)
EPISODES_OFFSET = Range(0, 1_000_000, 0)
SEARCH_LIMIT = Range(1, 50, 10)
MEMORIES_LIMIT = Range(1, 100, 20)
REPLAY_LIMIT = Range(1, 20, 5)
CONTEXT_BUDGET = Range(50, 20000, 1500)
PATTERNS_LIMIT = Range(1, 50, 10)
PatternKind = Literal["pattern", "antipattern"]
PATTERN_KINDS: tuple[str, ...] = typing.get_args(PatternKind)


def bounded(limits: Range, description: str) -> Any:
    """Field metadata for a numeric argument: its range, default and description."""
    return Field(limits.default, ge=limits.low, le=limits.high, description=description)


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


class Request(BaseModel):
    """What a client sends; unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def field_names(cls) -> list[str]:
        return list(cls.model_fields)

    @classmethod
    def required_names(cls) -> list[str]:
        return [name for name, f in cls.model_fields.items() if f.is_required()]

    @classmethod
    def argument_schema(cls, name: str) -> dict[str, Any]:
        """The JSON schema of one field as a single schema (a query or MCP argument).

        An optional field is one the client leaves out, so ``X | None`` is advertised as ``X``.
        Nested models are inlined (the schema stands alone, without ``$defs``).
        """
        full = cls.model_json_schema()
        schema: dict[str, Any] = _inline(dict(_properties(cls)[name]), full.get("$defs", {}))
        schema.pop("title", None)
        kept = [s for s in schema.pop("anyOf", []) if s != {"type": "null"}]
        if len(kept) == 1:
            schema = kept[0] | schema
        elif kept:
            schema["anyOf"] = kept
        schema.pop("title", None)  # an inlined model's own title
        if schema.get("default", 0) is None:
            del schema["default"]
        return schema


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` to ``defs`` replaced by the definition itself."""
    if isinstance(schema, list):
        return [_inline(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return _inline(dict(defs[ref.removeprefix("#/$defs/")]), defs) | rest
    return {key: _inline(value, defs) for key, value in schema.items()}


@functools.cache
def _properties(model: type[Request]) -> dict[str, Any]:
    return dict(model.model_json_schema()["properties"])


def _all_required(schema: dict[str, Any]) -> None:
    """Every declared key of a response is always present, so each is required."""
    schema["required"] = list(schema.get("properties", {}))


class Response(BaseModel):
    """What the API answers: every declared key (all required in its schema), no other."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_all_required)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


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


class OpenResponse(Response):
    """A response that plugins extend: their keys pass through after the declared ones."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_all_required)


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


PLAIN_IMPORT_FIELDS = (
    "content",
    "created_at",
    "tags",
    "source_instance",
    "project",
    "source_type",
    "context",
    "shared",
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
    limit: int = bounded(RECALL_LIMIT, "Maximum number of results.")
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
    group_by_episode: bool = Field(
        False,
        description="Also group the results by thread: episodes lists the episodes the results "
        "belong to, best first, each with its title and its results (null when false).",
    )
    project: ProjectScope | None = Field(None, description=SCOPED_DOC)


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


# -- requests: episodes ------------------------------------------------------------------------


class EpisodesListQuery(Request):
    status: EpisodeStatus | None = Field(
        None,
        description="Only episodes in this state: active (still growing), closed (finished) "
        "or archived (old). Omit for all.",
    )
    limit: int = bounded(EPISODES_LIMIT, "Maximum number of episodes.")
    offset: int = bounded(EPISODES_OFFSET, "Episodes to skip.")
    outcome: Outcome | None = Field(None, description="Only episodes with this outcome.")
    tag: str | None = Field(
        None, max_length=MAX_FILTER_CHARS, description="Only episodes with this tag."
    )
    participant: str | None = Field(
        None,
        max_length=MAX_FILTER_CHARS,
        description="Only episodes with a memory from this source_instance (or a participant "
        "the LLM named).",
    )
    task: str | None = Field(
        None, max_length=MAX_FILTER_CHARS, description="Only episodes whose task contains this."
    )
    tool: str | None = Field(
        None, max_length=MAX_FILTER_CHARS, description="Only episodes that used this tool."
    )
    entity: str | None = Field(
        None,
        max_length=MAX_FILTER_CHARS,
        description="Only episodes about this entity (file, service, ticket).",
    )
    since: Timestamp | None = Field(
        None, description=f"Only episodes with memories at or after this time: {WHEN}."
    )
    until: Timestamp | None = Field(
        None, description=f"Only episodes with memories at or before this time: {WHEN}."
    )
    project: ProjectScope | None = Field(None, description=EPISODES_SCOPED_DOC)


class EpisodeRef(Request):
    episode_id: EpisodeId = Field(
        description="Id of an episode, like 'ep-1a2b3c4d5e6f' (an 'episode:' prefix and any "
        "case are accepted)."
    )


class EpisodeGetQuery(Request):
    include_timeline: bool = Field(
        False, description="Also return the episode's memories in time order."
    )


class EpisodeCreateRequest(Request):
    title: str = Field(
        max_length=MAX_TITLE_CHARS, description="A short title naming the thread of work."
    )
    memory_ids: list[MemoryId] = Field(
        min_length=1,
        max_length=MAX_MEMORY_IDS,
        description="Ids of the memories that belong to it (at least one).",
    )
    parent_episode_id: EpisodeId | None = Field(
        None, description="The episode this one continues (overrides chain detection)."
    )


ItemText = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]
CitedIds = Annotated[
    list[MemoryId],
    Field(max_length=MAX_CITED_IDS, description="Members of the episode it rests on."),
]


class DecisionEdit(Request):
    chosen: ItemText = Field(description="What was chosen.")
    context: ItemText | None = Field(None, description="The situation.")
    options: list[Annotated[str, Field(max_length=MAX_OPTION_CHARS)]] | None = Field(
        None, max_length=MAX_OPTIONS, description="The options considered."
    )
    rationale: ItemText | None = Field(None, description="Why.")
    outcome: ItemText | None = Field(None, description="How it turned out.")
    memory_ids: CitedIds | None = None


class EventEdit(Request):
    type: EventType
    text: ItemText
    memory_ids: CitedIds | None = None


class LessonEdit(Request):
    text: ItemText = Field(description="A short, reusable statement.")
    memory_ids: CitedIds | None = None


class StructuredEdit(Request):
    """The structured fields a user sets; each one given replaces the stored one and is kept
    when the episode is regenerated."""

    task: str | None = Field(None, max_length=MAX_TASK_CHARS)
    outcome: Outcome | None = None
    outcome_reason: ItemText | None = None
    decisions: list[DecisionEdit] | None = Field(None, max_length=MAX_DECISIONS)
    events: list[EventEdit] | None = Field(None, max_length=MAX_EVENTS)
    lessons: list[LessonEdit] | None = Field(None, max_length=MAX_LESSONS)


class ContextQuery(Request):
    query: str | None = Field(
        None,
        max_length=MAX_EPISODE_QUERY_CHARS,
        description="What you are about to work on; picks the most relevant lessons.",
    )
    budget_tokens: int = bounded(
        CONTEXT_BUDGET, "At most this many tokens of text (the configured model's tokenizer)."
    )
    project: ProjectScope | None = Field(None, description=EPISODES_SCOPED_DOC)


class PatternsQuery(Request):
    kind: PatternKind | None = Field(
        None,
        description="pattern (what mostly worked) or antipattern (what mostly failed); omit "
        "for both.",
    )
    query: str | None = Field(
        None,
        max_length=MAX_EPISODE_QUERY_CHARS,
        description="Only patterns relevant to this, most relevant first.",
    )
    limit: int = bounded(PATTERNS_LIMIT, "Maximum number of patterns.")
    project: ProjectScope | None = Field(None, description=EPISODES_SCOPED_DOC)


class EpisodeUpdateRequest(Request):
    title: str | None = Field(
        None,
        max_length=MAX_TITLE_CHARS,
        description="A new title; summaries keep a title set by hand.",
    )
    status: EditableStatus | None = Field(
        None,
        description="closed (finished: new memories stop joining) or active (reopen a closed "
        "or archived episode).",
    )
    metadata: dict[str, Any] | None = Field(
        None,
        description='Metadata fields to set, e.g. {"outcome": "fixed"}; null removes a '
        f"field. At most {MAX_METADATA_FIELDS} fields; names are letters, digits, '_' and '-'. "
        "Fields set here are kept when summaries rewrite the metadata.",
    )
    structured: StructuredEdit | None = Field(
        None,
        description="Structured fields to set (task, outcome, decisions, events, lessons); "
        "each one given replaces the stored one and is kept when the episode is regenerated.",
    )


class EpisodeMergeRequest(Request):
    other_id: EpisodeId = Field(
        description="The episode to merge with this one. The one with more memories keeps its "
        "id (on a tie, this one); the other is gone afterwards and its id answers 404 naming "
        "the episode it was merged into."
    )


class EpisodeSplitRequest(Request):
    memory_ids: list[MemoryId] = Field(
        min_length=1,
        max_length=MAX_MEMORY_IDS,
        description="Members of this episode that form the new one (not all of them).",
    )
    title: str | None = Field(
        None,
        max_length=MAX_TITLE_CHARS,
        description="The new episode's title; default: one made from its memories.",
    )


class EpisodeStartRequest(Request):
    topic: str = Field(
        max_length=MAX_TITLE_CHARS,
        description="The thread of work you start, e.g. 'Fix the multi-tab logout'; it "
        "becomes the episode's title.",
    )
    session: str = Field(
        max_length=MAX_SESSION_CHARS,
        description="Your client session: the memories you then store with this session "
        "join the episode when they fit.",
    )
    project: ProjectName | None = Field(None, description=PROJECT_DOC)


class EpisodeCurrentQuery(Request):
    session: str = Field(max_length=MAX_SESSION_CHARS, description="The client session (required).")


class EpisodeMemoryRequest(Request):
    memory_id: MemoryId = Field(description="Id of a memory (a UUID).")


class EpisodesSearchRequest(Request):
    query: str = Field(
        max_length=MAX_EPISODE_QUERY_CHARS,
        description="What to look for in episode titles and summaries.",
    )
    time_start: Timestamp | None = Field(
        None, description=f"Only episodes active at or after this time: {WHEN}."
    )
    time_end: Timestamp | None = Field(
        None, description=f"Only episodes active at or before this time: {WHEN}."
    )
    status: EpisodeStatus | None = Field(None, description="Only episodes in this state.")
    limit: int = bounded(SEARCH_LIMIT, "Maximum number of episodes.")
    project: ProjectScope | None = Field(None, description=EPISODES_SCOPED_DOC)


class EpisodesReplayRequest(Request):
    topic: str = Field(
        max_length=MAX_TOPIC_CHARS,
        description="What happened with…: a subject such as 'refresh token logouts' or "
        "'the Postgres migration'.",
    )
    limit: int = bounded(REPLAY_LIMIT, "Maximum number of episodes.")
    project: ProjectScope | None = Field(None, description=EPISODES_SCOPED_DOC)


# -- responses: memories -----------------------------------------------------------------------


class Error(Response):
    error: str = Field(description="What is wrong and, when it helps, what to do.")
    detail: Any = Field(description="null, a hint, or structured data such as allowed names.")


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
        Literal["assigned", "pending", "unassigned", "summary", "lesson", "decision"] | None
    ) = Field(
        None,
        description="assigned, pending (detection still running), unassigned, or summary, "
        "lesson, decision (the memory is an episode's summary, one of its lessons or one of "
        "its decisions); null without the episode engine.",
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


class RecallResult(Response):
    results: list[RecallHit]
    query: str
    count: int
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


class AccessInfo(Response):
    state: Literal["ok", "unavailable"] = Field(
        description="unavailable: access.sqlite3 cannot be used; recall is not re-ranked and "
        "the access fields are null."
    )
    reason: str


class StoreInfo(Response):
    backend: str
    location: str


class EmbeddingInfo(Response):
    model: str
    dim: int
    request_cpus: list[int] | None = Field(
        None,
        description="The CPUs requests' embeddings and store calls run on, beside "
        "onnxruntime's pinned threads (null: any CPU, or none run yet).",
    )


class LlmStatus(OpenResponse):
    state: str = Field(
        description="ready, degraded, starting, offline, disabled, no_api_key, unknown_model, "
        "ceiling_reached or unreachable (degraded: the provider answers, but the last calls "
        "got no usable answer; offline: no API key configured, so episodes run extractive: "
        "a mode, not a fault; no_api_key: the provider rejected the key)"
    )
    reason: str
    fallback: str | None = Field(None, description="What episodes do without the LLM.")
    consecutive_failures: int = Field(
        0,
        description="LLM calls in a row that got no usable answer (not JSON, cut off, failing "
        "validation); a few in a row make the state degraded (docs/llm.md); 0 after a call "
        "succeeds.",
    )
    last_error: str | None = Field(
        None, description="Why the last of those calls failed (null when none failed)."
    )


class DetectorModelInfo(Response):
    name: str = Field(description="join-trees or join-logistic: the fitted join model's kind.")
    digest: str = Field(description="Hash of the model's parameters.")
    threshold: float = Field(description="P(joins) at or above which a memory joins.")
    features: int = Field(description="How many features the model reads.")
    fitted_by: str | None = Field(None, description="The fitting script's version.")
    data_hash: str | None = Field(None, description="Hash of the data it was fitted on.")


class EpisodeQueue(OpenResponse):
    queue_depth: int
    oldest_pending_age_seconds: float
    active_episodes: int
    detector_strategy: str
    detector_model: DetectorModelInfo | None = Field(
        None, description="The fitted model behind detection decisions (docs/detection.md)."
    )
    classify_calls: int = Field(
        description="Detector calls made to the LLM so far: reviews, merge and split checks."
    )
    classified_memories: int = Field(description="Memories those calls decided (batched).")
    classify_calls_per_memory: float = Field(
        description="Classification calls per memory decided (the budget is "
        "episodes.classify_calls_per_memory)."
    )
    classify_waiting: int = Field(description="Doubtful memories waiting for the LLM.")
    merge_waiting: int = Field(
        description="Episodes waiting for the LLM's check that they are not one thread with "
        "another (episodes.merge_checks)."
    )
    merge_unanswered: int = Field(
        0,
        description="Merge checks that rode along in a review call whose answer placed its "
        "memories but left the checks out or invalid, since the daemon started (a WARNING "
        "says why; they are asked again when their episodes reach the next check size).",
    )
    split_waiting: int = Field(
        description="Episodes waiting for a look at whether they mix two threads "
        "(episodes.split_checks)."
    )
    classify_budget_left: int = Field(
        description="Calls the budget allows now; at 0 the embedding decision stands."
    )


class BatchesInfo(Response):
    in_flight: int = Field(description="Batches being stored now.")
    max: int = Field(description="At most this many at once; one more gets 429.")


class DiskInfo(Response):
    state: Literal["ok", "full", "unknown"] = Field(
        description="full: less than storage.min_free_mb is free, writes get 507."
    )
    free_mb: int | None = None
    reserve_mb: int | None = None
    writes_refused: int | None = None
    error: str | None = Field(None, description="Why the free space is unknown.")


class BackgroundEmbeddings(Response):
    priority: str = Field(description="idle, nice 19, normal, or not started.")
    model: str = Field(
        description="loaded or not loaded: its single-threaded copy of the model (loaded by "
        "the daemon before it answers, when episodes are on; else on first use)."
    )
    deadline_seconds: float = Field(
        description="Seconds a text waits for an idle core, while the daemon's own requests "
        "leave the CPU free, before it runs at normal priority."
    )
    max_wait_seconds: float = Field(
        description="Seconds a text waits in all, however busy the daemon's requests keep it."
    )
    calls: int
    ran_at_normal_priority: int = Field(
        description="Calls that waited deadline_seconds (or max_wait_seconds) and ran at "
        "normal priority."
    )


class WarmUp(Response):
    seconds: float = Field(description="How long the daemon's warm-up took, before it answered.")
    done: list[str] = Field(
        description="What was loaded before the first request: request model, background "
        "model, litellm."
    )
    failed: dict[str, str] = Field(
        description="What failed to load, with the reason (loaded again on first use)."
    )


class Health(OpenResponse):
    status: str
    version: str
    uptime_seconds: float
    store: StoreInfo
    embedding: EmbeddingInfo
    batches: BatchesInfo
    disk: DiskInfo | None = Field(None, description="Free disk space (null: not checked).")
    background_embeddings: BackgroundEmbeddings | None = None
    warm_up: WarmUp | None = Field(
        None, description="What the daemon loaded before answering (null: not a daemon)."
    )
    access: AccessInfo | None = Field(None, description="The access statistics' state.")
    llm: LlmStatus | None = Field(None, description="The LLM's state (episode engine only).")
    episodes: EpisodeQueue | None = Field(
        None, description="The episode engine's background work (null when it is off)."
    )


class EpisodeCounts(Response):
    active: int
    closed: int
    archived: int


class Stats(OpenResponse):
    total_memories: int
    by_source_type: dict[str, int]
    embedding_model: str
    episodes: EpisodeCounts | None = Field(None, description="null when episodes are off.")


# -- responses: episodes -----------------------------------------------------------------------


class TimeSpan(Response):
    start: Timestamp | None
    end: Timestamp | None


class Episode(Response):
    """An episode as listed, searched and chained."""

    id: str
    title: str
    summary: str
    status: EpisodeStatus
    project: str = Field(description="The project of every memory in it.")
    memory_count: int
    created_at: Timestamp
    updated_at: Timestamp
    closed_at: Timestamp | None
    summary_kind: str = Field(description="extractive or llm")
    summary_status: str
    last_activity_at: Timestamp | None
    time_span: TimeSpan
    parent_episode_id: str | None
    outcome: str | None = Field(description=f"One of {', '.join(OUTCOMES)} (null: not known yet).")
    task: str | None = Field(description="What the episode set out to do (one line).")
    tags: list[str]
    cost_usd: float
    access_count: AccessCount = None
    last_accessed_at: LastAccessed = None
    retrievability: Retrievability = None


class Decision(Response):
    at: Timestamp | None = Field(description="The time of the first memory it rests on.")
    context: str
    options: list[str]
    chosen: str
    rationale: str
    outcome: str | None
    memory_ids: list[MemoryId]


class Event(Response):
    at: Timestamp | None
    type: EventType
    text: str
    memory_ids: list[MemoryId]


class Lesson(Response):
    text: str
    memory_ids: list[MemoryId]


class EpisodeMetrics(Response):
    """Computed from the memories and the events, never guessed."""

    duration_seconds: float
    active_days: int
    memory_count: int
    participants: dict[str, int] = Field(description="Memories by source_instance.")
    tags: list[str]
    errors: int
    fixes: int
    decisions: int
    lessons: int
    first_memory_at: Timestamp | None
    last_memory_at: Timestamp | None


class StructuredRecord(Response):
    """What the episode was for, how it ended, what was decided, what happened, what it taught."""

    task: str | None
    outcome: Outcome
    outcome_reason: str | None
    decisions: list[Decision]
    events: list[Event]
    lessons: list[Lesson]
    metrics: EpisodeMetrics
    source: Literal["llm", "extractive"] = Field(
        description="llm: extracted with the final summary; extractive: the cue-word rules."
    )
    edited: list[str] = Field(description="Fields a user set; regeneration keeps them.")


class EpisodeDetail(Episode):
    summary_memory_id: MemoryId | None
    metadata: dict[str, Any]
    title_source: str
    structured: StructuredRecord | None = Field(
        description="null until the episode's first summary job ran."
    )


class EpisodeDecisions(Response):
    episode_id: str
    title: str
    decisions: list[Decision]
    count: int


class TimelineItem(Response):
    memory_id: MemoryId
    created_at: Timestamp
    content: str
    tags: list[str]
    source_instance: str
    surprise: float | None
    key_moment: bool


class EpisodeList(Response):
    episodes: list[Episode]
    count: int
    status: EpisodeStatus | None


class HistoryEntry(Response):
    at: Timestamp
    actor: HistoryActor = Field(description="user, detector or consolidation")
    action: str = Field(
        description="create, join, add_memory, remove_memory, review_move (the detector's "
        "review moved a member), memory_forgotten, update, reopen, close, archive, "
        "regenerate, merge, merged_into, split, split_from, ..."
    )
    details: dict[str, Any]


class EpisodeGetResult(Response):
    episode: EpisodeDetail
    memory_ids: list[MemoryId]
    history: list[HistoryEntry] = Field(description="Every edit of the episode, oldest first.")
    timeline: list[TimelineItem] | None = Field(
        None, description="The member memories in time order, when include_timeline is true."
    )


class EpisodeCreateResult(Response):
    success: bool
    episode_id: str
    memory_count: int


class EpisodeMergeResult(Response):
    success: bool
    episode_id: str = Field(description="The merged episode (the one that kept its id).")
    absorbed_id: str = Field(description="The episode that is gone, merged into episode_id.")
    memory_count: int


class EpisodeSplitResult(Response):
    success: bool
    episode_id: str = Field(description="The new episode.")
    split_from: str
    memory_count: int


class EpisodeStartResult(Response):
    success: bool
    episode_id: str
    session: str
    topic: str


class EpisodeCurrent(Response):
    session: str
    topic: str | None = Field(description="The topic the session declared; null if none.")
    episode: EpisodeDetail | None = Field(
        description="The declared episode as it is now (null: none, or it was deleted)."
    )


class Success(Response):
    success: bool


class EpisodeChain(Response):
    episode_id: str
    root_id: str
    chain: list[Episode]
    count: int


class ReplayItem(Response):
    id: str
    title: str
    status: EpisodeStatus
    start: Timestamp
    end: Timestamp
    continues: str | None
    continues_title: str | None
    summary: str
    tags: list[str]
    outcome: str | None
    relevance: float


class Replay(Response):
    topic: str
    episodes: list[ReplayItem]
    count: int
    text: str


class SearchedEpisode(Episode):
    relevance: float
    score: float


class EpisodeSearch(Response):
    query: str
    episodes: list[SearchedEpisode]
    count: int


class CallTotals(Response):
    calls: int
    tokens: int
    cost_usd: float


class Costs(Response):
    """The month's LLM spend of the episode engine (the month's totals are 0 without calls)."""

    llm: LlmStatus
    month: str | None = None
    spend_usd: float = 0.0
    reserved_usd: float = 0.0
    ceiling_usd: float | None = None
    remaining_usd: float | None = None
    calls: int = 0
    ok_calls: int = 0
    failed_calls: int = 0
    denied_calls: int = 0
    open_reservations: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_purpose: dict[str, CallTotals] = Field(default_factory=dict)
    by_model: dict[str, CallTotals] = Field(default_factory=dict)
    by_episode: dict[str, float] = Field(default_factory=dict)
    by_day: dict[str, CallTotals] = Field(
        default_factory=dict,
        description="The month's calls by UTC day of the call (YYYY-MM-DD), oldest first.",
    )


class ContextActive(Response):
    id: str
    title: str
    status: EpisodeStatus
    last_decision: str | None
    last_activity_at: Timestamp | None


class ContextFailed(Response):
    id: str
    title: str
    outcome_reason: str | None
    lessons: list[str]
    last_activity_at: Timestamp | None


class ContextLesson(Response):
    text: str
    episode_id: str
    episode_title: str
    relevance: float | None = Field(description="Search relevance (null without a query).")


class ContextPattern(Response):
    id: str
    kind: PatternKind
    statement: str
    trigger: str
    success_rate: float | None
    episodes: int = Field(description="How many episodes it rests on.")


class Context(Response):
    """What to read before starting: the same content as text and as JSON."""

    query: str | None
    budget_tokens: int
    used_tokens: int = Field(description="Tokens of text, at most budget_tokens.")
    token_model: str = Field(description="The model whose tokenizer counted them.")
    truncated: bool = Field(description="Something was left out to stay within the budget.")
    text: str
    active: list[ContextActive]
    failed: list[ContextFailed]
    patterns: list[ContextPattern]
    lessons: list[ContextLesson]


class PatternEpisode(Response):
    id: str
    title: str
    outcome: str


class PatternEvidence(Response):
    episode_id: str
    kind: Literal["lesson", "decision"]
    text: str
    memory_id: MemoryId


class Pattern(Response):
    id: str
    kind: PatternKind
    statement: str = Field(description="The most representative lesson or decision.")
    trigger: str = Field(description="When it applies.")
    action: str = Field(description="What to do (the most representative decision, if any).")
    episodes: list[PatternEpisode]
    evidence: list[PatternEvidence]
    success: int
    failure: int
    success_rate: float | None = Field(description="success / (success + failure).")
    relevance: float | None = Field(description="To the query (null without one).")


class Patterns(Response):
    kind: PatternKind | None
    query: str | None
    patterns: list[Pattern]
    count: int


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
