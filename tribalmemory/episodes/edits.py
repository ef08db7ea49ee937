"""Rules for manual episode edits, as pure functions: what is pinned, who keeps the id.

A user's edit is pinned: a memory the user took out of an episode is never put back into it
by the detector or a consolidation pass (an ``out`` pin), and a memory the user put into an
episode (add, create, split, merge) is never moved out of it by them (an ``in`` pin). Only
another user edit changes a pinned membership. The engine stores pins in the episode
database (``pins`` table); these functions decide with the pins of the memories concerned.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

ACTORS = ("user", "detector", "consolidation")
Actor = Literal["user", "detector", "consolidation"]
EDITABLE_STATUSES = ("active", "closed")
SESSION_JOIN_FLOOR = 0.15
"""A memory of a session with a declared episode joins it unless its cosine similarity to both
the episode's topic and its members' centroid is below this: unrelated text for the bundled
model scores about 0.0-0.15, text about the same subject 0.3 and more."""


class Keyed(Protocol):
    """A row read by column name: a ``sqlite3.Row`` or a mapping."""

    def __getitem__(self, key: str, /) -> Any: ...


@dataclass(frozen=True)
class Pin:
    memory_id: str
    episode_id: str
    kind: Literal["in", "out"]

    @classmethod
    def from_row(cls, row: Keyed) -> Pin:
        return cls(row["memory_id"], row["episode_id"], row["kind"])


def may_join(pins: Iterable[Pin], memory_id: str, episode_id: str) -> bool:
    """May an automatic pass put ``memory_id`` into ``episode_id``? Not when the user took it
    out of that episode."""
    return not any(
        p.memory_id == memory_id and p.episode_id == episode_id and p.kind == "out" for p in pins
    )


def may_move(pins: Iterable[Pin], memory_id: str, current_episode_id: str | None) -> bool:
    """May an automatic pass take ``memory_id`` out of its episode? Not when the user put it
    there."""
    if current_episode_id is None:
        return True
    return not any(
        p.memory_id == memory_id and p.episode_id == current_episode_id and p.kind == "in"
        for p in pins
    )


def may_merge(pins: Iterable[Pin], first: str, second: str) -> bool:
    """May an automatic pass merge two episodes? Not when the user edited either one (any pin
    names it): the user's shape of an episode stands."""
    return not any(p.episode_id in (first, second) for p in pins)


def pinned(pins: Iterable[Pin], episode_id: str) -> dict[str, str]:
    """The pinned memories of an episode: memory id → ``in`` or ``out``."""
    return {p.memory_id: p.kind for p in pins if p.episode_id == episode_id}


def merge_roles(first: str, first_count: int, second: str, second_count: int) -> tuple[str, str]:
    """(survivor, absorbed) of a merge: the episode with more memories keeps its id; on a tie
    the one the request names first (the path's episode) does."""
    if second_count > first_count:
        return second, first
    return first, second


def split_problem(members: list[str], chosen: list[str]) -> str | None:
    """Why splitting ``chosen`` out of an episode with ``members`` is refused, or None."""
    outside = [m for m in chosen if m not in members]
    if outside:
        return f"not members of this episode: {', '.join(outside)}"
    if len(set(chosen)) == len(set(members)):
        return (
            "memory_ids names every member: a split must leave at least one memory behind "
            "(rename the episode with PATCH instead)"
        )
    return None


def session_fits(topic_similarity: float | None, centroid_similarity: float | None) -> bool:
    """Does a session memory join its declared episode? Yes unless every similarity known is
    clearly against it (below :data:`SESSION_JOIN_FLOOR`); with none known, it joins."""
    known = [s for s in (topic_similarity, centroid_similarity) if s is not None]
    return not known or max(known) >= SESSION_JOIN_FLOOR
