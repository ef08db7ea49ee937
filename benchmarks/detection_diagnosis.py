"""Where embedding-only detection loses its F1: each decision given a perfect past, and what
placing the memories it leaves out would be worth.

    python benchmarks/detection_diagnosis.py STREAMS_OR_FOLDERS... [--cache DIR] [--write]

For every stream (``detection_kinds.py``'s kinds), three diagnoses of the shipped detector:

1. **Decisions given a perfect past.** The stream is replayed with the gold episodes as the
   only candidates (each memory is added where its gold label says, the stream's statistics
   updated as the engine does, the active window and cap applied), and each memory is scored
   with the join model against them (:func:`~tribalmemory.episodes.detector.rank_candidates`):
   ``pick``: of the memories that continue a gold episode with another one active, the share
   whose best candidate is the right one; ``joins``: of those that continue one, the share the
   model would join to the right one (best candidate right, P at least the threshold);
   ``misses``: the share it would leave out (best P under the threshold); ``false joins``: of
   the memories that start a thread or belong to none, the share it would join somewhere.
2. **Embedding-only F1** (the online replay, ``detector_sim``), and **with the unplaced placed**:
   the same assignment with every memory it left in no episode but that has a gold one moved
   to the predicted episode holding most of that gold episode (an upper bound on what placing
   the left-out memories later could give).
3. **How far the similarity separates threads** (``pair AUC``): of two labelled memories, the
   chance that a pair from one gold episode has a higher cosine than a pair from two (the
   area under the ROC curve over all pairs of the stream, look-ahead allowed): what the
   embedding alone tells apart, before time, authors and shared terms. Where threads last
   minutes (IRC) time does much of the rest; where they run for weeks side by side (agent
   memories) it cannot.

Per kind: the mean over its streams. ``--write`` writes the "detection-diagnosis" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detection_kinds import KINDS, kind_of, stream_paths  # noqa: E402
from detector_sim import Stream, features, load, pairwise_prf, simulate  # noqa: E402

from tribalmemory.config import EpisodesConfig  # noqa: E402
from tribalmemory.episodes.detector import (  # noqa: E402
    DEFAULT_MODEL,
    DetectorContext,
    DetectorParams,
    EpisodeFeatures,
    add_member,
    build_episode,
    eligible_episodes,
    rank_candidates,
    update_context,
)

COLUMNS = ("pick", "joins", "misses", "false joins", "F1", "F1, unplaced placed", "pair AUC")


def perfect_past(stream: Stream) -> dict[str, float]:
    """Decision rates with the gold episodes as the candidates (see the module docstring)."""
    config = EpisodesConfig()
    threshold = DEFAULT_MODEL.threshold
    gold = stream.gold
    context = DetectorContext()
    episodes: dict[str, EpisodeFeatures] = {}
    picked = contested = continuing = right = missed = starting = wrong = 0
    for label, memory in zip(gold, features(stream), strict=True):
        active = eligible_episodes(
            episodes.values(), memory.created_at, config.active_window_days,
            config.max_active_episodes,
        )  # fmt: skip
        ranked, background = rank_candidates(memory, active, [], context)
        best = ranked[0] if ranked else None
        joined = best is not None and best.score >= threshold
        if label is not None and any(e.id == label for e in active):
            continuing += 1
            right += joined and best is not None and best.id == label
            missed += not joined
            if len(ranked) > 1:
                contested += 1
                picked += best is not None and best.id == label
        else:
            starting += 1
            wrong += joined
        context = update_context(context, memory, background)
        if label is not None:
            known = episodes.get(label)
            episodes[label] = add_member(known, memory) if known else build_episode(label, [memory])
    return {
        "pick": picked / max(contested, 1),
        "joins": right / max(continuing, 1),
        "misses": missed / max(continuing, 1),
        "false joins": wrong / max(starting, 1),
    }


def unplaced_placed(pred: Sequence[str | None], gold: Sequence[str | None]) -> list[str | None]:
    """``pred`` with each memory in no episode that has a gold one moved to the predicted
    episode holding most of that gold episode's memories (if any)."""
    holding: dict[str, Counter[str]] = defaultdict(Counter)
    for p, g in zip(pred, gold, strict=True):
        if p is not None and g is not None:
            holding[g][p] += 1
    return [
        p if p is not None or g is None or not holding[g] else holding[g].most_common(1)[0][0]
        for p, g in zip(pred, gold, strict=True)
    ]


def pair_auc(vectors: np.ndarray, gold: Sequence[str | None]) -> float:
    """Area under the ROC curve of cosine as a same-episode test, over all pairs of the
    memories with a gold episode (Mann-Whitney: mean rank of the same-episode pairs)."""
    keep = [i for i, g in enumerate(gold) if g is not None]
    unit = vectors[keep] / np.linalg.norm(vectors[keep], axis=1, keepdims=True)
    labels = np.array([gold[i] for i in keep])
    upper = np.triu_indices(len(keep), 1)
    cos = (unit @ unit.T)[upper]
    same = labels[upper[0]] == labels[upper[1]]
    positives, negatives = int(same.sum()), int((~same).sum())
    if not positives or not negatives:
        return float("nan")
    ranks = np.empty(len(cos))
    ranks[np.argsort(cos, kind="stable")] = np.arange(1, len(cos) + 1)
    return float((ranks[same].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def diagnose(stream: Stream) -> dict[str, float]:
    row = perfect_past(stream)
    pred = simulate(stream, DetectorParams(strategy="embedding")).assignment
    row["F1"] = pairwise_prf(pred, stream.gold)[2]
    row["F1, unplaced placed"] = pairwise_prf(unplaced_placed(pred, stream.gold), stream.gold)[2]
    row["pair AUC"] = pair_auc(stream.vectors, stream.gold)
    return row


def report(streams: Sequence[Stream], rows: Sequence[dict[str, float]]) -> str:
    by_kind: dict[str, list[dict[str, float]]] = defaultdict(list)
    for stream, row in zip(streams, rows, strict=True):
        by_kind[kind_of(stream.name)].append(row)
    lines = [
        "| kind | streams | " + " | ".join(COLUMNS) + " |",
        "|---|---:|" + "---:|" * len(COLUMNS),
    ]
    for kind in KINDS:
        mine = by_kind.get(kind)
        if mine:
            cells = " | ".join(f"{np.mean([r[c] for r in mine]):.2f}" for c in COLUMNS)
            lines.append(f"| {kind} | {len(mine)} | {cells} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("paths", nargs="+", help="streams or folders")
    ap.add_argument("--cache", type=Path, default=None, help="folder to keep the vectors in")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args(argv)
    streams = load(stream_paths(args.paths), args.cache)
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(diagnose, streams))
    text = report(streams, rows)
    print(text)
    if args.write:
        from report import write_section

        intro = (
            "## Where detection loses its F1\n\n"
            "`python benchmarks/detection_diagnosis.py ../shared/corpus/validation "
            "../shared/datasets --cache DIR --write`: the shipped join model's decisions "
            "given a perfect past (the gold episodes as candidates): `pick`, the best "
            "candidate is the right one when two or more are active; `joins`, `misses`: of "
            "the memories that continue an active episode, the share joined to the right one "
            "and the share left out; `false joins`: of those that start a thread or belong to "
            "none, the share joined somewhere. Then the embedding-only F1 of the online "
            "replay, and the same with every memory it left out moved to the episode holding "
            "most of its thread (an upper bound for placing them later). `pair AUC`: how "
            "often a pair of one thread is closer by cosine than a pair of two (all labelled "
            "pairs of a stream). Means per kind.\n\n"
        )
        write_section("detection-diagnosis", intro + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
