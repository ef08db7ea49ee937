"""Adapter between the engine and the pure detector: features, decisions, candidate ids.

The engine talks only to :class:`Matcher`; scoring lives in :mod:`.detector`. The matcher
also owns the detector's running statistics (:class:`~.detector.DetectorContext`), which the
engine persists in its database now and then (they are statistics: losing the last few
updates in a crash changes nothing that matters). The word counts, which grow with the
vocabulary, are saved by the change (:meth:`Matcher.changed_terms`), not whole each time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import EpisodesConfig
from ..models import Memory
from ..projects import DEFAULT_PROJECT
from . import detector
from .detector import DetectorContext, DetectorParams, EpisodeFeatures, MemoryFeatures

__all__ = ["EpisodeFeatures", "Matcher", "MemoryFeatures", "Option", "Placement", "when"]

SEED_PREFIX = "thread-"


def when(features: MemoryFeatures) -> float:
    """The memory's created_at as epoch seconds."""
    return features.created_at.timestamp()


@dataclass
class Option:
    """One possible home for a memory: an active episode, or a seed to start one with."""

    kind: str  # join | seed
    target: str
    score: float
    similarity: float

    @property
    def candidate_id(self) -> str:
        return self.target if self.kind == "join" else SEED_PREFIX + self.target


@dataclass
class Placement:
    kind: str  # join | seed | ambiguous | new_seed | none
    target: str | None = None
    score: float = 0.0
    similarity: float = 0.0
    candidates: list[Option] = field(default_factory=list)
    confidence: float = 1.0
    embedded: Placement | None = None
    """Of an ``ambiguous`` decision: what the embedding path decides meanwhile."""

    @classmethod
    def new_seed(cls) -> Placement:
        return cls(kind="new_seed")

    def candidate_ids(self) -> list[str]:
        return [o.candidate_id for o in self.candidates]


class Matcher:
    """Builds features and asks the detector for decisions, with settings from the config."""

    def __init__(self, settings: EpisodesConfig) -> None:
        self.settings = settings
        self.contexts: dict[str, DetectorContext] = {}
        self.updates = 0
        self.seed_rows = detector.SeedRows()  # the seeds' vectors, kept between decisions
        self._changed: dict[str, set[str]] = {}  # project -> terms counted since the last save

    def context(self, project: str = DEFAULT_PROJECT) -> DetectorContext:
        """The running statistics of one project's stream: each project is its own stream
        (its pace, its rare words, its similarity background), so interleaved projects do not
        blur each other's."""
        found = self.contexts.get(project)
        if found is None:
            found = self.contexts[project] = DetectorContext()
        return found

    def memory(self, memory: Memory, vector: np.ndarray) -> MemoryFeatures:
        return MemoryFeatures.from_text(
            memory.id,
            vector,
            memory.content,
            memory.tags,
            memory.source_instance,
            memory.created_at,
        )

    def episode(self, episode_id: str, members: list[MemoryFeatures]) -> EpisodeFeatures:
        return detector.build_episode(episode_id, members)

    def add(self, episode: EpisodeFeatures, member: MemoryFeatures) -> EpisodeFeatures:
        return detector.add_member(episode, member)

    def similarity(self, memory: MemoryFeatures, episode: EpisodeFeatures) -> float:
        """Cosine of the memory to the episode's centroid (for the surprise score)."""
        return float(memory.vector @ episode.centroid)

    def observe(self, memory: MemoryFeatures, project: str = DEFAULT_PROJECT) -> None:
        """Fold a memory placed without a decision (a declared session's) into its project's
        running statistics: its words, its author and its time still describe the stream."""
        detector.update_context(self.context(project), memory)
        self._changed.setdefault(project, set()).update(memory.terms)
        self.updates += 1

    def decide(
        self,
        memory: MemoryFeatures,
        episodes: list[EpisodeFeatures],
        seeds: list[MemoryFeatures],
        *,
        doubt_share: float,
        learn: bool = False,
        project: str = DEFAULT_PROJECT,
        seeds_eligible: bool = False,
    ) -> Placement:
        """The detector's decision; ``doubt_share`` is the share of decisions the LLM may take
        (0: the embedding path decides; ignored unless the strategy is ``hybrid``); ``learn``
        folds this memory and the decision's confidence into its ``project``'s running
        statistics (once per memory, at its first decision); ``seeds_eligible``: ``seeds``
        are the engine's seed pool for this memory (:meth:`.state.EngineState.seed_pool`),
        already within its window (:func:`.detector.decide`)."""
        strategy = self.settings.detector_strategy if doubt_share > 0 else "embedding"
        params = DetectorParams.from_config(self.settings, doubt_share=doubt_share)
        params = DetectorParams(**{**params.__dict__, "strategy": strategy})
        context = self.context(project)
        raw = detector.decide(
            memory, episodes, seeds, context, params, self.seed_rows, seeds_eligible=seeds_eligible
        )
        if learn:
            detector.update_context(context, memory, raw.background, confidence=raw.confidence)
            self._changed.setdefault(project, set()).update(memory.terms)
            self.updates += 1
        return self._decision(raw, memory, episodes, seeds)

    def _decision(
        self,
        raw: detector.Decision,
        memory: MemoryFeatures,
        episodes: list[EpisodeFeatures],
        seeds: list[MemoryFeatures],
    ) -> Placement:
        """The engine's :class:`Placement` for the detector's ``raw`` one."""
        sure = raw.confidence
        if isinstance(raw, detector.Join):
            episode = next(e for e in episodes if e.id == raw.episode_id)
            similarity = self.similarity(memory, episode)
            return Placement("join", raw.episode_id, raw.score, similarity, confidence=sure)
        if isinstance(raw, detector.StartFromSeed):
            seed = next(s for s in seeds if s.id == raw.seed_id)
            similarity = float(memory.vector @ seed.vector)
            return Placement("seed", raw.seed_id, raw.score, similarity, confidence=sure)
        if isinstance(raw, detector.Ambiguous):
            options = [
                Option(
                    "join" if c.kind == "episode" else "seed", c.id, c.score, c.evidence.max_cosine
                )
                for c in raw.candidates
            ]
            best = options[0]
            embedded = None
            if raw.embedded is not None:
                embedded = self._decision(raw.embedded, memory, episodes, seeds)
            return Placement(
                "ambiguous", None, best.score, best.similarity, options, sure, embedded
            )
        return Placement("new_seed", score=raw.best_score, confidence=sure)

    def chain_score(
        self, new: EpisodeFeatures, closed: EpisodeFeatures, project: str = DEFAULT_PROJECT
    ) -> float:
        return detector.chain_score(new, closed, self.context(project))

    def unlearn(self, memory: Memory) -> None:
        """Take a forgotten memory (learned at its first decision) out of the statistics."""
        terms = detector.terms_of(memory.content, memory.source_instance)
        detector.forget_terms(self.context(memory.project), terms)
        self._changed.setdefault(memory.project, set()).update(terms)

    def state(self) -> dict[str, Any]:
        """The statistics without the word counts (see :meth:`changed_terms`): a few KB
        whatever the vocabulary."""
        return {"projects": {name: c.to_json(terms=False) for name, c in self.contexts.items()}}

    def changed_terms(self) -> dict[str, dict[str, int]]:
        """Per project, the count of each word counted or forgotten since :meth:`terms_saved`
        (0: the word left the stream)."""
        return {
            project: {t: self.context(project).doc_freq.get(t, 0) for t in terms}
            for project, terms in self._changed.items()
        }

    def terms_saved(self) -> None:
        self._changed.clear()

    def load_state(
        self, data: dict[str, Any] | None, terms: dict[str, dict[str, int]] | None = None
    ) -> None:
        """From :meth:`state` and the saved word counts (project -> word -> count). A store
        from before projects kept one context, which is the ``default`` project's (every older
        memory is in it); one from before the counts had a table of their own kept them in
        the context: they are all saved again at the next save (and words of the table the
        context lacks are deleted then)."""
        if not data:
            return
        if "projects" not in data:
            data = {"projects": {DEFAULT_PROJECT: data}}
        self.contexts = {}
        for name, saved in data["projects"].items():
            context = self.contexts[str(name)] = DetectorContext.from_json(saved)
            table = (terms or {}).get(str(name), {})
            if "doc_freq" in saved:
                self._changed[str(name)] = set(context.doc_freq) | set(table)
            else:
                context.doc_freq = dict(table)
