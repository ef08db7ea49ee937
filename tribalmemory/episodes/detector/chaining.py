"""Chaining: how likely a new episode continues a closed one (:func:`chain_score`). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from .features import EpisodeFeatures
from .scoring import lexical_overlap, sigmoid
from .stream import DetectorContext


@dataclass(frozen=True)
class ChainModel:
    """``u = z(centroid cosine) + lexical_weight * lexical``, ``score = sigmoid(u - midpoint)``."""

    lexical_weight: float = 2.0
    midpoint: float = 2.0


DEFAULT_CHAIN_MODEL = ChainModel()


def chain_score(
    new_episode: EpisodeFeatures,
    closed_episode: EpisodeFeatures,
    context: DetectorContext,
    model: ChainModel = DEFAULT_CHAIN_MODEL,
) -> float:
    """Calibrated [0, 1] score that ``new_episode`` continues ``closed_episode``; same
    z-scale as :func:`score`. The time rule (closed at most ``chain_window_hours`` before the
    new episode started) is applied by the caller, not here."""
    sim = float(new_episode.centroid @ closed_episode.centroid)
    z = (sim - context.cos_mean) / context.cos_std
    bag_terms = frozenset(new_episode.term_counts)
    lex = lexical_overlap(bag_terms, closed_episode.term_counts, context)
    return sigmoid(z + model.lexical_weight * lex - model.midpoint)
