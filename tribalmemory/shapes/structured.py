"""An episode's structured record: the edits users send and the record the API answers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import (
    Request,
    Response,
)
from .causes import CausalLink
from .fields import (
    MemoryId,
    Timestamp,
)
from .limits import (
    MAX_CITED_IDS,
    MAX_DECISIONS,
    MAX_EFFECT_CHARS,
    MAX_EFFECTS,
    MAX_EVENTS,
    MAX_FACTS,
    MAX_ITEM_CHARS,
    MAX_LESSONS,
    MAX_OPTION_CHARS,
    MAX_OPTIONS,
    MAX_TASK_CHARS,
    DecisionType,
    EventType,
    Outcome,
)

ItemText = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]
CitedIds = Annotated[
    list[MemoryId],
    Field(max_length=MAX_CITED_IDS, description="Members of the episode it rests on."),
]
Effects = Annotated[
    list[Annotated[str, Field(max_length=MAX_EFFECT_CHARS)]],
    Field(max_length=MAX_EFFECTS, description="What it led to, in short texts."),
]
LinkedIds = Annotated[
    list[MemoryId],
    Field(
        max_length=MAX_CITED_IDS,
        description="Members of the episode (the memories other events rest on).",
    ),
]
LINKS_DOC = (
    "Every causal link of the memory it rests on (its first memory_id), from any source "
    "(docs/causes.md)."
)


class DecisionEdit(Request):
    chosen: ItemText = Field(description="What was chosen.")
    context: ItemText | None = Field(None, description="The situation.")
    options: list[Annotated[str, Field(max_length=MAX_OPTION_CHARS)]] | None = Field(
        None, max_length=MAX_OPTIONS, description="The options considered."
    )
    rationale: ItemText | None = Field(None, description="Why.")
    outcome: ItemText | None = Field(None, description="How it turned out.")
    memory_ids: CitedIds | None = None
    type: DecisionType | None = Field(None, description="What it is about (default other).")
    effects: Effects | None = None


class EventEdit(Request):
    type: EventType
    text: ItemText
    memory_ids: CitedIds | None = None
    caused_by: LinkedIds | None = Field(None, description="What led to it.")
    leads_to: LinkedIds | None = Field(None, description="What it led to.")


class LessonEdit(Request):
    text: ItemText = Field(description="A short, reusable statement.")
    memory_ids: CitedIds | None = None


class FactEdit(Request):
    text: ItemText = Field(
        description="One standalone fact worth keeping beyond the episode: a preference, a "
        "setting, a name, a number, a date."
    )
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
    facts: list[FactEdit] | None = Field(None, max_length=MAX_FACTS)


class Decision(Response):
    at: Timestamp | None = Field(description="The time of the first memory it rests on.")
    context: str
    options: list[str]
    chosen: str
    rationale: str
    outcome: str | None
    memory_ids: list[MemoryId]
    type: DecisionType = "other"
    effects: list[str] = Field(default_factory=list, description="What it led to.")
    links: list[CausalLink] = Field(default_factory=list, description=LINKS_DOC)


class Event(Response):
    at: Timestamp | None
    type: EventType
    text: str
    memory_ids: list[MemoryId]
    caused_by: list[MemoryId] = Field(
        default_factory=list, description="The members whose events led to it."
    )
    leads_to: list[MemoryId] = Field(
        default_factory=list, description="The members whose events it led to."
    )
    links: list[CausalLink] = Field(default_factory=list, description=LINKS_DOC)


class Lesson(Response):
    text: str
    memory_ids: list[MemoryId]


class Fact(Response):
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
    facts: list[Fact] = Field(
        default_factory=list,
        description="Standalone facts the LLM read off the episode (none without an LLM).",
    )
    metrics: EpisodeMetrics
    source: Literal["llm", "extractive"] = Field(
        description="llm: extracted with the final summary; extractive: the cue-word rules."
    )
    edited: list[str] = Field(description="Fields a user set; regeneration keeps them.")
