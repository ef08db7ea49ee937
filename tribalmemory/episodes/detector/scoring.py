"""The match score: one row of :data:`FEATURES` per candidate, computed from the past only,
and the fitted join model (:mod:`..join_model`) that turns it into P(joins). Pure."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from ..join_model import JoinModel, check_features, load_join_model
from .features import IDENTIFIER_MARK, EpisodeFeatures, MemoryFeatures, tokenize
from .stream import DetectorContext

FEATURES = (
    "z_max",
    "z_centroid",
    "z_last",
    "lexical",
    "identifiers",
    "shares_identifier",
    "shares_tag",
    "gap_paces",
    "age_paces",
    "size",
    "seed",
    "author_share",
    "author_lift",
    "author_last",
    "author_base",
    "z_centroid_by_author_base",
    "names_author",
    "own_thread",
    "says_little",
    "words",
    "z_centroid_by_words",
    "pace",
    "z_margin",
    "lexical_margin",
    "candidates",
    "cosine",
    "seen",
    "coverage",
    "z_mean",
)
"""The join model's inputs, one row per candidate (:func:`candidate_row`, :func:`fill_margins`):

* ``z_max`` / ``z_centroid`` / ``z_last``: cosine to the nearest of the candidate's last 32
  members, to its centroid and to its last member, as z-scores against the cosines the
  detector has seen in this stream (the model's and the domain's scale removed);
* ``lexical``: share of the memory's rare-term mass (online IDF) found in the candidate's terms;
  ``identifiers`` the same over identifiers alone (ticket and PR numbers, paths, code names:
  :func:`identifiers`), ``shares_identifier`` whether any is shared; ``shares_tag``;
* ``gap_paces``: ln(1 + time since the candidate's last memory in the stream's own pace),
  ``age_paces`` since its first memory (in hours the same gap means one thing in a chat and
  another in a team's notes, so no feature reads it); ``size``: ln members;
  ``seed``: the candidate is a single earlier memory;
* ``author_share``: share of its members the memory's author wrote, ``author_lift`` the same
  minus ``author_base``, the share of the stream's recent memories that author wrote (an
  author who writes everything tells nothing), ``z_centroid_by_author_base`` their product
  with ``z_centroid`` (similarity must decide where authorship cannot),
  ``author_last``: the author wrote its last member, ``names_author``: the memory names
  another of its authors;
  ``own_thread``: the memory says little and this is where its author wrote last,
  ``says_little``; ``words``: ln(1 + the memory's words), ``z_centroid_by_words`` its product
  with ``z_centroid`` (a long text's similarity says more); ``pace``: ln(the stream's pace in
  seconds), which tells a chat from a team's notes;
* ``z_margin`` / ``lexical_margin``: the candidate's ``z_max`` / ``lexical`` minus the best
  other candidate's; ``candidates``: ln(1 + number of candidates);
* ``cosine``: the raw cosine to the nearest member (near-duplicates are one thread whatever
  the stream's background); ``seen``: ln(1 + memories the stream has shown), which tells a
  cold start, whose statistics are still priors, from a stream in its stride;
* ``coverage``: share of the candidate's last 32 members the memory is close to (cosine at
  least one standard deviation above the stream's background); ``z_mean``: the mean cosine to
  them, as a z-score (a thread is a run of related memories, not one near neighbour)."""
_Z_MAX, _LEXICAL = FEATURES.index("z_max"), FEATURES.index("lexical")
_Z_MARGIN, _LEXICAL_MARGIN = FEATURES.index("z_margin"), FEATURES.index("lexical_margin")
_CANDIDATES = FEATURES.index("candidates")

DEFAULT_MODEL = load_join_model()
check_features(DEFAULT_MODEL, FEATURES)


@dataclass(frozen=True)
class Evidence:
    """The components behind one score (for logs, the LLM prompt and tests)."""

    max_cosine: float
    centroid_cosine: float
    similarity: float
    z: float
    lexical: float
    hours_since_last: float
    paces_since_last: float
    utility: float
    score: float


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def lexical_overlap(
    terms: Iterable[str], bag: Mapping[str, int] | Iterable[str], context: DetectorContext
) -> float:
    """Rare-term coverage (0..1): the share of the memory's IDF mass (its content terms) that
    also occurs in the candidate's term bag. Common words weigh ~0, rare shared terms dominate.
    O(terms of the memory)."""
    return weighted_overlap(context.idf_weights(terms), bag)


def weighted_overlap(weights: Mapping[str, float], bag: Mapping[str, int] | Iterable[str]) -> float:
    """:func:`lexical_overlap` with the memory's term weights (IDF) computed once, for
    scoring one memory against many candidates."""
    total = 0.0
    shared = 0.0
    for t, w in weights.items():
        total += w
        if t in bag:
            shared += w
    return shared / total if total > 0 else 0.0


def hours_between(earlier: datetime, later: datetime) -> float:
    return max(0.0, (later - earlier).total_seconds() / 3600.0)


def _log1p(x: float) -> float:
    return math.log1p(max(x, 0.0))


def candidate_row(
    memory: MemoryFeatures,
    episode: EpisodeFeatures,
    context: DetectorContext,
    *,
    cos: np.ndarray | None = None,
    idf: Mapping[str, float] | None = None,
    is_seed: bool = False,
    own_thread: bool = False,
) -> tuple[list[float], Evidence]:
    """The feature row (:data:`FEATURES` order, margins and the candidate count left 0 for
    :func:`rank_candidates` to fill) of "``memory`` continues ``episode``", and the raw
    evidence behind it. Past only: everything comes from ``memory``, ``episode`` and the
    ``context`` as they are when the memory arrives. A caller scoring one memory against many
    candidates may pass what does not depend on the candidate: ``cos`` (the memory against
    ``episode.vectors``) and ``idf`` (the memory's term weights)."""
    if cos is None:
        cos = episode.vectors @ memory.vector
    if idf is None:
        idf = context.idf_weights(memory.terms)
    mean, std = context.cos_mean, context.cos_std
    s_last = float(cos[-1])
    if len(cos) == 1:  # a seed or a one-member episode: no array work for one cosine
        s_max = s_mean = s_last
        coverage = 1.0 if s_last >= mean + std else 0.0
    else:
        s_max, s_mean = float(cos.max()), float(cos.sum()) / len(cos)
        coverage = np.count_nonzero(cos >= mean + std) / len(cos)
    s_cent = s_max if is_seed else float(episode.centroid @ memory.vector)
    z_max, z_cent, z_last = (s_max - mean) / std, (s_cent - mean) / std, (s_last - mean) / std
    z_mean = (s_mean - mean) / std
    bag = episode.term_counts
    lex = weighted_overlap(idf, bag)
    ident_total = ident_shared = 0.0
    for term, weight in idf.items():
        if term.startswith(IDENTIFIER_MARK):
            ident_total += weight
            if term in bag:
                ident_shared += weight
    now = memory.created_at
    gap = context.paces(episode.last_activity, now)
    hours = hours_between(episode.last_activity, now)
    author = memory.source_instance
    size = max(episode.memory_count, 1)
    # A seed is scored without its author: two memories that share only who wrote them (an
    # agent's note on billing, its note on lunch) never start a thread; authorship only extends
    # one (the short replies rule, docs/detection.md).
    author_last = not is_seed and episode.source_last.get(author) == episode.last_activity
    author_share = 0.0 if is_seed else episode.source_counts.get(author, 0) / size
    author_base = context.author_share(author)
    words = _log1p(memory.words or 0)
    others = [] if is_seed else [a for a in episode.source_counts if a != author]
    names_author = any(tokenize(a) & memory.terms for a in others) if others else False
    row = [
        z_max,
        z_cent,
        z_last,
        lex,
        ident_shared / ident_total if ident_total > 0 else 0.0,
        1.0 if ident_shared > 0 else 0.0,
        1.0 if any(t in episode.tag_counts for t in memory.tags) else 0.0,
        _log1p(gap),
        _log1p(context.paces(episode.first_activity, now)),
        math.log(size),
        1.0 if is_seed else 0.0,
        author_share,
        author_share - author_base,
        1.0 if author_last else 0.0,
        author_base,
        z_cent * author_base,
        1.0 if names_author else 0.0,
        1.0 if own_thread else 0.0,
        1.0 if memory.says_little else 0.0,
        words,
        z_cent * words,
        math.log(context.pace),
        0.0,  # z_margin, filled by rank_candidates
        0.0,  # lexical_margin, filled by rank_candidates
        0.0,  # candidates, filled by rank_candidates
        s_max,
        _log1p(context.doc_count),
        coverage,
        z_mean,
    ]
    sim = (s_max + 0.5 * s_cent + 0.2 * s_last) / 1.7
    return row, Evidence(s_max, s_cent, sim, z_max, lex, hours, gap, 0.0, 0.0)


def fill_margins(rows: np.ndarray) -> np.ndarray:
    """Fill the columns that compare a candidate with the others, **in place**: its z-similarity
    and lexical coverage minus the best of the *other* candidates' (minus 0, the background
    and no overlap, when it is alone), and how many candidates there are (log)."""
    n = rows.shape[0]
    rows[:, _CANDIDATES] = math.log1p(n)
    for column, margin in ((_Z_MAX, _Z_MARGIN), (_LEXICAL, _LEXICAL_MARGIN)):
        values = rows[:, column]
        if n == 1:
            rows[:, margin] = values
            continue
        order = np.argsort(-values, kind="stable")
        best, second = values[order[0]], values[order[1]]
        others_best = np.full(n, best)
        others_best[order[0]] = second
        rows[:, margin] = values - others_best
    return rows


def evidence(
    memory: MemoryFeatures,
    episode: EpisodeFeatures,
    context: DetectorContext,
    model: JoinModel = DEFAULT_MODEL,
    is_seed: bool = False,
    *,
    cos: np.ndarray | None = None,
    idf: Mapping[str, float] | None = None,
    own_thread: bool = False,
) -> Evidence:
    """All evidence for "``memory`` continues ``episode``" with the model's probability,
    ``episode`` scored as the only candidate (:func:`rank_candidates` scores candidates
    against each other)."""
    row, ev = candidate_row(
        memory, episode, context, cos=cos, idf=idf, is_seed=is_seed, own_thread=own_thread
    )
    u = float(model.logits(fill_margins(np.asarray([row], dtype=np.float64)))[0])
    return replace(ev, utility=u, score=sigmoid(u))
