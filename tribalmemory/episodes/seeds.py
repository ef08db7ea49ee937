"""The seeds: memories in no episode yet that a later memory may start one with.

Kept per project in time order, so that the detector's question -- "the most recent seeds of
this project within the active window of this memory" -- costs a binary search and the seeds
it returns, not a scan and a sort of every seed (20k unplaced memories are normal after an
import)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator

from .matching import MemoryFeatures, when


class SeedPool:
    """Seed features by memory id (a mapping, as the engine reads and edits it), indexed by
    project and time. ``project_of`` names a memory's project; it is asked once, when the
    seed is added (a memory never changes project)."""

    def __init__(self, project_of: Callable[[str], str]) -> None:
        self._project_of = project_of
        self._features: dict[str, MemoryFeatures] = {}
        self._keys: dict[str, tuple[str, tuple[float, str]]] = {}  # id -> project, time key
        self._by_project: dict[str, list[tuple[float, str]]] = {}  # time keys, ascending

    def __len__(self) -> int:
        return len(self._features)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._features

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._features))

    def __getitem__(self, memory_id: str) -> MemoryFeatures:
        return self._features[memory_id]

    def __setitem__(self, memory_id: str, features: MemoryFeatures) -> None:
        self.pop(memory_id)
        project = self._project_of(memory_id)
        key = (when(features), memory_id)
        insort(self._by_project.setdefault(project, []), key)
        self._keys[memory_id] = (project, key)
        self._features[memory_id] = features

    def get(self, memory_id: str) -> MemoryFeatures | None:
        return self._features.get(memory_id)

    def pop(self, memory_id: str, default: MemoryFeatures | None = None) -> MemoryFeatures | None:
        found = self._features.pop(memory_id, None)
        if found is None:
            return default
        project, key = self._keys.pop(memory_id)
        keys = self._by_project[project]
        del keys[bisect_left(keys, key)]
        return found

    def clear(self) -> None:
        self._features.clear()
        self._keys.clear()
        self._by_project.clear()

    def expire(self, horizon: float) -> list[str]:
        """Drop the seeds created before ``horizon`` (epoch seconds); returns their ids."""
        dropped: list[str] = []
        for keys in self._by_project.values():
            cut = bisect_left(keys, (horizon, ""))
            for _, memory_id in keys[:cut]:
                del self._features[memory_id]
                del self._keys[memory_id]
                dropped.append(memory_id)
            del keys[:cut]
        return dropped

    def recent(
        self, project: str, around: float, window: float, limit: int, exclude: str = ""
    ) -> list[MemoryFeatures]:
        """The ``limit`` most recent seeds of ``project`` created within ``window`` seconds of
        ``around`` (either side: imports deliver memories out of order), oldest first,
        ``exclude`` left out."""
        if limit <= 0:
            return []
        keys = self._by_project.get(project, [])
        low = bisect_left(keys, (around - window, ""))
        high = bisect_right(keys, (around + window, "\uffff"))
        features = self._features  # one more than the limit, in case ``exclude`` is among them
        out = [features[m] for _, m in keys[max(low, high - limit - 1) : high] if m != exclude]
        return out[-limit:]
