"""Declared threads: an agent starts an episode for its client session, and the session's next
memories join it when they fit.

``start`` creates an empty active episode titled with the topic and records it as the
session's current episode (a later ``start`` in the same session replaces it). At write time
:meth:`Sessions.claim` runs before the detector: a memory that carries the session (its
``metadata.session``) joins the session's episode directly, unless its similarity to both the
topic and the episode's members is clearly against it (:func:`.edits.session_fits`); then the
detector decides as for any memory. A closed, deleted or pinned-out episode claims nothing.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..models import Memory
from . import lifecycle
from .edits import Pin, may_join, session_fits
from .matching import MemoryFeatures, when
from .shapes import episode_json
from .state import EngineState
from .store import EpisodeRow
from .summariser import Summariser
from .upkeep import Upkeep

log = logging.getLogger("tribalmemory.episodes")


class Sessions:
    """Starts declared episodes and joins session memories to them."""

    def __init__(self, state: EngineState, upkeep: Upkeep, summariser: Summariser) -> None:
        self.state = state
        self.store = state.store
        self.upkeep = upkeep
        self.summariser = summariser
        self._topics: dict[str, np.ndarray] = {}  # episode id -> unit topic vector

    async def start(self, topic: str, session: str, project: str) -> dict[str, Any]:
        state = self.state
        vector = await self._embed(topic)
        async with state.detect_lock:
            await self.upkeep.make_room(adding=1, project=project)
            now = state.clock()
            row = _empty_row(topic, now, project)
            with self.store.transaction() as db:
                self.store.episodes.insert(db, row)
                self.store.sessions.start(db, session, row.id, topic, now)
                state.record(db, row.id, "user", "start", {"topic": topic, "session": session})
        self._topics[row.id] = vector
        log.info("episode %s started for a session: %s", row.id, topic)
        return {"episode_id": row.id, "session": session, "topic": topic}

    def current(self, session: str) -> dict[str, Any]:
        found = self.store.sessions.get(session)
        row = self.store.episodes.get(found["episode_id"]) if found else None
        return {
            "session": session,
            "topic": found["topic"] if found else None,
            "episode": None
            if row is None
            else episode_json(row, self.summariser.episode_cost(row.id)),
        }

    async def claim(self, memory: Memory, features: MemoryFeatures) -> bool:
        """Join the memory to its session's episode when it fits (the caller holds the detect
        lock); False leaves the decision to the detector."""
        session = memory.metadata.get("session")
        found = self.store.sessions.get(session) if isinstance(session, str) else None
        row = self.store.episodes.get(found["episode_id"]) if found else None
        if found is None or row is None or row.status != "active":
            return False
        if row.project != memory.project:  # an episode never spans two projects
            return False
        pins = [Pin.from_row(r) for r in self.store.pins.of([memory.id])]
        if not may_join(pins, memory.id, row.id) or self.store.memberships.episode_of(memory.id):
            return False
        state = self.state
        topic = await self._topic(row.id, found["topic"])
        current = state.active.get(row.id)
        centroid = None if current is None else state.matcher.similarity(features, current)
        topic_similarity = float(features.vector @ topic)
        if not session_fits(topic_similarity, centroid):
            return False
        now = state.clock()
        similarity = centroid if centroid is not None else topic_similarity
        with self.store.transaction() as db:
            self.store.add_member(
                db, row.id, memory.id, when(features), now, None, lifecycle.surprise(similarity)
            )
            self.store.finish_detection(db, memory.id)
            state.record(db, row.id, "detector", "join", {"memory_id": memory.id, "session": True})
            state.queue_summary(db, row.id, now, trigger=memory.id)
        state.active[row.id] = (
            state.matcher.episode(row.id, [features])
            if current is None
            else state.matcher.add(current, features)
        )
        state.seeds.pop(memory.id, None)
        state.matcher.observe(features, memory.project)
        return True

    async def _topic(self, episode_id: str, topic: str) -> np.ndarray:
        if episode_id not in self._topics:  # after a restart
            self._topics[episode_id] = await self._embed(topic)
        return self._topics[episode_id]

    async def _embed(self, text: str) -> np.ndarray:
        vector = np.asarray((await self.state.host.embed([text]))[0], dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector


def _empty_row(topic: str, now: float, project: str) -> EpisodeRow:
    """A new active episode of ``project`` with no members yet, titled with the topic."""
    return EpisodeRow.new(topic, "user", now, project=project)
