"""The candidates' feature rows computed all at once (:func:`candidate_rows`, what
:func:`rank_candidates` uses) are, bit for bit, the rows of the per-candidate code the join
model was fitted with: a float reordering there would change decisions on ties."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pytest
from detector_fixtures import T0, basis, mem

from tribalmemory.episodes.detector import (
    DEFAULT_MODEL,
    FEATURES,
    DetectorContext,
    EpisodeFeatures,
    MemoryFeatures,
    SeedRows,
    build_episode,
    candidate_row,
    own_thread,
    rank_candidates,
    terms_of,
    update_context,
)
from tribalmemory.episodes.detector.features import IDENTIFIER_MARK, tokenize
from tribalmemory.episodes.detector.scoring import candidate_rows, fill_margins_rows

DIM = 48


def reference_row(
    memory: MemoryFeatures,
    episode: EpisodeFeatures,
    context: DetectorContext,
    *,
    cos: np.ndarray,
    idf: Mapping[str, float],
    is_seed: bool = False,
    own_thread: bool = False,
) -> tuple[list[float], tuple[float, ...]]:
    """``candidate_row`` as it was before the rows were computed all at once (the code the
    shipped join model was fitted with), a seed given as a one-member episode; returns the
    row and (max cosine, centroid cosine, similarity, z, lexical, hours, paces)."""
    mean, std = context.cos_mean, context.cos_std
    s_last = float(cos[-1])
    if len(cos) == 1:
        s_max = s_mean = s_last
        coverage = 1.0 if s_last >= mean + std else 0.0
    else:
        s_max, s_mean = float(cos.max()), float(cos.sum()) / len(cos)
        coverage = np.count_nonzero(cos >= mean + std) / len(cos)
    s_cent = s_max if is_seed else float(episode.centroid @ memory.vector)
    z_max, z_cent, z_last = (s_max - mean) / std, (s_cent - mean) / std, (s_last - mean) / std
    z_mean = (s_mean - mean) / std
    bag = episode.term_counts
    total = shared = 0.0
    for term, weight in idf.items():
        total += weight
        if term in bag:
            shared += weight
    lex = shared / total if total > 0 else 0.0
    ident_total = ident_shared = 0.0
    for term, weight in idf.items():
        if term.startswith(IDENTIFIER_MARK):
            ident_total += weight
            if term in bag:
                ident_shared += weight
    now = memory.created_at
    gap = context.paces(episode.last_activity, now)
    hours = max(0.0, (now - episode.last_activity).total_seconds() / 3600.0)
    author = memory.source_instance
    size = max(episode.memory_count, 1)
    author_last = not is_seed and episode.source_last.get(author) == episode.last_activity
    author_share = 0.0 if is_seed else episode.source_counts.get(author, 0) / size
    author_base = context.author_share(author)
    words = math.log1p(max(memory.words or 0, 0))
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
        math.log1p(max(gap, 0.0)),
        math.log1p(max(context.paces(episode.first_activity, now), 0.0)),
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
        0.0,
        0.0,
        0.0,
        s_max,
        math.log1p(max(context.doc_count, 0)),
        coverage,
        z_mean,
    ]
    sim = (s_max + 0.5 * s_cent + 0.2 * s_last) / 1.7
    return row, (s_max, s_cent, sim, z_max, lex, hours, gap)


def reference_margins(rows: np.ndarray) -> np.ndarray:
    """``fill_margins`` as it was before (numpy, a stable sort)."""
    n = rows.shape[0]
    at = {name: i for i, name in enumerate(FEATURES)}
    rows[:, at["candidates"]] = math.log1p(n)
    for name, margin_name in (("z_max", "z_margin"), ("lexical", "lexical_margin")):
        column, margin = at[name], at[margin_name]
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


AUTHORS = ["alice", "bob", "carol-bot", "dave"]
WORDS = [
    "replica", "lag", "wal", "receiver", "deploy", "billing", "invoice", "refund", "token",
    "rotate", "carol", "bob", "cache", "eviction", "PAY-1234", "src/ledger/recon.py", "#4521",
    "refreshToken", "lunch", "friday",
]  # fmt: skip


def _memory(rng: np.random.Generator, i: int, hours: float, topic: np.ndarray) -> MemoryFeatures:
    """A memory near ``topic`` (some far from it), of a few words to a dozen, with names,
    identifiers and tags drawn at random; some say little, some have no word count."""
    vector = topic + rng.normal(scale=rng.choice([0.3, 1.0, 3.0]), size=DIM)
    text = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 12))))
    author = str(rng.choice(AUTHORS))
    tags = frozenset(rng.choice(["db", "pay", "ops"], size=int(rng.integers(0, 2))).tolist())
    words = None if i % 11 == 0 else len(text.split())
    return mem(f"m{i}", vector, hours, tags, author, terms=terms_of(text, author), words=words)


def _stream(seed: int, episodes: int = 12, seeds: int = 40):
    """Episodes of 1 to 40 members (at most 32 recent vectors: sums of every length), seeds,
    a context that has seen them, and a new memory."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(episodes + 1, DIM))
    context = DetectorContext()
    built, i, hours = [], 0, 0.0
    for e in range(episodes):
        members = []
        for _ in range(int(rng.choice([1, 2, 3, 7, 8, 9, 16, 31, 32, 33, 40]))):
            hours += float(rng.exponential(0.5))
            members.append(_memory(rng, i, hours, topics[e]))
            update_context(context, members[-1], rng.normal(0.2, 0.15, size=20))
            i += 1
        built.append(build_episode(f"e{e}", members))
    singles = []
    for _ in range(seeds):
        hours += float(rng.exponential(0.5))
        singles.append(_memory(rng, i, hours, topics[int(rng.integers(0, episodes + 1))]))
        update_context(context, singles[-1], rng.normal(0.2, 0.15, size=5))
        i += 1
    new = _memory(rng, i, hours + 1.0, topics[0])
    return new, built, singles, context


@pytest.mark.parametrize("seed", range(8))
def test_rank_candidates_rows_are_the_per_candidate_rows_bit_for_bit(seed):
    memory, episodes, seeds, context = _stream(seed)
    # a memory of two words: the own_thread feature is on for one episode
    memory = replace(memory, words=2 if seed % 2 else 12)
    out: list[np.ndarray] = []
    ranked, _ = rank_candidates(memory, episodes, seeds, context, rows_out=out)
    by_id = {e.id: e for e in episodes} | {s.id: s for s in seeds}
    own = own_thread(memory, episodes)
    assert (own is not None) == bool(seed % 2)
    idf = context.idf_weights(memory.terms)
    # the seeds' cosines come from one product, as rank_candidates always took them
    seed_cos = np.stack([s.vector for s in seeds]) @ memory.vector
    at = {s.id: j for j, s in enumerate(seeds)}
    expected, evidence = [], []
    for c in ranked:
        found = by_id[c.id]
        if c.kind == "seed":
            assert isinstance(found, MemoryFeatures)
            found = build_episode(found.id, [found])
            cos = seed_cos[at[c.id] : at[c.id] + 1]
        else:
            assert isinstance(found, EpisodeFeatures)
            cos = found.vectors @ memory.vector
        row, ev = reference_row(
            memory,
            found,
            context,
            cos=cos,
            idf=idf,
            is_seed=c.kind == "seed",
            own_thread=c.kind == "episode" and c.id == own,
        )
        expected.append(row)
        evidence.append(ev)
    reference = reference_margins(np.asarray(expected, dtype=np.float64))
    assert len(ranked) == len(episodes) + 32  # the seed shortlist
    assert np.array_equal(out[0], reference)  # bit for bit, not approximately
    logits = DEFAULT_MODEL.logits(reference)
    assert [c.evidence.utility for c in ranked] == logits.tolist()
    got = [
        (e.max_cosine, e.centroid_cosine, e.similarity, e.z, e.lexical)
        + (e.hours_since_last, e.paces_since_last)
        for e in (c.evidence for c in ranked)
    ]
    assert got == evidence


def test_rows_at_once_are_the_rows_one_by_one():
    """Every candidate's row is the same whatever else is scored with it: alone
    (:func:`candidate_row`), all episodes and seeds together, an episode scored as a seed."""
    memory, episodes, seeds, context = _stream(42, episodes=10, seeds=10)
    candidates = [*episodes, *seeds]
    together, raw = candidate_rows(memory, candidates, context)
    for i, c in enumerate(candidates):
        single = c if isinstance(c, EpisodeFeatures) else build_episode(c.id, [c])
        row, ev = candidate_row(memory, single, context, is_seed=isinstance(c, MemoryFeatures))
        assert row == together[i]
        assert (ev.max_cosine, ev.z, ev.hours_since_last) == (raw[i][0], raw[i][3], raw[i][5])
    as_seed, _ = candidate_row(memory, episodes[3], context, is_seed=True)
    expected, _ = reference_row(
        memory,
        episodes[3],
        context,
        cos=episodes[3].vectors @ memory.vector,
        idf=context.idf_weights(memory.terms),
        is_seed=True,
    )
    assert as_seed == expected


def test_seed_rows_give_the_same_ranking_as_stacked_seeds():
    """The engine's kept seed matrix (:class:`SeedRows`) and a stack made anew give the same
    candidates and scores."""
    memory, episodes, seeds, context = _stream(7, episodes=4, seeds=60)
    plain, _ = rank_candidates(memory, episodes, seeds, context)
    kept, _ = rank_candidates(memory, episodes, seeds, context, seed_rows=SeedRows())
    assert [(c.id, c.score) for c in plain] == [(c.id, c.score) for c in kept]


def test_a_memory_is_no_episode_candidate():
    memory, episodes, seeds, context = _stream(3, episodes=2, seeds=2)
    with pytest.raises(ValueError, match="only a seed"):
        candidate_rows(memory, [seeds[0]], context, is_seed=[False])


def test_coverage_compares_as_the_model_was_fitted():
    """A cosine just under the stream's edge (mean + std) as a float64 but equal to it as a
    float32: counted near among several cosines (numpy compares them as float32), not when it
    is a candidate's only one (compared as a Python float). Where the two differ the rows
    must still be the fitted code's."""
    context = DetectorContext(cos_count=1.0, cos_mean=0.5, cos_m2=0.04)
    edge = context.cos_mean + context.cos_std
    c = np.float32(edge)
    assert float(c) < edge  # the fixture: float32 rounds this edge down
    memory = mem("m", basis(0, DIM), words=9)
    vectors = np.zeros((2, DIM), dtype=np.float32)
    vectors[:, 0] = c  # memory . member == c exactly

    def episode(n: int) -> EpisodeFeatures:
        return EpisodeFeatures(
            f"e{n}", vectors[:n], vectors[:n].sum(axis=0), {}, {}, {"a": n}, T0, T0, n
        )

    rows, _ = candidate_rows(memory, [episode(2), episode(1)], context)
    coverage = [row[FEATURES.index("coverage")] for row in rows]
    assert coverage == [1.0, 0.0]
    for i, n in enumerate((2, 1)):
        cand = episode(n)
        expected, _ = reference_row(
            memory, cand, context, cos=cand.vectors @ memory.vector, idf={}, own_thread=False
        )
        assert rows[i] == expected


@pytest.mark.parametrize(
    "z",
    [
        [0.7],
        [0.2, 0.9],
        [0.9, 0.9, 0.1],  # a tie for the best: the first is best, the second its runner-up
        [0.1, 0.5, 0.5, -0.0, 0.0],
        [-1.0, float("nan"), 2.0, 2.0],
        [float("nan"), 0.3],
        [float("nan"), float("nan")],
        [-np.inf, -np.inf, 1.0],
    ],
)
def test_margins_are_the_stable_sorts(z):
    """The margins computed in Python are numpy's stable sort of the values, ties and NaN
    included."""
    rng = np.random.default_rng(len(z))
    rows = rng.normal(size=(len(z), len(FEATURES)))
    rows[:, FEATURES.index("z_max")] = z
    rows[:, FEATURES.index("lexical")] = z[::-1]
    expected = reference_margins(rows.copy())
    as_lists = fill_margins_rows(rows.tolist())
    assert np.array_equal(np.array(as_lists), expected, equal_nan=True)
