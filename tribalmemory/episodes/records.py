"""Reads and user edits of episodes' structured records: ``PATCH`` of the structured fields and
the decision sequence (the record itself is written by :mod:`.summaries`)."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from . import structured
from .state import EngineState
from .summaries import Summaries


class Records:
    """Structured records as clients read and edit them."""

    def __init__(self, state: EngineState, summaries: Summaries) -> None:
        self.state = state
        self.store = state.store
        self.summaries = summaries

    async def update(self, episode_id: str, patch: dict[str, Any]) -> None:
        """Set the given structured fields; they are marked edited, so regeneration keeps them.
        Lessons and decisions memories are rewritten at once."""
        state = self.state
        state.episode(episode_id)
        async with state.lock(episode_id):
            row = state.episode(episode_id)
            memories = await state.host.get_memories(self.store.memberships.member_ids(episode_id))
            try:
                fresh = structured.from_user(patch, [m.id for m in memories])
            except structured.InvalidPart as exc:
                raise InvalidInput(str(exc)) from None
            previous = row.structured or structured.fallback(memories, row.status)
            source = row.structured.get("source", "extractive")
            record = structured.finish(fresh, previous, memories, source, edited=fresh)
            links = self.summaries.causal.derive(row, record, memories)
            with self.store.transaction() as db:
                self.store.episodes.update(
                    db, episode_id, structured=record, updated_at=state.clock()
                )
                self.summaries.causal.write_derived(db, row, links, state.clock())
            await self.summaries.write_derived(row, record, memories, row.title)

    def decisions(self, episode_id: str) -> dict[str, Any]:
        row = self.state.episode(episode_id)
        record = {"decisions": [dict(d) for d in (row.structured or {}).get("decisions") or []]}
        self.summaries.causal.decorate(row.project, record)
        items = record["decisions"]
        return {"episode_id": row.id, "title": row.title, "decisions": items, "count": len(items)}
