"""The episode plugin: the engine on the memory service's hooks (see service/hookspecs.py)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import numpy as np

from ..config import Config
from ..errors import InvalidInput
from ..llm import Ledger, LLMClient
from ..llm.client import QUIET_STATES
from ..models import ENGINE_WRITTEN, Memory, SourceType
from ..service.hookspecs import hookimpl
from ..service.host import PluginHost
from . import lifecycle
from .doors import doors
from .engine import EpisodeEngine
from .store import BACKSTOP_CHECKPOINT_PAGES, EpisodeStore
from .summariser import Summariser
from .worker import Worker

log = logging.getLogger("tribalmemory.episodes")

CHECKPOINT_SECONDS = 1.0
"""How often the episode database's WAL is checkpointed on a thread."""


class EpisodePlugin:
    """Hook implementations; the work is done by :class:`EpisodeEngine` and its worker.

    The plugin owns what it opens: the episode database and the LLM cost ledger (closed at
    ``stop``). ``llm_options`` go to :class:`LLMClient` (tests make retries fast with them).
    ``check_llm`` False (the CLI's commands without a daemon): the LLM is not checked at start
    (importing litellm takes seconds), but by the first call or status that needs it.
    """

    name = "episodes"

    def __init__(
        self,
        config: Config,
        *,
        clock: Callable[[], float] = time.time,
        llm_options: dict[str, Any] | None = None,
        run_scheduler: bool = True,
        check_llm: bool = True,
    ) -> None:
        data = config.data_path
        settings = config.episodes
        self.store = EpisodeStore(data / "episodes.sqlite3")
        self.ledger = Ledger(
            data / "ledger.sqlite3",
            monthly_cost_ceiling=settings.monthly_cost_ceiling,
            max_calls_per_memory=settings.max_llm_calls_per_memory,
        )
        self.summariser = Summariser(
            LLMClient(settings, self.ledger, **(llm_options or {})), checked_at_start=check_llm
        )
        self.engine = EpisodeEngine(config, self.store, self.summariser, clock)
        state = self.engine.state
        self.worker = Worker(
            self.store,
            clock,
            self.engine.job_handlers(),
            self.engine.tick,
            flushable=("classify", "merge", "split"),
        )
        state.wake = self.worker.wake
        self._scheduler_interval = settings.scheduler_interval_seconds if run_scheduler else None
        self._check: asyncio.Task[Any] | None = None
        self._checkpoints: asyncio.Task[Any] | None = None
        self._upgrades: asyncio.Task[Any] | None = None
        self.entity_task: asyncio.Task[None] | None = None
        """Finds each decided memory's entities in the background (see :mod:`.entity_work`)."""

    @hookimpl
    async def start(self, host: PluginHost) -> None:
        self.worker.turn = host.background_turn
        await self.engine.state.load(host)
        await self.engine.upkeep.reconcile()
        await self.engine.membership.prune_dangling()
        self.worker.start(self._scheduler_interval)
        upgrades = self.engine.upgrades
        if self.summariser.client is not None:
            loop = asyncio.get_running_loop()

            def changed(_previous: str | None, _state: str) -> None:
                """The LLM's state changed (on any thread): the upgrades look again."""
                with suppress(RuntimeError):  # the loop is closed: the daemon stopped
                    loop.call_soon_threadsafe(upgrades.wake)

            self.summariser.client.on_change(changed)
        if self.summariser.checked_at_start:
            self._check = asyncio.create_task(self._check_llm())
        self._checkpoints = asyncio.create_task(self._checkpoint_loop())
        self._upgrades = asyncio.create_task(upgrades.run())
        entity_work = self.engine.entity_work
        entity_work.turn = host.background_turn
        entity_work.busy = host.busy
        entity_work.start()
        self.entity_task = asyncio.create_task(entity_work.run(), name="entity-work")

    async def _check_llm(self) -> None:
        status = await self.summariser.check()
        # offline and disabled are a choice, not a fault: the client said so at INFO, and
        # `serve` says it once at WARNING (see llm_state); local commands start this plugin too.
        if status["state"] not in QUIET_STATES and status["state"] != "ready":
            log.warning(
                "episodes run without an LLM (%s): %s. %s",
                status["state"],
                status["reason"],
                self.summariser.status().get("fallback", ""),
            )
        if not self.summariser.configured():
            # No LLM can be called: checks and reviews queued before the check (or by a run
            # with a key) are settled now, their embedding decisions standing.
            self.worker.flush()
        self.worker.wake()
        self.engine.upgrades.wake()

    async def llm_state(self) -> dict[str, Any]:
        """The LLM's state once the start-up check is done (the daemon reports it)."""
        if self._check is not None and not self._check.done():
            await asyncio.wait({self._check})  # shields it; never raises
        return self.summariser.status()

    async def _checkpoint_loop(self) -> None:
        """Checkpoint the episode database on a thread every :data:`CHECKPOINT_SECONDS`, so
        that commits on the request path never do it (see :meth:`EpisodeStore.checkpoint`)."""
        failing = False
        while True:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            try:
                await asyncio.to_thread(self.store.checkpoint)
            except sqlite3.Error as exc:
                if not failing:
                    log.warning(
                        "checkpointing the episode database failed (%s); commits will do it "
                        "once its WAL has %d pages",
                        exc,
                        BACKSTOP_CHECKPOINT_PAGES,
                    )
                failing = True
            else:
                failing = False

    @hookimpl
    async def stop(self) -> None:
        for task in (self._check, self._checkpoints, self._upgrades, self.entity_task):
            if task is not None:
                task.cancel()
        for task in (self._upgrades, self.entity_task):  # let them finish their cancel
            if task is not None:
                await asyncio.wait({task})
        await self.worker.stop()
        await self.engine.state.save_detector_now()
        self.engine.budget.save()
        self.store.close()
        self.ledger.close()

    # -- writes -----------------------------------------------------------------------------

    @hookimpl
    async def before_remember(self, memory: Memory) -> None:
        if memory.source_type in ENGINE_WRITTEN:
            return
        self.worker.inflight.add(memory.id)  # the worker leaves its detect job alone
        self.engine.state.note_projects([memory])
        self.engine.detection.register_pending(memory)

    @hookimpl
    async def before_remember_batch(self, memories: list[Memory]) -> None:
        mine = [m for m in memories if m.source_type not in ENGINE_WRITTEN]
        self.worker.inflight.update(m.id for m in mine)
        self.engine.state.note_projects(mine)
        self.engine.detection.register_pending_many(mine)

    @hookimpl
    async def store_failed(self, memory: Memory) -> None:
        self.worker.inflight.discard(memory.id)
        with self.store.transaction() as db:
            self.store.forget_detection(db, memory.id)

    @hookimpl
    async def after_remember(self, memory: Memory, vector: np.ndarray) -> dict[str, Any]:
        self.engine.state.vectors.put(memory.id, np.array(vector, dtype=np.float32))
        try:
            return await self.engine.detection.detect(memory, vector)
        except BaseException:
            self.engine.detection.keep_pending(memory)
            self.worker.wake()  # its durable detect job is left for the worker
            raise
        finally:
            self.worker.inflight.discard(memory.id)
            if memory.id not in self.engine.state.seeds:  # decided: no longer a candidate
                self.engine.state.memory_projects.pop(memory.id, None)

    @hookimpl
    def check_forget(self, memory: Memory) -> None:
        refuse_engine_written(
            memory,
            ("delete the episode or regenerate its summary instead", ("regenerate", "delete")),
            (
                "edit the episode's {kind}s (its structured record's), forget the memory it "
                "rests on, or delete the episode",
                ("update", "delete"),
            ),
        )

    @hookimpl
    def check_correct(self, memory: Memory) -> None:
        refuse_engine_written(
            memory,
            ("correct the memories it summarises, or regenerate the summary", ("regenerate",)),
            (
                "correct the memory it rests on, or edit the episode's {kind}s (its structured "
                "record's)",
                ("update",),
            ),
        )

    @hookimpl
    async def after_forget(self, memory: Memory) -> None:
        self.engine.state.vectors.drop([memory.id])
        self.engine.state.kept_features.drop([memory.id])
        await self.engine.membership.forgotten(memory)

    @hookimpl
    async def after_correct(self, old: Memory, new: Memory) -> None:
        await self.engine.membership.corrected(old, new)

    # -- reads ------------------------------------------------------------------------------

    @hookimpl
    def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        return self.engine.operations.annotate(memories)

    @hookimpl
    def key_moments(self, memories: list[Memory]) -> list[str]:
        return self.store.memberships.surprising([m.id for m in memories], lifecycle.KEY_MOMENT)

    @hookimpl
    def health(self) -> dict[str, Any]:
        return {"llm": self.summariser.status(), "episodes": self.engine.health()}

    @hookimpl
    def stats(self) -> dict[str, Any]:
        return {"episodes": self.store.episodes.status_counts()}


Ways = tuple[str, tuple[str, ...]]
"""What to do instead, in words (``{kind}``: the memory's source type) and as doors."""


def refuse_engine_written(memory: Memory, summary: Ways, derived: Ways) -> None:
    """Raise :class:`InvalidInput` naming the episode and what to do instead when ``memory`` is
    an episode's summary (``summary``) or another memory the engine writes: a lesson, a
    decision or a fact (``derived``)."""
    episode_id = memory.metadata.get("episode_id", "?")
    if memory.source_type is SourceType.EPISODE_SUMMARY:
        what, (words, actions) = f"the summary of episode {episode_id}", summary
    elif memory.source_type in ENGINE_WRITTEN:
        kind = memory.source_type.value
        what, (words, actions) = f"a {kind} of episode {episode_id}", derived
        words = words.format(kind=kind)
    else:
        return
    raise InvalidInput(
        f"memory {memory.id} is {what}; {words}", doors(*actions, episode_id=episode_id)
    )
