"""Every request and response shape of the API, and the request limits, defined once.

- The limits (:mod:`.limits`) are what :mod:`tribalmemory.validation` enforces (through
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

The parts, each importable from here:

- :mod:`.limits`: request limits, numeric ranges, closed vocabularies (statuses, outcomes).
- :mod:`.fields`: field types shared by the shapes (timestamps, ids, projects, tags, access).
- :mod:`.base`: the :class:`Request` and :class:`Response` bases, :class:`Error`, :class:`Success`.
- :mod:`.memories`: remember, recall, list, correct, forget, used.
- :mod:`.episodes`: episodes (list, get, edit, merge, split, start, search, chain, replay).
- :mod:`.structured`: an episode's structured record and its edits.
- :mod:`.context`: the context to read before starting, and patterns.
- :mod:`.llm`: the LLM's state and the month's spend.
- :mod:`.health`: ``/v1/health`` and ``/v1/stats``.
- :mod:`.projects`: the project list.
- :mod:`.entities`: entities (list, one entity, an episode's entities).
- :mod:`.causes`: causal links between episodes and memories, and the causal path.
- :mod:`.sessions`: the client sessions of a project.
"""

from .base import (
    Error,
    OpenResponse,
    Request,
    Response,
    Success,
)
from .causes import (
    NODE_DOC,
    CausalLink,
    CausalPath,
    CausalPathQuery,
    CausalStep,
    CauseAddRequest,
    CauseAddResult,
    CauseList,
    CauseRef,
    CauseRemoveQuery,
    CausesQuery,
)
from .context import (
    Context,
    ContextActive,
    ContextFailed,
    ContextLesson,
    ContextPattern,
    ContextQuery,
    Pattern,
    PatternEpisode,
    PatternEvidence,
    Patterns,
    PatternsQuery,
)
from .conversations import (
    ConversationMessage,
    IngestConversationRequest,
    IngestConversationResult,
)
from .entities import (
    CoEntity,
    EntitiesListQuery,
    Entity,
    EntityDetail,
    EntityEpisode,
    EntityGetQuery,
    EntityList,
    EntityMemory,
    EntityRef,
    EpisodeEntity,
)
from .episodes import (
    Episode,
    EpisodeAddResult,
    EpisodeChain,
    EpisodeCreateRequest,
    EpisodeCreateResult,
    EpisodeCurrent,
    EpisodeCurrentQuery,
    EpisodeDecisions,
    EpisodeDetail,
    EpisodeGetQuery,
    EpisodeGetResult,
    EpisodeList,
    EpisodeMemoryRequest,
    EpisodeMergeRequest,
    EpisodeMergeResult,
    EpisodeRef,
    EpisodeSearch,
    EpisodesListQuery,
    EpisodeSplitRequest,
    EpisodeSplitResult,
    EpisodesReplayRequest,
    EpisodesSearchRequest,
    EpisodeStartRequest,
    EpisodeStartResult,
    EpisodeUpdateRequest,
    HistoryEntry,
    ListedEpisode,
    Replay,
    ReplayItem,
    SearchedEpisode,
    TimelineItem,
    TimeSpan,
)
from .fields import (
    EPISODES_SCOPED_DOC,
    PROJECT_DOC,
    SCOPED_DOC,
    SCOPES,
    WHEN,
    AccessCount,
    EpisodeId,
    LastAccessed,
    MemoryId,
    ProjectName,
    ProjectScope,
    Retrievability,
    SourceTypeName,
    Tag,
    Tags,
    Timestamp,
    WritableSourceType,
)
from .health import (
    AccessInfo,
    BackgroundEmbeddings,
    BatchesInfo,
    DetectorModelInfo,
    DiskInfo,
    EmbeddingInfo,
    EpisodeCounts,
    EpisodeQueue,
    Health,
    Stats,
    StoreInfo,
    WarmUp,
)
from .limits import (
    CAUSAL_PATH_MAX_DEPTH,
    CAUSE_SOURCES,
    CONTEXT_BUDGET,
    DECISION_TYPES,
    EDITABLE_STATUSES,
    ENTITIES_LIMIT,
    ENTITY_KINDS,
    ENTITY_MEMORIES_LIMIT,
    EPISODE_CONTEXT,
    EPISODE_ID_PATTERN,
    EPISODE_STATUSES,
    EPISODES_LIMIT,
    EPISODES_OFFSET,
    EVENT_TYPES,
    MAX_BATCH,
    MAX_CAUSE_NOTE_CHARS,
    MAX_CITED_IDS,
    MAX_CONTEXT_CHARS,
    MAX_DECISIONS,
    MAX_EFFECT_CHARS,
    MAX_EFFECTS,
    MAX_ENTITY_CHARS,
    MAX_EPISODE_ID_CHARS,
    MAX_EPISODE_QUERY_CHARS,
    MAX_EVENTS,
    MAX_FACTS,
    MAX_FILTER_CHARS,
    MAX_FUTURE_SECONDS,
    MAX_ITEM_CHARS,
    MAX_LESSONS,
    MAX_MEMORY_IDS,
    MAX_METADATA_CHARS,
    MAX_METADATA_FIELDS,
    MAX_NODE_CHARS,
    MAX_NODE_LINKS,
    MAX_OPTION_CHARS,
    MAX_OPTIONS,
    MAX_RUN_CHARS,
    MAX_SESSION_CHARS,
    MAX_SOURCE_INSTANCE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TASK_CHARS,
    MAX_TITLE_CHARS,
    MAX_TOPIC_CHARS,
    MEMORIES_LIMIT,
    METADATA_KEY_PATTERN,
    MIN_RELEVANCE,
    OUTCOMES,
    PATTERN_KINDS,
    PATTERNS_LIMIT,
    RECALL_LIMIT,
    REPLAY_LIMIT,
    SEARCH_LIMIT,
    SESSIONS_LIMIT,
    SOURCE_TYPES,
    WRITABLE_SOURCE_TYPES,
    CauseSource,
    DecisionType,
    EditableStatus,
    EpisodeStatus,
    EventType,
    HistoryActor,
    Outcome,
    PatternKind,
    Range,
    bounded,
)
from .llm import (
    CallTotals,
    Costs,
    LlmStatus,
)
from .memories import (
    PLAIN_IMPORT_FIELDS,
    CorrectRequest,
    ExportQuery,
    ForgetRequest,
    ForgetResult,
    MemoriesListQuery,
    Memory,
    MemoryList,
    RecallContext,
    RecallGroup,
    RecallHit,
    RecallPeriod,
    RecallRequest,
    RecallResult,
    RememberBatchRequest,
    RememberBatchResult,
    RememberRequest,
    RememberResult,
    UsedResult,
)
from .projects import (
    ProjectInfo,
    ProjectList,
)
from .sessions import (
    SessionInfo,
    SessionList,
    SessionsQuery,
)
from .structured import (
    CitedIds,
    Decision,
    DecisionEdit,
    EpisodeMetrics,
    Event,
    EventEdit,
    Fact,
    FactEdit,
    ItemText,
    Lesson,
    LessonEdit,
    StructuredEdit,
    StructuredRecord,
)

# fmt: off
__all__ = [
    "AccessCount", "AccessInfo", "BackgroundEmbeddings", "BatchesInfo", "CONTEXT_BUDGET",
    "CallTotals", "CitedIds", "Context", "ContextActive", "ContextFailed", "ContextLesson",
    "ContextPattern", "ContextQuery", "ConversationMessage", "CorrectRequest", "Costs",
    "Decision", "DecisionEdit",
    "DetectorModelInfo", "DiskInfo", "EDITABLE_STATUSES", "EPISODES_LIMIT", "EPISODES_OFFSET",
    "EPISODES_SCOPED_DOC", "EPISODE_ID_PATTERN", "EPISODE_STATUSES", "EVENT_TYPES",
    "CoEntity", "ENTITIES_LIMIT", "ENTITY_KINDS", "ENTITY_MEMORIES_LIMIT", "EntitiesListQuery",
    "Entity", "EntityDetail", "EntityEpisode", "EntityGetQuery", "EntityList", "EntityMemory",
    "EntityRef", "EpisodeEntity", "MAX_ENTITY_CHARS",
    "CAUSAL_PATH_MAX_DEPTH", "CAUSE_SOURCES", "CausalLink", "CausalPath", "CausalPathQuery",
    "CausalStep", "CauseAddRequest", "CauseAddResult", "CauseList", "CauseRef",
    "CauseRemoveQuery", "CauseSource", "CausesQuery", "DECISION_TYPES", "DecisionType",
    "MAX_CAUSE_NOTE_CHARS", "MAX_EFFECTS", "MAX_EFFECT_CHARS", "MAX_NODE_CHARS",
    "MAX_NODE_LINKS", "NODE_DOC",
    "EditableStatus", "EmbeddingInfo", "Episode", "EpisodeChain", "EpisodeCounts",
    "EpisodeAddResult", "EpisodeCreateRequest", "EpisodeCreateResult", "EpisodeCurrent",
    "EpisodeCurrentQuery",
    "EpisodeDecisions", "EpisodeDetail", "EpisodeGetQuery", "EpisodeGetResult", "EpisodeId",
    "EpisodeList", "EpisodeMemoryRequest", "EpisodeMergeRequest", "EpisodeMergeResult",
    "EpisodeMetrics", "EpisodeQueue", "EpisodeRef", "EpisodeSearch", "EpisodeSplitRequest",
    "EpisodeSplitResult", "EpisodeStartRequest", "EpisodeStartResult", "EpisodeStatus",
    "EpisodeUpdateRequest", "EpisodesListQuery", "EpisodesReplayRequest",
    "EpisodesSearchRequest", "Error", "Event", "EventEdit", "EventType", "ExportQuery",
    "Fact", "FactEdit",
    "ForgetRequest", "ForgetResult", "Health", "HistoryActor", "HistoryEntry",
    "IngestConversationRequest", "IngestConversationResult", "ItemText", "LastAccessed",
    "Lesson", "LessonEdit", "LlmStatus", "MAX_BATCH", "MAX_CITED_IDS", "MAX_CONTEXT_CHARS",
    "MAX_DECISIONS", "MAX_EPISODE_ID_CHARS", "MAX_EPISODE_QUERY_CHARS", "MAX_EVENTS",
    "MAX_FACTS", "MAX_FILTER_CHARS", "MAX_FUTURE_SECONDS", "MAX_ITEM_CHARS", "MAX_LESSONS",
    "MAX_MEMORY_IDS",
    "MAX_METADATA_CHARS", "MAX_METADATA_FIELDS", "MAX_OPTIONS", "MAX_OPTION_CHARS",
    "MAX_RUN_CHARS", "MAX_SESSION_CHARS", "MAX_SOURCE_INSTANCE_CHARS", "MAX_TAGS", "MAX_TAG_CHARS",
    "MAX_TASK_CHARS", "MAX_TITLE_CHARS", "MAX_TOPIC_CHARS", "MEMORIES_LIMIT",
    "METADATA_KEY_PATTERN", "MIN_RELEVANCE", "MemoriesListQuery", "Memory", "MemoryId",
    "MemoryList", "OUTCOMES", "OpenResponse", "Outcome", "PATTERNS_LIMIT", "PATTERN_KINDS",
    "PLAIN_IMPORT_FIELDS", "PROJECT_DOC", "Pattern", "PatternEpisode", "PatternEvidence",
    "PatternKind", "Patterns", "PatternsQuery", "ProjectInfo", "ProjectList", "ProjectName",
    "ProjectScope", "EPISODE_CONTEXT", "RECALL_LIMIT", "REPLAY_LIMIT", "Range", "RecallContext",
    "RecallGroup", "RecallHit",
    "RecallPeriod", "RecallRequest", "RecallResult", "RememberBatchRequest", "RememberBatchResult",
    "RememberRequest", "RememberResult", "Replay", "ReplayItem", "Request", "Response",
    "Retrievability", "SCOPED_DOC", "SCOPES", "SEARCH_LIMIT", "SESSIONS_LIMIT", "SOURCE_TYPES",
    "ListedEpisode", "SearchedEpisode", "SessionInfo", "SessionList", "SessionsQuery",
    "SourceTypeName", "Stats", "StoreInfo", "StructuredEdit", "StructuredRecord", "Success",
    "Tag", "Tags", "TimeSpan", "TimelineItem", "Timestamp", "UsedResult", "WHEN",
    "WRITABLE_SOURCE_TYPES", "WarmUp", "WritableSourceType", "bounded",
]
# fmt: on
