"""Entities for the memories decided before entities were stored (a database from an older
version): found once, in the background after start, oldest first, a page at a time under the
detect lock. Durable by being idempotent: a run cut short starts again at the next start, and
the ``entities_backfilled`` meta value says when it is done."""

from __future__ import annotations

import logging
from typing import Any

from ..timeutil import to_epoch
from .detection import Detection
from .state import EngineState

log = logging.getLogger("tribalmemory.episodes")

DONE = "entities_backfilled"
PAGE = 200


class EntityBackfill:
    """Runs once per database (see the module)."""

    def __init__(self, state: EngineState, detection: Detection) -> None:
        self.state = state
        self.store = state.store
        self.detection = detection
        self.waiting = 0
        """Memories whose entities are still to be found by this run."""
        self.error: str | None = None
        """Why this run stopped (None: it did not)."""

    def health(self) -> dict[str, Any]:
        return {"entities_waiting": self.waiting, "entities_error": self.error}

    def done(self) -> bool:
        return bool(self.store.get_meta(DONE))

    async def run(self) -> int:
        """Find the entities of every decided memory without mentions; returns how many
        memories were read."""
        if self.done():
            return 0
        ids = self.store.entities.decided_without_mentions()
        self.waiting, self.error = len(ids), None
        read = 0
        try:
            for start in range(0, len(ids), PAGE):
                memories = await self.state.host.get_memories(ids[start : start + PAGE])
                async with self.state.detect_lock:
                    for memory in sorted(memories, key=lambda m: to_epoch(m.created_at)):
                        self.detection.record_entities(memory)
                read += len(memories)
                self.waiting = max(0, len(ids) - start - PAGE)
        except Exception as exc:  # the next start tries again
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning(
                "finding the entities of %d older memories stopped after %d (%s); the next "
                "start resumes it",
                len(ids),
                read,
                exc,
            )
            return read
        with self.store.transaction() as db:
            self.store.set_meta(db, DONE, True)
        if read:
            log.info("entities found in %d memories stored before entities were kept", read)
        return read
