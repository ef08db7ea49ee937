"""The plugin host over the memory service: :class:`~.host.PluginHost` as the daemon gives it
to each plugin at ``start``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import numpy as np

from ..models import ENGINE_WRITTEN, Memory, RecallHit, SourceType
from ..projects import ALL_PROJECTS
from ..shapes import RecallRequest
from ..storage.base import MemoryFilter

if TYPE_CHECKING:
    from .memory_service import MemoryService

PLUGIN_OWNED = ENGINE_WRITTEN
MISSING_CHUNK = 1000  # ids counted per store query by missing()


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
        ids: list[str] | None = None,
    ) -> list[RecallHit]:
        if not source_types:
            raise ValueError("a plugin's search names the source types it searches")
        request = RecallRequest.model_construct(
            query=query,
            limit=limit,
            min_relevance=min_relevance,
            source_types=list(source_types),
            project=ALL_PROJECTS if project is None else project,
        )
        # the plugin's own searches are not re-ranked by access statistics
        return await self._service.recall(request, ids, rerank=False)

    async def term_search(self, text: str, project: str | None, limit: int) -> list[Memory]:
        where = MemoryFilter(project=project, include_shared=False) if project else None
        return await asyncio.to_thread(self._service.store.term_search, text, limit, where)

    async def write_owned(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        _check_owned(memories)
        await self._service.put_internal(memories, vectors)

    async def delete_owned(self, memory_ids: list[str]) -> None:
        _check_owned(await self._service.get_many(memory_ids))
        await self._service.delete_internal(memory_ids)

    async def background_turn(self) -> None:
        await self._service.activity.background_turn()

    def busy(self) -> bool:
        return self._service.activity.busy()

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
