"""Cross-validated F1 of the join model's fitting procedure on agent-memory streams.

    python benchmarks/cv_agents.py --train ../shared/corpus/train benchmarks/training_streams \\
        --agents ../shared/corpus/validation [--folds 4] [--irc-streams 30] [--cache DIR] \\
        [--agent-weight 2] [--depth 3] [--iterations 150]

The validation folder holds two agent-memory streams, and their mean F1 moves by several
hundredths with any change early in a stream (docs/benchmarks.md, *Detection per source
kind*): too few to choose how the model is fitted for agents. Here every agent-memory stream
(those of ``--train`` and ``--agents``) is held out once: the streams, sorted by name, are dealt
into ``--folds`` folds; for each fold the model is fitted as ``fit_detector.py`` fits it (the
same rows, weights, made-up streams and DAgger rounds) on the other agent streams and the
non-agent streams of ``--train`` (IRC thinned to ``--irc-streams`` days for speed), then the
fold's streams are replayed online (``detector_sim``, embedding only) at each threshold of
``--thresholds``. Prints each held-out stream's pairwise F1 and, per threshold, the mean and
worst over all streams and the spread of the folds' means; beside it the shipped model on the
same streams (fitted on most of them: not a held-out figure).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detection_kinds import kind_of, stream_paths  # noqa: E402
from detector_sim import Stream, load, pairwise_prf, simulate  # noqa: E402
from fit_detector import KIND_WEIGHT, ROUNDS, SEED, augment, fit_rounds  # noqa: E402

from tribalmemory.episodes.detector import DEFAULT_MODEL, DetectorParams  # noqa: E402
from tribalmemory.episodes.join_model import JoinModel  # noqa: E402

THRESHOLDS = (0.2, 0.3)


def folds_of(streams: Sequence[Stream], count: int) -> list[list[Stream]]:
    """``streams`` sorted by name and dealt into ``count`` folds (the same folds every run)."""
    ordered = sorted(streams, key=lambda s: s.name)
    return [ordered[k::count] for k in range(count)]


def _f1(args: tuple[Stream, JoinModel]) -> float:
    stream, model = args
    params = DetectorParams(strategy="embedding", threshold=model.threshold, model=model)
    return pairwise_prf(simulate(stream, params).assignment, stream.gold)[2]


def fitted(train: list[Stream], pool: ProcessPoolExecutor, args: argparse.Namespace) -> JoinModel:
    """The model ``fit_detector.py`` would fit on ``train`` (its made-up streams added)."""
    np.random.seed(SEED)
    weights = {**KIND_WEIGHT, "agent": args.agent_weight}
    return fit_rounds(
        train + augment(train), pool, weights, "trees", args.rounds, args.depth, args.iterations
    )


def scored(
    streams: Sequence[Stream], model: JoinModel, pool: ProcessPoolExecutor
) -> dict[float, list[float]]:
    """Each threshold's F1 per stream of ``streams``."""
    return {
        t: list(pool.map(_f1, [(s, replace(model, threshold=t)) for s in streams]))
        for t in THRESHOLDS
    }


def summary(
    name: str, f1s: dict[float, list[float]], folds: list[dict[float, list[float]]] | None
) -> str:
    lines = []
    for t, values in f1s.items():
        line = f"{name} t {t}: mean {np.mean(values):.3f}, worst {min(values):.3f}"
        if folds is not None:
            means = [float(np.mean(f[t])) for f in folds]
            line += f", folds' means {min(means):.3f}-{max(means):.3f}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--train", nargs="+", required=True, help="training streams or folders")
    ap.add_argument("--agents", nargs="*", default=[], help="more agent streams or folders")
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--irc-streams", type=int, default=30, help="IRC training days (0: all)")
    ap.add_argument("--cache", type=Path, default=None, help="folder to keep the vectors in")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=150)
    ap.add_argument("--agent-weight", type=float, default=KIND_WEIGHT["agent"])
    args = ap.parse_args(argv)
    started = time.monotonic()
    paths = stream_paths(args.train)
    irc = [p for p in paths if kind_of(p.stem) == "irc"]
    step = math.ceil(len(irc) / args.irc_streams) if args.irc_streams else 1
    paths = [p for p in paths if kind_of(p.stem) != "irc" or p in set(irc[::step])]
    extra = [p for p in stream_paths(args.agents) if kind_of(p.stem) == "agent"]
    streams = load(paths + extra, args.cache)
    agents = [s for s in streams if kind_of(s.name) == "agent"]
    others = [s for s in streams if kind_of(s.name) != "agent"]
    folds = folds_of(agents, args.folds)
    print(f"{len(agents)} agent streams in {args.folds} folds; {len(others)} other streams")
    held: dict[str, dict[float, float]] = {}
    fold_f1s: list[dict[float, list[float]]] = []
    with ProcessPoolExecutor(args.workers) as pool:
        for k, fold in enumerate(folds):
            names = {s.name for s in fold}
            model = fitted(others + [s for s in agents if s.name not in names], pool, args)
            f1s = scored(fold, model, pool)
            fold_f1s.append(f1s)
            for i, s in enumerate(fold):
                held[s.name] = {t: f1s[t][i] for t in THRESHOLDS}
            cells = ", ".join(f"t {t}: {np.mean(v):.3f}" for t, v in f1s.items())
            print(f"fold {k + 1}: {sorted(names)}: {cells} ({time.monotonic() - started:.0f} s)")
        shipped = scored(agents, DEFAULT_MODEL, pool)
    for name in sorted(held):
        print(f"  {name}: " + ", ".join(f"t {t}: {v:.3f}" for t, v in held[name].items()))
    order = sorted(held)
    cv = {t: [held[n][t] for n in order] for t in THRESHOLDS}
    print(summary("held out", cv, fold_f1s))
    print(summary("shipped model (fitted on most of them)", shipped, None))
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
