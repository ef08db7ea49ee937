"""The request limits, numeric ranges and closed vocabularies every door enforces."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from ..models import ENGINE_WRITTEN, SourceType

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
MAX_RUN_CHARS = 200
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
MAX_FACTS = 10
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
DecisionType = Literal["technical", "process", "product", "other"]
"""What a decision is about: technical (code, architecture, tools, infrastructure), process (how
the work is done: reviews, releases, rotas), product (what users get: features, scope,
priorities), other."""
DECISION_TYPES: tuple[DecisionType, ...] = typing.get_args(DecisionType)
MAX_EFFECTS = 5
"""A decision's effects: at most this many short texts of at most MAX_EFFECT_CHARS."""
MAX_EFFECT_CHARS = 200
# Causal links (docs/causes.md): between nodes ``episode:<id>`` and ``memory:<id>``.
CauseSource = Literal["llm", "reference", "order", "user"]
CAUSE_SOURCES: tuple[CauseSource, ...] = typing.get_args(CauseSource)
MAX_CAUSE_NOTE_CHARS = 500
MAX_NODE_CHARS = 80
CAUSAL_PATH_MAX_DEPTH = 8
"""A causal path has at most this many causal links (membership steps not counted)."""
MAX_NODE_LINKS = 200
"""The most links one node lists (the strongest first)."""
SOURCE_TYPES = tuple(s.json_name for s in SourceType)
WRITABLE_SOURCE_TYPES = tuple(s.json_name for s in SourceType if s not in ENGINE_WRITTEN)


@dataclass(frozen=True)
class Range:
    """The bounds and default of a numeric argument."""

    low: int | float
    high: int | float
    default: int | float


RECALL_LIMIT = Range(1, 50, 5)
EPISODE_CONTEXT = Range(0, 5, 1)
MIN_RELEVANCE = Range(0.0, 1.0, 0.0)
EPISODES_LIMIT = Range(1, 100, 50)
EPISODES_OFFSET = Range(0, 1_000_000, 0)
SEARCH_LIMIT = Range(1, 50, 10)
MEMORIES_LIMIT = Range(1, 100, 20)
REPLAY_LIMIT = Range(1, 20, 5)
CONTEXT_BUDGET = Range(50, 20000, 1500)
PATTERNS_LIMIT = Range(1, 50, 10)
ENTITIES_LIMIT = Range(1, 200, 50)
ENTITY_MEMORIES_LIMIT = Range(1, 50, 10)
MAX_ENTITY_CHARS = 200
EntityKind = Literal["url", "ticket", "version", "path", "identifier", "system", "name"]
"""The extraction's kinds, the more specific first (the order of its rules)."""
ENTITY_KINDS: tuple[str, ...] = typing.get_args(EntityKind)
SESSIONS_LIMIT = Range(1, 100, 20)
PatternKind = Literal["pattern", "antipattern"]
PATTERN_KINDS: tuple[str, ...] = typing.get_args(PatternKind)


def bounded(limits: Range, description: str) -> Any:
    """Field metadata for a numeric argument: its range, default and description."""
    return Field(limits.default, ge=limits.low, le=limits.high, description=description)
