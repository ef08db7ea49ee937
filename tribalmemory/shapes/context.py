"""What to read before starting: the context and the patterns of closed episodes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import (
    Request,
    Response,
)
from .fields import (
    EPISODES_SCOPED_DOC,
    MemoryId,
    ProjectScope,
    Timestamp,
)
from .limits import (
    CONTEXT_BUDGET,
    MAX_EPISODE_QUERY_CHARS,
    PATTERNS_LIMIT,
    EpisodeStatus,
    PatternKind,
    bounded,
)


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
