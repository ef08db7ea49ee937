"""Which candidates recall may show: the rules that keep episodes from displacing evidence.

Pure functions over a candidate pool in fused-rank order (the hybrid search's best first).
The pool is fetched at a fixed size (:data:`CANDIDATE_POOL`, or more for a larger limit), so
what the rules keep does not depend on ``limit``: the memories of the first k kept are among
the first k + 1 kept.

- A derived memory (a lesson or decision the episode engine read off memories) is left out when
  a memory it was read from is in the pool: the memory itself is the evidence, and the copy
  beside it only takes a slot.
- An episode summary is shown only when it carries more of the query than the members it
  stands for: its score exceeds the best score of its members in the pool by
  :data:`SUMMARY_MARGIN`, and it is about as close to the query as the closest memory the
  search found (within :data:`SUMMARY_REACH`). The second test leaves out the summary of a
  thread the query barely touches, which beats its weakly matched members only because a
  summary mixes them (measured on benchmarks/recall.py: these took slots from evidence on
  the agent-memory questions and covered none). A summary none of whose members is in the
  pool stands for nothing the search found, and is left out too (measured on the same
  benchmark: such summaries took slots from evidence far more often than they covered it).
  A search that can find no plain memory (``source_types`` naming summaries only) keeps every
  summary.
- What recall shows: the first ``limit`` memories users and agents wrote, and the
  engine-written ones the rules keep among them, beside them, never in place of one: with
  episodes on, the memories you wrote are the ones you get with episodes off.
- A query that names a period (:mod:`.periods`) shows the memories dated in it first, each
  group in the pool's order: the period is a filter that never empties the list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

T = TypeVar("T")

CANDIDATE_POOL = 50
"""Candidates the rules see for any ``limit`` up to half this; a larger limit sees twice
``limit`` (the rules leave some out: the pool must hold ``limit`` once they have)."""

SUMMARY_MARGIN = 0.05
"""How much more of the query (score, cosine 0–1) a summary must carry than its best member
in the pool to take a slot of its own."""

SUMMARY_REACH = 0.05
"""How far below the closest memory in the pool (score, cosine 0–1) a summary may be and still
take a slot: a summary is shown as one of the best answers, not as a thread's digest."""


class Kind(Enum):
    MEMORY = "memory"  # written by a user or agent
    SUMMARY = "summary"  # an episode's summary (EPISODE_SUMMARY)
    DERIVED = "derived"  # read off memories: LESSON, DECISION, FACT


@dataclass(frozen=True)
class Ranked:
    """One search result as the rules see it."""

    id: str
    score: float  # the score shown (cosine, 0–1)
    kind: Kind = Kind.MEMORY
    episode_id: str | None = None  # the episode it belongs to (a summary: the one it sums up)
    sources: tuple[str, ...] = ()  # a derived memory: the memory ids it was read from
    created_at: float | None = None  # memory time (epoch seconds)


def pool_size(limit: int) -> int:
    """How many candidates to fetch for ``limit`` results."""
    return max(2 * limit, CANDIDATE_POOL)


def without_derived_beside_sources(pool: Sequence[Ranked]) -> list[Ranked]:
    """``pool`` without the derived memories that were read from a memory in ``pool``."""
    present = {c.id for c in pool if c.kind is Kind.MEMORY}
    return [c for c in pool if c.kind is not Kind.DERIVED or not present.intersection(c.sources)]


def summaries_that_add(
    pool: Sequence[Ranked], margin: float = SUMMARY_MARGIN, orphans: bool = False
) -> list[Ranked]:
    """``pool`` without the summaries that carry no more of the query than their best member
    in ``pool`` (score + ``margin``) or lie further than :data:`SUMMARY_REACH` below the
    closest memory among the first :data:`CANDIDATE_POOL` (so a longer pool never changes
    it), nor, unless ``orphans``, those none of whose members is in ``pool`` while other
    memories are (a search restricted to summaries keeps them all)."""
    best: dict[str, float] = {}
    for c in pool:
        if c.kind is Kind.MEMORY and c.episode_id is not None:
            best[c.episode_id] = max(best.get(c.episode_id, 0.0), c.score)
    closest = max((c.score for c in pool[:CANDIDATE_POOL] if c.kind is Kind.MEMORY), default=None)
    orphans = orphans or not any(c.kind is Kind.MEMORY for c in pool)

    def adds(c: Ranked) -> bool:
        if c.episode_id not in best:
            return orphans
        near = closest is None or c.score >= closest - SUMMARY_REACH
        return near and c.score >= best[c.episode_id] + margin

    return [c for c in pool if c.kind is not Kind.SUMMARY or adds(c)]


def admitted(
    pool: Sequence[Ranked], margin: float = SUMMARY_MARGIN, orphans: bool = False
) -> list[Ranked]:
    """The candidates recall may show, in ``pool``'s order (both rules above)."""
    return summaries_that_add(without_derived_beside_sources(pool), margin, orphans)


def dated_in(pool: Sequence[Ranked], start: float, end: float) -> list[Ranked]:
    """The candidates of ``pool`` dated in ``[start, end)``, in ``pool``'s order."""
    return [c for c in pool if c.created_at is not None and start <= c.created_at < end]


def in_period_first(pool: Sequence[Ranked], start: float, end: float) -> list[Ranked]:
    """``pool`` with the candidates dated in ``[start, end)`` first; order kept within each
    group, so the first k are still the first k of a longer list."""
    inside = dated_in(pool, start, end)
    if not inside:
        return list(pool)
    kept = {c.id for c in inside}
    return inside + [c for c in pool if c.id not in kept]


def beside_written(pool: Sequence[T], limit: int, engine_written: Callable[[T], bool]) -> list[T]:
    """The first ``limit`` written memories of ``pool`` and the engine-written ones
    (``engine_written``) ranked among them, in the pool's order: so the first k shown are a
    prefix of the first k + 1. How many engine-written memories a pool holds the search caps
    (:func:`~tribalmemory.storage.base.engine_share`)."""
    shown: list[T] = []
    written = 0
    for item in pool:
        if written == limit:
            break
        shown.append(item)
        written += not engine_written(item)
    return shown
