"""How far the embedding, time and authors can take detection: whole-stream clustering with
hindsight, against the online detector.

    python benchmarks/detection_bound.py STREAMS_OR_FOLDERS... --train ../shared/corpus/train
        [--cache DIR] [--write]

Each stream is clustered whole (average linkage, so every memory sees the memories after it)
on a distance of three signals: 1 − the bundled model's cosine, ``a`` · ln(1 + the time between
the two memories in the stream's median gap), and ``b`` when their authors differ. The tree is
cut at every distance of :data:`CUTS`; a cluster of one memory is in no episode. Two rows:

* **per stream, cut with the gold labels**: each stream's best (``a``, ``b``, cut), chosen on
  its own labels: what these signals could give if the right grouping of every stream were
  known (an optimistic figure, not a detector);
* **one setting, fitted on train**: the (``a``, ``b``, cut) with the best mean over kinds of
  each kind's mean F1 on ``--train``, applied to every stream (hindsight, no labels).

The online detector that ships (``detector_sim``, embedding only) is the third row. Reported
per source kind as ``detection_kinds.py`` does (mean / worst stream). ``--write`` writes the
"detection-bound" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detection_kinds import embedding_scores, kind_of, stream_paths, table  # noqa: E402
from detector_sim import Stream, load, scores, singletons_to_none  # noqa: E402

TIME_WEIGHTS = (0.0, 0.02, 0.05, 0.1, 0.2)
AUTHOR_WEIGHTS = (0.0, 0.1, 0.3)
CUTS = tuple(round(x, 2) for x in np.arange(0.2, 2.01, 0.05))

Setting = tuple[float, float, float]  # time weight, author weight, cut


def signals(stream: Stream) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three terms of the distance for every pair of the stream's memories: 1 − cosine,
    ln(1 + gap / the stream's median gap) and whether the authors differ (1 or 0)."""
    v = stream.vectors.astype(np.float64)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    t = np.array([r.created_at.timestamp() for r in stream.records])
    gaps = np.diff(t)
    pace = float(np.median(gaps[gaps > 0])) if (gaps > 0).any() else 1.0
    authors = np.array([r.source_instance for r in stream.records])
    return (
        1.0 - v @ v.T,
        np.log1p(np.abs(t[:, None] - t[None, :]) / pace),
        (authors[:, None] != authors[None, :]).astype(np.float64),
    )


def grid_f1(stream: Stream) -> dict[Setting, float]:
    """Pairwise F1 of the stream at every setting of the grid."""
    out: dict[Setting, float] = {}
    if len(stream.records) < 2:
        return {s: 0.0 for s in itertools.product(TIME_WEIGHTS, AUTHOR_WEIGHTS, CUTS)}
    cosine, gap, differ = signals(stream)
    for a, b in itertools.product(TIME_WEIGHTS, AUTHOR_WEIGHTS):
        d = np.clip(cosine + a * gap + b * differ, 0.0, None)
        np.fill_diagonal(d, 0.0)
        tree = linkage(squareform(d, checks=False), method="average")
        for cut in CUTS:
            pred = singletons_to_none(fcluster(tree, t=cut, criterion="distance").tolist())
            out[(a, b, cut)] = scores(pred, stream.gold)["f1"]
    return out


def fitted_setting(streams: Sequence[Stream], grids: Sequence[dict[Setting, float]]) -> Setting:
    """The setting with the best mean over kinds of each kind's mean F1."""

    def objective(setting: Setting) -> float:
        by_kind: dict[str, list[float]] = defaultdict(list)
        for s, g in zip(streams, grids, strict=True):
            by_kind[kind_of(s.name)].append(g[setting])
        return float(np.mean([np.mean(v) for v in by_kind.values()]))

    return max(grids[0], key=objective)


def report(streams: Sequence[Stream], train: Sequence[Stream], workers: int) -> str:
    with ProcessPoolExecutor(workers) as pool:
        grids = list(pool.map(grid_f1, streams))
        train_grids = list(pool.map(grid_f1, train))
        detector = list(pool.map(embedding_scores, streams))
    a, b, cut = fitted_setting(train, train_grids)
    rows = {
        "whole stream, each stream cut with its gold labels": [
            {"f1": max(g.values())} for g in grids
        ],
        f"whole stream, one setting fitted on train (a {a:g}, b {b:g}, cut {cut:g})": [
            {"f1": g[(a, b, cut)]} for g in grids
        ],
        "online detector (shipped, embedding only)": [{"f1": r["f1"]} for r in detector],
    }
    lines = [
        "Pairwise F1 per source kind, mean / worst stream: the streams clustered whole with "
        "hindsight (average linkage on 1 − cosine + a · ln(1 + gap / median gap) + b · "
        "[authors differ]; `benchmarks/detection_bound.py`) against the online detector.",
        "",
        *table(streams, rows, ()),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("paths", nargs="+", help="streams or folders to report on")
    ap.add_argument("--train", nargs="+", required=True, help="streams the setting is fitted on")
    ap.add_argument("--cache", type=Path, default=None, help="folder to keep the vectors in")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args(argv)
    streams = load(stream_paths(args.paths), args.cache)
    train = load(stream_paths(args.train), args.cache)
    text = report(streams, train, args.workers)
    print(text)
    if args.write:
        from report import write_section

        write_section("detection-bound", "## Detection with hindsight\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
