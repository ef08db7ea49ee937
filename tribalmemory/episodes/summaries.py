"""Episode summaries: the summary job, the extractive refresh and the summary memory.

Each episode's summary is also stored as one ``EPISODE_SUMMARY`` memory (same id every time),
written through the plugin host, so that plain ``recall()`` finds it. Everything here that
writes an episode's summary holds that episode's lock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from ..models import Memory, SourceType, new_memory_id
from ..timeutil import from_epoch
from . import extractive, lifecycle
from .state import EngineState
from .store import EpisodeRow
from .summariser import Summariser, SummaryOutcome

SUMMARY_INSTANCE = "tribalmemory"
EMPTY_TITLE = "Untitled episode"  # what an episode is called while nothing in it is current


class Summaries:
    """Writes episode summaries and their summary memories."""

    def __init__(self, state: EngineState, summariser: Summariser) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser

    async def run(self, episode_id: str, trigger: str | None = None) -> None:
        """The summary job: LLM summary of the planned kind, or the extractive fallback."""
        settings = self.state.settings
        async with self.state.lock(episode_id):
            live = await self._live_members(episode_id)
            if live is None:
                return
            row, memories, vectors = live
            if row.summary_memory_id is None:  # it was emptied, and has members again
                row.summary_memory_id = new_memory_id()
                with self.store.transaction() as db:
                    self.store.update_episode(
                        db, episode_id, summary_memory_id=row.summary_memory_id
                    )
            # "New since the last LLM summary": memberships numbered above the mark it recorded.
            marker = self.store.membership_mark(episode_id)
            fresh = self.store.members_after(episode_id, row.llm_summary_mark)
            new_memories = [m for m in memories if m.id in fresh]
            plan = lifecycle.plan_summary(
                status=row.status,
                since_regen=row.since_regen,
                interval=settings.full_regen_interval,
                needs_full=row.needs_full,
                has_llm_summary=bool(row.llm_summary),
                new_memories=len(new_memories),
                update_every=settings.llm_update_every,
            )
            interim = plan == "interim" and bool(row.llm_summary) and self.summariser.ready()
            result = (
                None
                if plan == "interim"
                else await self.summariser.summarise(plan, row, memories, new_memories, trigger)
            )
            # What follows uses the CPU (extractive summary, embedding): requests go first.
            await self.state.host.background_turn()
            values: dict[str, Any] = {"updated_at": self.state.clock()}
            if interim:
                values.update(
                    summary=extractive.interim_summary(row.llm_summary, new_memories),
                    summary_kind="llm",
                )
            else:
                values.update(summary_values(plan, row, memories, vectors, result, marker))
            title = values.get("title", row.title)
            if self.store.episode(episode_id) is None:
                return
            await self.write_memory(row, memories, title, values["summary"], values["summary_kind"])
            with self.store.transaction() as db:
                self.store.update_episode(db, episode_id, **values)

    async def refresh_extractive(self, episode_id: str) -> None:
        """After a member left (removed, moved, forgotten or superseded): rewrite everything
        that may quote it from the remaining members at once. The summary and metadata become
        extractive, a generated title a keyword title, the last LLM summary (the base of
        cheap updates) is dropped so the queued LLM job regenerates in full. A user's title
        is kept. The caller holds the episode's lock and has queued the summary job."""
        live = await self._live_members(episode_id)
        if live is None:
            return
        row, memories, vectors = live
        values = scrubbed_values(row, memories, vectors)
        values["updated_at"] = self.state.clock()
        with self.store.transaction() as db:
            self.store.update_episode(db, episode_id, **values)
        await self.write_memory(row, memories, values["title"], values["summary"], "extractive")

    async def write_memory(
        self, row: EpisodeRow, memories: list[Memory], title: str, summary: str, kind: str
    ) -> None:
        """Insert or replace the episode's EPISODE_SUMMARY memory (same id every time)."""
        if row.summary_memory_id is None:
            return
        now = from_epoch(self.state.clock())
        await self.state.host.write_owned(summary_memory(row, memories, title, summary, kind, now))

    async def _live_members(
        self, episode_id: str
    ) -> tuple[EpisodeRow, list[Memory], np.ndarray] | None:
        """The episode and the members its summary covers: not those a correction superseded.
        None when it is gone or has none (then its summary memory is removed, since there is
        nothing left to summarise)."""
        row = self.store.episode(episode_id)
        if row is None:
            return None
        found = await self.state.host.get_memories(self.store.member_ids(episode_id))
        memories = [m for m in found if m.superseded_by is None]
        vectors = await self.state.host.get_vectors([m.id for m in memories])
        kept = [m for m in memories if m.id in vectors]
        if not kept:
            await self._drop_memory(episode_id)
            return None
        return row, kept, np.stack([vectors[m.id] for m in kept])

    async def _drop_memory(self, episode_id: str) -> None:
        row = self.store.episode(episode_id)
        if row is None or row.summary_memory_id is None:
            return
        with self.store.transaction() as db:
            self.store.update_episode(
                db,
                episode_id,
                summary="",
                summary_memory_id=None,
                summary_status="current",
                llm_summary="",
                llm_summary_mark=None,
                needs_full=True,
                metadata={},
                updated_at=self.state.clock(),
                **({} if row.title_source == "user" else {"title": EMPTY_TITLE}),
            )
        await self.state.host.delete_owned([row.summary_memory_id])


def summary_memory(
    row: EpisodeRow, memories: list[Memory], title: str, summary: str, kind: str, now: datetime
) -> Memory:
    """The EPISODE_SUMMARY memory of an episode: tagged with its members' tags."""
    assert row.summary_memory_id is not None
    tags = sorted({t for m in memories for t in m.tags} | {f"episode:{row.id}"})
    return Memory(
        id=row.summary_memory_id,
        content=f"Episode: {title}\n{summary}",
        source_type=SourceType.EPISODE_SUMMARY,
        source_instance=SUMMARY_INSTANCE,
        tags=tags,
        context=None,
        created_at=from_epoch(row.first_activity or row.created_at),
        updated_at=now,
        metadata={"episode_id": row.id, "summary_kind": kind},
    )


def scrubbed_values(row: EpisodeRow, memories: list[Memory], vectors: np.ndarray) -> dict[str, Any]:
    """Episode columns rebuilt from ``memories`` alone, with nothing generated from others."""
    user_title = row.title_source == "user"
    return {
        "summary": extractive.extractive_summary(memories, vectors),
        "summary_kind": "extractive",
        "title": row.title if user_title else extractive.keyword_title(memories, vectors),
        "title_source": "user" if user_title else "keyword",
        "metadata": extractive.fallback_metadata(memories, row.status),
        "llm_summary": "",
        "llm_summary_mark": None,
        "needs_full": True,
    }


def summary_values(
    plan: str,
    row: EpisodeRow,
    memories: list[Memory],
    vectors: np.ndarray,
    result: SummaryOutcome | None,
    marker: int | None,
) -> dict[str, Any]:
    """Episode columns after an LLM summary, or after the extractive fallback."""
    if result is None:
        values: dict[str, Any] = {
            "summary": extractive.extractive_summary(memories, vectors),
            "summary_kind": "extractive",
        }
        if plan == "final" or not row.metadata:
            values["metadata"] = extractive.fallback_metadata(memories, row.status)
        return values
    values = {
        "summary": result.summary,
        "summary_kind": "llm",
        "llm_summary": result.summary,
        "llm_summary_mark": marker,
        "needs_full": False,
    }
    if plan in ("regenerate", "final"):
        values["since_regen"] = 0
    if result.title and row.title_source != "user":
        values.update(title=result.title, title_source="llm")
    if result.metadata is not None:
        values["metadata"] = result.metadata
    return values
