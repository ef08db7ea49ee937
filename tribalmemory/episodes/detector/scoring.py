"""The match score: one row of :data:`FEATURES` per candidate, computed from the past only,
and the fitted join model (:mod:`..join_model`) that turns it into P(joins). Pure."""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

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
"""The join model's inputs, one row per candidate (:func:`candidate_rows`,
:func:`fill_margins_rows`):

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


def lexical_overlap(terms: Iterable[str], bag: Container[str], context: DetectorContext) -> float:
    """Rare-term coverage (0..1): the share of the IDF mass of ``terms`` (a memory's or an
    episode's) that also occurs in ``bag``, the other side's terms. Common words weigh ~0, rare
    shared terms dominate. The weights are summed in sorted order, as
    :meth:`DetectorContext.idf_weights` gives them: the same sum in every process. Sorting
    ``terms`` that come sorted (:attr:`EpisodeFeatures.sorted_terms`) is one pass.
    O(``terms``); :func:`candidate_rows` sums a memory's weights against many candidates
    inline."""
    total = 0.0
    shared = 0.0
    idf = context.idf
    for t in sorted(terms):
        w = idf(t)
        total += w
        if t in bag:
            shared += w
    return shared / total if total > 0 else 0.0


def _log1p(x: float) -> float:
    return math.log1p(max(x, 0.0))


@lru_cache(maxsize=4096)
def _author_terms(author: str) -> frozenset[str]:
    """:func:`tokenize` of an author's name (asked for every candidate of every memory)."""
    return tokenize(author)


Scored = EpisodeFeatures | MemoryFeatures
"""What a memory is scored against: an episode, or a seed (an earlier memory)."""

RawEvidence = tuple[float, float, float, float, float, float, float]
"""The fields of :class:`Evidence` before the model's utility and score."""


def candidate_rows(
    memory: MemoryFeatures,
    candidates: Sequence[Scored],
    context: DetectorContext,
    *,
    cosines: Sequence[np.ndarray | float] | None = None,
    idf: Mapping[str, float] | None = None,
    is_seed: Sequence[bool] | None = None,
    own_thread: Sequence[bool] | None = None,
) -> tuple[list[list[float]], list[RawEvidence]]:
    """The feature rows (:data:`FEATURES` order, margins and the candidate count left 0 for
    :func:`fill_margins_rows`) of "``memory`` continues each of ``candidates``", and the raw
    evidence behind each (:data:`RawEvidence`). Past only: everything comes from ``memory``,
    the candidates and the ``context`` as they are when the memory arrives.

    A :class:`MemoryFeatures` candidate is a seed; an episode is scored as a seed where
    ``is_seed`` says so. ``cosines``: per candidate, the memory against its recent members
    (a seed's may be its one cosine, a float), computed here if not given; ``idf``: the
    memory's term weights; ``own_thread``: per candidate, whether it is where the memory's
    author wrote last (:func:`.candidates.own_thread`).

    What depends on the memory alone is computed once; per candidate, plain Python on the
    cosines as a list, and only the two numpy calls whose rounding the model was fitted with
    (the float32 sum of the cosines, the centroid's cosine): in the request path each numpy
    call costs microseconds, more than the arithmetic of a few dozen floats."""
    seeds = [isinstance(c, MemoryFeatures) for c in candidates] if is_seed is None else is_seed
    own = [False] * len(candidates) if own_thread is None else own_thread
    vector = memory.vector
    if cosines is None:
        cosines = [
            (c.vector[None, :] if isinstance(c, MemoryFeatures) else c.vectors) @ vector
            for c in candidates
        ]
    if idf is None:
        idf = context.idf_weights(memory.terms)
    weights = list(idf.items())
    total = 0.0
    for _, weight in weights:
        total += weight
    marked = [(t, w) for t, w in weights if t.startswith(IDENTIFIER_MARK)]
    marked_total = 0.0
    for _, weight in marked:
        marked_total += weight
    mean, std = context.cos_mean, context.cos_std
    edge = mean + std
    # numpy compares an array of float32 with a Python float as float32: so do the lists
    edge32 = float(np.float32(edge))
    now, author, pace = memory.created_at, memory.source_instance, context.pace
    tags, terms = memory.tags, memory.terms
    author_base = context.author_share(author)
    words = _log1p(memory.words or 0)
    says_little = 1.0 if memory.says_little else 0.0
    log_pace, seen = math.log(pace), _log1p(context.doc_count)

    rows: list[list[float]] = []
    raw: list[RawEvidence] = []
    bag: Container[str]
    tag_bag: Container[str]
    for c, cos, seed, own_c in zip(candidates, cosines, seeds, own, strict=True):
        values = cos.tolist() if isinstance(cos, np.ndarray) else [cos]
        s_last = values[-1]
        if len(values) == 1:  # a seed or a one-member episode: compared as a float64
            s_max = s_mean = s_last
            coverage = 1.0 if s_last >= edge else 0.0
        else:
            assert isinstance(cos, np.ndarray)
            s_max, s_mean = max(values), float(cos.sum()) / len(values)
            coverage = sum(1 for x in values if x >= edge32) / len(values)
        if isinstance(c, MemoryFeatures):
            if not seed:
                raise ValueError(f"candidate {c.id} is a memory: only a seed can be one")
            bag, tag_bag, first, last, size = c.terms, c.tags, c.created_at, c.created_at, 1
            s_cent = s_max
        else:
            bag, tag_bag = c.term_counts, c.tag_counts
            first, last, size = c.first_activity, c.last_activity, max(c.memory_count, 1)
            s_cent = s_max if seed else float(c.centroid @ vector)
        z_max, z_cent, z_last = (s_max - mean) / std, (s_cent - mean) / std, (s_last - mean) / std
        z_mean = (s_mean - mean) / std
        shared = 0.0
        for term, weight in weights:
            if term in bag:
                shared += weight
        ident = 0.0
        for term, weight in marked:
            if term in bag:
                ident += weight
        lex = shared / total if total > 0 else 0.0
        since_last = (now - last).total_seconds()
        gap = max(0.0, since_last) / pace
        # A seed is scored without its author: two memories that share only who wrote them
        # (an agent's note on billing, its note on lunch) never start a thread; authorship
        # only extends one (the short replies rule, docs/detection.md).
        if seed or isinstance(c, MemoryFeatures):
            share, author_last, names_author = 0.0, False, False
        else:
            share = c.source_counts.get(author, 0) / size
            author_last = c.source_last.get(author) == last
            names_author = any(
                not _author_terms(a).isdisjoint(terms) for a in c.source_counts if a != author
            )
        rows.append(
            [
                z_max,
                z_cent,
                z_last,
                lex,
                ident / marked_total if marked_total > 0 else 0.0,
                1.0 if ident > 0 else 0.0,
                1.0 if any(t in tag_bag for t in tags) else 0.0,
                _log1p(gap),
                _log1p(max(0.0, (now - first).total_seconds()) / pace),
                math.log(size),
                1.0 if seed else 0.0,
                share,
                share - author_base,
                1.0 if author_last else 0.0,
                author_base,
                z_cent * author_base,
                1.0 if names_author else 0.0,
                1.0 if own_c else 0.0,
                says_little,
                words,
                z_cent * words,
                log_pace,
                0.0,  # z_margin, filled by fill_margins_rows
                0.0,  # lexical_margin, filled by fill_margins_rows
                0.0,  # candidates, filled by fill_margins_rows
                s_max,
                seen,
                coverage,
                z_mean,
            ]
        )
        similarity = (s_max + 0.5 * s_cent + 0.2 * s_last) / 1.7
        hours = max(0.0, since_last / 3600.0)
        raw.append((s_max, s_cent, similarity, z_max, lex, hours, gap))
    return rows, raw


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
    """The feature row of "``memory`` continues ``episode``" and the evidence behind it (the
    model's utility and score left 0): :func:`candidate_rows` of the one candidate. ``cos``:
    the memory against ``episode.vectors``; ``idf``: the memory's term weights."""
    rows, raw = candidate_rows(
        memory,
        [episode],
        context,
        cosines=None if cos is None else [cos],
        idf=idf,
        is_seed=[is_seed],
        own_thread=[own_thread],
    )
    return rows[0], Evidence(*raw[0], 0.0, 0.0)


def margins(values: Sequence[float]) -> list[float]:
    """Each value minus the best of the *others* (minus 0 when it is alone): the best is the
    first of the highest, NaN never best (as a stable sort of the values, highest first)."""
    if len(values) == 1:
        return [values[0]]
    best = second = -1
    for i, v in enumerate(values):
        if v != v:  # NaN
            continue
        if best < 0 or v > values[best]:
            best, second = i, best
        elif second < 0 or v > values[second]:
            second = i
    if best < 0:  # all NaN: the first, then the second
        best, second = 0, 1
    elif second < 0:  # one value is not NaN: the next best is the first NaN
        second = next(i for i, v in enumerate(values) if v != v)
    top, runner_up = values[best], values[second]
    return [v - (runner_up if i == best else top) for i, v in enumerate(values)]


def fill_margins_rows(rows: list[list[float]]) -> list[list[float]]:
    """Fill the columns that compare a candidate with the others, **in place** (rows as lists,
    before they become an array): its z-similarity and lexical coverage minus the best of the
    *other* candidates' (:func:`margins`), and how many candidates there are (log)."""
    count = math.log1p(len(rows))
    for column, margin in ((_Z_MAX, _Z_MARGIN), (_LEXICAL, _LEXICAL_MARGIN)):
        for row, value in zip(rows, margins([row[column] for row in rows]), strict=True):
            row[margin] = value
    for row in rows:
        row[_CANDIDATES] = count
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
    u = float(model.logits(np.asarray(fill_margins_rows([row]), dtype=np.float64))[0])
    return replace(ev, utility=u, score=sigmoid(u))
