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
import logging
import sqlite3
import time
from collections.abc import Callable
from typing import Any, Literal, cast

import numpy as np

from ..config import EpisodesConfig
from ..errors import NotFound
from ..llm import EpisodeText, MemoryText
from ..models import Memory
from ..projects import DEFAULT_PROJECT
from ..service.host import PluginHost
from . import detector, lifecycle
from .feature_cache import FeatureCache
from .matching import EpisodeFeatures, Matcher, MemoryFeatures, when
from .seeds import SeedPool
from .store import EpisodeRow, EpisodeStore
from .vectors import VectorCache, VectorCachingHost

log = logging.getLogger("tribalmemory.episodes")

DETECTOR_SAVE_EVERY = 25
FEATURES_INLINE = 8  # features of at most this many memories are built on the event loop
MAX_NOTED = 50_000  # memory projects kept in mind beyond the seeds'
REPRESENTATIVE_POOL = 64
"""The latest members of an episode among which a prompt's are chosen."""
MAX_MERGE_CHAIN = 50  # merges followed from a gone episode to the one that holds its memories


class ProjectNotingHost:
    """The plugin host, noting the project of every memory the engine reads through it:
    detection offers a memory only its own project's candidates."""

    def __init__(self, host: PluginHost, note: Callable[[list[Memory]], None]) -> None:
        self._inner = host
        self._note = note

    async def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        found = await self._inner.get_memories(memory_ids)
        self._note(found)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class EpisodeLock(asyncio.Lock):
    """An episode's lock, counting how often it was taken. Work that waits long (a summary
    job's LLM call) runs without it, since the detect lock's holders wait for it and every
    ``remember`` for them; it then writes only if nobody took the lock meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.taken = 0

    async def acquire(self) -> Literal[True]:
        await super().acquire()
        self.taken += 1
        return True


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
        self.seeds = SeedPool(self.project_of_memory)  # unassigned memory id -> features
        self.wake: Callable[..., None] = lambda due=None: None  # set by the worker
        self._host: PluginHost | None = None
        self.vectors = VectorCache()  # members' vectors, given by the hook or read once
        self.kept_features = FeatureCache()  # members' features, computed once
        self._episode_locks: dict[str, EpisodeLock] = {}
        # Detection offers a memory only the candidates of its own project (an episode never
        # spans two): the project of each memory the detector may still decide or seed with,
        # and of each episode (never changes), looked up once.
        self.memory_projects: dict[str, str] = {}
        self._older_projects: dict[str, str] = {}
        self._episode_projects: dict[str, str] = {}
        self.pending_save: asyncio.Task[None] | None = None
        """The detector's statistics waiting for a background turn to be saved."""

    @property
    def host(self) -> PluginHost:
        """The plugin host; the memories read through it have their project noted."""
        if self._host is None:
            raise RuntimeError("the episode engine is used before the plugin started")
        return self._host

    async def load(self, host: PluginHost) -> None:
        """Rebuild the features of active episodes and seeds from stored vectors."""
        caching = cast(PluginHost, VectorCachingHost(host, self.vectors))
        self._host = cast(PluginHost, ProjectNotingHost(caching, self.note_projects))
        self.matcher.load_state(self.store.get_meta("detector_context"), self.store.terms.counts())
        self.active.clear()
        self.seeds.clear()
        for row in self.store.episodes.active():
            await self.rebuild(row.id)
        window = self.settings.active_window_days * lifecycle.DAY
        horizon = self.clock() - window
        newest = self.store.detections.newest_time()
        if newest is not None:
            horizon = min(horizon, newest - window)
        for features in await self.features(
            [s["memory_id"] for s in self.store.detections.seeds_since(horizon)]
        ):
            self.seeds[features.id] = features

    async def features(self, memory_ids: list[str]) -> list[MemoryFeatures]:
        """Features of the stored memories among ``memory_ids``, in the store's order."""
        return [features for _, features in await self._with_features(memory_ids)]

    async def in_time_order(self, memory_ids: list[str]) -> list[tuple[Memory, MemoryFeatures]]:
        """The stored memories among ``memory_ids`` (those with a vector) with their features,
        oldest first: what creating an episode from them needs."""
        found = await self._with_features(memory_ids)
        return sorted(found, key=lambda item: item[0].created_at)

    async def _with_features(self, memory_ids: list[str]) -> list[tuple[Memory, MemoryFeatures]]:
        """The stored memories among ``memory_ids`` that have a vector, with their features, in
        the store's order. Features computed before are reused (:mod:`.feature_cache`); the
        others are built on a thread past :data:`FEATURES_INLINE` (tokenising a few hundred
        memories takes milliseconds; there the event loop gets the GIL back every millisecond,
        so a request waits that long, not the whole)."""
        memories = await self.host.get_memories(memory_ids)  # notes their projects
        vectors = await self.host.get_vectors([m.id for m in memories])
        found = [m for m in memories if m.id in vectors]
        kept = self.kept_features
        known = {m.id: f for m in found if (f := kept.get(m, vectors[m.id])) is not None}
        missing = [m for m in found if m.id not in known]

        def build() -> list[MemoryFeatures]:
            return [self.matcher.memory(m, vectors[m.id]) for m in missing]

        built = build() if len(missing) <= FEATURES_INLINE else await asyncio.to_thread(build)
        for memory, features in zip(missing, built, strict=True):
            kept.put(memory, vectors[memory.id], features)
            known[memory.id] = features
        return [(m, known[m.id]) for m in found]

    def memory_features(self, memory: Memory, vector: np.ndarray) -> MemoryFeatures:
        """The detector's features of ``memory`` with ``vector``: kept ones, else computed
        (and kept)."""
        features = self.kept_features.get(memory, vector)
        if features is None:
            features = self.matcher.memory(memory, vector)
            self.kept_features.put(memory, vector, features)
        return features

    async def describe(
        self, row: EpisodeRow, k: int, leave_out: set[str] | frozenset[str] = frozenset()
    ) -> EpisodeText:
        """An episode as a prompt shows it: title, summary and the ``k`` of its latest
        :data:`REPRESENTATIVE_POOL` members nearest their centroid, in time order (what it is
        mostly about: an episode whose latest members drifted must not pass for the thread
        they drifted to). ``leave_out``: members not to count (a memory under review); an
        episode that had one is shown without its summary, which was written with it."""
        every = self.store.memberships.member_ids(row.id)
        members = [m for m in every if m not in leave_out]
        summary = (row.llm_summary or row.summary) if leave_out.isdisjoint(every) else ""
        pool = members[-REPRESENTATIVE_POOL:]
        vectors = await self.host.get_vectors(pool)
        chosen = detector.representatives([(m, vectors[m]) for m in pool if m in vectors], k)
        shown = sorted(await self.host.get_memories(chosen), key=lambda m: m.created_at)
        return EpisodeText(
            id=row.id,
            title=row.title,
            summary=summary,
            recent=tuple(MemoryText(id=m.id, content=m.content) for m in shown),
        )

    async def rebuild(self, episode_id: str) -> None:
        """Recompute an active episode's features from its members (after a removal)."""
        members = await self.features(self.store.memberships.member_ids(episode_id))
        if members:
            self.active[episode_id] = self.matcher.episode(episode_id, members)
        else:
            self.active.pop(episode_id, None)

    def lock(self, episode_id: str) -> EpisodeLock:
        return self._episode_locks.setdefault(episode_id, EpisodeLock())

    def drop_lock(self, episode_id: str) -> None:
        self._episode_locks.pop(episode_id, None)

    def note_projects(self, memories: list[Memory]) -> None:
        """Remember the project of memories the detector is about to see. Bounded: past
        :data:`MAX_NOTED` notes the older ones are forgotten a generation later (a memory is
        noted again whenever it is read; seeds are always kept)."""
        if len(self.memory_projects) > MAX_NOTED:
            older = self.memory_projects
            self.memory_projects = {k: older[k] for k in self.seeds if k in older}
            self._older_projects = older
        for memory in memories:
            self.memory_projects[memory.id] = memory.project

    def project_of_memory(self, memory_id: str) -> str:
        found = self.memory_projects.get(memory_id) or self._older_projects.get(memory_id)
        return found or DEFAULT_PROJECT

    def project_of_episode(self, episode_id: str) -> str:
        found = self._episode_projects.get(episode_id)
        if found is None:
            row = self.store.episodes.get(episode_id)
            found = row.project if row is not None else DEFAULT_PROJECT
            if len(self._episode_projects) > 4 * len(self.active) + 256:
                self._episode_projects = {
                    k: v for k, v in self._episode_projects.items() if k in self.active
                }
            self._episode_projects[episode_id] = found
        return found

    def same_project(self, memory: Memory, kind: str, target: str | None) -> bool:
        """Whether a decision keeps ``memory`` in its project: a join names an episode of
        its project, a seed a memory of it (other decisions always do)."""
        if kind == "join" and target:
            return self.project_of_episode(target) == memory.project
        if kind == "seed" and target:
            return self.project_of_memory(target) == memory.project
        return True

    def active_for(self, features: MemoryFeatures) -> list[EpisodeFeatures]:
        """The active episodes a memory may join: those of its own project."""
        project = self.project_of_memory(features.id)
        return [e for k, e in self.active.items() if self.project_of_episode(k) == project]

    def seed_pool(self, features: MemoryFeatures) -> list[MemoryFeatures]:
        """The seeds ``features`` may start an episode with: its project's most recent
        (:data:`~tribalmemory.episodes.detector.MAX_SEEDS`) within the active window of it;
        seeds older than the window are dropped."""
        window = self.settings.active_window_days * lifecycle.DAY
        for memory_id in self.seeds.expire(when(features) - window):
            self.memory_projects.pop(memory_id, None)
        project = self.project_of_memory(features.id)
        return self.seeds.recent(
            project, when(features), window, detector.MAX_SEEDS, exclude=features.id
        )

    def save_detector(self) -> None:
        """Persist the detector's running statistics: the small part whole, the word counts by
        the change (O(words of the decisions since the last save), not O(vocabulary))."""
        with self.store.transaction() as db:
            self.store.set_meta(db, "detector_context", self.matcher.state())
            for project, counts in self.matcher.changed_terms().items():
                self.store.terms.write(db, project, counts)
        self.matcher.terms_saved()

    def after_decision(self) -> None:
        """After a decision: every :data:`DETECTOR_SAVE_EVERY` decisions the statistics are
        saved at the next background turn, off the request (the request that made the 25th
        waited about 1.4 ms for it). A crash before it loses the counts of the decisions since
        the last save, as a crash between two saves always did: they only steer later
        decisions; the decisions themselves are committed with each memory."""
        if self.matcher.updates % DETECTOR_SAVE_EVERY or self.pending_save is not None:
            return
        self.pending_save = asyncio.create_task(self._save_at_turn(), name="detector-save")

    async def _save_at_turn(self) -> None:
        try:
            await self.host.background_turn()
            self.save_detector()
        except Exception as exc:  # the next save writes what this one would have
            log.warning(
                "saving the detector's statistics failed (%s: %s); tried again after the "
                "next %d decisions",
                type(exc).__name__,
                exc,
                DETECTOR_SAVE_EVERY,
            )
        finally:
            self.pending_save = None

    async def save_detector_now(self) -> None:
        """At stop: the statistics saved now, a save waiting for its turn given up."""
        if (pending := self.pending_save) is not None:
            pending.cancel()
            await asyncio.wait({pending})
        self.save_detector()

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
        row = self.store.episodes.get(episode_id)
        if row is None:
            raise self._gone(episode_id)
        return row

    def _gone(self, episode_id: str) -> NotFound:
        """Why ``episode_id`` is not found: never was, deleted, or merged into another, which
        may itself have been merged or deleted since (the chain is followed to its end)."""
        chain = [episode_id]
        while len(chain) <= MAX_MERGE_CHAIN:
            fate = self.store.history.fate(chain[-1])
            if fate is None or fate["action"] != "merged_into":
                break
            survivor = json.loads(fate["details"]).get("episode_id")
            if not survivor or survivor in chain:
                break
            chain.append(survivor)
            if self.store.episodes.get(survivor) is not None:
                merges = ", then ".join(chain[1:])
                return NotFound(
                    f"no episode with id {episode_id}: it was merged into {merges}; use {survivor}",
                    {"merged_into": survivor},
                )
        if len(chain) == 1 and fate is None:
            return NotFound(f"no episode with id {episode_id}; list episodes to find its id")
        merged = f" it was merged into {', then '.join(chain[1:])}, which" if chain[1:] else " it"
        return NotFound(f"no episode with id {episode_id}:{merged} was deleted")

    def record(
        self,
        db: sqlite3.Connection,
        episode_id: str,
        actor: str,
        action: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        """Append an entry to the episode's history (in the caller's transaction)."""
        self.store.history.add(db, episode_id, actor, action, details or {}, self.clock())
