"""Embedding-path episode detector: pure functions, no I/O.

A memory arrives (in time order); :func:`decide` compares it with the *active* episodes and with
the *seeds* (earlier memories that joined nothing) and returns one :data:`Decision`:

* :class:`Join`            -- add the memory to an active episode;
* :class:`StartFromSeed`   -- open a new episode made of a seed and this memory;
* :class:`Ambiguous`       -- (strategy ``hybrid``/``llm`` only) ask the LLM classifier;
* :class:`NewSeed`         -- no match: the memory becomes a seed itself.

Everything the detector needs is passed in: :class:`MemoryFeatures`, :class:`EpisodeFeatures`
(maintained incrementally with :func:`add_member`, or rebuilt from stored vectors with
:func:`build_episode`), a :class:`DetectorContext` of background statistics (updated with
:func:`update_context`, JSON-serialisable) and :class:`DetectorParams` (from ``EpisodesConfig``).

The match score (:attr:`Evidence.score`) is P(the memory joins the candidate) from the fitted
join model (:mod:`..join_model`, ``docs/detection.md``): each candidate gets a row of
:data:`FEATURES` computed from the past only -- similarity as z-scores against the stream's own
background of cosines, shared rare terms and identifiers, the gap in the stream's own pace,
authorship against how much of the stream its author writes, tags, the candidate's size and
age, the margins to the other candidates -- and the model, fitted on a wide labelled corpus by
``benchmarks/fit_detector.py``, turns it into a probability. Each decision also has a
:func:`confidence`; in ``hybrid`` the least confident share of decisions goes to the LLM.

The parts, one job each:

- :mod:`.features`: a memory's terms, names and size; memory and episode features;
- :mod:`.stream`: the stream's background statistics (:class:`DetectorContext`);
- :mod:`.scoring`: the feature rows and the join model's probability;
- :mod:`.candidates`: the eligible episodes and seeds, ranked;
- :mod:`.decision`: the decision and its confidence, cold start;
- :mod:`.chaining`: whether a new episode continues a closed one;
- :mod:`.merging`: the candidates of a merge check.
"""

from .candidates import (
    MAX_SEEDS,
    Candidate,
    SeedRows,
    eligible_episodes,
    eligible_seeds,
    own_thread,
    rank_candidates,
)
from .chaining import chain_score
from .decision import (
    COLD_START,
    COLD_START_THRESHOLD,
    Ambiguous,
    Decision,
    DetectorParams,
    Join,
    NewSeed,
    StartFromSeed,
    confidence,
    decide,
)
from .features import (
    EpisodeFeatures,
    MemoryFeatures,
    add_member,
    build_episode,
    content_size,
    identifiers,
    new_episode,
    proper_names,
    representatives,
    terms_of,
    tokenize,
)
from .merging import (
    MERGE_CANDIDATES,
    MERGE_CHECK_SIZES,
    confirm_candidates,
    merge_affinity,
    merge_candidates,
)
from .scoring import (
    DEFAULT_MODEL,
    FEATURES,
    Evidence,
    candidate_row,
    candidate_rows,
    evidence,
    lexical_overlap,
)
from .stream import DetectorContext, forget_terms, update_context

__all__ = [
    "COLD_START",
    "COLD_START_THRESHOLD",
    "DEFAULT_MODEL",
    "FEATURES",
    "MAX_SEEDS",
    "MERGE_CANDIDATES",
    "MERGE_CHECK_SIZES",
    "Ambiguous",
    "Candidate",
    "Decision",
    "DetectorContext",
    "DetectorParams",
    "EpisodeFeatures",
    "Evidence",
    "Join",
    "MemoryFeatures",
    "NewSeed",
    "SeedRows",
    "StartFromSeed",
    "add_member",
    "build_episode",
    "candidate_row",
    "candidate_rows",
    "chain_score",
    "confidence",
    "confirm_candidates",
    "content_size",
    "decide",
    "eligible_episodes",
    "eligible_seeds",
    "evidence",
    "forget_terms",
    "identifiers",
    "lexical_overlap",
    "merge_affinity",
    "merge_candidates",
    "new_episode",
    "own_thread",
    "proper_names",
    "rank_candidates",
    "representatives",
    "terms_of",
    "tokenize",
    "update_context",
]
