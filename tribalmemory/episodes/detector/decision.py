"""The decision on a new memory (:func:`decide`): join an episode, start one from a seed,
become a seed, or (``hybrid``/``llm``) ask the LLM; with its :func:`confidence`. Pure."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..join_model import JoinModel
from .candidates import (
    MAX_SEEDS,
    Candidate,
    SeedRows,
    eligible_episodes,
    eligible_seeds,
    rank_candidates,
)
from .features import EpisodeFeatures, MemoryFeatures
from .scoring import DEFAULT_MODEL
from .stream import DetectorContext

COLD_START = 10
COLD_START_THRESHOLD = 0.30
"""Until a stream (a project) has shown :data:`COLD_START` memories, a join needs P(joins) of
at least :data:`COLD_START_THRESHOLD` (or the threshold, if higher): its background, its rare
words, its pace and its authors are still priors, and a wrong join among a new user's first
memories is the one they see. Chosen on the validation streams (docs/detection.md), and
checked again with each refit: it keeps more of the agents' threads right in their first 30
memories, where a new user looks first."""


@dataclass(frozen=True)
class DetectorParams:
    """Thresholds and limits (normally from ``EpisodesConfig``).

    ``doubt_share``: in ``hybrid``, about this share of the decisions -- the least confident
    ones (:func:`confidence`, :meth:`DetectorContext.doubt_threshold`) -- are :class:`Ambiguous`
    and go to the LLM; 0 sends none."""

    threshold: float = DEFAULT_MODEL.threshold
    doubt_share: float = 0.9
    strategy: str = "hybrid"
    active_window_days: float = 14.0
    max_active_episodes: int = 20
    max_llm_candidates: int = 5
    max_seeds: int = MAX_SEEDS  # most recent eligible seeds scored
    model: JoinModel = DEFAULT_MODEL

    @classmethod
    def from_config(
        cls, config: Any, model: JoinModel = DEFAULT_MODEL, doubt_share: float | None = None
    ) -> DetectorParams:
        """From an ``EpisodesConfig`` (or anything with the same attribute names);
        ``doubt_share`` overrides ``config.llm_doubt_share`` (e.g. to stay in a call budget)."""
        return cls(
            threshold=(model.threshold if config.join_threshold is None else config.join_threshold),
            doubt_share=config.llm_doubt_share if doubt_share is None else doubt_share,
            strategy=config.detector_strategy,
            active_window_days=config.active_window_days,
            max_active_episodes=config.max_active_episodes,
            model=model,
        )


@dataclass(frozen=True)
class Join:
    episode_id: str
    score: float
    background: tuple[float, ...] = ()
    confidence: float = 1.0


@dataclass(frozen=True)
class StartFromSeed:
    seed_id: str
    score: float
    background: tuple[float, ...] = ()
    confidence: float = 1.0


@dataclass(frozen=True)
class Ambiguous:
    candidates: tuple[Candidate, ...]  # best first; kind tells episode or seed
    background: tuple[float, ...] = ()
    confidence: float = 0.0
    embedded: Join | StartFromSeed | NewSeed | None = None
    """What the embedding path decides (the decision that stands until the LLM answers)."""


@dataclass(frozen=True)
class NewSeed:
    best_score: float = 0.0
    background: tuple[float, ...] = ()
    confidence: float = 1.0


Decision = Join | StartFromSeed | Ambiguous | NewSeed


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def confidence(ranked: Sequence[Candidate], threshold: float) -> float:
    """How sure the embedding decision is, in (0, 1]: the probability of the chosen option in
    a softmax over every candidate's utility and a "no match" option whose utility is the
    threshold's (``logit(threshold)``). Low when the best candidate barely beats the second,
    when a join barely clears the threshold, and when a "no" has a candidate close to it; 1
    when there is no candidate at all."""
    if not ranked:
        return 1.0
    logits = np.array([c.evidence.utility for c in ranked] + [_logit(threshold)])
    weights = np.exp(logits - logits.max())
    probs = weights / weights.sum()
    chosen = 0 if ranked[0].score >= threshold else len(ranked)
    return float(probs[chosen])


def decide(
    memory: MemoryFeatures,
    active_episodes: Iterable[EpisodeFeatures],
    seeds: Iterable[MemoryFeatures],
    context: DetectorContext,
    params: DetectorParams = DetectorParams(),
    seed_rows: SeedRows | None = None,
    *,
    seeds_eligible: bool = False,
) -> Decision:
    """Decide what to do with ``memory`` (see the module docstring); ``seed_rows`` keeps the
    seeds' vectors from one call to the next (see :class:`SeedRows`). ``seeds`` are checked
    against the active window of ``memory`` (:func:`eligible_seeds`) unless
    ``seeds_eligible`` says they were chosen within it already (the engine's seed pool,
    :meth:`tribalmemory.episodes.seeds.SeedPool.recent`: a second look at a thousand seeds
    cost ~0.1 ms a decision).

    * ``embedding``: best score >= threshold -> Join / StartFromSeed, else NewSeed;
    * ``hybrid``: as embedding, but a decision whose :func:`confidence` is below the stream's
      doubt threshold for ``params.doubt_share`` -> Ambiguous;
    * ``llm``: any candidate -> Ambiguous (top ``max_llm_candidates``), none -> NewSeed.

    Every decision carries its confidence, which the caller folds into the context with
    :func:`update_context` (that is how the doubt threshold follows the stream).
    """
    now = memory.created_at
    episodes = eligible_episodes(
        active_episodes, now, params.active_window_days, params.max_active_episodes
    )
    if seeds_eligible:
        seed_list = list(seeds)
    else:
        seed_list = eligible_seeds(seeds, now, params.active_window_days)
    if len(seed_list) > params.max_seeds:  # the most recent ones
        seed_list = sorted(seed_list, key=lambda s: s.created_at)[-params.max_seeds :]
    ranked, background = rank_candidates(
        memory, episodes, seed_list, context, params.model, seed_rows
    )
    bg = tuple(background)
    if not ranked:
        return NewSeed(0.0, bg)
    best = ranked[0]
    threshold = params.threshold
    if context.doc_count < COLD_START:
        threshold = max(threshold, COLD_START_THRESHOLD)
    sure = confidence(ranked, threshold)
    top = tuple(ranked[: params.max_llm_candidates])
    embedded: Join | StartFromSeed | NewSeed = NewSeed(best.score, bg, sure)
    if best.score >= threshold:
        if best.kind == "episode":
            embedded = Join(best.id, best.score, bg, sure)
        else:
            embedded = StartFromSeed(best.id, best.score, bg, sure)
    if params.strategy == "llm" or (
        params.strategy == "hybrid" and sure < context.doubt_threshold(params.doubt_share)
    ):
        return Ambiguous(top, bg, sure, embedded)
    return embedded
