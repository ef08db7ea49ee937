"""Candidates of a new memory: which active episodes and seeds it may join, and each one
scored by the join model, best first (:func:`rank_candidates`). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from ..join_model import JoinModel
from .features import EpisodeFeatures, MemoryFeatures
from .scoring import (
    DEFAULT_MODEL,
    Evidence,
    Scored,
    candidate_rows,
    fill_margins_rows,
    sigmoid,
)
from .stream import DetectorContext

MAX_SEEDS = 1024
"""The most recent eligible seeds a decision scores (keeps :func:`decide` ~2 ms); the engine's
seed pool hands it no more (:meth:`tribalmemory.episodes.seeds.SeedPool.recent`)."""


@dataclass(frozen=True)
class Candidate:
    kind: str  # "episode" or "seed"
    id: str
    score: float
    evidence: Evidence


def eligible_episodes(
    episodes: Iterable[EpisodeFeatures], now: datetime, active_window_days: float, max_active: int
) -> list[EpisodeFeatures]:
    """Episodes a memory created at ``now`` may join: last memory at most
    ``active_window_days`` before ``now`` and first memory at most that long after it (memory
    time, not wall-clock: a memory dated years back joins no thread of today), and only the
    ``max_active`` most recently active of them."""
    window = timedelta(days=active_window_days)
    ok = [
        e for e in episodes if now - e.last_activity <= window and e.first_activity - now <= window
    ]
    ok.sort(key=lambda e: e.last_activity, reverse=True)
    return ok[:max_active]


def eligible_seeds(
    seeds: Iterable[MemoryFeatures], now: datetime, active_window_days: float
) -> list[MemoryFeatures]:
    """Seeds no older than the active window (a seed older than that can no longer start an
    episode)."""
    window = timedelta(days=active_window_days)
    return [s for s in seeds if abs(now - s.created_at) <= window]


class SeedRows:
    """The seeds' vectors as rows of one matrix kept from one decision to the next, so that a
    memory's cosines to a thousand seeds are one product: stacking their vectors anew for each
    memory took ~0.65 ms, most of a decision. A seed keeps its row while its features object
    is the same; rows of seeds no longer asked about are dropped once they outnumber the live
    ones (they only make the product a little longer until then)."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self._row: dict[str, int] = {}
        self._owner: list[MemoryFeatures] = []
        self._matrix = np.empty((0, 0), dtype=np.float32)

    def cosines(self, vector: np.ndarray, seeds: Sequence[MemoryFeatures]) -> np.ndarray:
        """``seed.vector @ vector`` for each of ``seeds``, in their order."""
        if len(self._owner) > 2 * len(seeds) + 1024:
            self._clear()
        known, owner = self._row.get, self._owner
        rows = []
        for seed in seeds:  # most seeds are the same objects as at the last decision
            row = known(seed.id)
            rows.append(row if row is not None and owner[row] is seed else self._row_of(seed))
        return (self._matrix[: len(self._owner)] @ vector)[rows]

    def _row_of(self, seed: MemoryFeatures) -> int:
        row = self._row.get(seed.id)
        if row is not None and self._owner[row] is seed:
            return row
        if row is None:
            row = self._row[seed.id] = len(self._owner)
            self._owner.append(seed)
            if row >= len(self._matrix):
                grown = np.empty((max(64, 2 * row), seed.vector.shape[0]), dtype=np.float32)
                if row:
                    grown[:row] = self._matrix[:row]
                self._matrix = grown
        else:
            self._owner[row] = seed
        self._matrix[row] = seed.vector
        return row


SEED_SHORTLIST = 32
"""Seeds beyond the 32 nearest by cosine only feed the background statistics: lexical and tag
evidence (at most ~1.3 z) rarely lifts a seed past 32 closer ones, and this keeps
:func:`decide` at O(seeds) numpy work plus O(32) Python work."""


def own_thread(memory: MemoryFeatures, episodes: Sequence[EpisodeFeatures]) -> str | None:
    """The episode among ``episodes`` where the author of ``memory`` wrote last before it: the
    thread a memory that says little continues. None if the memory says enough to be placed by
    its words, or if its author wrote in none of them. Seeds do not count: the rule extends a
    thread, it never makes one of two memories that share only their author."""
    if not memory.says_little:
        return None
    author, now = memory.source_instance, memory.created_at
    best: tuple[datetime, str] | None = None
    for ep in episodes:
        when = ep.source_last.get(author)
        if when is not None and when <= now and (best is None or when > best[0]):
            best = (when, ep.id)
    return None if best is None else best[1]


def rank_candidates(
    memory: MemoryFeatures,
    episodes: Sequence[EpisodeFeatures],
    seeds: Sequence[MemoryFeatures],
    context: DetectorContext,
    model: JoinModel = DEFAULT_MODEL,
    seed_rows: SeedRows | None = None,
    rows_out: list[np.ndarray] | None = None,
) -> tuple[list[Candidate], list[float]]:
    """Score every (already eligible) candidate with the join model, best first: each gets
    its feature row (:func:`candidate_rows`, one pass over the candidates), the rows are
    compared (:func:`fill_margins_rows`) and the model turns each into P(joins). Also returns
    the background cosines (memory vs each candidate's recent members) for
    :func:`update_context`. Seeds' cosines are one matrix product (with ``seed_rows``, kept
    from one call to the next); only the :data:`SEED_SHORTLIST` nearest are scored.
    ``rows_out``: the feature matrix is appended to it (candidates in the returned order),
    for fitting the model."""
    seeds = [s for s in seeds if s.id != memory.id]
    own = own_thread(memory, episodes)
    background = [ep.vectors @ memory.vector for ep in episodes]
    scored: list[Scored] = list(episodes)
    cosines: list[np.ndarray | float] = list(background)
    if seeds:
        if seed_rows is not None:
            cos = seed_rows.cosines(memory.vector, seeds)
        else:
            cos = np.stack([s.vector for s in seeds]) @ memory.vector
        background.append(cos)
        shortlist = range(len(seeds))
        if len(seeds) > SEED_SHORTLIST:  # only the nearest seeds by cosine get full evidence
            shortlist = np.argpartition(-cos, SEED_SHORTLIST)[:SEED_SHORTLIST].tolist()
        values = cos.tolist()
        for j in shortlist:
            scored.append(seeds[j])
            cosines.append(values[j])
    if not scored:
        return [], []
    rows, raw = candidate_rows(
        memory,
        scored,
        context,
        cosines=cosines,
        idf=context.idf_weights(memory.terms),
        own_thread=[own == c.id for c in episodes] + [False] * (len(scored) - len(episodes)),
    )
    matrix = np.array(fill_margins_rows(rows), dtype=np.float64)
    out = []
    for i, u in enumerate(model.logits(matrix).tolist()):
        p = sigmoid(u)
        kind = "episode" if i < len(episodes) else "seed"
        out.append(Candidate(kind, scored[i].id, p, Evidence(*raw[i], utility=u, score=p)))
    order = sorted(range(len(out)), key=lambda i: out[i].score, reverse=True)
    if rows_out is not None:
        rows_out.append(matrix[order])
    bg = np.concatenate(background).tolist() if background else []
    return [out[i] for i in order], bg
