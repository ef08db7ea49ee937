"""Fit the detector's join model on a labelled corpus, choose its threshold on validation.

    python benchmarks/fit_detector.py --train ../shared/corpus/train \\
        --validation ../shared/corpus/validation ../shared/datasets [--cache DIR] [--write]

Reproducible (fixed seed, sorted inputs): the same corpus gives the same weights.

1. **Rows.** Each training stream is replayed online through
   :func:`tribalmemory.episodes.detector.rank_candidates` (the engine's own feature code: no
   train/serve skew). Every candidate of every decision becomes a row of
   :data:`~tribalmemory.episodes.detector.FEATURES`, labelled 1 when the candidate's members'
   majority gold label is the memory's own (a memory in no episode joins nothing). The first
   round places each memory where the gold labels say (teacher forcing); later rounds replay
   with the model fitted so far, so the model also learns from the states its own mistakes
   make (DAgger, rounds aggregated).
2. **Weights.** Every source kind weighs the same (agents' memories twice:
   :data:`KIND_WEIGHT`), every stream within a kind the same, every decision within a stream
   the same (122 IRC days must not outvote 5 team streams).
3. **Fit.** L2-regularised logistic regression by Newton's method on standardised features
   (numpy only), folded back to raw-feature weights.
4. **Choose.** The join threshold (and the L2 strength) maximise, on the validation streams
   replayed with :mod:`detector_sim` (the engine's detection, online), the mean over kinds of
   each kind's mean pairwise F1; ties go to the better worst kind.

``--write`` stores the model in ``tribalmemory/episodes/join_model.json`` with this script's
version, the hash of the training data (ids, labels, texts) and the validation table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from boosted import exported  # noqa: E402
from detection_kinds import kind_of, stream_paths  # noqa: E402
from detector_sim import (  # noqa: E402
    Stream,
    features,
    load,
    scores,
    simulate,
)

from tribalmemory.episodes.detector import (  # noqa: E402
    FEATURES,
    DetectorContext,
    DetectorParams,
    EpisodeFeatures,
    MemoryFeatures,
    add_member,
    build_episode,
    eligible_episodes,
    eligible_seeds,
    rank_candidates,
    update_context,
)
from tribalmemory.episodes.join_model import JoinModel  # noqa: E402

SCRIPT_VERSION = "fit_detector 1"
SEED = 0
ROUNDS = 2
"""Rounds replayed with the model fitted so far, after the teacher-forced one."""
L2 = 1e-3
"""The logistic regression's L2 strength (per unit of sample weight)."""
COLLECT_THRESHOLD = 0.3
"""The join threshold of the replays that collect rows (the validation chooses the final one)."""
KIND_WEIGHT = {"agent": 2.0}
"""Agents' memories, the product's own use and the scarcest kind (five streams), weigh twice
what each other kind weighs; every other kind weighs the same."""
THRESHOLD_GRID = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)
MODEL_PATH = Path(__file__).resolve().parent.parent / "tribalmemory/episodes/join_model.json"


AUGMENTED_KINDS = {"burst": 0.5, "cold": 0.5, "solo": 0.5, "paused": 0.5, "mixed": 0.5}
"""Made-up training streams (:func:`augment`) and their weight, each a kind of its own."""
BURST_PACES = (1.0, 30.0)
"""Median gaps (seconds) of the burst copies of the agent streams."""
SLOW_PACE = 6 * 3600.0
"""Median gap (seconds) of the slow copy of each agent stream (a user who notes a few things a
day): a thread then spans days, as a one-person project's does."""
COLD_LENGTH, COLD_STEP, COLD_PER_STREAM = 30, 40, 2
"""Cold starts: windows of this many memories, one every ``COLD_STEP``, replayed from an empty
context."""
PAUSES, PAUSE_DAYS = 3, (3.0, 10.0)
"""Paused copies: this many pauses, each of a length drawn in this range (days, inside the
14-day active window), inserted at random points of an agent stream: every thread open at a
pause resumes after it."""
MIXED_LENGTH = 12
"""Mixed cold starts: this many memories of each of two teams' streams, interleaved in a
burst by one author, from an empty context: a new user's first notes are often about unrelated
things, written seconds apart."""


def training_kind(name: str) -> str:
    """A training stream's kind: an augmented one's own (``name~burst...``), else its source's."""
    suffix = name.partition("~")[2]
    for kind in AUGMENTED_KINDS:
        if suffix.startswith(kind):
            return kind
    return kind_of(name)


def warped(stream: Stream, pace: float) -> Stream:
    """``stream`` with its gaps scaled so that their median is ``pace`` seconds: the same
    memories, written in a burst (an import without dates, an agent saving a session's notes,
    a test)."""
    records = stream.records
    gaps = [
        (b.created_at - a.created_at).total_seconds()
        for a, b in zip(records, records[1:], strict=False)
    ]
    scale = pace / max(float(np.median(gaps)), 1.0)
    start, out = records[0].created_at, [records[0]]
    elapsed = 0.0
    for gap, record in zip(gaps, records[1:], strict=True):
        elapsed += gap * scale
        out.append(replace(record, created_at=start + timedelta(seconds=elapsed)))
    return Stream(f"{stream.name}~burst{pace:g}", out, stream.vectors)


def solo(stream: Stream) -> Stream:
    """``stream`` as one agent writes it: every memory by the same author (a user with one
    coding agent), so authorship tells nothing."""
    records = [replace(r, source_instance="agent") for r in stream.records]
    return Stream(f"{stream.name}~solo", records, stream.vectors)


def windows(stream: Stream) -> list[Stream]:
    """Cold starts: windows of :data:`COLD_LENGTH` memories of ``stream``, each replayed from
    an empty context (how a new user's store begins)."""
    n = len(stream.records)
    return [
        Stream(
            f"{stream.name}~cold{start}",
            stream.records[start : start + COLD_LENGTH],
            stream.vectors[start : start + COLD_LENGTH],
        )
        for start in range(0, max(n - COLD_LENGTH, 0) + 1, COLD_STEP)
    ]


def paused(stream: Stream, seed: int) -> Stream:
    """``stream`` with :data:`PAUSES` pauses of :data:`PAUSE_DAYS` inserted at random points
    (``seed`` fixes them): every memory after a pause is moved later by its length."""
    rng = np.random.default_rng(seed)
    n = len(stream.records)
    points = sorted(rng.choice(np.arange(1, n), size=min(PAUSES, n - 1), replace=False).tolist())
    shifts = np.zeros(n)
    for point in points:
        shifts[point:] += rng.uniform(*PAUSE_DAYS) * 86400.0
    out = [
        replace(r, created_at=r.created_at + timedelta(seconds=float(shift)))
        for r, shift in zip(stream.records, shifts, strict=True)
    ]
    return Stream(f"{stream.name}~paused", out, stream.vectors)


def mixed(a: Stream, b: Stream, start: int) -> Stream:
    """A cold start of two teams' streams: :data:`MIXED_LENGTH` memories of each from
    ``start``, interleaved one second apart, all by one author. Gold labels are prefixed with
    their stream's name, so no memory of one joins a thread of the other."""
    picked = []
    for stream in (a, b):
        part = range(start, min(start + MIXED_LENGTH, len(stream.records)))
        picked.append([(stream, i) for i in part])
    order = [x for pair in zip(*picked, strict=False) for x in pair]
    t0 = a.records[0].created_at
    records, vectors = [], []
    for k, (stream, i) in enumerate(order):
        r = stream.records[i]
        gold = None if r.gold is None else f"{stream.name}:{r.gold}"
        when = t0 + timedelta(seconds=k)
        records.append(replace(r, created_at=when, gold=gold, source_instance="agent"))
        vectors.append(stream.vectors[i])
    return Stream(f"{a.name}+{b.name.partition('-')[2]}~mixed{start}", records, np.stack(vectors))


def augment(streams: Sequence[Stream]) -> list[Stream]:
    """Made-up streams from the agent-memory ones, where the corpus has too few: burst copies
    (:func:`warped`, at each of :data:`BURST_PACES`), a slow copy (:data:`SLOW_PACE`), a
    paused copy (:func:`paused`), cold starts (:func:`windows`, at the stream's own pace and in
    a burst) and mixed cold starts of two teams (:func:`mixed`); of the other kinds' streams,
    their first :data:`COLD_PER_STREAM` cold starts."""
    out: list[Stream] = []
    agents = [s for s in streams if kind_of(s.name) == "agent"]
    for stream in streams:
        if kind_of(stream.name) != "agent":
            out += windows(stream)[:COLD_PER_STREAM]
            continue
        bursts = [warped(stream, pace) for pace in BURST_PACES]
        alone = solo(stream)
        lone_burst = warped(alone, BURST_PACES[0])
        slow = warped(stream, SLOW_PACE)
        slow = Stream(f"{stream.name}~paused-slow", slow.records, slow.vectors)
        out += [*bursts, alone, lone_burst, slow, paused(stream, SEED + len(out))]
        out += windows(stream) + windows(bursts[0]) + windows(lone_burst)
    for k, a in enumerate(agents):
        for b in agents[k + 1 :]:
            out += [mixed(a, b, start) for start in (0, 60)]
    return out


def data_hash(streams: Sequence[Stream]) -> str:
    """Hash of what the model was fitted on: each stream's ids, gold labels and texts."""
    h = hashlib.sha256()
    for s in sorted(streams, key=lambda s: s.name):
        h.update(s.name.encode())
        for r in s.records:
            h.update(f"{r.id}\t{r.gold}\t{r.content}\n".encode())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


@dataclass
class Rows:
    x: np.ndarray
    y: np.ndarray
    w: np.ndarray


def _label(members: Sequence[str | None]) -> str | None:
    top = Counter(members).most_common(1)
    return top[0][0] if top else None


def collect(stream: Stream, model: JoinModel | None, params: DetectorParams) -> Rows:
    """Rows of one online replay of ``stream``: with ``model`` None each memory is placed where
    its gold label says, else where ``model`` decides (embedding strategy). Candidates are
    ranked with the shipped feature code either way; a teacher-forced round scores with
    ``params.model`` (its ranking only orders the rows)."""
    feats: list[MemoryFeatures] = features(stream)
    gold = stream.gold
    window = timedelta(days=params.active_window_days)
    episodes: dict[str, EpisodeFeatures] = {}
    labels: dict[str, list[str | None]] = {}
    seeds: dict[str, int] = {}
    context = DetectorContext()
    scorer = params.model if model is None else model
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    ws: list[np.ndarray] = []
    counter = 0
    for i, mem in enumerate(feats):
        now = mem.created_at
        for sid in [s for s, j in seeds.items() if now - feats[j].created_at > window]:
            del seeds[sid]
        active = eligible_episodes(
            episodes.values(), now, params.active_window_days, params.max_active_episodes
        )
        seed_feats = eligible_seeds([feats[j] for j in seeds.values()], now, window.days)
        out: list[np.ndarray] = []
        ranked, background = rank_candidates(mem, active, seed_feats, context, scorer, None, out)
        context = update_context(context, mem, background)
        choice = None
        if ranked:
            cand_labels = [
                _label(labels[c.id]) if c.kind == "episode" else gold[seeds[c.id]] for c in ranked
            ]
            y = np.array(
                [1.0 if gold[i] is not None and lab == gold[i] else 0.0 for lab in cand_labels]
            )
            xs.append(out[0])
            ys.append(y)
            ws.append(np.full(len(ranked), 1.0 / len(feats)))
            if model is None:
                right = [k for k, v in enumerate(y) if v]
                choice = ranked[right[0]] if right else None
            elif ranked[0].score >= model.threshold:
                choice = ranked[0]
        if choice is None:
            seeds[mem.id] = i
        elif choice.kind == "episode":
            episodes[choice.id] = add_member(episodes[choice.id], mem)
            labels[choice.id].append(gold[i])
        else:
            j = seeds.pop(choice.id)
            eid = f"ep{counter}"
            counter += 1
            episodes[eid] = build_episode(eid, [feats[j], mem])
            labels[eid] = [gold[j], gold[i]]
    if not xs:
        return Rows(np.empty((0, len(FEATURES))), np.empty(0), np.empty(0))
    return Rows(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws))


def _collect_job(args: tuple[Stream, JoinModel | None]) -> Rows:
    stream, model = args
    return collect(stream, model, DetectorParams(strategy="embedding"))


def gather(
    streams: Sequence[Stream],
    model: JoinModel | None,
    pool: ProcessPoolExecutor,
    kind_weight: dict[str, float] = KIND_WEIGHT,
) -> Rows:
    """Rows of every stream, weighted so that each kind, each stream in a kind and each
    decision in a stream weighs the same."""
    weight = {**kind_weight, **AUGMENTED_KINDS}
    per_kind = Counter(training_kind(s.name) for s in streams)
    total = sum(weight.get(k, 1.0) for k in per_kind)
    parts = list(pool.map(_collect_job, [(s, model) for s in streams]))
    xs, ys, ws = [], [], []
    for s, rows in zip(streams, parts, strict=True):
        xs.append(rows.x)
        ys.append(rows.y)
        kind = training_kind(s.name)
        ws.append(rows.w * weight.get(kind, 1.0) / (total * per_kind[kind]))
    return Rows(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws))


# --------------------------------------------------------------------------------------------
# Fit
# --------------------------------------------------------------------------------------------


def fit_logistic(rows: Rows, l2: float, iterations: int = 50) -> tuple[np.ndarray, float]:
    """Weighted L2 logistic regression (Newton's method) on standardised features; returns
    raw-feature weights and bias. ``l2`` is per unit of total sample weight."""
    mean = np.average(rows.x, axis=0, weights=rows.w)
    scale = np.sqrt(np.average((rows.x - mean) ** 2, axis=0, weights=rows.w))
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(rows.x - mean) / scale, np.ones((len(rows.x), 1))])
    w = rows.w / rows.w.sum()
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0  # the bias is not shrunk
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(z @ beta)))
        grad = z.T @ (w * (p - rows.y)) + penalty * beta
        hess = (z * (w * p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    weights = beta[:-1] / scale
    bias = float(beta[-1] - (beta[:-1] * mean / scale).sum())
    return weights, bias


INCREASING = (
    "z_max",
    "z_centroid",
    "z_last",
    "z_centroid_by_words",
    "z_margin",
    "lexical",
    "lexical_margin",
    "identifiers",
    "shares_identifier",
    "shares_tag",
    "own_thread",
    "cosine",
    "coverage",
    "z_mean",
)
DECREASING = ("gap_paces",)
"""Monotone constraints of the trees: more similarity, more shared words, identifiers or tags,
a wider lead over the other candidates, being where a short reply's author wrote last never
lower P(joins); a longer gap never raises it
(what a user expects, and what the tests check)."""


def fit_trees(rows: Rows, depth: int = 3, iterations: int = 150) -> JoinModel:
    """Shallow boosted trees (scikit-learn, a benchmark extra) on the rows, exported to the
    package's own evaluator (:class:`~tribalmemory.trees.Trees`)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    constraints = [1 if f in INCREASING else -1 if f in DECREASING else 0 for f in FEATURES]
    clf = HistGradientBoostingClassifier(
        max_depth=depth,
        max_iter=iterations,
        learning_rate=0.1,
        monotonic_cst=constraints,
        early_stopping=False,
        random_state=SEED,
    )
    clf.fit(rows.x, rows.y, sample_weight=rows.w / rows.w.mean())
    trees, baseline = exported(clf)
    return JoinModel(
        FEATURES,
        np.zeros(len(FEATURES)),
        baseline,
        name="join-trees",
        trees=trees,
    )


def fit(kind: str, rows: Rows, depth: int = 3, iterations: int = 150) -> JoinModel:
    """A model of ``kind`` (``trees`` or ``logistic``) fitted on ``rows``."""
    if kind == "trees":
        model = fit_trees(rows, depth, iterations)
    else:
        model = JoinModel(FEATURES, *fit_logistic(rows, L2), name="join-logistic")
    return replace(model, threshold=COLLECT_THRESHOLD)


def fit_rounds(
    streams: Sequence[Stream],
    pool: ProcessPoolExecutor,
    weights: dict[str, float],
    kind: str = "trees",
    rounds: int = ROUNDS,
    depth: int = 3,
    iterations: int = 150,
    teacher: Rows | None = None,
    report: Callable[[int, Rows, JoinModel], None] | None = None,
) -> JoinModel:
    """A model of ``kind`` fitted on the teacher-forced rows of ``streams`` (``teacher`` if
    already gathered), then ``rounds`` times again with the rows of the streams replayed with
    the model so far added (DAgger); ``report(round, rows, model)`` after each round."""
    rows = gather(streams, None, pool, weights) if teacher is None else teacher
    model = fit(kind, rows, depth, iterations)
    for round_ in range(1, rounds + 1):
        more = gather(streams, model, pool, weights)
        rows = Rows(
            np.vstack([rows.x, more.x]),
            np.concatenate([rows.y, more.y]),
            np.concatenate([rows.w, more.w]),
        )
        model = fit(kind, rows, depth, iterations)
        if report is not None:
            report(round_, rows, model)
    return model


def log_loss(rows: Rows, model: JoinModel) -> float:
    p = 1.0 / (1.0 + np.exp(-model.logits(rows.x)))
    p = np.clip(p, 1e-9, 1 - 1e-9)
    ll = -(rows.y * np.log(p) + (1 - rows.y) * np.log(1 - p))
    return float(np.average(ll, weights=rows.w))


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _replay_job(args: tuple[Stream, JoinModel]) -> dict[str, float]:
    stream, model = args
    params = DetectorParams(strategy="embedding", threshold=model.threshold, model=model)
    result = simulate(stream, params)
    return scores(result.assignment, stream.gold)


def per_kind(
    streams: Sequence[Stream], results: Sequence[dict[str, float]], key: str = "f1"
) -> dict[str, dict[str, float]]:
    """Each kind's mean and worst stream of ``key``."""
    by_kind: dict[str, list[float]] = defaultdict(list)
    for s, r in zip(streams, results, strict=True):
        by_kind[kind_of(s.name)].append(r[key])
    return {
        k: {"mean": float(np.mean(v)), "worst": min(v), "n": len(v)} for k, v in by_kind.items()
    }


def objective(table: dict[str, dict[str, float]]) -> tuple[float, float]:
    means = [row["mean"] for row in table.values()]
    return float(np.mean(means)), min(means)


def validate(
    streams: Sequence[Stream], model: JoinModel, pool: ProcessPoolExecutor
) -> dict[str, dict[str, float]]:
    results = list(pool.map(_replay_job, [(s, model) for s in streams]))
    return per_kind(streams, results)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--train", nargs="+", required=True, help="training streams or folders")
    ap.add_argument("--validation", nargs="+", required=True, help="validation streams/folders")
    ap.add_argument("--cache", type=Path, default=None, help="folder to keep the vectors in")
    ap.add_argument("--irc-streams", type=int, default=0, help="IRC training streams used (0: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--models", nargs="+", default=["trees"], choices=["trees", "logistic"])
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="rounds replayed with the model")
    ap.add_argument("--no-augment", action="store_true", help="no made-up training streams")
    ap.add_argument("--depth", type=int, default=3, help="the trees' depth")
    ap.add_argument("--iterations", type=int, default=150, help="boosting iterations")
    ap.add_argument(
        "--agent-weight", type=float, default=KIND_WEIGHT["agent"], help="the agents' kind weight"
    )
    ap.add_argument("--write", action="store_true", help="write the model (see --out)")
    ap.add_argument("--out", type=Path, default=MODEL_PATH, help="where --write writes it")
    args = ap.parse_args(argv)
    started = time.monotonic()
    train_paths = stream_paths(args.train)
    irc = [p for p in train_paths if kind_of(p.stem) == "irc"]
    step = math.ceil(len(irc) / args.irc_streams) if args.irc_streams else 1
    keep = set(irc[::step])
    train_paths = [p for p in train_paths if kind_of(p.stem) != "irc" or p in keep]
    train = load(train_paths, args.cache)
    if not args.no_augment:
        train += augment(train)
    valid = load(stream_paths(args.validation), args.cache)
    print(f"train: {Counter(training_kind(s.name) for s in train)}", flush=True)
    print(f"validation: {Counter(kind_of(s.name) for s in valid)}", flush=True)
    np.random.seed(SEED)
    best: tuple[tuple[float, float], JoinModel, dict[str, dict[str, float]], str] | None = None
    with ProcessPoolExecutor(args.workers) as pool:
        weights = {**KIND_WEIGHT, "agent": args.agent_weight}
        teacher = gather(train, None, pool, weights)
        print(f"teacher-forced rows: {len(teacher.y)} ({time.monotonic() - started:.0f} s)")
        for kind in args.models:

            def report(round_: int, rows: Rows, model: JoinModel, kind: str = kind) -> None:
                print(
                    f"{kind} round {round_}: {len(rows.y)} rows, log loss "
                    f"{log_loss(rows, model):.4f} ({time.monotonic() - started:.0f} s)",
                    flush=True,
                )

            model = fit_rounds(
                train,
                pool,
                weights,
                kind,
                args.rounds,
                args.depth,
                args.iterations,
                teacher=teacher,
                report=report,
            )
            for threshold in THRESHOLD_GRID:
                candidate = replace(model, threshold=threshold)
                table = validate(valid, candidate, pool)
                score = objective(table)
                cells = "  ".join(
                    f"{k} {v['mean']:.3f}/{v['worst']:.3f}" for k, v in sorted(table.items())
                )
                print(f"{kind} t {threshold}: {score[0]:.3f} (worst kind {score[1]:.3f})  {cells}")
                if best is None or score > best[0]:
                    best = (score, candidate, table, kind)
    assert best is not None
    score, model, table, kind = best
    meta = {
        "script": SCRIPT_VERSION,
        "data_hash": data_hash(train),
        "train_streams": len(train),
        "model": kind,
        "rounds": args.rounds,
        "depth": args.depth,
        "iterations": args.iterations,
        "agent_weight": args.agent_weight,
        "threshold_objective": [round(score[0], 4), round(score[1], 4)],
        "validation": {k: {m: round(v, 4) for m, v in row.items()} for k, row in table.items()},
    }
    model = replace(model, meta={**meta, "digest": model.digest()})
    print(json.dumps({k: v for k, v in model.to_json().items() if k != "trees"}, indent=1))
    if args.write:
        args.out.write_text(json.dumps(model.to_json(), separators=(",", ":")) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
