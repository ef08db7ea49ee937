"""Pure lifecycle rules: summary cadence, auto-close, the active cap, archiving and chains.

Times are epoch seconds. Idle closing and chains are judged in *memory time* (the memories'
own ``created_at``), so importing old history gives the episodes and links that living through
it would have; only the scheduler's tick and archiving look at the wall clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DAY = 86400.0
HOUR = 3600.0
CHAIN_MEMBERS = 32  # memories of each side compared for a chain: the child's first, parent's last


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
    last_activity: float  # the newest member's created_at (memory time)
    closed_at: float | None = None
    last_added: float | None = None  # when a member was last added (engine clock)


def idle(episodes: Iterable[Activity], now: float, window_days: float) -> list[str]:
    """Active episodes with no memory dated within ``window_days`` before ``now``.

    At write time ``now`` is the new memory's ``created_at``: a memory closes the episodes
    that were already idle when it was made, whenever it is stored.
    """
    cutoff = idle_before(now, window_days)
    return [e.id for e in episodes if e.status == "active" and e.last_activity < cutoff]


def idle_before(now: float, window_days: float) -> float:
    """The last activity before which an active episode is idle at ``now``
    (:func:`idle`): a store may read only the episodes active before it."""
    return now - window_days * DAY


def idle_on_tick(episodes: Iterable[Activity], now: float, window_days: float) -> list[str]:
    """What the scheduler's tick closes at wall-clock ``now``: active episodes idle in memory
    time *and* in arrival time -- no memory dated, and none added, within ``window_days``.

    Living, both times agree and a quiet episode closes ``window_days`` after its last memory.
    While old history is imported, its episodes gain members now although their memories are
    old: the tick leaves them to the write-time rule (:func:`idle`), which judges them in the
    history's own time.
    """
    cutoff = idle_before(now, window_days)
    return [
        e.id
        for e in episodes
        if e.status == "active"
        and e.last_activity < cutoff
        and (e.last_added is None or e.last_added < cutoff)
    ]


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


def chain_horizon(first_memory: float, window_days: float, chain_window_hours: float) -> float:
    """The oldest last memory a parent of a new episode may have (memory time).

    A parent is an episode that was closed when the new one was created and that ended at
    most ``chain_window_hours`` before the new episode's first memory. An episode goes idle
    ``window_days`` after its last memory, and one closed early (by hand, by the active cap)
    ended before that, so a parent's last memory is at most ``window_days +
    chain_window_hours`` before ``first_memory`` (and not after it).
    """
    return first_memory - window_days * DAY - chain_window_hours * HOUR


def surprise(similarity: float) -> float:
    """1 − similarity of a memory to its episode when it joined, clamped to 0–1."""
    return round(min(1.0, max(0.0, 1.0 - similarity)), 4)


KEY_MOMENT = 0.7
