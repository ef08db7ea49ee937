"""Unit tests of the pure episode detector and of the simulation metrics."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from detector_fixtures import DIM, T0, basis, episode_on, mem, vec_at

from tribalmemory.config import EpisodesConfig
from tribalmemory.episodes.detector import (
    COLD_START,
    COLD_START_THRESHOLD,
    DEFAULT_MODEL,
    FEATURES,
    Ambiguous,
    DetectorContext,
    DetectorParams,
    EpisodeFeatures,
    Join,
    MemoryFeatures,
    NewSeed,
    SeedRows,
    StartFromSeed,
    add_member,
    build_episode,
    candidate_row,
    chain_score,
    confidence,
    decide,
    eligible_episodes,
    eligible_seeds,
    evidence,
    forget_terms,
    lexical_overlap,
    new_episode,
    rank_candidates,
    terms_of,
    tokenize,
    update_context,
)
from tribalmemory.episodes.detector.scoring import fill_margins_rows


def _sim_module():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "detector_sim.py"
    spec = importlib.util.spec_from_file_location("detector_sim", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["detector_sim"] = module
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


WAL = "standby replica lags: wal_receiver replay slow"
"""Words two memories of one thread share (the tests' vectors stand for their meaning)."""
CTX = DetectorContext(doc_count=COLD_START)
"""A stream past its cold start (:data:`COLD_START` memories seen) with the prior background
(mean 0.15, std 0.12) and the prior pace (one hour)."""


def score(memory, episode, context=CTX, **kw) -> float:
    return evidence(memory, episode, context, **kw).score


# ---------------------------------------------------------------- features


def test_tokenize_is_keyword_free_and_normalises():
    assert tokenize("The Tokens rotate: auth/tokens.py 2025 ok") == frozenset(
        {"the", "token", "rotate", "auth"}
    )


def test_author_is_a_term_shared_with_its_name_in_text():
    """The source instance is lexical evidence: the same term as the name written in a reply."""
    assert terms_of("thanks, that fixed it", "Nafallo") == tokenize("thanks that fixed it nafallo")
    assert terms_of("hi", "") == frozenset()
    reply = MemoryFeatures.from_text("r", basis(0), "nafallo: try the live cd", (), "jdub", T0)
    asked = MemoryFeatures.from_text("q", basis(0), "my sound card is silent", (), "Nafallo", T0)
    assert "nafallo" in reply.terms & asked.terms


def test_memory_vector_is_normalised():
    m = mem("x", [3, 4, 0, 0, 0, 0, 0, 0])
    assert np.isclose(np.linalg.norm(m.vector), 1.0)


def test_rebuild_equals_incremental():
    rng = np.random.default_rng(0)
    members = [
        mem(
            f"m{k}",
            rng.normal(size=DIM),
            hours=k,
            tags={f"t{k % 2}"},
            source=f"s{k % 3}",
            text=f"word{k} shared",
        )
        for k in range(40)
    ]
    inc = new_episode("E", members[0])
    for m in members[1:]:
        inc = add_member(inc, m)
    rebuilt = build_episode("E", list(reversed(members)))
    assert np.allclose(inc.vectors, rebuilt.vectors)
    assert inc.vectors.shape[0] == inc.max_recent == 32
    assert np.allclose(inc.vector_sum, rebuilt.vector_sum)
    assert inc.tag_counts == rebuilt.tag_counts == {"t0": 20, "t1": 20}
    assert inc.term_counts == rebuilt.term_counts
    assert inc.source_counts == rebuilt.source_counts
    assert inc.source_last == rebuilt.source_last
    assert (inc.first_activity, inc.last_activity, inc.memory_count) == (
        rebuilt.first_activity,
        rebuilt.last_activity,
        40,
    )
    assert inc.member_ids == rebuilt.member_ids


def test_build_episode_is_add_member_folded_exactly():
    """build_episode counts in one pass; it must give what adding the members one by one
    gives, field for field: the same sum bit for bit, counters in the same key order,
    members out of time order, a member given twice, a short window of recent vectors."""
    rng = np.random.default_rng(7)
    words = [f"word{k}" for k in range(12)]
    members = [
        mem(
            f"m{k}",
            rng.normal(size=DIM),
            hours=int(rng.integers(0, 6)),  # ties and disorder
            tags={f"t{int(rng.integers(0, 3))}"},
            source=f"s{int(rng.integers(0, 3))}",
            text=" ".join(rng.choice(words, size=4)) + " Postgres",
        )
        for k in range(25)
    ]
    members = [replace(m, names=frozenset(sorted(m.terms)[:1])) for m in members]
    members += members[:2]
    for max_recent in (1, 4, 32):
        ordered = sorted(members, key=lambda m: m.created_at)
        folded = new_episode("E", ordered[0], max_recent)
        for m in ordered[1:]:
            folded = add_member(folded, m)
        built = build_episode("E", members, max_recent)
        for name in EpisodeFeatures.__dataclass_fields__:
            a, b = getattr(folded, name), getattr(built, name)
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b), name
            else:
                assert a == b, name
                if isinstance(a, dict):
                    assert list(a) == list(b), name  # same key order


def test_add_member_does_not_mutate():
    ep = episode_on(0)
    before = (ep.vectors.copy(), dict(ep.tag_counts), ep.memory_count)
    add_member(ep, mem("new", basis(0), hours=1, tags={"x"}))
    assert np.array_equal(ep.vectors, before[0]) and ep.tag_counts == before[1]
    assert ep.memory_count == before[2]


# ---------------------------------------------------------------- context


def test_context_update_and_json_roundtrip():
    ctx = update_context(DetectorContext(), mem("a", basis(0), text="alpha beta"), [0.1, 0.2, 0.3])
    ctx = update_context(ctx, mem("b", basis(1), text="alpha gamma"), [0.5])
    assert ctx.doc_count == 2 and ctx.doc_freq["alpha"] == 2
    assert ctx.cos_count == CTX.cos_count + 4
    assert ctx.idf("gamma") > ctx.idf("alpha")
    back = DetectorContext.from_json(json.loads(json.dumps(ctx.to_json())))
    assert back == ctx


def test_forget_terms_takes_a_forgotten_memory_out_of_the_counts():
    ctx = update_context(DetectorContext(), mem("a", basis(0), text="alpha zebra1111"), [0.1])
    ctx = update_context(ctx, mem("b", basis(1), text="alpha gamma"), [0.5])
    forget_terms(ctx, tokenize("alpha zebra1111"))
    assert ctx.doc_count == 1 and ctx.doc_freq == {"alpha": 1, "gamma": 1}
    assert "zebra1111" not in json.dumps(ctx.to_json())  # its word leaves the saved state
    forget_terms(ctx, tokenize("alpha gamma delta"))  # never counted: no negative counts
    assert ctx.doc_count == 0 and ctx.doc_freq == {}


def test_context_welford_matches_numpy():
    values = np.random.default_rng(1).uniform(-0.2, 0.8, size=500)
    ctx = DetectorContext(cos_count=0.0, cos_mean=0.0, cos_m2=0.0)
    ctx = update_context(ctx, mem("a", basis(0)), values)
    assert np.isclose(ctx.cos_mean, values.mean()) and np.isclose(ctx.cos_std, values.std())


def test_pace_is_the_median_gap_in_memory_time():
    ctx = DetectorContext()
    assert ctx.pace == 3600.0  # the prior until three gaps are known
    for k, minutes in enumerate([0, 1, 2, 3, 13]):  # gaps 1, 1, 1, 10 minutes
        update_context(ctx, mem(f"m{k}", basis(0), hours=minutes / 60))
    assert ctx.pace == 60.0
    assert ctx.paces(T0, T0 + timedelta(minutes=30)) == 30.0
    assert ctx.paces(T0 + timedelta(hours=1), T0) == 0.0  # an older memory is no later
    back = DetectorContext.from_json(json.loads(json.dumps(ctx.to_json())))
    assert back == ctx


def test_out_of_order_arrivals_do_not_speed_up_the_pace():
    """Concurrent writers deliver memories out of order: only a memory newer than all before
    it tells the pace (an older one, or an equal timestamp, would read as a zero gap)."""
    ctx = DetectorContext()
    for k, minutes in enumerate([0, 10, 5, 20, 15, 30, 30, 40, 35]):
        update_context(ctx, mem(f"m{k}", basis(0), hours=minutes / 60))
    assert ctx.gaps == [600.0] * 4 and ctx.pace == 600.0


def test_context_window_stays_bounded():
    ctx = update_context(DetectorContext(), mem("a", basis(0)), [0.2] * 300, max_cos_count=100)
    assert ctx.cos_count <= 100.0 + 1e-9


# ---------------------------------------------------------------- score


def test_score_in_unit_interval_and_monotone_in_similarity():
    ep = episode_on(0, hours=0)
    scores = [score(mem("m", vec_at(c), hours=1), ep, CTX) for c in np.linspace(-0.5, 1, 16)]
    assert all(0.0 <= s <= 1.0 for s in scores)
    # the fitted trees are monotone in similarity (flat between their split points)
    assert all(b >= a for a, b in zip(scores, scores[1:], strict=False))
    assert scores[0] < EMB.threshold <= scores[-1]  # similarity alone can cross the line


def test_a_longer_pause_lowers_the_score_with_no_cap():
    """A pause of days is a boundary, not a bounded penalty: the score keeps falling with the
    gap (the gap feature is monotone in the fitted model, benchmarks/fit_detector.py)."""
    ep = episode_on(0, hours=0)
    hours = (0.5, 3, 12, 24, 100, 330)
    scores = [score(mem("m", vec_at(0.6), hours=h), ep, CTX) for h in hours]
    assert scores[-1] < scores[3] < scores[0]
    # The gap alone never raises P(joins) (flat between the trees' split points). A pause also
    # ages the candidate, a feature the fit leaves free, so the end-to-end score may move a
    # little between split points; the gap's own column is checked here.
    row, _ = candidate_row(mem("m", vec_at(0.6), hours=1), ep, CTX)
    column = FEATURES.index("gap_paces")
    rows = [list(row) for _ in range(40)]
    for r, gap in zip(rows, np.linspace(0.0, 8.0, 40).tolist(), strict=True):
        r[column] = gap
    logits = DEFAULT_MODEL.logits(np.asarray(fill_margins_rows(rows), dtype=np.float64))
    assert all(b <= a for a, b in zip(logits, logits[1:], strict=False))
    assert logits[-1] < logits[0]


def test_coverage_and_mean_similarity_read_the_whole_thread_not_one_neighbour():
    """A memory close to one member of four covers a quarter of the thread; close to all four,
    all of it. ``z_mean`` is the mean cosine to the members against the stream's background."""
    members = [mem("a", basis(0), hours=-3)] + [
        mem(f"b{k}", basis(2 + k), hours=-2 + k) for k in range(3)
    ]
    ep = build_episode("E", members)
    near_one, _ = candidate_row(mem("m", vec_at(0.9)), ep, CTX)
    coverage, z_mean = FEATURES.index("coverage"), FEATURES.index("z_mean")
    # cosine 0.9 to "a", 0 to the others; "close" is at least mean + std = 0.15 + 0.12
    assert near_one[coverage] == pytest.approx(0.25)
    assert near_one[z_mean] == pytest.approx((0.9 / 4 - CTX.cos_mean) / CTX.cos_std, rel=1e-4)
    thread = build_episode("T", [mem(f"t{k}", basis(0), hours=-3 + k) for k in range(4)])
    near_all, _ = candidate_row(mem("m", vec_at(0.9)), thread, CTX)
    assert near_all[coverage] == 1.0
    assert near_all[z_mean] > near_one[z_mean]
    # a member it is not close to lowers the share: four of five
    wider = add_member(thread, mem("other", basis(5), hours=2))
    assert candidate_row(mem("m", vec_at(0.9), hours=3), wider, CTX)[0][coverage] == 0.8


def test_recency_is_measured_in_the_streams_pace():
    """Ten minutes is a long pause in a chat with a message a minute and nothing in a stream
    with a memory an hour."""
    ep = episode_on(0, hours=0)
    chat = DetectorContext(gaps=[60.0] * 10)
    m = mem("m", vec_at(0.6), hours=10 / 60)
    assert score(m, ep, chat) < score(m, ep, CTX)
    assert evidence(m, ep, chat).paces_since_last == pytest.approx(10.0)


def test_term_weights_come_in_one_order_whatever_the_hash_seed():
    """``lexical`` and ``identifiers`` are sums of the memory's term weights; float addition
    depends on the order, and a set's order follows the string hash seed, so the weights come
    sorted: the same row in every process."""
    terms = frozenset(f"term{k:02d}" for k in range(40))
    ctx = DetectorContext(doc_count=100, doc_freq={f"term{k:02d}": k + 1 for k in range(40)})
    assert list(ctx.idf_weights(terms)) == sorted(terms)


def test_lexical_overlap_sums_in_sorted_order_whatever_order_the_terms_come_in():
    """Merge ranking and chaining sum an episode's whole vocabulary (:func:`lexical_overlap`):
    the same sum whether its terms come as a set, sorted once (``sorted_terms``) or reversed."""
    words = [f"term{k:02d}" for k in range(40)]
    ctx = DetectorContext(doc_count=100, doc_freq={w: k + 1 for k, w in enumerate(words)})
    bag = frozenset(words[::3])
    weights = ctx.idf_weights(words)

    def summed(order: list[str]) -> float:
        total = shared = 0.0
        for t in order:
            total += weights[t]
            shared += weights[t] if t in bag else 0.0
        return shared / total

    in_order = summed(sorted(words))
    assert summed(sorted(words, reverse=True)) != in_order  # the fixture: order shows
    ep = build_episode("E", [mem(f"m{k}", basis(0), text=w) for k, w in enumerate(words)])
    assert ep.sorted_terms == tuple(sorted(words))
    for terms in (ep.sorted_terms, ep.term_counts, frozenset(words), words[::-1]):
        assert lexical_overlap(terms, bag, ctx) == in_order


def test_update_context_is_incremental_and_in_place():
    ctx = DetectorContext(doc_freq={f"word{k}": 1 for k in range(100_000)}, doc_count=100_000)
    freq = ctx.doc_freq
    out = update_context(ctx, mem("a", basis(0), text="alpha word7"), [0.3])
    assert out is ctx and ctx.doc_freq is freq  # no copy of the vocabulary
    assert ctx.doc_freq["word7"] == 2 and ctx.doc_freq["alpha"] == 1 and ctx.doc_count == 100_001


def test_score_increases_with_rare_term_overlap():
    members = [
        mem("e1", basis(0), text="pgloader copy of invoices"),
        mem("e2", basis(0), hours=1, text="pgloader retry settings"),
    ]
    ep = build_episode("E", members)
    ctx = DetectorContext()
    for k in range(20):
        ctx = update_context(ctx, mem(f"bg{k}", basis(2), text="the of copy settings"))
    for m in members:
        ctx = update_context(ctx, m)
    plain = mem("m", vec_at(0.4), hours=2, text="unrelated words here")
    shared = mem("m", vec_at(0.4), hours=2, text="pgloader words here")
    assert lexical_overlap(shared.terms, ep.term_counts, ctx) > 0
    assert score(shared, ep, ctx) > score(plain, ep, ctx)


def test_score_is_relative_to_background():
    ep = episode_on(0)
    m = mem("m", vec_at(0.45), hours=1)
    low_bg = DetectorContext(cos_mean=0.05, cos_m2=50 * 0.1**2)
    high_bg = DetectorContext(cos_mean=0.40, cos_m2=50 * 0.1**2)
    assert score(m, ep, low_bg) > score(m, ep, high_bg)


def test_a_related_memory_joins_and_an_unrelated_one_does_not():
    """At the prior background, a memory with cosine 0.55 to a thread (3.3 background
    deviations above it) an hour later clears the model's threshold; an unrelated one does
    not."""
    ep = episode_on(0)
    assert score(mem("m", vec_at(0.55), hours=1), ep, CTX) >= EMB.threshold
    assert score(mem("m", vec_at(-0.2), hours=1), ep, CTX) < EMB.threshold


def test_seed_penalty_applies():
    ep = new_episode("s", mem("s", basis(0)))
    m = mem("m", vec_at(0.5), hours=1)
    assert evidence(m, ep, CTX, is_seed=True).score < evidence(m, ep, CTX).score


# ---------------------------------------------------------------- eligibility


def test_eligibility_uses_memory_time_window_and_cap():
    now = T0 + timedelta(days=30)
    eps = [episode_on(0, id=f"E{k}", hours=24 * (30 - k)) for k in range(20)]
    ok = eligible_episodes(eps, now, active_window_days=14, max_active=100)
    assert {e.id for e in ok} == {f"E{k}" for k in range(15)}  # idle <= 14 days
    capped = eligible_episodes(eps, now, active_window_days=14, max_active=3)
    assert [e.id for e in capped] == ["E0", "E1", "E2"]  # the most recently active
    seeds = [mem("old", basis(0), hours=-24 * 15), mem("new", basis(0), hours=-24)]
    assert [s.id for s in eligible_seeds(seeds, T0, 14)] == ["new"]
    # a memory dated before an episode began joins it only within the window of its start
    late = [episode_on(0, id="L", hours=24 * 20)]  # three memories, the first 2 hours earlier
    assert eligible_episodes(late, T0 + timedelta(days=7), 14, 100) == late
    assert eligible_episodes(late, T0 + timedelta(hours=24 * 20 - 2 - 24 * 14), 14, 100) == late
    assert eligible_episodes(late, T0 + timedelta(days=5), 14, 100) == []
    assert eligible_episodes(late, T0 - timedelta(days=3650), 14, 100) == []


def test_decide_checks_the_seeds_window_unless_they_were_chosen_in_it():
    """A direct caller's seeds are checked against the memory's window; the engine's seed pool
    chose its seeds within it already (``seeds_eligible``), so they are not looked at again."""
    old = mem("old", basis(0), hours=-24 * 15)  # 15 days before the memory: out of the window
    m = mem("m", basis(0))
    anything = DetectorParams(strategy="embedding", threshold=0.0)
    assert decide(m, [], [old], CTX, anything) == NewSeed(0.0, ())  # no candidate at all
    trusted = decide(m, [], [old], CTX, anything, seeds_eligible=True)
    assert isinstance(trusted, StartFromSeed) and trusted.seed_id == "old"


def test_idle_episode_cannot_be_joined():
    ep = episode_on(0, hours=0)
    m = mem("m", basis(0), hours=24 * 15)
    assert isinstance(decide(m, [ep], [], CTX, DetectorParams(strategy="embedding")), NewSeed)


# ---------------------------------------------------------------- decide


EMB = DetectorParams(strategy="embedding")
HYB = DetectorParams(strategy="hybrid")


def test_decide_join_best_episode():
    e0, e1 = episode_on(0, "E0"), episode_on(3, "E1")
    d = decide(mem("m", vec_at(0.95, 3, 4), hours=1), [e0, e1], [], CTX, EMB)
    assert isinstance(d, Join) and d.episode_id == "E1" and d.score >= EMB.threshold
    assert len(d.background) == 6  # cosines to all candidate members, for update_context


def test_decide_start_from_seed():
    seed = mem("s", basis(5), hours=0, text="pgloader bulk copy of the invoices table")
    m = mem("m", vec_at(0.97, 5, 6), hours=1, text="pgloader retries the invoices bulk copy")
    d = decide(m, [episode_on(0)], [seed], CTX, EMB)
    assert isinstance(d, StartFromSeed) and d.seed_id == "s"


def test_decide_new_seed_when_nothing_matches():
    d = decide(mem("m", basis(7), hours=1), [episode_on(0)], [mem("s", basis(5))], CTX, EMB)
    assert isinstance(d, NewSeed) and d.best_score < EMB.threshold
    assert isinstance(decide(mem("m", basis(7)), [], [], CTX, EMB), NewSeed)


def test_a_doubtful_decision_carries_what_the_embedding_path_decides():
    """The memory is placed at once by the embedding path and reviewed later: the Ambiguous
    decision carries that placement, equal to what the embedding strategy decides."""
    e0, e1 = episode_on(0, "E0"), episode_on(3, "E1")
    m = mem("m", vec_at(0.95, 3, 4), hours=1)
    doubtful = decide(m, [e0, e1], [], CTX, DetectorParams(strategy="llm"))
    assert isinstance(doubtful, Ambiguous)
    assert doubtful.embedded == decide(m, [e0, e1], [], CTX, EMB)
    assert isinstance(doubtful.embedded, Join) and doubtful.embedded.episode_id == "E1"
    alone = decide(mem("n", basis(7), hours=1), [e0], [], CTX, DetectorParams(strategy="llm"))
    assert isinstance(alone, Ambiguous) and isinstance(alone.embedded, NewSeed)


def test_confidence_is_low_for_close_calls():
    """Two near-equal candidates, or one right at the threshold, leave the decision in doubt;
    one clear winner, or nothing near, does not."""
    e0, e1 = episode_on(0, "E0"), episode_on(3, "E1", text=WAL)
    m = mem("m", vec_at(0.95, 3, 4), hours=1, text=WAL)
    clear, _ = rank_candidates(m, [e0, e1], [], CTX)
    twin = build_episode("E2", [mem(f"t{k}", basis(3), hours=k - 2, text=WAL) for k in range(3)])
    close, _ = rank_candidates(m, [e1, twin], [], CTX)
    assert close[0].score == pytest.approx(close[1].score)
    line = EMB.threshold  # the model's join threshold
    assert confidence(close, line) < 0.5 < confidence(clear, line)
    assert confidence([], line) == 1.0
    assert confidence(clear[:1], clear[0].score) == pytest.approx(0.5)  # a join at the line
    weak, _ = rank_candidates(mem("w", vec_at(-0.3, 3, 4), hours=1), [e1], [], CTX)
    assert weak[0].score < line
    # a "no" is surer the further the best candidate is below the threshold
    near = confidence(weak, weak[0].score + 0.01)
    assert 0.5 < near < confidence(weak, line) < confidence(weak, 0.75)
    # the softmax of two options: "no" at logit(0.75) against the candidate's logit
    u = weak[0].evidence.utility
    assert confidence(weak, 0.75) == pytest.approx(1 / (1 + math.exp(u - math.log(3))))


def test_doubt_threshold_is_the_streams_own_quantile():
    ctx = DetectorContext()
    for k in range(19):  # a stream's first decisions are all doubtful
        update_context(ctx, mem(f"early{k}", basis(0), hours=k), confidence=0.99)
        assert ctx.doubt_threshold(0.3) == math.inf
    assert ctx.doubt_threshold(0.0) == 0.0  # no doubt asked for: none, even at the start
    ctx = DetectorContext()
    for k in range(100):
        update_context(ctx, mem(f"m{k}", basis(0), hours=k), confidence=0.5 + k / 200)
    assert ctx.doubt_threshold(0.3) == pytest.approx(np.quantile(ctx.confidences, 0.3))
    assert sum(c < ctx.doubt_threshold(0.3) for c in ctx.confidences) == 30
    assert ctx.doubt_threshold(0.0) == 0.0 and ctx.doubt_threshold(1.0) == math.inf
    for k in range(300):
        update_context(ctx, mem(f"n{k}", basis(0)), confidence=0.9)
    assert len(ctx.confidences) == 200  # the last 200 decisions


def test_doubtful_decisions_go_to_llm_only_in_hybrid():
    e1 = episode_on(3, "E1", text=WAL)
    twin = build_episode("E2", [mem(f"t{k}", basis(3), hours=k - 2, text=WAL) for k in range(3)])
    m = mem("m", vec_at(0.95, 3, 4), hours=1, text=WAL)
    sure = DetectorContext(confidences=[0.99] * 50)  # every past decision was surer
    d = decide(m, [e1, twin], [], sure, HYB)
    assert isinstance(d, Ambiguous) and {c.id for c in d.candidates} == {"E1", "E2"}
    assert d.confidence < 0.5
    assert isinstance(decide(m, [e1, twin], [], sure, EMB), Join)
    none = DetectorParams(strategy="hybrid", doubt_share=0.0)
    assert isinstance(decide(m, [e1, twin], [], sure, none), Join)
    unsure = DetectorContext(confidences=[0.1] * 50)  # every past decision was less sure
    assert isinstance(decide(m, [e1, twin], [], unsure, HYB), Join)


def test_decide_llm_strategy_always_asks_when_there_are_candidates():
    eps = [episode_on(k, f"E{k}") for k in range(7)]
    d = decide(mem("m", basis(0), hours=1), eps, [], CTX, DetectorParams(strategy="llm"))
    assert isinstance(d, Ambiguous) and len(d.candidates) == 5
    assert d.candidates[0].id == "E0"
    assert [c.score for c in d.candidates] == sorted((c.score for c in d.candidates), reverse=True)


def test_a_cold_stream_joins_only_on_a_surer_probability():
    """Until the stream has shown :data:`COLD_START` memories, a join needs
    :data:`COLD_START_THRESHOLD` whatever the threshold; then the threshold alone decides."""
    ep = episode_on(0)
    m = mem("m", basis(7), hours=1)  # nothing in common with the episode
    anything = DetectorParams(strategy="embedding", threshold=0.0)
    cold = DetectorContext(doc_count=COLD_START - 1)
    assert score(m, ep, cold) < COLD_START_THRESHOLD
    assert isinstance(decide(m, [ep], [], cold, anything), NewSeed)
    assert isinstance(decide(m, [ep], [], DetectorContext(doc_count=COLD_START), anything), Join)


def test_lower_threshold_joins_more():
    ep = episode_on(0)
    m = mem("m", vec_at(-0.3), hours=1)
    s = score(m, ep, CTX)
    assert s < EMB.threshold
    assert isinstance(decide(m, [ep], [], CTX, EMB), NewSeed)
    assert isinstance(
        decide(m, [ep], [], CTX, DetectorParams(strategy="embedding", threshold=s - 1e-6)), Join
    )


def test_params_from_config():
    p = DetectorParams.from_config(EpisodesConfig())
    # unset, the join threshold is the one chosen with the fitted model
    assert (p.threshold, p.doubt_share, p.strategy) == (DEFAULT_MODEL.threshold, 0.9, "hybrid")
    chosen = EpisodesConfig(join_threshold=0.6)
    assert DetectorParams.from_config(chosen).threshold == 0.6
    assert DetectorParams.from_config(EpisodesConfig(), doubt_share=0.1).doubt_share == 0.1
    assert (p.active_window_days, p.max_active_episodes) == (14, 20)


# ---------------------------------------------------------------- chaining


def test_chain_score_monotone_and_bounded():
    parent = episode_on(0, "P", hours=0)
    values = []
    for c in np.linspace(0, 1, 11):
        child = build_episode("C", [mem("c1", vec_at(c), hours=30), mem("c2", vec_at(c), 31)])
        values.append(chain_score(child, parent, CTX))
    assert all(0 <= v <= 1 for v in values)
    assert all(b > a for a, b in zip(values, values[1:], strict=False))


def test_small_talk_of_two_conversations_does_not_chain_on_its_centroids() -> None:
    """Three memories of one sitting and three of another conversation share only a common
    part (every cross cosine 0.4, no shared words): their centroids keep that part and lose
    the rest (centroid cosine 0.67, z 4.3 against a memory background), yet a member of one
    is no closer to a member of the other than the stream's small talk. A sitting that says
    the same things again chains."""
    common = math.sqrt(0.4)

    def talk(id: str, first: int, hours: float) -> list[MemoryFeatures]:
        return [
            mem(f"{id}{k}", common * basis(0) + math.sqrt(0.6) * basis(first + k), hours + k)
            for k in range(3)
        ]

    context = DetectorContext(doc_count=200, cos_mean=0.15)  # past the young stream
    one, other = build_episode("A", talk("a", 1, 0)), build_episode("B", talk("b", 4, 30))
    assert float(one.centroid @ other.centroid) == pytest.approx(2 / 3, abs=1e-6)
    assert chain_score(other, one, context) < 0.85  # chain_similarity_threshold
    again = build_episode("C", [mem(f"c{k}", v, 30 + k) for k, v in enumerate(one.vectors)])
    assert chain_score(again, one, context) >= 0.85


# ---------------------------------------------------------------- metrics


def test_pairwise_prf_tiny():
    sim = _sim_module()
    p, r, f = sim.pairwise_prf(["a", "a", "a", None], ["x", "x", "y", "y"])
    assert (p, r) == pytest.approx((1 / 3, 1 / 2)) and f == pytest.approx(0.4)
    assert sim.pairwise_prf(["a", "a"], [None, None]) == (0.0, 0.0, 0.0)
    assert sim.pairwise_prf([None, "b", "b"], [None, "z", "z"]) == (1.0, 1.0, 1.0)


def test_ari_tiny():
    sim = _sim_module()
    assert sim.adjusted_rand_index(["a", "a", "b"], ["x", "x", "y"]) == pytest.approx(1.0)
    assert sim.adjusted_rand_index([0, 0, 1, 2], [0, 0, 1, 1]) == pytest.approx(4 / 7)
    assert sim.adjusted_rand_index([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(0.0)
    # None = own singleton cluster
    assert sim.adjusted_rand_index([None, None, 1, 1], [5, 6, 7, 7]) == pytest.approx(1.0)


def test_v_measure_tiny():
    sim = _sim_module()
    assert sim.v_measure(["a", "a", "b"], ["x", "x", "y"]) == pytest.approx(1.0)
    assert sim.v_measure(["a", "a", "a", "a"], ["x", "x", "y", "y"]) == pytest.approx(0.0)
    # two gold pairs split into four singletons: homogeneity 1, completeness 1 - ln2/ln4 = 0.5
    assert sim.v_measure([None] * 4, ["x", "x", "y", "y"]) == pytest.approx(2 * 0.5 / 1.5)


def test_oracle_is_right_at_its_accuracy():
    sim = _sim_module()
    perfect, never = sim.Oracle(1.0), sim.Oracle(0.0)
    assert all(perfect.choose(["a", "b", None], "b") == "b" for _ in range(50))
    assert all(never.choose(["a", "b", None], "b") in ("a", None) for _ in range(50))
    ninety = sim.Oracle(0.9, seed=3)
    right = sum(ninety.choose(["a", "b", None], "a") == "a" for _ in range(2000))
    assert 1740 <= right <= 1860  # binomial(2000, 0.9): mean 1800, sd 13.4; +-4.5 sd


def test_budget_caps_the_simulated_calls():
    """Every memory is doubtful (strategy llm); the budget keeps calls <= 0.3 n + 1."""
    sim = _sim_module()
    records = [
        sim.Record(f"m{k}", T0 + timedelta(minutes=k), f"text {k}", frozenset(), "x", "g")
        for k in range(40)
    ]
    vectors = np.stack([vec_at(0.9 + 0.002 * k) for k in range(40)])
    stream = sim.Stream("s", records, vectors)
    review = sim.Review(calls_per_memory=0.3, batch_size=2)  # 20 calls unless capped
    res = sim.simulate(stream, DetectorParams(strategy="llm"), sim.Oracle(1.0), review=review)
    assert res.calls == 12  # floor(0.3 * 39 + 1): 39 memories decided before the last one
    assert len(set(res.assignment)) == 1 and res.assignment[0] is not None


# ---------------------------------------------------------------- real model (small)


def test_real_model_related_beats_unrelated():
    from tribalmemory.embeddings.embedder import load_embedder

    texts = [
        "Refresh tokens rotate on every use and the old one is revoked immediately.",
        "Two browser tabs refresh the session at once and the second gets a revoked token.",
        "The user prefers tabs over spaces in Makefiles.",
    ]
    v = load_embedder().embed(texts)
    ep = new_episode("E", mem("a", v[0], source="x", text=texts[0], words=None))
    related = mem("b", v[1], hours=1, source="x", text=texts[1], words=None)
    unrelated = mem("c", v[2], hours=1, source="x", text=texts[2], words=None)
    assert score(related, ep, CTX) > score(unrelated, ep, CTX)


def test_paused_thread_is_the_best_candidate_after_other_work():
    """Two memories about a multi-tab logout bug (days 3-4), two unrelated DB-migration
    memories (days 6-7), then the fix on day 14: the logout episode is its best candidate.
    Ten days in a stream of a memory a day is a long pause for the fitted model, so the fix
    waits as a seed (below the threshold): with an LLM it is a doubtful decision the review
    takes (docs/detection.md)."""
    from tribalmemory.embeddings.embedder import load_embedder

    days = [3.0, 4.0, 6.0, 7.0, 14.0]
    texts = [
        "Support ticket: several customers get logged out at random mid-session, mostly people "
        "who keep the app open in multiple tabs. Sentry shows bursts of 401 'refresh token "
        "revoked' right after a successful refresh.",
        "Refresh tokens rotate on every use. The old token is revoked immediately, and "
        "presenting a revoked token is treated as theft: the whole token family gets killed.",
        "Kicked off moving the main app database from MySQL 8 to Postgres 16 on RDS; pgloader "
        "for the bulk copy.",
        "After the bulk copy, identity sequences must be bumped to max(id) on every table.",
        "Fix for the multi-tab logout: accept the previous refresh token for a 10 second grace "
        "window after rotation.",
    ]
    vectors = load_embedder().embed(texts)
    ctx, episodes, seeds, decisions = DetectorContext(), [], [], []
    for i, (d, text) in enumerate(zip(days, texts, strict=True)):
        m = MemoryFeatures.from_text(f"m{i}", vectors[i], text, (), "x", T0 + timedelta(days=d))
        ranked, _ = rank_candidates(m, episodes, seeds, ctx)
        dec = decide(m, episodes, seeds, ctx, EMB)
        decisions.append(dec)
        if isinstance(dec, Join):
            episodes = [add_member(e, m) if e.id == dec.episode_id else e for e in episodes]
        elif isinstance(dec, StartFromSeed):
            seed = next(s for s in seeds if s.id == dec.seed_id)
            seeds.remove(seed)
            episodes.append(build_episode(f"E{i}", [seed, m]))
        else:
            seeds.append(m)
        update_context(ctx, m, dec.background)
    assert isinstance(decisions[1], StartFromSeed) and decisions[1].seed_id == "m0"
    assert isinstance(decisions[3], StartFromSeed) and decisions[3].seed_id == "m2"
    assert ranked[0].id == "E1" and ranked[0].score > 3 * ranked[1].score  # E3: the migration


def test_leave_one_out_chooses_on_the_other_streams():
    """The pick for a held-out stream maximises the worst F1 of the two others and is then
    reported on the held-out one (whose own F1 never enters the choice)."""
    sim = _sim_module()
    streams = [sim.Stream(name, [], np.zeros((0, DIM))) for name in ("a", "b", "c")]
    table = {  # F1 by grid point x and stream
        1.0: {"a": 0.9, "b": 0.2, "c": 0.5},
        2.0: {"a": 0.6, "b": 0.6, "c": 0.1},
        3.0: {"a": 0.1, "b": 0.7, "c": 0.7},
    }
    rows = sim.leave_one_out(streams, {"x": [1.0, 2.0, 3.0]}, lambda p, s: table[p["x"]][s.name])
    picks = {r["held_out"].name: (r["point"]["x"], r["held_out_f1"]) for r in rows}
    # hold out a: b, c worst 0.2 / 0.1 / 0.7 -> x=3; b: a, c -> 0.5 / 0.1 / 0.1 -> x=1;
    # c: a, b -> 0.2 / 0.6 / 0.1 -> x=2
    assert picks == {"a": (3.0, 0.1), "b": (1.0, 0.2), "c": (2.0, 0.1)}


def test_each_project_is_its_own_stream():
    """Two projects interleaved, one writing hourly and one every minute: each project's pace
    and word counts are its own, and a store from before projects loads as `default`'s."""
    from tribalmemory.episodes.matching import Matcher

    matcher = Matcher(EpisodesConfig())
    for k in range(12):
        for project, gap in (("slow", 3600), ("fast", 60)):
            when = T0 + timedelta(seconds=gap * k)
            terms = frozenset({project})
            memory = MemoryFeatures(f"{project}{k}", vec_at(0.5), frozenset(), "x", when, terms)
            matcher.decide(memory, [], [], doubt_share=0.0, learn=True, project=project)
    assert matcher.context("slow").pace == 3600 and matcher.context("fast").pace == 60
    assert matcher.context("slow").doc_freq == {"slow": 12}
    legacy = matcher.context("slow").to_json()  # the one context an older store kept
    again = Matcher(EpisodesConfig())
    again.load_state(legacy)
    assert again.context("default").pace == 3600 and again.context("slow").doc_count == 0
    again.load_state(matcher.state(), matcher.changed_terms())
    assert again.context("fast").to_json() == matcher.context("fast").to_json()


def test_word_counts_are_saved_by_the_change():
    """Only the words counted or forgotten since the last save are handed out to be saved;
    the rest of the statistics leave the vocabulary out."""
    from tribalmemory.episodes.matching import Matcher
    from tribalmemory.models import Memory, SourceType

    matcher = Matcher(EpisodesConfig())

    def learn(mid: str, words: set[str], minutes: int) -> MemoryFeatures:
        memory = MemoryFeatures(
            mid, vec_at(0.5), frozenset(), "x", T0 + timedelta(minutes=minutes), frozenset(words)
        )
        matcher.decide(memory, [], [], doubt_share=0.0, learn=True)
        return memory

    learn("m1", {"alpha", "beta"}, 0)
    assert matcher.changed_terms() == {"default": {"alpha": 1, "beta": 1}}
    matcher.terms_saved()
    learn("m2", {"beta", "gamma"}, 1)
    assert matcher.changed_terms() == {"default": {"beta": 2, "gamma": 1}}
    assert "doc_freq" not in matcher.state()["projects"]["default"]
    matcher.terms_saved()
    gone = Memory("m2", "beta gamma", SourceType.USER_EXPLICIT, "", [], None, T0, T0)
    matcher.unlearn(gone)  # as forget does
    assert matcher.changed_terms() == {"default": {"beta": 1, "gamma": 0}}


def test_seed_rows_give_the_cosines_of_a_fresh_stack_as_seeds_come_and_go():
    """The seeds' vectors kept between decisions give what stacking them anew gives, whatever
    joined, left or was rebuilt (a new features object for the same memory) in between."""
    rng = np.random.default_rng(7)
    rows = SeedRows()

    def seed(i: int) -> MemoryFeatures:
        return mem(f"s{i}", rng.normal(size=DIM))

    seeds = [seed(i) for i in range(40)]
    for step in range(300):
        memory = mem("m", rng.normal(size=DIM))
        kept = rows.cosines(memory.vector, seeds)
        fresh = np.stack([s.vector for s in seeds]) @ memory.vector
        assert kept.shape == fresh.shape
        np.testing.assert_allclose(kept, fresh, rtol=0, atol=1e-6)  # float32 sums, any order
        seeds.pop(int(rng.integers(len(seeds))))  # one joined an episode
        seeds.append(seed(1000 + step))  # a new one
        j = int(rng.integers(len(seeds)))
        seeds[j] = mem(seeds[j].id, rng.normal(size=DIM))  # rebuilt: same memory, new object
    assert len(rows._owner) <= 2 * len(seeds) + 1024 + 1  # dropped rows do not pile up


def test_decide_is_the_same_with_kept_seed_rows():
    rng = np.random.default_rng(3)
    seeds = [mem(f"s{i}", vec_at(0.9, i % 6, 7) + rng.normal(size=DIM) * 0.05) for i in range(30)]
    rows = SeedRows()
    for i in range(20):
        memory = mem(f"m{i}", vec_at(0.93, i % 6, 6), hours=1)
        assert decide(memory, [episode_on(0)], seeds, CTX, HYB, rows) == decide(
            memory, [episode_on(0)], seeds, CTX, HYB
        )


def test_the_corpus_baselines_cut_at_long_gaps_and_join_near_members():
    """The two baselines of benchmarks/detection_kinds.py on five memories: three a minute
    apart (the first two alike), a long pause, two more a minute apart; the last near the
    first."""
    sim = _sim_module()
    times = [0, 60, 120, 10_000, 10_060]  # seconds; median gap 60
    vectors = np.stack([basis(0), basis(0), basis(1), basis(2), vec_at(0.9, 0, 3)])
    records = [
        sim.Record(f"m{k}", T0 + timedelta(seconds=t), "", frozenset(), "a", None)
        for k, t in enumerate(times)
    ]
    stream = sim.Stream("s", records, vectors)
    gap = sim.time_gap(stream, 2.0)  # a gap over 120 s starts an episode
    assert gap[0] == gap[1] == gap[2] and gap[3] == gap[4] and gap[0] != gap[3]
    near = sim.nearest_member(stream, 0.40)
    assert near[0] == near[1] == near[4] and near[2] is None and near[3] is None
