"""Pure lifecycle rules: summary cadence, auto-close, the active cap and archiving."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DAY = 86400.0


def plan_summary(
    *,
    status: str,
    since_regen: int,
    interval: int,
    needs_full: bool,
    has_llm_summary: bool,
    new_memories: int = 1,
    update_every: int = 1,
) -> str:
    """What an episode's summary needs next: ``interim``, ``update``, ``regenerate``, ``final``.

    Closed and archived episodes get a comprehensive final summary. An active one gets a full
    regeneration when a removal made its LLM summary stale (or one was asked for), when
    ``interval`` memories were added since the last full one, or — its first LLM summary — once
    it has ``update_every`` memories. Otherwise it gets a cheap LLM update once
    ``update_every`` memories are new since the last LLM summary, and an ``interim`` summary
    (no LLM call: the last LLM summary plus the new memories, or an extractive one) before.
    """
    if status != "active":
        return "final"
    if needs_full or since_regen >= interval:
        return "regenerate"
    if not has_llm_summary:
        return "regenerate" if new_memories >= update_every else "interim"
    if new_memories < update_every:
        return "interim"
    return "update"


@dataclass(frozen=True)
class Activity:
    """What the lifecycle rules need to know about an episode."""

    id: str
    status: str
    last_activity: float
    closed_at: float | None = None


def idle(episodes: Iterable[Activity], now: float, window_days: float) -> list[str]:
    """Active episodes with no new memory for ``window_days`` before ``now``."""
    cutoff = now - window_days * DAY
    return [e.id for e in episodes if e.status == "active" and e.last_activity < cutoff]


def over_cap(active: Sequence[Activity], cap: int, adding: int = 1) -> list[str]:
    """Least recently active episodes to close so that ``adding`` new ones fit under ``cap``."""
    ordered = sorted(
        (e for e in active if e.status == "active"), key=lambda e: (e.last_activity, e.id)
    )
    excess = len(ordered) + adding - cap
    return [e.id for e in ordered[: max(0, excess)]]


def archivable(episodes: Iterable[Activity], now: float, archive_after_days: float) -> list[str]:
    """Closed episodes closed more than ``archive_after_days`` ago."""
    cutoff = now - archive_after_days * DAY
    return [
        e.id
        for e in episodes
        if e.status == "closed" and e.closed_at is not None and e.closed_at < cutoff
    ]


def surprise(similarity: float) -> float:
    """1 − similarity of a memory to its episode when it joined, clamped to 0–1."""
    return round(min(1.0, max(0.0, 1.0 - similarity)), 4)


KEY_MOMENT = 0.7
