"""Boosted regression trees (shallow), evaluated with numpy: the fitted part of the detector's
join model (:mod:`.episodes.join_model`) and of the extraction's sure model
(:mod:`.entities.confidence`). Fitted by scikit-learn in ``benchmarks/`` (a benchmark extra)
and shipped as JSON; never fitted at run time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

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
