"""The fitted model behind every detection decision: P(a memory joins a candidate).

A logistic regression over the features of :func:`.detector.scoring.candidate_row` (one row per
candidate: similarity against the stream's background, shared rare terms and identifiers, the
gap in the stream's own pace, authorship, tags, the candidate's size and age, margins to the
other candidates). Its weights are fitted by ``benchmarks/fit_detector.py`` on the labelled
streams of a wide corpus and shipped beside this module as ``join_model.json``, with the
fitting script's version, the hash of the data it was fitted on and the join threshold chosen
on the validation streams. Pure: no I/O beyond reading that file once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from typing import Any

import numpy as np

MODEL_FILE = "join_model.json"
CHUNK = 4096
"""Rows walked through the trees at once (a decision has a few dozen; fitting, millions)."""


@dataclass(frozen=True)
class Trees:
    """Boosted regression trees (shallow), padded to one array per field: row ``t`` is tree
    ``t``; node 0 is the root; a leaf has ``feature`` -1. A row of features goes left at a node
    when its value is at most the node's threshold. The logit adds each tree's leaf value."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    depth: int

    @classmethod
    def from_json(cls, trees: Sequence[Mapping[str, Sequence[float]]]) -> Trees:
        width = max(len(t["feature"]) for t in trees)

        def pad(key: str, fill: float, dtype: Any) -> np.ndarray:
            out = np.full((len(trees), width), fill, dtype=dtype)
            for i, tree in enumerate(trees):
                out[i, : len(tree[key])] = tree[key]
            return out

        feature = pad("feature", -1, np.int64)
        left, right = pad("left", 0, np.int64), pad("right", 0, np.int64)
        depth = _depth(feature, left, right)
        return cls(
            feature,
            pad("threshold", 0.0, np.float64),
            left,
            right,
            pad("value", 0.0, np.float64),
            depth,
        )

    def to_json(self) -> list[dict[str, list[int] | list[float]]]:
        out: list[dict[str, list[int] | list[float]]] = []
        for t in range(self.feature.shape[0]):
            n = int(np.max(np.nonzero(self.feature[t] >= 0)[0], initial=-1)) + 1
            n = max(n, int(max(self.left[t].max(), self.right[t].max())) + 1)
            out.append(
                {
                    "feature": [int(f) for f in self.feature[t, :n]],
                    "threshold": [float(x) for x in self.threshold[t, :n]],
                    "left": [int(x) for x in self.left[t, :n]],
                    "right": [int(x) for x in self.right[t, :n]],
                    "value": [float(x) for x in self.value[t, :n]],
                }
            )
        return out

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """The sum of the trees' leaf values for each row (in chunks: the walk keeps a node
        per tree and row)."""
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        if rows.shape[0] > CHUNK:
            parts = [self._walk(rows[i : i + CHUNK]) for i in range(0, rows.shape[0], CHUNK)]
            return np.concatenate(parts)
        return self._walk(rows)

    @cached_property
    def _nodes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The trees as one flat array of nodes (tree ``t``'s node ``i`` at ``t * width + i``):
        each node's feature, threshold, children (left, right: row ``2 * node``, ``2 * node +
        1``) and value, and the roots. A leaf is its own child on both sides, so the walk
        needs no test for leaves (it stays on one once there)."""
        count, width = self.feature.shape
        base = (np.arange(count) * width)[:, None]
        leaf = self.feature < 0
        itself = base + np.arange(width)[None, :]
        children = np.stack(
            [np.where(leaf, itself, base + self.left), np.where(leaf, itself, base + self.right)],
            axis=-1,
        ).reshape(-1)
        feature = np.where(leaf, 0, self.feature).reshape(-1)
        return feature, self.threshold.reshape(-1), children, self.value.reshape(-1), base[:, 0]

    def _walk(self, rows: np.ndarray) -> np.ndarray:
        """Every row down every tree at once (trees x rows nodes, one step per level). A row
        goes right where it is not at most the threshold (NaN too)."""
        feature, threshold, children, value, roots = self._nodes
        n, width = rows.shape
        flat = rows.reshape(-1)
        starts = np.arange(n) * width
        node = np.repeat(roots[:, None], n, axis=1)
        for _ in range(self.depth):
            right = ~(flat[starts + feature[node]] <= threshold[node])
            node = children[2 * node + right]
        # trees x rows, summed over the trees in their order: the sum the model was fitted with
        return value[node].sum(axis=0)


def _depth(feature: np.ndarray, left: np.ndarray, right: np.ndarray) -> int:
    """The deepest path of any tree (how many steps :meth:`Trees.predict` takes)."""
    deepest = 0
    for t in range(feature.shape[0]):
        stack = [(0, 0)]
        while stack:
            node, d = stack.pop()
            if feature[t, node] < 0:
                deepest = max(deepest, d)
            else:
                stack += [(int(left[t, node]), d + 1), (int(right[t, node]), d + 1)]
    return deepest


@dataclass(frozen=True)
class JoinModel:
    """``logit = features @ weights + bias``; ``threshold``: the probability at or above which
    the best candidate is joined (chosen on validation). ``meta``: how and on what it was
    fitted (script version, data hash, validation scores), for ``/v1/health`` and the docs."""

    features: tuple[str, ...]
    weights: np.ndarray
    bias: float
    threshold: float = 0.5
    name: str = "join-logistic"
    meta: Mapping[str, Any] = field(default_factory=dict)
    trees: Trees | None = None
    """Boosted trees added to the linear part (None: logistic regression alone)."""

    def __post_init__(self) -> None:
        weights = np.asarray(self.weights, dtype=np.float64).reshape(-1)
        if weights.shape[0] != len(self.features):
            raise ValueError(
                f"the join model has {weights.shape[0]} weights for {len(self.features)} features"
            )
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "features", tuple(self.features))

    def logits(self, rows: np.ndarray) -> np.ndarray:
        """One logit per row of ``rows`` (candidates x features, in :attr:`features` order)."""
        rows = np.asarray(rows, dtype=np.float64)
        out = rows @ self.weights + self.bias
        return out if self.trees is None else out + self.trees.predict(rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "features": list(self.features),
            "weights": [float(w) for w in self.weights],
            "bias": float(self.bias),
            "threshold": float(self.threshold),
            "meta": dict(self.meta),
            **({"trees": self.trees.to_json()} if self.trees is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JoinModel:
        return cls(
            features=tuple(str(f) for f in data["features"]),
            weights=np.asarray([float(w) for w in data["weights"]]),
            bias=float(data["bias"]),
            threshold=float(data.get("threshold", 0.5)),
            name=str(data.get("name", "join-logistic")),
            meta=dict(data.get("meta", {})),
            trees=Trees.from_json(data["trees"]) if data.get("trees") else None,
        )

    def digest(self) -> str:
        """A short hash of the parameters (what ``/v1/health`` shows beside the name)."""
        return self._digest

    @cached_property
    def _digest(self) -> str:
        """Hashed once: the parameters never change, and hashing serialises every tree (20 ms,
        which every ``/v1/health`` paid)."""
        text = json.dumps({k: v for k, v in self.to_json().items() if k != "meta"}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def describe(self) -> dict[str, Any]:
        """Name, parameters' hash, threshold and provenance, as ``/v1/health`` shows them."""
        return {
            "name": self.name,
            "digest": self.digest(),
            "threshold": self.threshold,
            "features": len(self.features),
            "fitted_by": self.meta.get("script"),
            "data_hash": self.meta.get("data_hash"),
        }


def load_join_model(text: str | None = None) -> JoinModel:
    """The model shipped with the package (or the JSON ``text`` given)."""
    if text is None:
        text = resources.files(__package__).joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return JoinModel.from_json(json.loads(text))


def check_features(model: JoinModel, expected: Sequence[str]) -> None:
    """Refuse a model fitted on other features than the detector computes."""
    if tuple(model.features) != tuple(expected):
        raise ValueError(
            f"the join model was fitted on features {list(model.features)}, "
            f"but the detector computes {list(expected)}"
        )
