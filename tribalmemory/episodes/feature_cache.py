"""Members' detector features kept by the engine, so that an episode is not tokenised again.

A review that moves a memory out of an episode rebuilds that episode's features from all of
its members while it holds the detect lock, which every ``remember`` waits for; merges, splits
and merge checks read whole episodes too. Tokenising 300 members takes about 15 ms of Python,
beside the requests then running. A memory's features are a pure function of its id, vector,
text, tags, author and time (:meth:`.MemoryFeatures.from_text`), so the engine keeps those it
computed, the most recently used :data:`CAPACITY`, and reuses one only for a memory read with
the same text (its digest, :func:`.readings.digest`), tags, author, time and vector, whatever
was written under the id since.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import numpy as np

from ..models import Memory
from .matching import MemoryFeatures
from .readings import digest
from .recent import Recent

CAPACITY = 4096  # 4 KB each for a memory of 100 characters (unit vector, words): 16 MB

Inputs = tuple[bytes, frozenset[str], str, datetime]


def _inputs(memory: Memory) -> Inputs:
    return (
        digest(memory.content),
        frozenset(memory.tags),
        memory.source_instance,
        memory.created_at,
    )


class FeatureCache:
    """A bounded, least-recently-used map of memory id to the features computed from it."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._kept: Recent[str, tuple[Inputs, np.ndarray, MemoryFeatures]] = Recent(capacity)

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, memory: Memory, vector: np.ndarray) -> MemoryFeatures | None:
        """The features kept for ``memory`` read with ``vector``, if they were computed from
        exactly these."""
        kept = self._kept.get(memory.id)
        if kept is None:
            return None
        inputs, given, features = kept
        if inputs != _inputs(memory) or not (given is vector or np.array_equal(given, vector)):
            return None
        return features

    def put(self, memory: Memory, vector: np.ndarray, features: MemoryFeatures) -> None:
        self._kept.put(memory.id, (_inputs(memory), vector, features))

    def drop(self, memory_ids: Iterable[str]) -> None:
        self._kept.drop(memory_ids)
