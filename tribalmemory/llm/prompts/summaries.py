"""Summaries: an episode's summary updated, regenerated, or written at its close with its
metadata; the structured record rides along with ``regenerate`` and ``final``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .answers import bounded_text, exact_keys, validate_title_text
from .limits import (
    ITEM_MAX,
    LIST_MAX_ITEMS,
    MAX_NEW_MEMORIES,
    MAX_TOKENS,
    METADATA_KEYS,
    OUTCOMES,
    SUMMARY_MAX,
)
from .render import Prompt, as_memory, episode_head, memories_block, render_all
from .system import messages


@dataclass(frozen=True)
class EpisodeMetadata:
    participants: tuple[str, ...]
    tools_used: tuple[str, ...]
    entities: tuple[str, ...]
    key_decisions: tuple[str, ...]
    outcome: str
    tags: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class SummaryResult:
    title: str
    summary: str
    metadata: EpisodeMetadata | None = None
    structured: Any = None
    """The raw ``structured`` object, validated part by part by the episode engine (which
    knows the episode's memory ids): an invalid part is dropped there, not retried here."""


def build_update(
    title: str, current_summary: str, new_memories: Sequence[Any]
) -> Prompt[SummaryResult]:
    """Cheap progressive update: current summary + the memories added since."""
    items = [as_memory(m) for m in new_memories][-MAX_NEW_MEMORIES:]
    user = episode_head(title, current_summary or "") + "\n\nNew memories:\n" + render_all(items)
    return Prompt(
        "update",
        messages("update", user),
        lambda data: validate_summary(data, with_metadata=False),
        MAX_TOKENS["update"],
    )


def build_regenerate(title: str, memories: Sequence[Any]) -> Prompt[SummaryResult]:
    """Full regeneration from the memories in time order."""
    return _from_memories("regenerate", title, memories, with_metadata=False)


def build_final(title: str, memories: Sequence[Any]) -> Prompt[SummaryResult]:
    """Comprehensive final summary and structured metadata in one call."""
    return _from_memories("final", title, memories, with_metadata=True)


def _from_memories(
    purpose: str, title: str, memories: Sequence[Any], *, with_metadata: bool
) -> Prompt[SummaryResult]:
    """A summary written from all the episode's memories, with its structured record."""
    user = episode_head(title) + "\n\nMemories, oldest first:\n" + memories_block(memories)
    return Prompt(
        purpose,
        messages(purpose, user),
        lambda data: validate_summary(data, with_metadata=with_metadata, with_structured=True),
        MAX_TOKENS[purpose],
    )


def _str_list(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(f"metadata.{name} must be a list")
    if len(value) > LIST_MAX_ITEMS:
        raise ValueError(f"metadata.{name} has {len(value)} items; at most {LIST_MAX_ITEMS}")
    return tuple(
        bounded_text(item, f"metadata.{name} item", ITEM_MAX, one_line=True) for item in value
    )


def validate_metadata(value: Any) -> EpisodeMetadata:
    """The metadata object: the six keys, bounded string lists, a known outcome."""
    data = exact_keys(value, set(METADATA_KEYS))
    outcome = data["outcome"]
    if outcome not in OUTCOMES:
        raise ValueError(f"metadata.outcome must be one of {OUTCOMES}, got {outcome!r}")
    lists = {k: _str_list(data[k], k) for k in METADATA_KEYS if k != "outcome"}
    return EpisodeMetadata(outcome=outcome, **lists)


def validate_summary(
    data: Any, *, with_metadata: bool, with_structured: bool = False
) -> SummaryResult:
    """``{"title", "summary"}`` plus ``"metadata"`` when asked for, and an optional
    ``"structured"`` object when asked for (passed on raw: a missing or invalid structured part
    never costs a retry; the engine validates it part by part)."""
    required = {"title", "summary"} | ({"metadata"} if with_metadata else set())
    optional = frozenset({"structured"}) if with_structured else frozenset()
    data = exact_keys(data, required, optional)
    return SummaryResult(
        title=validate_title_text(data["title"]),
        summary=bounded_text(data["summary"], "summary", SUMMARY_MAX),
        metadata=validate_metadata(data["metadata"]) if with_metadata else None,
        structured=data.get("structured"),
    )
