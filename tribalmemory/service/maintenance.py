"""Store upkeep at quiet moments: the embedded store's ``optimize()`` in the background.

Qdrant Edge does nothing in the background by itself. New memories go to a plain segment that
every query scans in float32; ``optimize()`` seals it into an int8-quantized segment (faster to
scan) once it holds ``SEAL_SIZE`` memories (see ``storage/edge/shard.py`` and docs/storage.md).
``optimize()`` holds the GIL while it works (about 1 s per 10k memories on 2 cores), so the
whole daemon pauses meanwhile. This task therefore calls it only after the store has been idle
for ``idle_seconds``, or when so many memories wait unsealed that searches would slow down.
Stores that are no ``MaintainedStore`` (a Qdrant server indexes by itself) get no task. Sealing
writes a copy of the memories it seals: it waits (retrying with backoff) while the disk lacks
the space, so that it never fills the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TypeGuard

from ..storage.base import MaintainedStore
from ..storage.space import DiskSpace

log = logging.getLogger("tribalmemory.maintenance")

IDLE_SECONDS = 3.0
CHECK_INTERVAL = 1.0
MAX_BACKOFF = 300.0


class StoreMaintenance:
    """One asyncio task that runs ``store.optimize()`` in a worker thread when it is due."""

    def __init__(
        self,
        store: MaintainedStore,
        idle_seconds: float = IDLE_SECONDS,
        interval: float = CHECK_INTERVAL,
        space: DiskSpace | None = None,
    ) -> None:
        self.store = store
        self.space = space
        self.idle_seconds = idle_seconds
        self.interval = interval
        self.runs = 0  # optimize() calls that did work
        self.last_seconds: float | None = None
        self._task: asyncio.Task[None] | None = None

    @staticmethod
    def supported(store: object) -> TypeGuard[MaintainedStore]:
        return isinstance(store, MaintainedStore)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="store-maintenance")

    async def stop(self) -> None:
        """Stop checking. An optimize() already running finishes in its thread; closing the
        store waits for it (the store's lock)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        failures = 0
        while True:
            await asyncio.sleep(self.interval)
            if not self.store.needs_maintenance(self.idle_seconds):
                continue
            started = time.monotonic()
            try:
                if self.space is not None:  # sealing writes a copy of the memories it seals
                    self.space.check(self.store.optimize_needs_bytes())
                worked = await asyncio.to_thread(self.store.optimize)
            except Exception as exc:  # a closed store, a disk error: retry later
                failures += 1
                delay = min(MAX_BACKOFF, self.interval * 2.0**failures)
                log.warning(
                    "store maintenance failed (%s: %s); retrying in %.0f s",
                    type(exc).__name__,
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)
                continue
            failures = 0
            if worked:
                self.runs += 1
                self.last_seconds = time.monotonic() - started
                log.info("store maintenance: new memories sealed in %.2f s", self.last_seconds)
