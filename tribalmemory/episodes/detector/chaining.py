"""Chaining: how likely a new episode continues a closed one (:func:`chain_score`). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from .features import EpisodeFeatures
from .scoring import lexical_overlap, sigmoid
from .stream import DetectorContext


@dataclass(frozen=True)
class ChainModel:
    """``u = z(cross cosine) + lexical_weight * lexical + near_weight * max(0, cosine -
    near_cosine)``, ``score = sigmoid(u - midpoint)``.

    The cross cosine is the mean cosine between a member of one episode and a member of the
    other, the scale of the stream's background (cosines between two memories), which the z
    is taken against. The cosine of the two centroids is not: a mean of a few memories keeps
    what they share and loses what they do not, so two centroids of unrelated small talk are
    as close as 0.34 on average where two of its memories are 0.21, and three sittings of
    different conversations chained at z 3 (docs/benchmarks.md, chain links).

    The last term, while the stream is young (fewer than ``young`` memories), lets two
    episodes whose centroids are nearly the same text chain whatever the stream's background:
    a young stream's background is made of its own few threads, so wide that a continuation in
    the same words (centroid cosine 0.73) scored 0.83 (issue 40, item 13). With the bundled
    model, two memories of one thread are rarely as close as 0.65. Later in a stream the
    background is the stream's own, and the z-score alone decides."""

    lexical_weight: float = 2.0
    midpoint: float = 2.0
    near_cosine: float = 0.65
    near_weight: float = 20.0
    young: int = 50


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
    cross = float(new_episode.vector_sum @ closed_episode.vector_sum) / (
        new_episode.memory_count * closed_episode.memory_count
    )
    z = (cross - context.cos_mean) / context.cos_std
    lex = lexical_overlap(new_episode.sorted_terms, closed_episode.term_counts, context)
    near = 0.0
    if context.doc_count < model.young:
        near = model.near_weight * max(0.0, sim - model.near_cosine)
    return sigmoid(z + model.lexical_weight * lex + near - model.midpoint)
