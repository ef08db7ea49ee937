"""What the episode engine holds in memory and shares between its jobs: features and locks.

The features of the active episodes and of the seeds (recent memories in no episode yet) are
rebuilt from the stored vectors at start (:meth:`EngineState.load`) and kept current by the
jobs; the detector's running statistics are saved every 25 decisions and at stop.

Locks: ``detect_lock`` serialises detection decisions (so concurrent writers decide as a
sequential run would), and one lock per episode serialises everything that writes an episode's
summary or membership (so summaries of one episode are never written concurrently). A job that
needs both takes ``detect_lock`` first.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from ..config import EpisodesConfig
from ..errors import NotFound
from ..service.host import PluginHost
from . import lifecycle
from .matching import EpisodeFeatures, Matcher, MemoryFeatures, when
from .store import EpisodeRow, EpisodeStore

DETECTOR_SAVE_EVERY = 25


class EngineState:
    """Settings, stores, clock, in-memory features and locks of one episode engine."""

    def __init__(
        self,
        settings: EpisodesConfig,
        store: EpisodeStore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.matcher = Matcher(settings)
        self.detect_lock = asyncio.Lock()
        self.active: dict[str, EpisodeFeatures] = {}  # active episode id -> features
        self.seeds: dict[str, MemoryFeatures] = {}  # unassigned memory id -> features
        self.wake: Callable[..., None] = lambda due=None: None  # set by the worker
        self._host: PluginHost | None = None
        self._episode_locks: dict[str, asyncio.Lock] = {}

    @property
    def host(self) -> PluginHost:
        if self._host is None:
            raise RuntimeError("the episode engine is used before the plugin started")
        return self._host

    async def load(self, host: PluginHost) -> None:
        """Rebuild the features of active episodes and seeds from stored vectors."""
        self._host = host
        self.matcher.load_state(self.store.get_meta("detector_context"))
        self.active.clear()
        self.seeds.clear()
        for row in self.store.active_episodes():
            await self.rebuild(row.id)
        window = self.settings.active_window_days * lifecycle.DAY
        horizon = self.clock() - window
        newest = self.store.newest_detection_time()
        if newest is not None:
            horizon = min(horizon, newest - window)
        for features in await self.features(
            [s["memory_id"] for s in self.store.seeds_since(horizon)]
        ):
            self.seeds[features.id] = features

    async def features(self, memory_ids: list[str]) -> list[MemoryFeatures]:
        """Features of the stored memories among ``memory_ids``, in the store's order."""
        memories = await self.host.get_memories(memory_ids)
        vectors = await self.host.get_vectors([m.id for m in memories])
        return [self.matcher.memory(m, vectors[m.id]) for m in memories if m.id in vectors]

    async def rebuild(self, episode_id: str) -> None:
        """Recompute an active episode's features from its members (after a removal)."""
        members = await self.features(self.store.member_ids(episode_id))
        if members:
            self.active[episode_id] = self.matcher.episode(episode_id, members)
        else:
            self.active.pop(episode_id, None)

    def lock(self, episode_id: str) -> asyncio.Lock:
        return self._episode_locks.setdefault(episode_id, asyncio.Lock())

    def drop_lock(self, episode_id: str) -> None:
        self._episode_locks.pop(episode_id, None)

    def seed_pool(self, features: MemoryFeatures) -> list[MemoryFeatures]:
        """Seeds young enough to start an episode with ``features`` (older ones are dropped)."""
        horizon = when(features) - self.settings.active_window_days * lifecycle.DAY
        for memory_id in [k for k, s in self.seeds.items() if when(s) < horizon]:
            self.seeds.pop(memory_id)
        return [s for k, s in self.seeds.items() if k != features.id]

    def save_detector(self, force: bool = False) -> None:
        """Persist the detector's running statistics every 25 decisions (and at stop)."""
        if force or self.matcher.updates % DETECTOR_SAVE_EVERY == 0:
            with self.store.transaction() as db:
                self.store.set_meta(db, "detector_context", self.matcher.state())

    def queue_summary(
        self,
        db: sqlite3.Connection,
        episode_id: str,
        now: float,
        *,
        trigger: str | None,
        delay: float | None = None,
    ) -> None:
        """Queue the episode's summary job, debounced unless ``delay`` says otherwise."""
        wait = self.settings.summary_debounce_seconds if delay is None else delay
        self.store.queue_summary(db, episode_id, now, wait, trigger)
        self.wake(now + wait)

    def episode(self, episode_id: str) -> EpisodeRow:
        """The episode, or NotFound with a message for the client."""
        row = self.store.episode(episode_id)
        if row is None:
            fate = self.store.fate(episode_id)
            if fate is not None and fate["action"] == "merged_into":
                survivor = json.loads(fate["details"]).get("episode_id")
                raise NotFound(
                    f"no episode with id {episode_id}: it was merged into {survivor}; use that id",
                    {"merged_into": survivor},
                )
            if fate is not None:
                raise NotFound(f"no episode with id {episode_id}: it was deleted")
            raise NotFound(f"no episode with id {episode_id}; list episodes to find its id")
        return row

    def record(
        self,
        db: sqlite3.Connection,
        episode_id: str,
        actor: str,
        action: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Append an entry to the episode's history (in the caller's transaction)."""
        self.store.add_history(db, episode_id, actor, action, details or {}, self.clock())
