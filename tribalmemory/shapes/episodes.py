"""Episodes: list, get, create, edit, merge, split, start, search, chain, replay."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import (
    Request,
    Response,
)
from .entities import EpisodeEntity
from .fields import (
    EPISODES_SCOPED_DOC,
    PROJECT_DOC,
    WHEN,
    AccessCount,
    EpisodeId,
    LastAccessed,
    MemoryId,
    ProjectName,
    ProjectScope,
    Retrievability,
    Timestamp,
    scope_filter,
)
from .limits import (
    EPISODES_LIMIT,
    EPISODES_OFFSET,
    MAX_EPISODE_QUERY_CHARS,
    MAX_FILTER_CHARS,
    MAX_MEMORY_IDS,
    MAX_METADATA_FIELDS,
    MAX_SESSION_CHARS,
    MAX_TITLE_CHARS,
    MAX_TOPIC_CHARS,
    OUTCOMES,
    REPLAY_LIMIT,
    SEARCH_LIMIT,
    EditableStatus,
    EpisodeStatus,
    HistoryActor,
    Outcome,
    bounded,
)
from .structured import (
    Decision,
    StructuredEdit,
    StructuredRecord,
)

# -- requests: episodes ------------------------------------------------------------------------

EPISODES_WITH = "Only episodes with a memory"
"""What an episode read's scope filters keep (:func:`~.fields.scope_filter`)."""


EACH_EPISODE_S_ENTITIES: Any = Field(
    False,
    description="Also return each episode's entities (the ones its memories name, most "
    "mentioned first), read in one query for the whole page.",
)
"""The ``include_entities`` flag of the episodes list and of episode search."""


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
        description="Only episodes with this participant: a source_instance of one of its "
        "memories, or a participant the LLM named in its summary (source_instance: the "
        "memories alone).",
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
        description="Only episodes one of whose memories names this entity (a file, service, "
        "ticket...; by any of its aliases), or, for a name never stored, writes it word for word.",
    )
    since: Timestamp | None = Field(
        None, description=f"Only episodes with memories at or after this time: {WHEN}."
    )
    until: Timestamp | None = Field(
        None, description=f"Only episodes with memories at or before this time: {WHEN}."
    )
    project: ProjectScope | None = Field(None, description=EPISODES_SCOPED_DOC)
    source_instance: str | None = scope_filter("source_instance", EPISODES_WITH)
    session: str | None = scope_filter("session", EPISODES_WITH)
    run: str | None = scope_filter("run", EPISODES_WITH)
    include_entities: bool = EACH_EPISODE_S_ENTITIES


class EpisodeRef(Request):
    episode_id: EpisodeId = Field(
        description="Id of an episode, like 'ep-1a2b3c4d5e6f' (an 'episode:' prefix and any "
        "case are accepted)."
    )


class EpisodeGetQuery(Request):
    include_timeline: bool = Field(
        False, description="Also return the episode's memories in time order."
    )
    include_entities: bool = Field(
        False, description="Also return the entities its memories name, most mentioned first."
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
    source_instance: str | None = scope_filter("source_instance", EPISODES_WITH)
    session: str | None = scope_filter("session", EPISODES_WITH)
    run: str | None = scope_filter("run", EPISODES_WITH)
    include_entities: bool = EACH_EPISODE_S_ENTITIES


class EpisodesReplayRequest(Request):
    topic: str = Field(
        max_length=MAX_TOPIC_CHARS,
        description="What happened with…: a subject such as 'refresh token logouts' or "
        "'the Postgres migration'.",
    )
    limit: int = bounded(REPLAY_LIMIT, "Maximum number of episodes.")
    project: ProjectScope | None = Field(None, description=EPISODES_SCOPED_DOC)
    source_instance: str | None = scope_filter("source_instance", EPISODES_WITH)
    session: str | None = scope_filter("session", EPISODES_WITH)
    run: str | None = scope_filter("run", EPISODES_WITH)


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


class ListedEpisode(Episode):
    """An episode as listed and searched: with its entities when asked for."""

    entities: list[EpisodeEntity] | None = Field(
        None, description="The entities its memories name, when include_entities is true."
    )


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
    episodes: list[ListedEpisode]
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
    entities: list[EpisodeEntity] | None = Field(
        None, description="The entities its memories name, when include_entities is true."
    )


class EpisodeCreateResult(Response):
    success: bool
    episode_id: str
    memory_count: int


class EpisodeAddResult(Response):
    success: bool
    added: bool = Field(
        description="False: the memory was in this episode already, and nothing changed."
    )
    moved_from: str | None = Field(
        description="The episode the memory left for this one (null: it was in none)."
    )


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


class SearchedEpisode(ListedEpisode):
    relevance: float
    score: float


class EpisodeSearch(Response):
    query: str
    episodes: list[SearchedEpisode]
    count: int
