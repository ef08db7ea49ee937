"""The one place where response shapes live.

Each method is what one HTTP route, MCP tool or CLI command does: it takes raw client values,
calls one service or engine method and returns the documented JSON shape. Interfaces stay thin:
they parse the transport, call a method here and serialise the dict (errors are
:class:`~tribalmemory.errors.TribalError` subclasses, mapped to status codes by each interface).
"""

from __future__ import annotations

from typing import Any, Protocol

from . import validation as check
from .errors import FeatureDisabled, InvalidInput
from .models import Memory
from .service import MemoryService

EPISODES_DISABLED = "Episode feature not enabled"
EPISODE_STATUSES = ("active", "closed", "archived")


class EpisodeOperations(Protocol):
    """What the episode engine offers to the API (implemented in tribalmemory.episodes)."""

    async def list_episodes(
        self, status: str | None, limit: int, offset: int, filters: dict[str, str]
    ) -> list[dict[str, Any]]: ...
    async def get_episode(self, episode_id: str, include_timeline: bool) -> dict[str, Any]: ...
    async def create_episode(
        self, title: str, memory_ids: list[str], parent_episode_id: str | None
    ) -> dict[str, Any]: ...
    async def add_memory(self, episode_id: str, memory_id: str) -> None: ...
    async def remove_memory(self, episode_id: str, memory_id: str) -> None: ...
    async def close_episode(self, episode_id: str) -> None: ...
    async def regenerate_episode(self, episode_id: str) -> None: ...
    async def delete_episode(self, episode_id: str) -> None: ...
    def costs(self) -> dict[str, Any]: ...
    async def chain(self, episode_id: str) -> dict[str, Any]: ...
    async def replay(self, topic: str, limit: int) -> dict[str, Any]: ...
    async def search(
        self,
        query: str,
        time_start: float | None,
        time_end: float | None,
        status: str | None,
        limit: int,
    ) -> dict[str, Any]: ...


class TribalAPI:
    """Documented request → response operations over the service and the episode engine."""

    def __init__(self, service: MemoryService, episodes: EpisodeOperations | None) -> None:
        self.service = service
        self.episodes = episodes

    # -- memories ---------------------------------------------------------------------------

    def memory_json(
        self, memory: Memory, extra: dict[str, dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        data = memory.to_json()
        annotations = extra if extra is not None else self.service.annotate([memory])
        data.update(annotations.get(memory.id, {}))
        return data

    async def remember(
        self,
        content: Any,
        source_type: Any = None,
        source_instance: Any = None,
        tags: Any = None,
        context: Any = None,
        created_at: Any = None,
        skip_dedup: Any = None,
    ) -> dict[str, Any]:
        result = await self.service.remember(
            content, source_type, source_instance, tags, context, created_at, skip_dedup
        )
        return result.to_json()

    async def remember_batch(self, memories: Any) -> dict[str, Any]:
        results = await self.service.remember_batch(memories)
        return {
            "results": [r.to_json() for r in results],
            "count": len(results),
            "stored": sum(1 for r in results if r.success),
        }

    async def recall(
        self,
        query: Any,
        limit: Any = None,
        min_relevance: Any = None,
        tags: Any = None,
        source_types: Any = None,
        after: Any = None,
        before: Any = None,
    ) -> dict[str, Any]:
        hits = await self.service.recall(
            query, limit, min_relevance, tags, source_types, after, before
        )
        extra = self.service.annotate([h.memory for h in hits])
        results = []
        for hit in hits:
            item = hit.to_json()
            item["memory"] = self.memory_json(hit.memory, extra)
            results.append(item)
        return {"results": results, "query": query, "count": len(results)}

    async def get_memory(self, memory_id: Any) -> dict[str, Any]:
        return self.memory_json(await self.service.get(memory_id))

    async def forget(self, memory_id: Any) -> dict[str, Any]:
        mid = check.memory_id(memory_id)
        await self.service.forget(mid)
        return {"success": True, "memory_id": mid}

    async def correct(
        self,
        memory_id: Any,
        content: Any,
        source_instance: Any = None,
        tags: Any = None,
        context: Any = None,
    ) -> dict[str, Any]:
        result = await self.service.correct(memory_id, content, source_instance, tags, context)
        return result.to_json()

    async def stats(self) -> dict[str, Any]:
        return await self.service.stats()

    def health(self) -> dict[str, Any]:
        return self.service.health()

    # -- episodes ---------------------------------------------------------------------------

    def _engine(self) -> EpisodeOperations:
        if self.episodes is None:
            raise FeatureDisabled(
                EPISODES_DISABLED,
                "set episodes.enabled: true in the configuration and restart the daemon",
            )
        return self.episodes

    async def episodes_list(
        self,
        status: Any = None,
        limit: Any = None,
        offset: Any = None,
        outcome: Any = None,
        tag: Any = None,
        participant: Any = None,
    ) -> dict[str, Any]:
        engine = self._engine()
        if status is not None and status not in EPISODE_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(EPISODE_STATUSES)}")
        size = check.integer("limit", limit, 1, 100, 50)
        start = check.integer("offset", offset, 0, 1_000_000, 0)
        filters = {}
        for name, value in (("outcome", outcome), ("tag", tag), ("participant", participant)):
            if value is not None:
                filters[name] = check.text(name, value, 200) or ""
        episodes = await engine.list_episodes(status, size, start, filters)
        return {"episodes": episodes, "count": len(episodes), "status": status}

    async def episode_get(self, episode_id: Any, include_timeline: Any = None) -> dict[str, Any]:
        engine = self._engine()
        eid = check.episode_id(episode_id)
        return await engine.get_episode(eid, check.boolean("include_timeline", include_timeline))

    async def episode_create(
        self, title: Any, memory_ids: Any, parent_episode_id: Any = None
    ) -> dict[str, Any]:
        engine = self._engine()
        name = check.text("title", title, 200)
        assert name is not None
        ids = check.memory_ids(memory_ids)
        parent = (
            None
            if parent_episode_id is None
            else check.episode_id(parent_episode_id, "parent_episode_id")
        )
        created = await engine.create_episode(name.strip(), ids, parent)
        return {
            "success": True,
            "episode_id": created["id"],
            "memory_count": created["memory_count"],
        }

    async def episode_add(self, episode_id: Any, memory_id: Any) -> dict[str, Any]:
        engine = self._engine()
        await engine.add_memory(check.episode_id(episode_id), check.memory_id(memory_id))
        return {"success": True}

    async def episode_remove(self, episode_id: Any, memory_id: Any) -> dict[str, Any]:
        engine = self._engine()
        await engine.remove_memory(check.episode_id(episode_id), check.memory_id(memory_id))
        return {"success": True}

    async def episode_close(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        await engine.close_episode(check.episode_id(episode_id))
        return {"success": True}

    async def episode_regenerate(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        await engine.regenerate_episode(check.episode_id(episode_id))
        return {"success": True}

    async def episode_delete(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        await engine.delete_episode(check.episode_id(episode_id))
        return {"success": True}

    async def episode_costs(self) -> dict[str, Any]:
        return self._engine().costs()

    async def episode_chain(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        return await engine.chain(check.episode_id(episode_id))

    async def episodes_replay(self, topic: Any, limit: Any = None) -> dict[str, Any]:
        engine = self._engine()
        text = check.text("topic", topic, 2000)
        assert text is not None
        return await engine.replay(text, check.integer("limit", limit, 1, 20, 5))

    async def episodes_search(
        self,
        query: Any,
        time_start: Any = None,
        time_end: Any = None,
        status: Any = None,
        limit: Any = None,
    ) -> dict[str, Any]:
        engine = self._engine()
        text = check.text("query", query, 2000)
        assert text is not None
        if status is not None and status not in EPISODE_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(EPISODE_STATUSES)}")
        start = check.timestamp("time_start", time_start)
        end = check.timestamp("time_end", time_end)
        if start and end and start > end:
            raise InvalidInput("time_start must not be after time_end")
        return await engine.search(
            text,
            start.timestamp() if start else None,
            end.timestamp() if end else None,
            status,
            check.integer("limit", limit, 1, 50, 10),
        )
