"""The fitted join model: its features see only the past, the shipped file is the one the
fitting script wrote, the tree evaluator walks trees right, and fitting works end to end."""

from __future__ import annotations

import importlib
import json
import math
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from tribalmemory.episodes.detector import (
    DEFAULT_MODEL,
    FEATURES,
    DetectorParams,
    identifiers,
    terms_of,
)
from tribalmemory.episodes.join_model import JoinModel, check_features, load_join_model
from tribalmemory.trees import CHUNK, Trees

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def fit():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("fit_detector")
    finally:
        sys.path.remove(str(BENCHMARKS))


def two_threads(fit, n: int = 24, seed: int = 0):
    """Two interleaved threads of work (their own direction, words and identifiers), a memory
    every ten minutes, plus two one-off notes in no thread."""
    sim = sys.modules["detector_sim"]
    rng = np.random.default_rng(seed)
    axes = {"a": np.eye(16)[0], "b": np.eye(16)[1]}
    words = {
        "a": "ledger reconciliation drift in settlement accounts, see recon/jobs.py PAY-{k}",
        "b": "checkout page flicker on mobile safari, css grid fallback ui/Checkout.tsx",
    }
    records, vectors = [], []
    for k in range(n):
        label = "ab"[k % 2] if k not in (7, 15) else None
        axis = axes[label] if label else np.eye(16)[2 + k % 10]
        vectors.append(axis + 0.35 * rng.standard_normal(16))
        text = words[label].format(k=100 + k % 3) if label else f"one-off note number {k}"
        records.append(
            sim.Record(f"m{k}", T0 + timedelta(minutes=10 * k), text, frozenset(), "agent", label)
        )
    return sim.Stream("synth-fixture", records, np.asarray(vectors, dtype=np.float32))


def test_identifiers_are_kept_whole_and_marked() -> None:
    found = identifiers("Fix np.broadcast_shapes (#26160) in src/ledger/recon.py for PAY-1234")
    assert {"#np.broadcast_shapes", "#26160", "#src/ledger/recon.py", "#pay-1234"} <= found
    assert "#26160" in terms_of("see gh 26160")  # a number of 3+ digits, with or without '#'
    assert not identifiers("plain words only, 12 of them")  # two digits are no identifier


def test_a_memorys_features_do_not_depend_on_later_memories(fit) -> None:
    """The rows of the first k decisions are the same whether or not memories k+1... exist
    (the shipped model deciding, as in production)."""
    stream = two_threads(fit)
    params = DetectorParams(strategy="embedding")
    full = fit.collect(stream, DEFAULT_MODEL, params)
    for k in (5, 12, 20):
        sim = sys.modules["detector_sim"]
        prefix = sim.Stream("p", stream.records[:k], stream.vectors[:k])
        rows = fit.collect(prefix, DEFAULT_MODEL, params)
        assert rows.x.shape[0] > 0
        np.testing.assert_array_equal(rows.x, full.x[: rows.x.shape[0]])
        np.testing.assert_array_equal(rows.y, full.y[: rows.y.shape[0]])


def test_the_shipped_model_is_the_one_the_fitting_script_wrote(fit) -> None:
    model = load_join_model()
    check_features(model, FEATURES)  # fitted on the features the detector computes
    assert model.meta["script"] == fit.SCRIPT_VERSION
    assert model.meta["digest"] == model.digest()  # parameters unchanged since they were fitted
    assert len(model.meta["data_hash"]) == 16
    assert 0.0 < model.threshold < 1.0
    assert DetectorParams().threshold == model.threshold  # the default follows the model
    assert set(model.meta["validation"]) >= {"irc", "prs", "agent"}


def test_the_digest_is_hashed_once_and_tells_parameters_apart() -> None:
    """``/v1/health`` shows the digest on every call: it is hashed once (serialising the
    shipped model's trees took 20 ms a call), and other parameters give another digest."""
    model = load_join_model()
    assert model.digest() is model.digest()
    assert replace(model, bias=model.bias + 1.0).digest() != model.digest()


def test_a_model_fitted_on_another_feature_list_is_refused() -> None:
    other = JoinModel(("a", "b"), np.zeros(2), 0.0)
    with pytest.raises(ValueError, match="fitted on features"):
        check_features(other, FEATURES)
    with pytest.raises(ValueError, match="2 weights for 3 features"):
        JoinModel(("a", "b", "c"), np.zeros(2), 0.0)


def test_trees_add_each_trees_leaf_and_round_trip() -> None:
    """Two trees by hand: x0 <= 0.5 ? (x1 <= 2 ? 1 : 2) : 3, and x1 <= 0 ? -1 : 0.5."""
    trees = [
        {
            "feature": [0, 1, -1, -1, -1],
            "threshold": [0.5, 2.0, 0, 0, 0],
            "left": [1, 3, 0, 0, 0],
            "right": [2, 4, 0, 0, 0],
            "value": [0, 0, 3.0, 1.0, 2.0],
        },
        {
            "feature": [1, -1, -1],
            "threshold": [0.0, 0, 0],
            "left": [1, 0, 0],
            "right": [2, 0, 0],
            "value": [0, -1.0, 0.5],
        },
    ]
    model = JoinModel(("x0", "x1"), np.array([0.0, 1.0]), 0.25, trees=Trees.from_json(trees))
    rows = np.array([[0.0, 1.0], [0.5, 3.0], [1.0, -1.0], [0.7, 0.0]])
    # linear part: 0.25 + x1; trees: first + second
    expected = [0.25 + 1 + (1 + 0.5), 0.25 + 3 + (2 + 0.5), 0.25 - 1 + (3 - 1), 0.25 + (3 - 1)]
    np.testing.assert_allclose(model.logits(rows), expected)
    many = np.tile(rows, (CHUNK // 2, 1))  # walked in chunks: the same sums
    np.testing.assert_allclose(model.logits(many), np.tile(expected, CHUNK // 2))
    again = JoinModel.from_json(json.loads(json.dumps(model.to_json())))
    np.testing.assert_allclose(again.logits(rows), expected)
    assert again.digest() == model.digest()


def test_a_tiny_fitted_model_separates_two_obvious_threads(fit) -> None:
    """Rows of one teacher-forced replay, a logistic fit, and the replay with the fitted model
    finds the two threads exactly (they share no word, identifier or direction)."""
    train, held = two_threads(fit, seed=1), two_threads(fit, seed=2)
    rows = fit.collect(train, None, DetectorParams(strategy="embedding"))
    assert 0 < rows.y.sum() < len(rows.y)  # both classes present
    weights, bias = fit.fit_logistic(rows, fit.L2)
    model = JoinModel(FEATURES, weights, bias, threshold=0.5)
    params = DetectorParams(strategy="embedding", threshold=0.5, model=model)
    result = sys.modules["detector_sim"].simulate(held, params)
    scores = sys.modules["detector_sim"].scores(result.assignment, held.gold)
    assert scores["f1"] == 1.0 and scores["found"] == 2
    assert all(math.isfinite(w) for w in weights)
