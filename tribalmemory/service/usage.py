"""Access statistics as the operations use them: the fields each memory or episode shows,
and the reviews that a recall (a light one) or a use (a good one) records."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import retrievability as fsrs
from ..models import Memory
from . import access as stats
from .state import ServiceState

NO_STATS = {"access_count": None, "last_accessed_at": None, "retrievability": None}


class AccessOperations(ServiceState):
    """Reading and recording access statistics (retrievability)."""

    def access_fields(
        self, items: list[tuple[str, datetime]], known: dict[str, fsrs.Stats] | None = None
    ) -> dict[str, dict[str, Any]]:
        """``access_count``, ``last_accessed_at`` and ``retrievability`` of each ``(id,
        created_at)`` (a memory or an episode); null when statistics are unavailable.
        ``known``: statistics just written (not read again)."""
        if self.access is None or not self.access.available:
            return {item_id: dict(NO_STATS) for item_id, _ in items}
        known = known or {}
        found = dict(known)
        found.update(self.access.get(i for i, _ in items if i not in known))
        now = self.access.now()
        return {
            item_id: stats.fields_of(found.get(item_id), now, created_at)
            for item_id, created_at in items
        }

    def record_access(
        self, memories: list[Memory], episode_of: dict[str, str | None], grade: int
    ) -> dict[str, fsrs.Stats]:
        """Review ``memories`` and the episodes they belong to (``episode_of``: memory id →
        episode id, summaries included) with ``grade``; an episode is reviewed once. An
        episode never reviewed counts from its oldest memory among these."""
        if self.access is None or not memories:
            return {}
        key = self.hooks.key_moments(memories)
        items = [(m.id, m.created_at.timestamp(), m.id in key) for m in memories]
        born: dict[str, float] = {}
        for memory in memories:
            episode_id = episode_of.get(memory.id)
            if episode_id:
                at = memory.created_at.timestamp()
                born[episode_id] = min(born.get(episode_id, at), at)
        items += [(episode_id, at, False) for episode_id, at in born.items()]
        return self.access.record(items, grade)

    def forget_access(self, ids: list[str]) -> None:
        """Drop the statistics of ``ids`` (a deleted or merged-away episode)."""
        if self.access is not None:
            self.access.delete(ids)

    async def mark_used(self, memory_id: Any) -> dict[str, Any]:
        """Record that ``memory_id`` was used (a good review, see :mod:`..retrievability`),
        and its episode with it; its statistics after."""
        memory = await self.get(memory_id)
        episode_id = self.annotate([memory]).get(memory.id, {}).get("episode_id")
        self.record_access([memory], {memory.id: episode_id}, fsrs.USED)
        fields = self.access_fields([(memory.id, memory.created_at)])[memory.id]
        return {"memory_id": memory.id, "episode_id": episode_id, **fields}
