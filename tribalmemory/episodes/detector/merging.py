"""Merge candidates: the active episodes most like one the detector grew, which a merge
check shows the LLM (:func:`merge_candidates`, :func:`confirm_candidates`). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .features import EpisodeFeatures
from .scoring import lexical_overlap
from .stream import DetectorContext

MERGE_CHECK_SIZES = (4, 8, 16, 32)
"""An episode is checked for a twin when the detector grows it to one of these sizes: by 4
members it says what it is about, and each doubling gives a twin that grew since another look.
Chosen leave-one-stream-out with a perfect classifier (``detector_sim.MERGE_GRID``: first check
at 4 or 8, then 0, 1 or 3 doublings, 2 to 5 candidates; docs/detection.md): every fold and the
fit on all three start at 4 and take three doublings."""
MERGE_CANDIDATES = 4
"""Candidates shown to the LLM per check: two folds of three, and the fit on all three, pick 4
(the third ties 3 and 4 on its two streams and takes the first)."""


def merge_affinity(
    episode: EpisodeFeatures, other: EpisodeFeatures, context: DetectorContext
) -> float:
    """How alike two episodes are, to rank merge candidates: centroid cosine plus the share of
    the episode's rare-term mass the other one shares (both 0..1). Only a ranking: the LLM
    decides whether they are one thread."""
    cosine = float(episode.centroid @ other.centroid)
    return cosine + lexical_overlap(episode.sorted_terms, other.term_counts, context)


def merge_candidates(
    episode: EpisodeFeatures,
    others: Iterable[EpisodeFeatures],
    context: DetectorContext,
    k: int = MERGE_CANDIDATES,
) -> list[EpisodeFeatures]:
    """The ``k`` episodes most like ``episode`` (:func:`merge_affinity`), best first."""
    pool = [o for o in others if o.id != episode.id]
    pool.sort(key=lambda o: merge_affinity(episode, o, context), reverse=True)
    return pool[:k]


def confirm_candidates(
    episode: EpisodeFeatures,
    others: Sequence[EpisodeFeatures],
    twin: str,
    context: DetectorContext,
    k: int = MERGE_CANDIDATES,
) -> list[EpisodeFeatures]:
    """A confirming check's candidates: as :func:`merge_candidates`, with ``twin`` (the episode
    an earlier answer said this one is) among them in place of the least like one. Asked among
    others, not alone, the second answer is a check of its own: a "yes" to a single named
    episode is the answer a wrong one most often is."""
    ranked = merge_candidates(episode, others, context, k=len(others))
    rank = next((i for i, o in enumerate(ranked) if o.id == twin), None)
    if rank is None:  # merged, closed or edited meanwhile: nothing to confirm
        return []
    return ranked[:k] if rank < k else [*ranked[: max(k - 1, 0)], ranked[rank]]
