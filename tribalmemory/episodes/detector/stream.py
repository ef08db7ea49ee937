"""The stream's background statistics (:class:`DetectorContext`): cosines, term counts,
pace, authors and recent confidences, folded in after every memory. Pure, no I/O."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ...timeutil import parse_iso, to_iso
from .features import MemoryFeatures

PACE_WINDOW = 64
"""Gaps kept to measure the stream's pace: enough for a stable median, short enough to follow
a stream that speeds up or slows down."""
PRIOR_PACE = 3600.0
"""Pace assumed (seconds) before :data:`MIN_GAPS` gaps are known: one memory an hour."""
MIN_GAPS = 3
CONFIDENCE_WINDOW = 200
"""Recent decisions whose confidences set the doubt threshold."""
MIN_CONFIDENCES = 20
"""Decisions a stream makes before its doubt threshold is its own quantile. Until then every
decision is doubtful: the stream's first decisions, made without its pace, background or
calibrated confidence, shape the episodes that later memories join, so they are the ones most
worth a classification call (the call budget still caps them)."""


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by linear interpolation (numpy's default method),
    in plain Python: for the few hundred values of a window, numpy's call overhead is most
    of the cost (~65 µs against ~10 µs)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    a, b, t = ordered[low], ordered[high], position - low
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)


@dataclass(eq=True)
class DetectorContext:
    """Running statistics of the stream, updated after every memory with :func:`update_context`.

    * cosine background: count / mean / M2 of the cosines between each new memory and the
      candidate members it was compared with, started from a weak prior;
    * document frequencies of terms over all memories seen (for online IDF);
    * the newest ``created_at`` seen and the last gaps between memories (the stream's
      :attr:`pace`, against which recency is measured).

    **Mutable**: :func:`update_context` updates the context *in place* (O(terms of the memory),
    not O(vocabulary)) and returns it. Copy it (``from_json(to_json())``) to keep a snapshot.
    ``to_json``/``from_json`` round-trip it so the engine can persist it."""

    cos_count: float = 50.0
    cos_mean: float = 0.15
    cos_m2: float = 50.0 * 0.12**2
    doc_count: int = 0
    doc_freq: dict[str, int] = field(default_factory=dict)
    newest: datetime | None = None
    gaps: list[float] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    """The authors (source instances) of the last :data:`PACE_WINDOW` memories: how much of
    the stream each one writes (:meth:`author_share`)."""
    _pace: float | None = field(default=None, compare=False, repr=False)
    """:attr:`pace` cached until :func:`update_context` changes ``gaps``."""

    @property
    def cos_std(self) -> float:
        return max(math.sqrt(self.cos_m2 / self.cos_count), 0.02) if self.cos_count > 0 else 0.12

    @property
    def pace(self) -> float:
        """The stream's own pace: the median gap in seconds between consecutive memories (memory
        time) over the last :data:`PACE_WINDOW`, :data:`PRIOR_PACE` until
        :data:`MIN_GAPS` gaps are known, never below one second. Only memories newer than all
        before them count (concurrent writers and imports deliver some out of order; equal
        timestamps say nothing about the pace either)."""
        if self._pace is None:
            enough = len(self.gaps) >= MIN_GAPS
            self._pace = max(statistics.median(self.gaps), 1.0) if enough else PRIOR_PACE
        return self._pace

    def doubt_threshold(self, share: float) -> float:
        """The confidence below which a decision is doubtful, chosen so that about ``share`` of
        the stream's recent decisions (:data:`CONFIDENCE_WINDOW`) fall below it: the stream
        calibrates its own doubt, whatever the absolute scale of its confidences. Until
        :data:`MIN_CONFIDENCES` are known, every decision is doubtful."""
        if share <= 0:
            return 0.0
        if share >= 1 or len(self.confidences) < MIN_CONFIDENCES:
            return math.inf
        return quantile(self.confidences, share)

    def paces(self, earlier: datetime, later: datetime) -> float:
        """The time from ``earlier`` to ``later`` in units of :attr:`pace` (0 if not later)."""
        return max(0.0, (later - earlier).total_seconds()) / self.pace

    def author_share(self, author: str) -> float:
        """The share of the recent memories (:attr:`authors`) that ``author`` wrote: near 1
        when one agent writes everything (authorship then tells threads apart by nothing).
        1 before the stream has shown any author: until then authorship tells nothing either."""
        return self.authors.count(author) / len(self.authors) if self.authors else 1.0

    def idf(self, term: str) -> float:
        return math.log((self.doc_count + 1.0) / (self.doc_freq.get(term, 0) + 0.5))

    def idf_weights(self, terms: Iterable[str]) -> dict[str, float]:
        """:meth:`idf` of each of ``terms`` (a memory's, weighed once for many candidates), in
        sorted order: sums over them are then the same in every process (a set's order follows
        the string hash seed, and float addition depends on the order)."""
        return {t: self.idf(t) for t in sorted(terms)}

    def to_json(self, terms: bool = True) -> dict[str, Any]:
        """Everything, or without ``doc_freq`` (``terms=False``: the engine keeps the term
        counts in a table of their own, written by the change)."""
        out: dict[str, Any] = {
            "cos_count": self.cos_count,
            "cos_mean": self.cos_mean,
            "cos_m2": self.cos_m2,
            "doc_count": self.doc_count,
            "newest": to_iso(self.newest) if self.newest else None,
            "gaps": list(self.gaps),
            "confidences": list(self.confidences),
            "authors": list(self.authors),
        }
        if terms:
            out["doc_freq"] = dict(self.doc_freq)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DetectorContext:
        return cls(
            float(data["cos_count"]),
            float(data["cos_mean"]),
            float(data["cos_m2"]),
            int(data["doc_count"]),
            {str(k): int(v) for k, v in data.get("doc_freq", {}).items()},
            parse_iso(data["newest"]) if data.get("newest") else None,
            [float(g) for g in data.get("gaps", ())],
            [float(c) for c in data.get("confidences", ())],
            [str(a) for a in data.get("authors", ())],
        )


def update_context(
    context: DetectorContext,
    memory: MemoryFeatures,
    cosines: Iterable[float] = (),
    max_cos_count: float = 20000.0,
    confidence: float | None = None,
) -> DetectorContext:
    """Fold ``memory`` into ``context`` **in place** and return it. ``cosines``: the memory's
    cosines to the candidate members it was compared with (:attr:`Decision.background`), merged
    as one batch (Chan et al.'s parallel mean/variance update, vectorised). The cosine statistics
    forget once ``max_cos_count`` is reached (the past is down-weighted so that past + batch
    weigh ``max_cos_count``), so they follow drift. ``confidence``: the decision's
    :func:`confidence`, remembered for :meth:`DetectorContext.doubt_threshold`.
    Cost: O(len(cosines) + terms of memory)."""
    c = np.asarray(
        cosines if isinstance(cosines, np.ndarray) else list(cosines), dtype=np.float64
    ).reshape(-1)
    k = float(c.size)
    if k:
        n, mean, m2 = context.cos_count, context.cos_mean, context.cos_m2
        bmean = float(c.mean())
        bm2 = float(((c - bmean) ** 2).sum())
        if k >= max_cos_count:  # the batch alone fills the window
            n, m2, scale_b = 0.0, 0.0, max_cos_count / k
        else:
            scale_b = 1.0
            if n + k > max_cos_count:  # keep the weight of the past bounded
                s = (max_cos_count - k) / n
                n, m2 = n * s, m2 * s
        kb, bm2 = k * scale_b, bm2 * scale_b
        total = n + kb
        delta = bmean - mean
        context.cos_mean = mean + delta * kb / total
        context.cos_m2 = m2 + bm2 + delta * delta * n * kb / total
        context.cos_count = total
    freq = context.doc_freq
    for t in memory.terms:
        freq[t] = freq.get(t, 0) + 1
    context.doc_count += 1
    if context.newest is None or memory.created_at > context.newest:
        if context.newest is not None:  # a memory older than the newest tells no pace
            context.gaps.append((memory.created_at - context.newest).total_seconds())
            del context.gaps[:-PACE_WINDOW]
            context._pace = None
        context.newest = memory.created_at
    context.authors.append(memory.source_instance)
    del context.authors[:-PACE_WINDOW]
    if confidence is not None:
        context.confidences.append(confidence)
        del context.confidences[:-CONFIDENCE_WINDOW]
    return context


def forget_terms(context: DetectorContext, terms: Iterable[str]) -> DetectorContext:
    """Take a forgotten memory's ``terms`` out of ``context`` **in place** (the inverse of the
    term counting in :func:`update_context`): a term no other memory has leaves it."""
    freq = context.doc_freq
    for t in terms:
        left = freq.get(t, 0) - 1
        if left > 0:
            freq[t] = left
        else:
            freq.pop(t, None)
    context.doc_count = max(0, context.doc_count - 1)
    return context
