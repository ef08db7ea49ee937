"""Fit the extraction's sure model (``tribalmemory/entities/sure_model.json``).

Every span the rules find in the hand-labelled memories of ``benchmarks/entity_labels/`` is a
row of :func:`tribalmemory.entities.confidence.span_features` (the names an earlier memory of
the stream taught as ``known``, as the engine keeps them), labelled by whether a hand label
marks that span. Shallow boosted trees (scikit-learn, the ``bench`` extra) are fitted on the
tuning streams (``entities.TUNING``); the threshold is the lowest at which the validation
streams (``entities.VALIDATION``, labelled blind and never tuned on) reach span precision
:data:`TARGET`, pooled; the held-out streams (``entities.FRESH``) and the kept-aside ones are
scored once with it. Prints the precision / recall of every group at a range of thresholds.

    python benchmarks/fit_entity_confidence.py ../shared/corpus [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from boosted import exported  # noqa: E402
from entities import (  # noqa: E402
    ASIDE,
    FRESH,
    TUNING,
    VALIDATION,
    extracted,
    label_file,
    load,
    with_known,
)

from tribalmemory.entities.confidence import (  # noqa: E402
    MODEL_FILE,
    SureModel,
    feature_names,
    span_features,
)

VERSION = 1
TARGET = 0.85
"""Issue 43's precision target for the extraction without an LLM."""
SEED = 0
GRID = [round(0.30 + 0.01 * i, 2) for i in range(66)]
MODEL_PATH = Path(__file__).resolve().parent.parent / "tribalmemory/entities" / MODEL_FILE


class Spans:
    """The found spans of some streams: feature rows, whether each is labelled, and how many
    spans the labels mark (the recall's denominator)."""

    def __init__(self, corpus: Path, streams: Sequence[str]) -> None:
        rows: list[list[float]] = []
        right: list[bool] = []
        self.labelled = 0
        for stream in streams:
            memories = load(corpus, stream)
            for memory, entities, known in with_known(memories, extracted(memories)):
                gold = {(g["start"], g["end"]) for g in memory["gold"]}
                self.labelled += len(gold)
                for e in entities:
                    rows.append(span_features(memory["content"], e, known))
                    right.append((e.start, e.end) in gold)
        self.x = np.array(rows, dtype=np.float64).reshape(len(rows), len(feature_names()))
        self.y = np.array(right, dtype=bool)

    def scores(self, probabilities: np.ndarray, threshold: float) -> tuple[float, float]:
        """Span precision and recall when the spans at or above ``threshold`` are kept."""
        kept = probabilities >= threshold
        matched = int((kept & self.y).sum())
        return matched / max(1, int(kept.sum())), matched / max(1, self.labelled)


def data_hash(streams: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for stream in streams:
        digest.update(label_file(stream).read_bytes())
    return digest.hexdigest()[:12]


def fit(spans: Spans) -> SureModel:
    from sklearn.ensemble import HistGradientBoostingClassifier

    clf = HistGradientBoostingClassifier(
        max_depth=3, max_iter=200, learning_rate=0.1, early_stopping=False, random_state=SEED
    )
    clf.fit(spans.x, spans.y)
    trees, baseline = exported(clf)
    return SureModel(feature_names(), trees, baseline, threshold=0.5)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="the corpus folder (with train/, validation/)")
    parser.add_argument("--write", action="store_true", help=f"write {MODEL_PATH.name}")
    args = parser.parse_args(argv)
    groups = {
        "tuning": Spans(args.corpus, TUNING),
        "validation": Spans(args.corpus, VALIDATION),
        "held out": Spans(args.corpus, FRESH),
        "kept aside": Spans(args.corpus, ASIDE),
    }
    model = fit(groups["tuning"])
    probabilities = {g: model.probabilities(s.x) for g, s in groups.items()}
    validation = groups["validation"]
    threshold = next(
        (t for t in GRID if validation.scores(probabilities["validation"], t)[0] >= TARGET),
        GRID[-1],
    )
    print("threshold | " + " | ".join(f"{g} P / R" for g in groups))
    for t in [0.0, *GRID[::5], threshold]:
        cells = [
            "{:.3f} / {:.3f}".format(*s.scores(probabilities[g], t)) for g, s in groups.items()
        ]
        print(f"{t:.2f}{' (chosen)' if t == threshold else ''} | " + " | ".join(cells))
    chosen = {
        g: dict(zip(("precision", "recall"), s.scores(probabilities[g], threshold), strict=True))
        for g, s in groups.items()
    }
    meta = {
        "script": f"benchmarks/fit_entity_confidence.py v{VERSION}",
        "fitted_on": f"{len(TUNING)} tuning streams, labels {data_hash(TUNING)}",
        "threshold_rule": f"lowest with span precision >= {TARGET} on {len(VALIDATION)} "
        f"validation streams (labels {data_hash(VALIDATION)})",
        "spans": {g: {k: round(v, 3) for k, v in c.items()} for g, c in chosen.items()},
    }
    model = replace(model, threshold=threshold, meta=meta)
    if args.write:
        MODEL_PATH.write_text(json.dumps(model.to_json()) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
