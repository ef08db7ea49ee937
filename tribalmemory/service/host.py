"""What a plugin may do with the memory service: the narrow interface it receives at ``start``.

A plugin reads memories and their vectors, searches, lists memories of a source type, writes
and deletes the memories it owns, and waits for a quiet moment before CPU-heavy background
work. It never reaches the store, the embedders or the request counter of the service.

Plugin-owned memories are those of a source type clients cannot write (``EPISODE_SUMMARY``,
``LESSON``, ``DECISION``); they are stored without the write-time hooks or deduplication, and
their text is embedded by the low-priority background embedder.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..models import ENGINE_WRITTEN, Memory, RecallHit, SourceType
from ..projects import ALL_PROJECTS
from ..storage.base import MemoryFilter

if TYPE_CHECKING:
    from .memory_service import MemoryService

PLUGIN_OWNED = ENGINE_WRITTEN
MISSING_CHUNK = 1000  # ids counted per store query by missing()


class PluginHost(Protocol):
    """The service as a plugin sees it."""

    async def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        """The memories that exist among ``memory_ids`` (missing ones are left out)."""
        ...

    async def get_vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors by memory id (missing ones are left out)."""
        ...

    async def memories_of_type(self, source_type: SourceType) -> list[Memory]:
        """Every memory of ``source_type``: a full read, for recovery, not for requests."""
        ...

    async def missing(self, memory_ids: list[str]) -> list[str]:
        """The ids among ``memory_ids`` that no stored memory has (cheap when none is)."""
        ...

    async def search(
        self,
        query: str,
        source_types: list[SourceType],
        limit: int,
        min_relevance: float,
        project: str | None,
    ) -> list[RecallHit]:
        """Hybrid search (as ``recall``) restricted to ``source_types`` and to what
        ``project`` sees (None: every project), best first."""
        ...

    async def write_owned(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        """Insert or replace plugin-owned memories in one write: with ``vectors`` (one row
        each, from :meth:`embed` or :meth:`embed_background`) as given, else embedded in the
        background. If any of them is not plugin-owned, none is written."""
        ...

    async def delete_owned(self, memory_ids: list[str]) -> None:
        """Delete plugin-owned memories; other memories are refused."""
        ...

    async def background_turn(self) -> None:
        """Wait until background work may use the CPU (requests go first)."""
        ...

    def episodes_gone(self, episode_ids: list[str]) -> None:
        """These episodes no longer exist (merged away, emptied): drop what the host keeps
        about them (their access statistics)."""
        ...

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` with the store's model (on the request path: keep it short)."""
        ...

    async def embed_background(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` for background work: at low priority, so it may wait while
        requests run (never call it holding what a request waits for)."""
        ...


class ServiceHost:
    """:class:`PluginHost` over a :class:`MemoryService`."""

    def __init__(self, service: MemoryService) -> None:
        self._service = service

    async def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        return await self._service.get_many(memory_ids)

    async def get_vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        return await self._service.vectors(memory_ids)

    async def memories_of_type(self, source_type: SourceType) -> list[Memory]:
        where = MemoryFilter(source_types=[source_type])
        return await asyncio.to_thread(lambda: list(self._service.store.scroll(where)))

    async def missing(self, memory_ids: list[str]) -> list[str]:
        store = self._service.store
        gone: list[str] = []
        for start in range(0, len(memory_ids), MISSING_CHUNK):
            chunk = memory_ids[start : start + MISSING_CHUNK]
            count = await asyncio.to_thread(store.count, MemoryFilter(ids=chunk))
            if count < len(set(chunk)):  # only then read which ones
                found = {m.id for m in await self._service.get_many(chunk)}
                gone += [m for m in chunk if m not in found]
        return gone

    async def search(
        self,
        query: str,
        source_types: list[SourceType],
        limit: int,
        min_relevance: float,
        project: str | None,
    ) -> list[RecallHit]:
        if not source_types:
            raise ValueError("a plugin's search names the source types it searches")
        return await self._service.recall(
            query,
            limit=limit,
            min_relevance=min_relevance,
            source_types=list(source_types),
            rerank=False,  # the plugin's own searches are not re-ranked by access statistics
            project=ALL_PROJECTS if project is None else project,
        )

    async def write_owned(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        _check_owned(memories)
        await self._service.put_internal(memories, vectors)

    async def delete_owned(self, memory_ids: list[str]) -> None:
        _check_owned(await self._service.get_many(memory_ids))
        await self._service.delete_internal(memory_ids)

    async def background_turn(self) -> None:
        await self._service.activity.background_turn()

    def episodes_gone(self, episode_ids: list[str]) -> None:
        self._service.forget_access(episode_ids)

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await self._service.embed(texts)

    async def embed_background(self, texts: list[str]) -> np.ndarray:
        return await self._service.embed_background(texts)


def _check_owned(memories: list[Memory]) -> None:
    foreign = [m.id for m in memories if m.source_type not in PLUGIN_OWNED]
    if foreign:
        raise PermissionError(f"not plugin-owned memories, left unchanged: {', '.join(foreign)}")
