"""Replay labelled memory streams through the pure episode detector and score them.

    python benchmarks/detector_sim.py STREAM.jsonl [STREAM.jsonl ...] [--cache DIR]
        [--calibrate] [--write]

Each line of a stream: ``{"id", "timestamp", "content", "tags", "source_instance",
"episode" (gold label or null), "parent"}`` (the format of ``../shared/datasets``). Memories
are embedded with the bundled model (``--cache DIR`` keeps the vectors between runs), then
decided one by one in time order, online, with :func:`tribalmemory.episodes.detector.decide`
-- the code path the engine uses, without the service around it (``benchmarks/detection.py``
measures the service). Reported per stream and as worst and mean:

- the default settings, strategy ``embedding``, against a naive baseline (online
  nearest-centroid clustering at cosine 0.40);
- ``hybrid`` with a simulated classifier that answers from the gold labels with a chosen
  accuracy (100 %, 90 %, 75 %), at the default doubt share and call budget, with the
  classification calls per memory it needed;
- ``--calibrate``: the review's and the merge checks' constants, chosen leave-one-stream-out:
  a grid is scored on two streams (the pick maximises their worst F1) and reported on the
  third. The join model itself is fitted by ``fit_detector.py`` on a wide corpus, and
  ``detection_kinds.py`` reports it per source kind against the corpus baselines.

The metrics are small pure functions: pairwise precision / recall / F1 over pairs of memories
that share an episode (a memory in no episode, gold null or a predicted seed, is in no pair),
adjusted Rand index and V-measure (each such memory its own cluster).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import random
import sys
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from tribalmemory.config import EpisodesConfig
from tribalmemory.episodes import resumption
from tribalmemory.episodes.budget import memories_per_review, within_budget
from tribalmemory.episodes.consolidation import BATCH as MERGE_BATCH
from tribalmemory.episodes.consolidation import Taken, agreed, first_check_wait, reviews_on
from tribalmemory.episodes.detector import (
    MERGE_CANDIDATES,
    MERGE_CHECK_SIZES,
    Ambiguous,
    DetectorContext,
    DetectorParams,
    EpisodeFeatures,
    Join,
    MemoryFeatures,
    NewSeed,
    StartFromSeed,
    add_member,
    build_episode,
    confirm_candidates,
    decide,
    merge_candidates,
    update_context,
)
from tribalmemory.episodes.review import MAX_CHECKS_PER_REVIEW
from tribalmemory.episodes.splitting import SPLIT_CHECK_SIZES, split_proposal
from tribalmemory.timeutil import parse_iso

# --------------------------------------------------------------------------------------------
# Metrics (pure)
# --------------------------------------------------------------------------------------------

Label = Hashable | None


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def _singletons(labels: Sequence[Label]) -> list[Hashable]:
    return [x if x is not None else ("__none__", i) for i, x in enumerate(labels)]


def pairwise_prf(pred: Sequence[Label], gold: Sequence[Label]) -> tuple[float, float, float]:
    """Pairwise precision, recall, F1. ``None`` = in no pair. Empty denominators give 0."""
    if len(pred) != len(gold):
        raise ValueError("pred and gold must have the same length")
    both = Counter(
        (p, g) for p, g in zip(pred, gold, strict=True) if p is not None and g is not None
    )
    tp = sum(_pairs(c) for c in both.values())
    pp = sum(_pairs(c) for c in Counter(p for p in pred if p is not None).values())
    gp = sum(_pairs(c) for c in Counter(g for g in gold if g is not None).values())
    precision = tp / pp if pp else 0.0
    recall = tp / gp if gp else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def adjusted_rand_index(pred: Sequence[Label], gold: Sequence[Label]) -> float:
    """Hubert-Arabie ARI; every ``None`` is its own singleton cluster."""
    if len(pred) != len(gold):
        raise ValueError("pred and gold must have the same length")
    n = len(pred)
    if n < 2:
        return 1.0
    p, g = _singletons(pred), _singletons(gold)
    index = sum(_pairs(c) for c in Counter(zip(p, g, strict=True)).values())
    a = sum(_pairs(c) for c in Counter(p).values())
    b = sum(_pairs(c) for c in Counter(g).values())
    expected = a * b / _pairs(n)
    maximum = (a + b) / 2
    if maximum == expected:
        return 1.0
    return (index - expected) / (maximum - expected)


def _entropy(counts: Counter[Any], n: int) -> float:
    return -sum(c / n * math.log(c / n) for c in counts.values() if c)


def v_measure(pred: Sequence[Label], gold: Sequence[Label]) -> float:
    """Rosenberg-Hirschberg V-measure (harmonic mean of homogeneity and completeness); every
    ``None`` is its own singleton cluster."""
    if len(pred) != len(gold):
        raise ValueError("pred and gold must have the same length")
    n = len(pred)
    if n == 0:
        return 1.0
    p, g = _singletons(pred), _singletons(gold)
    joint = Counter(zip(p, g, strict=True))
    pc, gc = Counter(p), Counter(g)
    h_g, h_p = _entropy(gc, n), _entropy(pc, n)
    h_g_given_p = -sum(c / n * math.log(c / pc[a]) for (a, _), c in joint.items())
    h_p_given_g = -sum(c / n * math.log(c / gc[b]) for (_, b), c in joint.items())
    homogeneity = 1.0 - h_g_given_p / h_g if h_g else 1.0
    completeness = 1.0 - h_p_given_g / h_p if h_p else 1.0
    total = homogeneity + completeness
    return 2 * homogeneity * completeness / total if total else 0.0


def scores(pred: Sequence[Label], gold: Sequence[Label]) -> dict[str, float]:
    """Every metric of one assignment against the gold labels."""
    precision, recall, f1 = pairwise_prf(pred, gold)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "ari": adjusted_rand_index(pred, gold),
        "v": v_measure(pred, gold),
        "found": len({x for x in pred if x is not None}),
        "gold": len({x for x in gold if x is not None}),
    }


# --------------------------------------------------------------------------------------------
# Streams
# --------------------------------------------------------------------------------------------


@dataclass
class Record:
    id: str
    created_at: datetime
    content: str
    tags: frozenset[str]
    source_instance: str
    gold: str | None = None
    parent: str | None = None


def load_stream(path: str | Path) -> list[Record]:
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        out.append(
            Record(
                d["id"],
                parse_iso(d["timestamp"]),
                d["content"],
                frozenset(d.get("tags") or ()),
                d.get("source_instance") or "",
                d.get("episode"),
                d.get("parent"),
            )
        )
    out.sort(key=lambda r: r.created_at)
    return out


def embed_stream(
    records: Sequence[Record],
    cache: Path | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> np.ndarray:
    """The records' vectors with the bundled model (or ``embed``: another model's, see
    candidate_model.py); ``cache``: a folder keeping them, keyed by a hash of the texts (one
    folder per model)."""
    texts = [r.content for r in records]
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    if cache is not None and (cache / f"{key}.npy").exists():
        return np.load(cache / f"{key}.npy")
    if embed is None:
        from tribalmemory.embeddings.embedder import load_embedder

        embed = load_embedder().embed
    vectors = np.asarray(embed(texts), dtype=np.float32)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(cache / f"{key}.npy", vectors)
    return vectors


@dataclass
class Stream:
    name: str
    records: list[Record]
    vectors: np.ndarray

    @property
    def gold(self) -> list[str | None]:
        return [r.gold for r in self.records]


def features(stream: Stream) -> list[MemoryFeatures]:
    return [
        MemoryFeatures.from_text(
            r.id, stream.vectors[i], r.content, r.tags, r.source_instance, r.created_at
        )
        for i, r in enumerate(stream.records)
    ]


# --------------------------------------------------------------------------------------------
# Replay
# --------------------------------------------------------------------------------------------


@dataclass
class Oracle:
    """A simulated classifier: right with probability ``accuracy``, otherwise one of the other
    options (another candidate or "none") at random. Right = the first candidate whose members'
    majority gold label is the memory's, or "none" when no candidate has it."""

    accuracy: float = 1.0
    seed: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def choose(self, options: list[str | None], right: str | None) -> str | None:
        if self.rng.random() < self.accuracy:
            return right
        wrong = [o for o in options if o != right]
        return self.rng.choice(wrong) if wrong else right


@dataclass
class SimResult:
    assignment: list[str | None]
    calls: int = 0
    episodes: dict[str, EpisodeFeatures] = field(default_factory=dict)


def majority(labels: Sequence[str | None]) -> str | None:
    """The most frequent of ``labels`` (None for none); a tie goes to the one seen first, so
    the simulated classifier gives the same answer in every process (``max(set(...))`` broke
    ties by string hashes, which change from one run to the next)."""
    c = Counter(labels).most_common(1)
    return c[0][0] if c else None


_DEFAULTS = EpisodesConfig()


@dataclass(frozen=True)
class Review:
    """How doubtful decisions are reviewed (the engine's ``classify_*`` settings)."""

    calls_per_memory: float = _DEFAULTS.classify_calls_per_memory
    batch_size: int = _DEFAULTS.classify_batch_size
    wait_paces: float = _DEFAULTS.classify_batch_wait_paces
    max_wait_seconds: float = _DEFAULTS.classify_batch_wait_seconds
    merge_checks: bool = True
    merge_sizes: tuple[int, ...] = MERGE_CHECK_SIZES
    merge_candidates: int = MERGE_CANDIDATES


class Replay:
    """The engine's detection, online, without the service: each memory is placed at once by
    the embedding decision (idle closing and the active cap in memory time); in ``hybrid`` the
    doubtful ones are queued and reviewed in batches by ``oracle`` within the call budget, as
    :mod:`tribalmemory.episodes.review` does: the reviewed memory's candidates are taken
    as they are at review time (its own episode without it), a verdict elsewhere moves it, and
    an episode left with one member is dissolved into a seed."""

    def __init__(
        self, stream: Stream, params: DetectorParams, oracle: Oracle | None, review: Review
    ) -> None:
        self.stream, self.params, self.oracle, self.review = stream, params, oracle, review
        self.feats = features(stream)
        self.index = {r.id: i for i, r in enumerate(stream.records)}
        self.assign: list[str | None] = [None] * len(self.feats)
        self.members: dict[str, list[str]] = {}
        self.episodes: dict[str, EpisodeFeatures] = {}
        self.active: dict[str, None] = {}  # in the order they opened, as the engine's state
        self.seeds: dict[str, MemoryFeatures] = {}
        self.context = DetectorContext()
        self.queue: list[tuple[int, datetime]] = []  # (memory, due)
        self.calls = self.reviews = self.classified = self.decided = 0
        self.counter = 0
        self.checks: list[tuple[str, datetime]] = []  # (episode, due) waiting for a merge check
        self.confirms: dict[str, str] = {}  # episode -> the episode its check confirms
        self.merges = 0
        self.resume_checked: dict[str, int] = {}  # episode -> its size when checked
        self.now = datetime.min  # memory time of the newest memory

    def run(self) -> SimResult:
        window = timedelta(days=self.params.active_window_days)
        embedding = replace(self.params, strategy="embedding")
        for i, mem in enumerate(self.feats):
            now = self.now = mem.created_at
            while self.queue and self.queue[0][1] <= now:
                self._review()
            while (due := self._due_check(now)) is not None:
                self.checks.insert(0, self.checks.pop(due))  # asked first, as ``run`` does
                self._check()
            for eid in list(self.active):
                if now - self.episodes[eid].last_activity > window:
                    self.active.pop(eid, None)
            for sid in [s for s, m in self.seeds.items() if now - m.created_at > window]:
                del self.seeds[sid]
            if self.oracle is None:
                self._resume(now)
            share = self._doubt_share()
            params = replace(self.params, doubt_share=share) if share > 0 else embedding
            decision = decide(mem, self._active(), list(self.seeds.values()), self.context, params)
            self.context = update_context(
                self.context, mem, decision.background, confidence=decision.confidence
            )
            self.decided += 1
            if isinstance(decision, Ambiguous):
                decision = decide(
                    mem, self._active(), list(self.seeds.values()), self.context, embedding
                )
                wait = min(self.review.max_wait_seconds, self.review.wait_paces * self.context.pace)
                self.queue.append((i, now + timedelta(seconds=wait)))
            self._apply(i, decision)
            if len(self.queue) >= self.review.batch_size:
                self._review()
        while self.queue:
            self._review()
        while self.checks:
            self._check()
        return SimResult(self.assign, self.calls, dict(self.episodes))

    def _resume(self, now: datetime) -> None:
        """As :class:`.resumption.Resumption` (no LLM): each episode quiet at ``now`` is
        checked once at its size, and merged into the older episode it resumes."""
        active = sorted(self._active(), key=lambda e: e.first_activity)
        for eid in resumption.due(active, self.resume_checked, now, self.context):
            if eid not in self.active:  # a merge before took it
                continue
            episode = self.episodes[eid]
            self.resume_checked[eid] = episode.memory_count
            target = resumption.resumed(episode, self._active(), self.context)
            if target is not None:
                self._merge(target, eid)

    def _active(self) -> list[EpisodeFeatures]:
        return [self.episodes[e] for e in self.active]

    def _doubt_share(self) -> float:
        if self.oracle is None:
            return 0.0
        size = self.review.batch_size
        committed = self.calls + math.ceil(len(self.queue) / size)
        if not within_budget(self.decided, committed, self.review.calls_per_memory):
            return 0.0
        per_review = memories_per_review(self.classified, self.reviews)
        return min(self.params.doubt_share, self.review.calls_per_memory * per_review)

    def _apply(self, i: int, decision: Any) -> None:
        mem = self.feats[i]
        if isinstance(decision, Join) and decision.episode_id in self.active:
            eid = decision.episode_id
            self.members[eid].append(mem.id)
            self.episodes[eid] = add_member(self.episodes[eid], mem)
            self.assign[i] = eid
            self.seeds.pop(mem.id, None)
            self._grown(eid, mem.created_at)
        elif isinstance(decision, StartFromSeed) and decision.seed_id in self.seeds:
            seed = self.seeds.pop(decision.seed_id)
            eid = f"ep{self.counter}"
            self.counter += 1
            self.members[eid] = [seed.id, mem.id]
            self.episodes[eid] = build_episode(eid, [seed, mem])
            self.active[eid] = None
            self.assign[self.index[seed.id]] = self.assign[i] = eid
            self.seeds.pop(mem.id, None)
            if len(self.active) > self.params.max_active_episodes:
                self.active.pop(
                    min(self.active, key=lambda e: self.episodes[e].last_activity), None
                )
        else:
            self.seeds[mem.id] = mem

    def _grown(self, eid: str, now: datetime) -> None:
        """As :meth:`.consolidation.Consolidation.grown`: queue a merge check at a check size;
        it waits for a review call to carry it, at most :func:`.consolidation.first_check_wait`
        (the active window while reviews are on)."""
        count = len(self.members[eid])
        if not self.review.merge_checks or self.oracle is None:
            return
        waiting = any(e == eid for e, _ in self.checks)
        if not waiting and any(count - 1 < size <= count for size in self.review.merge_sizes):
            reviews = reviews_on(self.params.strategy, self.params.doubt_share)
            wait = first_check_wait(
                self.review.max_wait_seconds, self.params.active_window_days, reviews
            )
            self.checks.append((eid, now + timedelta(seconds=wait)))

    def _due_check(self, now: datetime) -> int | None:
        """The place of the oldest waiting check due by ``now`` (a confirmation waits less than
        a first check queued before it), or None."""
        return next((i for i, (_, due) in enumerate(self.checks) if due <= now), None)

    def _check(self) -> None:
        """Merge checks no review call carried: up to :data:`MERGE_BATCH` in a call of their
        own, within the budget."""
        taken, answers = self._take(MERGE_BATCH)
        if not answers or not within_budget(self.decided, self.calls, self.review.calls_per_memory):
            return
        self.calls += 1
        self._settle(taken, answers, self.now)

    def _take(self, limit: int) -> tuple[Taken, dict[str, str | None]]:
        """Claim up to ``limit`` waiting checks and answer them as the call would see them:
        each checked episode against its most similar active episodes, or against the one
        episode it confirms (no candidate: nothing to ask)."""
        keys = list(dict.fromkeys(e for e, _ in self.checks[:limit]))
        del self.checks[:limit]
        taken = Taken(keys)
        answers: dict[str, str | None] = {}
        for eid in keys:
            twin = self.confirms.pop(eid, None)
            if eid not in self.active or self.oracle is None:
                continue
            others = [self.episodes[o] for o in self.active if o != eid]
            if twin is not None:
                taken.confirming[eid] = twin
                found = confirm_candidates(
                    self.episodes[eid], others, twin, self.context, self.review.merge_candidates
                )
            else:
                found = merge_candidates(
                    self.episodes[eid], others, self.context, self.review.merge_candidates
                )
            candidates = [o.id for o in found]
            if candidates:
                taken.proposals[eid] = candidates
                label = self._label("episode", eid)
                right = next((c for c in candidates if self._label("episode", c) == label), None)
                answers[eid] = self.oracle.choose([*candidates, None], right)
        return taken, answers

    def _settle(self, taken: Taken, answers: dict[str, str | None], now: datetime) -> None:
        """As :meth:`.consolidation.Consolidation.settle`: answers that agree merge the two
        (if both are still active), a first "same as" queues its confirmation."""
        merges, confirms = agreed(taken, answers)
        for first, second in merges:
            if first in self.active and second in self.active:
                self._merge(first, second)
        for twin, checked in confirms.items():  # a waiting check of the twin becomes it
            self.confirms[twin] = checked
            if not any(e == twin for e, _ in self.checks):
                self.checks.append((twin, now + timedelta(seconds=self.review.max_wait_seconds)))

    def _merge(self, first: str, second: str) -> None:
        big, small = (first, second)
        if len(self.members[second]) > len(self.members[first]):
            big, small = second, first
        for m in self.members[small]:
            self.assign[self.index[m]] = big
        self.members[big] += self.members[small]
        feats = [self.feats[self.index[m]] for m in self.members[big]]
        self.episodes[big] = build_episode(big, feats)
        del self.members[small], self.episodes[small]
        self.active.pop(small, None)
        self.merges += 1

    def _detach(self, i: int) -> None:
        """Take memory ``i`` out of its episode (or the seeds); dissolve a one-member rest."""
        mid = self.feats[i].id
        self.seeds.pop(mid, None)
        eid = self.assign[i]
        if eid is None:
            return
        self.members[eid].remove(mid)
        self.assign[i] = None
        rest = self.members[eid]
        if len(rest) >= 2:
            self.episodes[eid] = build_episode(eid, [self.feats[self.index[m]] for m in rest])
            return
        for m in rest:
            self.assign[self.index[m]] = None
            self.seeds[m] = self.feats[self.index[m]]
        del self.members[eid], self.episodes[eid]
        self.active.pop(eid, None)

    def _label(self, kind: str, cid: str) -> str | None:
        gold = self.stream.gold
        ids = self.members[cid] if kind == "episode" else [cid]
        return majority([gold[self.index[m]] for m in ids])

    def _review(self) -> None:
        batch = [i for i, _ in self.queue[: self.review.batch_size]]
        del self.queue[: self.review.batch_size]
        if not batch or self.oracle is None:
            return
        if not within_budget(self.decided, self.calls, self.review.calls_per_memory):
            return  # spent: the embedding decisions stand
        self.calls += 1
        self.reviews += 1
        self.classified += len(batch)
        riding, answers = self._take(MAX_CHECKS_PER_REVIEW)  # checks ride along in the call
        self._review_batch(batch)
        self._settle(riding, answers, self.now)

    def _review_batch(self, batch: list[int]) -> None:
        gold = self.stream.gold
        created: dict[Any, str] = {}  # one new thread per answer -> its first memory
        llm = replace(self.params, strategy="llm")
        reviewed = {self.feats[i].id for i in batch}  # not candidates (as the engine's union)
        for i in batch:
            mem = self.feats[i]
            self._detach(i)
            seeds = [s for s in self.seeds.values() if s.id not in reviewed]
            decision = decide(mem, self._active(), seeds, self.context, llm)
            if not isinstance(decision, Ambiguous):
                self._apply(i, decision)
                continue
            right = next(
                (
                    c.id
                    for c in decision.candidates
                    if gold[i] and self._label(c.kind, c.id) == gold[i]
                ),
                None,
            )
            options: list[str | None] = [c.id for c in decision.candidates] + [None]
            chosen = self.oracle.choose(options, right)
            pick = next((c for c in decision.candidates if c.id == chosen), None)
            if pick is not None:
                self._apply(
                    i,
                    Join(pick.id, pick.score)
                    if pick.kind == "episode"
                    else StartFromSeed(pick.id, pick.score),
                )
                continue
            key = gold[i] if right is None and gold[i] else ("alone", i)
            first = created.get(key)
            if first is not None and first in self.seeds:
                self._apply(i, StartFromSeed(first, 0.0))
            elif first is not None and self.assign[self.index[first]] in self.active:
                self._apply(i, Join(self.assign[self.index[first]] or "", 0.0))
            else:
                self._apply(i, NewSeed())
                created[key] = mem.id


def simulate(
    stream: Stream,
    params: DetectorParams,
    oracle: Oracle | None = None,
    calls_per_memory: float = 1.0,
    review: Review | None = None,
) -> SimResult:
    """Replay ``stream`` as the engine does (:class:`Replay`); without an oracle, every
    decision is the embedding one."""
    review = review or Review(calls_per_memory=calls_per_memory)
    return Replay(stream, params, oracle, review).run()


def singletons_to_none(labels: Sequence[int]) -> list[str | None]:
    """Cluster labels as episode labels: a cluster of one memory is no episode."""
    sizes = Counter(labels)
    return [f"c{x}" if sizes[x] > 1 else None for x in labels]


def naive_centroid(stream: Stream, threshold: float = 0.40) -> list[str | None]:
    """The README's baseline: online nearest-centroid clustering at a cosine threshold, every
    memory in a cluster (singletons count as no episode)."""
    sums: list[np.ndarray] = []
    labels: list[int] = []
    for v in stream.vectors:
        if sums:
            cents = np.stack([s / np.linalg.norm(s) for s in sums])
            sims = cents @ v
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                sums[best] = sums[best] + v
                labels.append(best)
                continue
        sums.append(np.asarray(v, dtype=np.float64).copy())
        labels.append(len(sums) - 1)
    return singletons_to_none(labels)


def time_gap(stream: Stream, k: float) -> list[str | None]:
    """The corpus README's time baseline: a new episode after a gap longer than ``k`` times
    the stream's median gap between consecutive memories (episodes of one memory count as
    none)."""
    times = [r.created_at.timestamp() for r in stream.records]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    limit = k * max(float(np.median(gaps)) if gaps else 1.0, 1.0)
    labels, current = [], 0
    for i, gap in enumerate([0.0, *gaps]):
        if i and gap > limit:
            current += 1
        labels.append(current)
    return singletons_to_none(labels)


def nearest_member(stream: Stream, threshold: float = 0.40) -> list[str | None]:
    """The corpus README's embedding baseline: online nearest-member clustering with the
    bundled model (a memory joins the cluster of its most similar earlier memory when their
    cosine reaches ``threshold``, else starts its own)."""
    labels: list[int] = []
    vectors = np.asarray(stream.vectors, dtype=np.float32)
    for i, v in enumerate(vectors):
        if i:
            sims = vectors[:i] @ v
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                labels.append(labels[best])
                continue
        labels.append(i)
    return singletons_to_none(labels)


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


def run(
    stream: Stream,
    params: DetectorParams,
    accuracy: float | None = None,
    calls_per_memory: float = 1.0,
    seeds: int = 1,
    review: Review | None = None,
) -> dict[str, float]:
    """Scores of one configuration on one stream (averaged over ``seeds`` oracle seeds when
    the oracle is imperfect), with ``calls`` per memory."""
    rows = []
    for seed in range(seeds):
        oracle = None if accuracy is None else Oracle(accuracy, seed)
        res = simulate(stream, params, oracle, calls_per_memory, review)
        row = scores(res.assignment, stream.gold)
        row["calls"] = res.calls / len(stream.records)
        rows.append(row)
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


Point = dict[str, float]
Scorer = Callable[[Point, Stream], float]


def grid_points(grid: dict[str, list[float]]) -> list[Point]:
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]


def leave_one_out(
    streams: Sequence[Stream], grid: dict[str, list[float]], score: Scorer
) -> list[dict[str, Any]]:
    """For each stream, the grid point with the best worst-F1 on the others (ties: best
    mean), and its F1 on the held-out stream."""
    points = grid_points(grid)
    f1 = {i: {s.name: score(p, s) for s in streams} for i, p in enumerate(points)}
    out = []
    for held in streams:
        fit = [s.name for s in streams if s.name != held.name]
        best = max(f1, key=lambda i: (min(f1[i][n] for n in fit), sum(f1[i][n] for n in fit)))
        out.append(
            {
                "held_out": held,
                "point": points[best],
                "held_out_f1": f1[best][held.name],
                "fit_f1": {n: f1[best][n] for n in fit},
            }
        )
    return out


REVIEW_GRID: dict[str, list[float]] = {
    "batch_size": [2, 3],
    "wait_paces": [2, 4, 8],
    "doubt_share": [0.3, 0.45, 0.6],
}
"""The review's constants, chosen leave-one-stream-out on the perfect classifier (what the
review is for: putting the doubt where a good LLM can fix it) at the budget of 0.3, with merge
checks on (the default). At batches of two the budget caps the share at 0.6 anyway."""


def review_f1(point: Point, stream: Stream, accuracy: float = 1.0, seeds: int = 1) -> float:
    """Hybrid F1 with the review constants of ``point`` at the budget of 0.3."""
    budget = 0.3
    params = DetectorParams(strategy="hybrid", doubt_share=point["doubt_share"])
    review = Review(budget, int(point["batch_size"]), point["wait_paces"])
    return run(stream, params, accuracy, budget, seeds, review)["f1"]


def calibrate_review(streams: Sequence[Stream]) -> list[dict[str, Any]]:
    """Leave-one-stream-out choice of the review constants, scored with a perfect classifier;
    the held-out stream also gets the 90 % classifier's F1 (``extra``)."""
    rows = leave_one_out(streams, REVIEW_GRID, review_f1)
    for row in rows:
        row["extra"] = review_f1(row["point"], row["held_out"], 0.9, ORACLE_SEEDS)
    return rows


MERGE_GRID: dict[str, list[float]] = {
    "first_size": [4, 8],
    "doublings": [0, 1, 3],
    "candidates": [2, 3, 4, 5],
}
"""Merge checks at ``first_size`` and its next ``doublings`` doublings, with ``candidates``
candidates each; chosen leave-one-stream-out on the perfect classifier, as the review's
constants are (docs/detection.md)."""


def merge_review(point: Point) -> Review:
    sizes = tuple(int(point["first_size"]) * 2**i for i in range(int(point["doublings"]) + 1))
    return Review(merge_checks=True, merge_sizes=sizes, merge_candidates=int(point["candidates"]))


def merge_f1(point: Point, stream: Stream, accuracy: float = 1.0, seeds: int = 1) -> float:
    """Hybrid F1 with merge checks at ``point``, at the default review and budget."""
    return run(
        stream, DetectorParams(strategy="hybrid"), accuracy, 0.3, seeds, merge_review(point)
    )["f1"]


def calibrate_merge(streams: Sequence[Stream]) -> list[dict[str, Any]]:
    """Leave-one-stream-out choice of the merge-check constants, scored with a perfect
    classifier; the held-out stream also gets the 90 % classifier's F1 (``extra``)."""
    rows = leave_one_out(streams, MERGE_GRID, merge_f1)
    for row in rows:
        row["extra"] = merge_f1(row["point"], row["held_out"], 0.9, ORACLE_SEEDS)
    return rows


def loso_table(intro: str, rows: list[dict[str, Any]], extra: str | None = None) -> list[str]:
    """A leave-one-stream-out result as Markdown: one row per held-out stream."""
    head = "| held out | chosen on the other two | their F1 | held-out F1 |"
    rule = "|---|---|---|---:|"
    if extra:
        head, rule = head + f" {extra} |", rule + "---:|"
    lines = ["", intro, "", head, rule]
    for row in rows:
        point = ", ".join(f"{k} {v}" for k, v in row["point"].items())
        fit = ", ".join(f"{v:.3f}" for v in row["fit_f1"].values())
        cells = f"| {row['held_out'].name} | {point} | {fit} | {row['held_out_f1']:.3f} |"
        lines.append(cells + (f" {row['extra']:.3f} |" if extra else ""))
    worst = min(r["held_out_f1"] for r in rows)
    mean = float(np.mean([r["held_out_f1"] for r in rows]))
    summary = f"Held-out worst {worst:.3f}, mean {mean:.3f}"
    if extra:
        summary += f" ({extra}: worst {min(r['extra'] for r in rows):.3f})"
    return lines + ["", summary + "."]


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

ACCURACIES = (1.0, 0.9, 0.75)
ORACLE_SEEDS = 30  # imperfect oracles: the mean of 30 seeds (one seed moves F1 by up to ±0.1)


def _table(streams: Sequence[Stream], rows: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    names = [s.name for s in streams]
    lines = [
        "| run | " + " | ".join(names) + " | worst | mean |",
        "|---|" + "---:|" * (len(names) + 2),
    ]
    for label, per in rows.items():
        f1s = [per[n]["f1"] for n in names]
        cells = []
        for n in names:
            r = per[n]
            cell = f"{r['f1']:.3f} (P {r['precision']:.2f} R {r['recall']:.2f}, "
            cell += f"{r['found']:.0f}/{r['gold']:.0f}"
            cell += f", {r['calls']:.2f} calls)" if "calls" in r and r["calls"] else ")"
            cells.append(cell)
        lines.append(
            f"| {label} | " + " | ".join(cells) + f" | {min(f1s):.3f} | {np.mean(f1s):.3f} |"
        )
    return lines


SUBSAMPLE_KEEP = 0.9
"""Share of a stream's memories each perturbed copy keeps (:func:`subsample`)."""
SUBSAMPLES = 10
"""Perturbed copies per stream: enough for the mean to move by less than about 0.02."""


def subsample(stream: Stream, seed: int, keep: float = SUBSAMPLE_KEEP) -> Stream:
    """A copy of ``stream`` without a random (seeded) ``1 - keep`` share of its memories, in
    the same order: another sample of the same source. A detector whose F1 holds on such
    copies holds on streams it has not seen; one whose F1 falls sits on a spike of the
    stream it was measured on."""
    rng = random.Random(seed)
    kept = [i for i in range(len(stream.records)) if rng.random() < keep]
    return Stream(stream.name, [stream.records[i] for i in kept], stream.vectors[kept])


def robustness(
    stream: Stream, params: DetectorParams, accuracy: float | None = None, copies: int = SUBSAMPLES
) -> tuple[float, float, float]:
    """F1 over ``copies`` perturbed copies of ``stream`` (:func:`subsample`, seeds
    0..copies-1): mean, lowest, highest."""
    f1s = []
    for seed in range(copies):
        copy = subsample(stream, seed)
        f1s.append(run(copy, params, accuracy, 0.3)["f1"])
    return float(np.mean(f1s)), min(f1s), max(f1s)


def robustness_table(streams: Sequence[Stream]) -> list[str]:
    """The default embedding detector, its two neighbouring thresholds and the hybrid with a
    perfect classifier, on each full stream and on its perturbed copies."""
    base = DetectorParams(strategy="embedding")
    runs: dict[str, tuple[DetectorParams, float | None]] = {
        f"embedding (default, threshold {base.threshold})": (base, None)
    }
    for threshold in (base.threshold - 0.05, base.threshold + 0.05):
        runs[f"embedding, threshold {threshold:.2f}"] = (replace(base, threshold=threshold), None)
    runs["hybrid (default), oracle 100%, budget 0.3"] = (DetectorParams(strategy="hybrid"), 1.0)
    names = [s.name for s in streams]
    lines = [
        "",
        f"Robustness: pairwise F1 on each full stream and, after the arrow, the mean (lowest"
        f"-highest) over {SUBSAMPLES} copies that each keep a random {SUBSAMPLE_KEEP:.0%} of its "
        "memories (`subsample`, seeds 0..9). Worst: of the full streams, and of the means.",
        "",
        "| run | " + " | ".join(names) + " | worst (full → copies) |",
        "|---|" + "---:|" * (len(names) + 1),
    ]
    for label, (params, accuracy) in runs.items():
        cells, full, means = [], [], []
        for stream in streams:
            f1 = run(stream, params, accuracy, 0.3)["f1"]
            mean, low, high = robustness(stream, params, accuracy)
            full.append(f1)
            means.append(mean)
            cells.append(f"{f1:.3f} → {mean:.3f} ({low:.2f}-{high:.2f})")
        worst = f"{min(full):.3f} → {min(means):.3f}"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {worst} |")
    return lines


SPLIT_MIXTURE_SIZES = (4, 8)
"""Members each of two gold threads bring to a made-up mixture (the first ones of each)."""


def split_probe(stream: Stream) -> dict[str, int]:
    """The split-check rule (:func:`.splitting.split_proposal`, with the stream's context after
    an embedding replay) on gold threads and on made-up mixtures of two: gold threads seen at
    the check sizes (their first 8, 16, 32, 64 members) should not be proposed; mixtures of
    the first 4 or 8 members of two threads, in time order, should, cut along the threads
    (at least 90 % of the members on their own thread's side)."""
    replay = Replay(stream, DetectorParams(strategy="embedding"), None, Review())
    replay.run()
    context = replay.context
    threads: dict[str, list[int]] = {}
    for index, label in enumerate(stream.gold):
        if label:
            threads.setdefault(label, []).append(index)

    def proposal(indices: list[int]) -> Any:
        members = [(str(i), stream.vectors[i]) for i in sorted(indices)]
        return split_proposal(members, context)

    out = {"threads": 0, "threads_proposed": 0, "mixtures": 0, "proposed": 0, "cut_right": 0}
    for members in threads.values():
        for size in SPLIT_CHECK_SIZES:
            if len(members) >= size:
                out["threads"] += 1
                out["threads_proposed"] += proposal(members[:size]) is not None
    for first, second in itertools.combinations(threads.values(), 2):
        for a, b in itertools.product(SPLIT_MIXTURE_SIZES, repeat=2):
            if len(first) < a or len(second) < b:
                continue
            out["mixtures"] += 1
            found = proposal(first[:a] + second[:b])
            if found is None:
                continue
            out["proposed"] += 1
            side = {int(m): 0 for m in found.keep} | {int(m): 1 for m in found.move}
            agree = sum(side[i] == side[first[0]] for i in first[:a])
            agree += sum(side[i] != side[first[0]] for i in second[:b])
            out["cut_right"] += agree >= 0.9 * (a + b)
    return out


def split_table(streams: Sequence[Stream]) -> list[str]:
    probes = {s.name: split_probe(s) for s in streams}
    lines = [
        "",
        "Split checks (`episodes.split_checks`): the rule that decides whether an episode's "
        "two-means parts are put to the LLM, on gold threads seen at the check sizes and on "
        f"mixtures of the first {' or '.join(map(str, SPLIT_MIXTURE_SIZES))} members of two "
        "gold threads (every pair of threads):",
        "",
        "| stream | gold threads proposed | mixtures proposed | of those, cut along the threads |",
        "|---|---:|---:|---:|",
    ]
    for name, p in probes.items():
        lines.append(
            f"| {name} | {p['threads_proposed']} / {p['threads']} | "
            f"{p['proposed']} / {p['mixtures']} | {p['cut_right']} |"
        )
    return lines


def report(streams: Sequence[Stream], with_calibration: bool = False) -> str:
    defaults = DetectorParams(strategy="embedding")
    hybrid = DetectorParams(strategy="hybrid")
    budget = 0.3
    rows: dict[str, dict[str, dict[str, float]]] = {
        "naive nearest-centroid 0.40": {s.name: scores(naive_centroid(s), s.gold) for s in streams},
        "embedding (default)": {s.name: run(s, defaults) for s in streams},
    }
    for acc in ACCURACIES:
        label = f"hybrid (default), oracle {acc:.0%}, budget {budget}"
        rows[label] = {
            s.name: run(s, hybrid, acc, budget, 1 if acc == 1.0 else ORACLE_SEEDS) for s in streams
        }
    for acc in ACCURACIES[:2]:
        label = f"hybrid without merge checks, oracle {acc:.0%}, budget {budget}"
        reviews_only = Review(calls_per_memory=budget, merge_checks=False)
        seeds = 1 if acc == 1.0 else ORACLE_SEEDS
        rows[label] = {s.name: run(s, hybrid, acc, budget, seeds, reviews_only) for s in streams}
    lines = [
        "Pure detector replay (`benchmarks/detector_sim.py`), pairwise F1 (precision, recall, "
        "episodes found / gold, classification calls per memory). Hybrid: every memory is "
        f"placed at once; the least confident {hybrid.doubt_share:.0%} of decisions (capped by "
        f"the budget of {budget} calls per memory) are reviewed, in batches of "
        f"{Review().batch_size}, by a simulated classifier that answers from the gold labels. "
        "Merge checks (`episodes.merge_checks`, on by default): an episode grown to "
        f"{', '.join(map(str, MERGE_CHECK_SIZES))} members is checked against its "
        f"{MERGE_CANDIDATES} most similar active episodes; checks ride along in the next "
        "review call, and a merge needs a second answer that confirms the first.",
        "",
        *_table(streams, rows),
        *robustness_table(streams),
        *split_table(streams),
    ]
    if with_calibration:
        grid = ", ".join(f"`{k}` {v}" for k, v in REVIEW_GRID.items())
        lines += loso_table(
            "Leave-one-stream-out choice of the review constants (hybrid, perfect classifier, "
            f"budget 0.3) over {grid}; the held-out stream also with the 90 % classifier:",
            calibrate_review(streams),
            extra="held-out F1, 90 %",
        )
        grid = ", ".join(f"`{k}` {v}" for k, v in MERGE_GRID.items())
        lines += loso_table(
            "Leave-one-stream-out choice of the merge-check constants (hybrid + merge checks, "
            f"perfect classifier, budget 0.3) over {grid}; the held-out stream also with the "
            "90 % classifier:",
            calibrate_merge(streams),
            extra="held-out F1, 90 %",
        )
    return "\n".join(lines)


def load(
    paths: Sequence[str | Path],
    cache: Path | None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> list[Stream]:
    out = []
    for path in paths:
        records = load_stream(path)
        out.append(Stream(Path(path).stem, records, embed_stream(records, cache, embed)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--cache", type=Path, default=None, help="folder to keep the vectors in")
    ap.add_argument("--calibrate", action="store_true", help="leave-one-stream-out grid")
    ap.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args(argv)
    text = report(load(args.paths, args.cache), args.calibrate)
    print(text)
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from report import write_section

        write_section("detector-sim", "## Detector replay\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
