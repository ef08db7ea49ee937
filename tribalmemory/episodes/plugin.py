"""The episode plugin: registers the engine on the memory service's write-time hooks."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..config import Config
from ..llm import Ledger, LLMClient
from ..models import Memory, SourceType
from .engine import EpisodeEngine
from .store import EpisodeStore
from .summariser import Summariser
from .worker import Worker

log = logging.getLogger("tribalmemory.episodes")


class EpisodePlugin:
    """Hook implementations; all the work is done by :class:`EpisodeEngine`."""

    name = "episodes"

    def __init__(
        self,
        config: Config,
        *,
        clock: Callable[[], float] = time.time,
        llm: LLMClient | None = None,
        run_scheduler: bool = True,
    ) -> None:
        data = config.data_path
        self.store = EpisodeStore(data / "episodes.sqlite3")
        settings = config.episodes
        if llm is None:
            ledger = Ledger(
                data / "ledger.sqlite3",
                monthly_cost_ceiling=settings.monthly_cost_ceiling,
                max_calls_per_memory=settings.max_llm_calls_per_memory,
            )
            llm = LLMClient(settings, ledger)
            self._own_ledger: Ledger | None = ledger
        else:
            self._own_ledger = None
        self.summariser = Summariser(llm)
        self.engine = EpisodeEngine(config, self.store, self.summariser, clock)
        self.worker = Worker(self.engine)
        self._run_scheduler = run_scheduler
        self._check: asyncio.Task[Any] | None = None

    async def start(self, service: Any) -> None:
        await self.engine.load(service)
        await self.engine.reconcile()
        interval = self.engine.settings.scheduler_interval_seconds
        self.worker.start(interval if self._run_scheduler else None)
        self._check = asyncio.create_task(self._check_llm())

    async def _check_llm(self) -> None:
        status = await self.summariser.check()
        if status["state"] != "ready":
            log.warning(
                "episodes run without an LLM (%s): %s. %s",
                status["state"],
                status["reason"],
                self.summariser.status().get("fallback", ""),
            )
        self.worker.wake()

    async def stop(self) -> None:
        if self._check is not None:
            self._check.cancel()
        await self.worker.stop()
        self.engine.save_state(force=True)
        self.store.close()
        if self._own_ledger is not None:
            self._own_ledger.close()

    # -- hooks ------------------------------------------------------------------------------

    async def before_remember(self, memory: Memory) -> None:
        if memory.source_type is SourceType.EPISODE_SUMMARY:
            return
        self.worker.inflight.add(memory.id)
        self.engine.register_pending(memory)

    async def store_failed(self, memory: Memory) -> None:
        with self.store.transaction() as db:
            self.store.forget_detection(db, memory.id)
        self.worker.inflight.discard(memory.id)

    async def after_remember(self, memory: Memory, vector: np.ndarray) -> dict[str, Any]:
        try:
            return await self.engine.detect(memory, vector)
        except BaseException:
            self.worker.wake()  # its durable detect job is left for the worker
            raise
        finally:
            self.worker.inflight.discard(memory.id)

    def check_forget(self, memory: Memory) -> None:
        self.engine.check_forget(memory)

    async def after_forget(self, memory: Memory) -> None:
        await self.engine.memory_forgotten(memory)

    async def after_correct(self, old: Memory, new: Memory) -> None:
        await self.engine.memory_corrected(old, new)

    def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        return self.engine.annotate(memories)

    def health(self) -> dict[str, Any]:
        return {"llm": self.summariser.status(), "episodes": self.engine.health()}

    def stats(self) -> dict[str, Any]:
        counts = dict(
            self.store.db.execute(
                "SELECT status, COUNT(*) FROM episodes GROUP BY status"
            ).fetchall()
        )
        return {"episodes": {s: counts.get(s, 0) for s in ("active", "closed", "archived")}}
