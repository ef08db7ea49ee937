"""Shallow boosted trees fitted by scikit-learn (a benchmark extra), exported to the package's
own evaluator (:class:`tribalmemory.trees.Trees`): the detector's join model
(``fit_detector.py``) and the extraction's sure model (``fit_entity_confidence.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tribalmemory.trees import Trees


def exported(clf: Any) -> tuple[Trees, float]:
    """A fitted ``HistGradientBoostingClassifier``'s trees and its baseline logit."""
    trees = []
    for (predictor,) in clf._predictors:
        nodes = predictor.nodes
        leaf = nodes["is_leaf"].astype(bool)
        trees.append(
            {
                "feature": [-1 if leaf[i] else int(f) for i, f in enumerate(nodes["feature_idx"])],
                "threshold": [float(x) for x in nodes["num_threshold"]],
                "left": [int(x) for x in nodes["left"]],
                "right": [int(x) for x in nodes["right"]],
                "value": [float(x) for x in nodes["value"]],
            }
        )
    return Trees.from_json(trees), float(np.ravel(clf._baseline_prediction)[0])
