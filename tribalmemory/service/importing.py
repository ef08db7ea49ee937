"""Imports: exported memories stored under their own ids, a page at a time (one existence
check, one durable store write, the batch hook), the episode engine placing them after."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

from ..models import Memory
from .state import ServiceState


@dataclass
class ImportItem:
    """An exported memory to store under its own id, with its vector. ``placed``: the import
    recreates its episode itself, so no plugin sees it as new (no hooks, no detection)."""

    memory: Memory
    vector: np.ndarray
    placed: bool = False


class ImportOperations(ServiceState):
    """import_memory, import_pages and import_page."""

    async def import_memory(
        self, memory: Memory, vector: np.ndarray | None, placed: bool = False
    ) -> bool:
        """Store an exported memory under its own id, with the write-time hooks (so the
        episode engine places it), unless a memory with that id exists: then False.

        ``placed``: the import recreates the memory's episode itself, so no plugin sees it
        as a new memory (no hooks: no detection)."""
        if vector is None:
            vector = (await self.embed([memory.content]))[0]
        item = ImportItem(memory, np.asarray(vector, dtype=np.float32), placed)
        return bool(await self.import_page([item]))

    async def import_pages(
        self,
        count: int,
        prepare: Callable[[int], Awaitable[list[ImportItem]]],
        check: Callable[[int], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Store ``count`` pages in order (:meth:`import_page`), page ``n`` made by
        ``prepare(n)``, each prepared (embedded) while the one before is stored; returns how
        many memories were stored. ``check`` runs before each page with the number stored so
        far, and stops the import by raising (the page prepared ahead is dropped);
        ``progress`` runs after each page with its size."""
        stored = 0
        ahead = asyncio.ensure_future(prepare(0)) if count else None
        try:
            for number in range(count):
                assert ahead is not None
                if check is not None:
                    check(stored)
                page = await ahead
                following = number + 1
                ahead = asyncio.ensure_future(prepare(following)) if following < count else None
                stored += len(await self.import_page(page))
                if progress is not None:
                    progress(len(page))
        finally:
            if ahead is not None:
                ahead.cancel()
        return stored

    async def import_page(self, page: list[ImportItem]) -> list[str]:
        """Store a page of exported memories at once (an import), each under its own id,
        unless a memory with that id exists; returns the ids stored.

        One existence check, one durable upsert and one ``before_remember_batch`` for the
        page; then ``after_remember`` for each memory not ``placed``, in the page's order
        (the importer orders by memory time, so the episode engine decides as it would
        for the memories remembered one at a time). Marked as a request: background work
        (summaries) waits for quiet moments as during other requests."""
        with self.activity.request():
            async with self._write_lock:
                ids = [item.memory.id for item in page]
                known = {m.id for m in await asyncio.to_thread(self.store.get, ids)}
                todo: list[ImportItem] = []
                for item in page:
                    if item.memory.id not in known:
                        known.add(item.memory.id)  # twice in a page: stored once
                        todo.append(item)
                if not todo:
                    return []
                self.check_space([item.memory.content for item in todo])
                hooked = [item.memory for item in todo if not item.placed]
                vectors = np.stack([np.asarray(i.vector, dtype=np.float32) for i in todo])
                try:
                    await self.hooks.before_remember_batch(hooked)
                    await self._upsert([item.memory for item in todo], vectors)
                except BaseException:
                    for memory in hooked:
                        await self.hooks.store_failed(memory)
                    raise
            for item in todo:
                if not item.placed:
                    await self.hooks.after_remember(item.memory, item.vector)
        return [item.memory.id for item in todo]
