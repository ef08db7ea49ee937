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

from ..trees import Trees

MODEL_FILE = "join_model.json"


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
