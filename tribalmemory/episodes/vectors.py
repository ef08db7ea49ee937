"""Members' vectors kept by the engine, so that its background jobs mostly skip the store.

A summary job reads every member of its episode, and the store hands each vector back as a
list of Python floats: for 300 members that is about 6 ms of Python on a thread, beside the
requests then running. The engine sees each memory's vector as it is stored (the write-time
hook), and a client's memory keeps its vector for life (a correction is a new memory). So the
engine keeps the vectors it was given or read, the most recently used :data:`CAPACITY` of them,
and reads only the others.

Exact, not approximate: the only memories whose vectors change under the same id are the
engine's own (summaries, lessons, decisions), written through :class:`VectorCachingHost`,
which drops them once each such write is done (until then, a kept vector is what a read
racing the write could return anyway); a forgotten memory is dropped by the engine's
``after_forget`` hook. A read that was in flight while something was dropped keeps what it
read out of the cache (it may predate the write).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import numpy as np

from ..models import Memory
from ..service.host import PluginHost
from .recent import Recent

CAPACITY = 10_000  # vectors kept: 15 MB at the bundled model's 384 dimensions

Read = Callable[[list[str]], Awaitable[dict[str, np.ndarray]]]


class VectorCache:
    """A bounded, least-recently-used map of memory id to vector."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._vectors: Recent[str, np.ndarray] = Recent(capacity)
        self._generation = 0  # bumped by every drop: a read that saw one keeps nothing

    def __len__(self) -> int:
        return len(self._vectors)

    def put(self, memory_id: str, vector: np.ndarray) -> None:
        self._vectors.put(memory_id, vector)

    def drop(self, memory_ids: Iterable[str]) -> None:
        self._generation += 1
        self._vectors.drop(memory_ids)

    async def get(self, memory_ids: list[str], read: Read) -> dict[str, np.ndarray]:
        """The vectors of ``memory_ids`` that exist: kept ones, and the others from ``read``
        (kept for next time unless something was dropped meanwhile)."""
        found: dict[str, np.ndarray] = {}
        missing: list[str] = []
        for memory_id in memory_ids:
            vector = self._vectors.get(memory_id)
            if vector is None:
                missing.append(memory_id)
            else:
                found[memory_id] = vector
        if missing:
            generation = self._generation
            fresh = await read(missing)
            if generation == self._generation:
                for memory_id, vector in fresh.items():
                    self.put(memory_id, vector)
            found.update(fresh)
        return found


class VectorCachingHost:
    """The plugin host, its ``get_vectors`` answered from a :class:`VectorCache` first."""

    def __init__(self, host: PluginHost, cache: VectorCache) -> None:
        self._inner = host
        self._cache = cache

    async def get_vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        return await self._cache.get(memory_ids, self._inner.get_vectors)

    async def write_owned(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        try:
            await self._inner.write_owned(memories, vectors)
        finally:
            self._cache.drop([m.id for m in memories])

    async def delete_owned(self, memory_ids: list[str]) -> None:
        try:
            await self._inner.delete_owned(memory_ids)
        finally:
            self._cache.drop(memory_ids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
