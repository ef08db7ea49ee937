"""A client's edits of stored memories: correct (a CORRECTION that supersedes a memory, kept
as history) and forget; and, at start, the corrections a crash left half-written."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..errors import InvalidInput
from ..models import ENGINE_WRITTEN, Memory, SourceType
from ..shapes import CorrectRequest, RememberRequest
from ..storage.base import MemoryFilter
from .remembering import RememberOperations, RememberResult, new_memory

log = logging.getLogger("tribalmemory.service")


class EditOperations(RememberOperations):
    """correct and forget."""

    async def correct(self, request: CorrectRequest) -> RememberResult:
        """Store a CORRECTION memory that supersedes ``request.memory_id``. The old memory is
        kept as history, marked ``superseded_by`` the correction: recall leaves it out unless
        asked (``include_superseded``), and episode summaries leave it out."""
        old = await self.get(request.memory_id)
        self.hooks.check_correct(old)  # the episode engine names its own ways
        if old.source_type is SourceType.EPISODE_SUMMARY:
            raise InvalidInput(
                f"memory {old.id} is an episode summary; correct the memories it summarises"
            )
        if old.source_type in ENGINE_WRITTEN:
            raise InvalidInput(
                f"memory {old.id} is an episode's {old.source_type.value}; correct the memories "
                "it rests on or edit the episode's structured record"
            )
        as_new = RememberRequest.model_construct(
            content=request.content,
            source_type=SourceType.CORRECTION,
            source_instance=request.source_instance,
            tags=old.tags if request.tags is None else request.tags,
            context=request.context,
            skip_dedup=True,
            project=old.project,
            shared=old.shared,
        )
        new = new_memory(as_new, self.config)
        self.check_space([new.content, old.content])
        with self.activity.request():
            vector = (await self.embed([new.content]))[0]
            return await self._store_new(new, vector, corrects=old)

    async def finish_corrections(self) -> int:
        """At start: mark the memories that a stored correction supersedes but that are not
        marked (a crash between the two writes), and tell the plugins. Returns how many."""
        where = MemoryFilter(source_types=[SourceType.CORRECTION])
        corrections = await asyncio.to_thread(lambda: list(self.store.scroll(where)))
        newest: dict[str, Memory] = {}
        for correction in sorted(corrections, key=lambda m: (m.created_at, m.id)):
            if correction.supersedes:
                newest[correction.supersedes] = correction
        olds = await self.get_many(list(newest))
        unmarked = [old for old in olds if old.superseded_by is None]
        for old in unmarked:
            correction = newest[old.id]
            async with self._write_lock:
                marked = await self._mark_superseded(old.id, correction.id)
            if marked is not None:
                await self.hooks.after_correct(marked, correction)
        if unmarked:
            log.warning(
                "marked %d corrected memories superseded (their correction was stored, then "
                "the daemon stopped before marking them)",
                len(unmarked),
            )
        return len(unmarked)

    async def forget(self, memory_id: Any) -> None:
        """Delete a memory; hooks take it out of anything built from it (e.g. its episode)
        before this returns. The hooks run outside the request marker: they may wait for an
        episode's summary job, which waits for requests to end before it uses the CPU."""
        memory = await self.get(memory_id)
        self.hooks.check_forget(memory)
        with self.activity.request():
            async with self._write_lock:
                await asyncio.to_thread(self.store.delete, [memory.id])
        if self.access is not None:
            self.access.delete([memory.id])
        await self.hooks.after_forget(memory)
