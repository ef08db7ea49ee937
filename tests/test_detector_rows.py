"""The candidates' feature rows: their values for a small fixture, fixed when they were
computed; and, for random streams, the rows :func:`rank_candidates` scores are those each
candidate gets alone (:func:`candidate_row`), bit for bit: a float reordering would change
decisions on ties."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from detector_fixtures import T0, basis, mem, said

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
from tribalmemory.episodes.detector.scoring import candidate_rows, fill_margins_rows, margins

DIM = 48
AT = {name: i for i, name in enumerate(FEATURES)}


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


HALF = np.array([0.5, 0.5, 0.5, 0.5, 0, 0, 0, 0], dtype=np.float32)
SPREAD = np.array([0.5, 0, 0.5, 0, 0.5, 0, 0.5, 0], dtype=np.float32)
"""Unit vectors whose cosines to the basis vectors are exact (0.5): with them every cosine of
the fixture below is the same on any machine, whatever order a BLAS sums in."""


def _fixed():
    """A memory by ana (its words name ben, a tag, an identifier) and its candidates: a thread
    of three (ana, ben, ben; cosines 1, 0.5, 0), a lone episode by cho (0.5), a seed by ben that
    shares a rare word (1) and one by dev (0); a stream with a pace of ten minutes in which ana
    wrote half of the recent memories."""
    context = DetectorContext(
        doc_count=40,
        doc_freq={"the": 30, "wal": 3, "replay": 2, "ben": 5, "ana": 8, "#pay-1234": 1, "slow": 4},
        gaps=[600.0] * 3,
        authors=["ana", "ben", "ana", "cho", "dev", "ana", "ben", "ana"],
    )
    memory = said("m", "ana", 120, "Ben, the WAL replay on PAY-1234 is slow again.", tags=("db",))
    thread = build_episode(
        "E1",
        [
            said("e1a", "ana", 0, "The standby WAL replay lags behind.", tags=("db",)),
            said("e1b", "ben", 30, "Is PAY-1234 the same replay bug?", vector=HALF),
            said("e1c", "ben", 60, "Vacuum runs at night.", axis=1),
        ],
    )
    lone = build_episode("E2", [said("e2a", "cho", 90, "Lunch on Friday?", vector=SPREAD)])
    seeds = [
        said("s1", "ben", 100, "The WAL archive is full.", tags=("ops",)),
        said("s2", "dev", 110, "Friday deploy moved.", axis=2),
    ]
    return memory, [thread, lone, *seeds], context


# Computed once with candidate_rows and fill_margins_rows as of commit 889d333 (whose rows were
# checked bit for bit against the per-candidate code the shipped join model was fitted with),
# on Linux (the logarithms are the C library's). Features left out are 0.0. A change of a
# feature, of FEATURES or of what they read (terms, identifiers, word counts) changes them:
# compute them again and say why in the commit; a refit of the model alone does not.
FIXED_ROWS = [
    {  # E1
        "z_max": 7.083333333333333,
        "z_centroid": 4.340169628461202,
        "z_last": -1.25,
        "lexical": 0.762638732584459,
        "identifiers": 1.0,
        "shares_identifier": 1.0,
        "shares_tag": 1.0,
        "gap_paces": 1.9459101490553132,
        "age_paces": 2.5649493574615367,
        "size": 1.0986122886681098,
        "author_share": 0.3333333333333333,
        "author_lift": -0.16666666666666669,
        "author_base": 0.5,
        "z_centroid_by_author_base": 2.170084814230601,
        "names_author": 1.0,
        "words": 2.0794415416798357,
        "z_centroid_by_words": 9.02512902335936,
        "pace": 6.396929655216146,
        "lexical_margin": 0.5916738846730667,
        "candidates": 1.6094379124341003,
        "cosine": 1.0,
        "seen": 3.713572066704308,
        "coverage": 0.6666666666666666,
        "z_mean": 2.9166666666666665,
    },
    {  # E2
        "z_max": 2.9166666666666665,
        "z_centroid": 2.9166666666666665,
        "z_last": 2.9166666666666665,
        "gap_paces": 1.3862943611198906,
        "age_paces": 1.3862943611198906,
        "author_lift": -0.5,
        "author_base": 0.5,
        "z_centroid_by_author_base": 1.4583333333333333,
        "words": 2.0794415416798357,
        "z_centroid_by_words": 6.065037829899521,
        "pace": 6.396929655216146,
        "z_margin": -4.166666666666666,
        "lexical_margin": -0.762638732584459,
        "candidates": 1.6094379124341003,
        "cosine": 0.5,
        "seen": 3.713572066704308,
        "coverage": 1.0,
        "z_mean": 2.9166666666666665,
    },
    {  # s1
        "z_max": 7.083333333333333,
        "z_centroid": 7.083333333333333,
        "z_last": 7.083333333333333,
        "lexical": 0.17096484791139227,
        "gap_paces": 1.0986122886681096,
        "age_paces": 1.0986122886681096,
        "seed": 1.0,
        "author_lift": -0.5,
        "author_base": 0.5,
        "z_centroid_by_author_base": 3.5416666666666665,
        "words": 2.0794415416798357,
        "z_centroid_by_words": 14.729377586898837,
        "pace": 6.396929655216146,
        "lexical_margin": -0.5916738846730667,
        "candidates": 1.6094379124341003,
        "cosine": 1.0,
        "seen": 3.713572066704308,
        "coverage": 1.0,
        "z_mean": 7.083333333333333,
    },
    {  # s2
        "z_max": -1.25,
        "z_centroid": -1.25,
        "z_last": -1.25,
        "gap_paces": 0.6931471805599453,
        "age_paces": 0.6931471805599453,
        "seed": 1.0,
        "author_lift": -0.5,
        "author_base": 0.5,
        "z_centroid_by_author_base": -0.625,
        "words": 2.0794415416798357,
        "z_centroid_by_words": -2.599301927099795,
        "pace": 6.396929655216146,
        "z_margin": -8.333333333333332,
        "lexical_margin": -0.762638732584459,
        "candidates": 1.6094379124341003,
        "seen": 3.713572066704308,
        "z_mean": -1.25,
    },
]
FIXED_EVIDENCE = [  # (max cosine, centroid cosine, similarity, z, lexical, hours, paces)
    (1.0, 0.6708203554153442, 0.7855353986515718, 7.083333333333333, 0.762638732584459, 1.0, 6.0),
    (0.5, 0.5, 0.5, 2.9166666666666665, 0.0, 0.5, 3.0),
    (1.0, 1.0, 1.0, 7.083333333333333, 0.17096484791139227, 0.3333333333333333, 2.0),
    (0.0, 0.0, 0.0, -1.25, 0.0, 0.16666666666666666, 1.0),
]


def test_the_rows_of_a_fixed_fixture_are_the_ones_computed_once():
    """Every value of every row, exactly (not approximately): the join model reads them."""
    memory, candidates, context = _fixed()
    rows, raw = candidate_rows(memory, candidates, context)
    fill_margins_rows(rows)
    expected = [[values.get(name, 0.0) for name in FEATURES] for values in FIXED_ROWS]
    for c, row, want in zip(candidates, rows, expected, strict=True):
        differ = {n: (got, w) for n, got, w in zip(FEATURES, row, want, strict=True) if got != w}
        assert not differ, (c.id, differ)
    assert raw == FIXED_EVIDENCE


@pytest.mark.parametrize("seed", range(8))
def test_rank_candidates_rows_are_each_candidates_own_row_bit_for_bit(seed):
    """What :func:`rank_candidates` scores (the seed shortlist, the seeds' cosines from one
    product, the own thread, the margins, the model) is each candidate's row alone."""
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
        if c.kind == "seed":  # scored as a one-member episode
            assert isinstance(found, MemoryFeatures)
            found = build_episode(found.id, [found])
            cos = seed_cos[at[c.id] : at[c.id] + 1]
        else:
            assert isinstance(found, EpisodeFeatures)
            cos = found.vectors @ memory.vector
        row, ev = candidate_row(
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
    reference = np.asarray(fill_margins_rows(expected), dtype=np.float64)
    assert len(ranked) == len(episodes) + 32  # the seed shortlist
    assert sum(row[AT["own_thread"]] for row in expected) == (1.0 if own else 0.0)
    assert np.array_equal(out[0], reference)  # bit for bit, not approximately
    logits = DEFAULT_MODEL.logits(reference)
    assert [c.evidence.utility for c in ranked] == logits.tolist()
    got = [replace(c.evidence, utility=0.0, score=0.0) for c in ranked]
    assert got == evidence


def test_rows_at_once_are_the_rows_one_by_one():
    """Every candidate's row is the same whatever else is scored with it: alone
    (:func:`candidate_row`), all episodes and seeds together. An episode scored as a seed is
    scored on its nearest member alone, without its authors."""
    memory, episodes, seeds, context = _stream(42, episodes=10, seeds=10)
    candidates = [*episodes, *seeds]
    together, raw = candidate_rows(memory, candidates, context)
    for i, c in enumerate(candidates):
        single = c if isinstance(c, EpisodeFeatures) else build_episode(c.id, [c])
        row, ev = candidate_row(memory, single, context, is_seed=isinstance(c, MemoryFeatures))
        assert row == together[i]
        assert (ev.max_cosine, ev.z, ev.hours_since_last) == (raw[i][0], raw[i][3], raw[i][5])
    episode = next(e for e in episodes if e.memory_count > 1 and len(e.source_counts) > 1)
    as_episode, _ = candidate_row(memory, episode, context)
    as_seed, _ = candidate_row(memory, episode, context, is_seed=True)
    assert as_seed[AT["seed"]] == 1.0 and as_episode[AT["seed"]] == 0.0
    assert as_seed[AT["z_centroid"]] == as_seed[AT["z_max"]] == as_episode[AT["z_max"]]
    authorship = ("author_share", "author_last", "names_author")
    assert [as_seed[AT[name]] for name in authorship] == [0.0, 0.0, 0.0]
    assert as_seed[AT["author_lift"]] == -as_seed[AT["author_base"]]
    same = set(FEATURES) - set(authorship) - {"seed", "author_lift"}
    same -= {"z_centroid", "z_centroid_by_author_base", "z_centroid_by_words"}
    assert [as_seed[AT[name]] for name in same] == [as_episode[AT[name]] for name in same]


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
    is a candidate's only one (compared as a Python float). Nothing else of the two rows
    differs but the size."""
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
    assert [row[AT["coverage"]] for row in rows] == [1.0, 0.0]
    assert [row[AT["cosine"]] for row in rows] == [float(c), float(c)]
    assert [row[AT["z_mean"]] for row in rows] == [row[AT["z_max"]] for row in rows]
    differ = {name for name, a, b in zip(FEATURES, *rows, strict=True) if a != b}
    assert differ == {"coverage", "size"}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([0.7], [0.7]),  # alone: minus 0
        ([0.2, 0.9], [-0.7, 0.7]),
        ([0.9, 0.9, 0.1], [0.0, 0.0, -0.8]),  # a tie for the best: each is the other's best
        ([0.1, 0.5, 0.5, -0.0, 0.0], [-0.4, 0.0, 0.0, -0.5, -0.5]),
        ([-1.0, math.nan, 2.0, 2.0], [-3.0, math.nan, 0.0, 0.0]),  # NaN is never best
        ([math.nan, 0.3], [math.nan, math.nan]),  # ... unless nothing else is left
        ([math.nan, math.nan], [math.nan, math.nan]),
        ([-math.inf, -math.inf, 1.0], [-math.inf, -math.inf, math.inf]),
    ],
)
def test_margins_are_each_value_minus_the_best_of_the_others(values, expected):
    """As a stable sort of the values, highest first (NaN last), would give them: the best
    is the first of the highest."""
    assert np.array_equal(margins(values), expected, equal_nan=True)


def test_fill_margins_rows_fills_the_margins_and_the_count_and_nothing_else():
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(3, len(FEATURES))).tolist()
    before = [list(row) for row in rows]
    assert fill_margins_rows(rows) is rows
    z, lexical = [r[AT["z_max"]] for r in before], [r[AT["lexical"]] for r in before]
    assert [r[AT["z_margin"]] for r in rows] == margins(z)
    assert [r[AT["lexical_margin"]] for r in rows] == margins(lexical)
    assert [r[AT["candidates"]] for r in rows] == [math.log1p(3)] * 3
    filled = {AT["z_margin"], AT["lexical_margin"], AT["candidates"]}
    for row, old in zip(rows, before, strict=True):
        assert [v for i, v in enumerate(row) if i not in filled] == [
            v for i, v in enumerate(old) if i not in filled
        ]
