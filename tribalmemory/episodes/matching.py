"""Adapter between the engine and the pure detector: features, decisions, candidate ids.

The engine only talks to :class:`Matcher`; the scoring itself lives in :mod:`.detector`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import EpisodesConfig
from ..models import Memory
from ..timeutil import to_epoch

SEED_PREFIX = "thread-"


@dataclass
class MemoryFeatures:
    id: str
    vector: np.ndarray
    tags: frozenset[str]
    source_instance: str
    time: float


@dataclass
class EpisodeFeatures:
    id: str
    members: list[MemoryFeatures]
    last_activity: float


@dataclass
class Option:
    """One possible home for a memory: an active episode, or a seed to start one with."""

    kind: str             # join | seed
    target: str | None
    score: float
    similarity: float

    @property
    def candidate_id(self) -> str:
        return self.target if self.kind == "join" else SEED_PREFIX + (self.target or "")


@dataclass
class Decision:
    kind: str                         # join | seed | ambiguous | new_seed | none
    target: str | None = None
    score: float = 0.0
    similarity: float = 0.0
    candidates: list[Option] = field(default_factory=list)

    @classmethod
    def new_seed(cls) -> Decision:
        return cls(kind="new_seed")

    def candidate_ids(self) -> list[str]:
        return [o.candidate_id for o in self.candidates]

    def pick(self, candidate_id: str) -> Decision | None:
        """The decision that follows an LLM choosing ``candidate_id`` (unknown → None)."""
        for option in self.candidates:
            if option.candidate_id == candidate_id:
                return Decision(kind=option.kind, target=option.target, score=option.score,
                                similarity=option.similarity)
        return None


class Matcher:
    """Builds features and asks the detector for decisions, with settings from the config."""

    def __init__(self, settings: EpisodesConfig) -> None:
        self.settings = settings

    def memory(self, memory: Memory, vector: np.ndarray) -> MemoryFeatures:
        return MemoryFeatures(id=memory.id, vector=np.asarray(vector, dtype=np.float32),
                              tags=frozenset(memory.tags), source_instance=memory.source_instance,
                              time=to_epoch(memory.created_at))

    def episode(self, episode_id: str, members: list[MemoryFeatures]) -> EpisodeFeatures:
        ordered = sorted(members, key=lambda m: m.time)
        return EpisodeFeatures(id=episode_id, members=ordered,
                               last_activity=max(m.time for m in ordered))

    def add(self, episode: EpisodeFeatures, member: MemoryFeatures) -> EpisodeFeatures:
        members = sorted([*episode.members, member], key=lambda m: m.time)
        return EpisodeFeatures(id=episode.id, members=members,
                               last_activity=max(episode.last_activity, member.time))

    def _score(self, memory: MemoryFeatures, members: list[MemoryFeatures]) -> tuple[float, float]:
        sims = [float(memory.vector @ m.vector) for m in members]
        best = max(sims)
        # interim calibration: raw MiniLM cosine 0.40 -> 0.75
        return min(1.0, max(0.0, best * 0.75 / 0.40)), best

    def decide(self, memory: MemoryFeatures, episodes: list[EpisodeFeatures],
               seeds: list[MemoryFeatures], *, ambiguous_allowed: bool) -> Decision:
        window = self.settings.active_window_days * 86400.0
        options: list[Option] = []
        for episode in episodes:
            if abs(memory.time - episode.last_activity) > window:
                continue
            score, sim = self._score(memory, episode.members)
            options.append(Option("join", episode.id, score, sim))
        for seed in seeds:
            if abs(memory.time - seed.time) > window:
                continue
            score, sim = self._score(memory, [seed])
            options.append(Option("seed", seed.id, score, sim))
        options.sort(key=lambda o: -o.score)
        threshold = self.settings.embedding_similarity_threshold
        if options and options[0].score >= threshold:
            best = options[0]
            return Decision(best.kind, best.target, best.score, best.similarity, options[:5])
        low = threshold - self.settings.ambiguous_band
        if self.settings.detector_strategy == "llm":
            low = 0.0
        if ambiguous_allowed and options and options[0].score >= low:
            return Decision("ambiguous", None, options[0].score, options[0].similarity,
                            options[:5])
        return Decision("new_seed", candidates=options[:5])
