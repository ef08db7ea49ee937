"""Write-time detection: which episode a new memory belongs to.

``remember()`` notes the memory in the intent log before it is stored
(:meth:`Detection.register_pending`; :mod:`.store.intents`), then decides at once on the
embedding path (:meth:`Detection.detect`); a decision that fails leaves a durable ``detect`` job
(:meth:`Detection.keep_pending`), as the log does for the worker after a crash. Every
decision is made at once and is provisional: a doubtful one (the least confident share of
decisions, see :func:`.detector.confidence`) is also announced for review by the LLM
(:mod:`.review`, within the call budget of :mod:`.budget`), which may move the memory later
through :meth:`Detection.apply`. Decisions hold ``detect_lock``, so concurrent
writers decide as a sequential run would. A memory about to be decided, an episode a join grew
and a doubtful decision are announced on the engine's hub (:mod:`.events`), for resumption, the
merge and split checks and the review; a decided memory is announced too, for the
background work that finds its entities (:mod:`.entity_work`: the entities are not found here).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..models import Memory
from ..timeutil import to_epoch
from . import lifecycle
from .budget import Budget
from .detector import DEFAULT_MODEL
from .edits import Pin, may_join, may_move
from .events import Arriving, Decided, Doubtful, Events, Grown
from .matching import MemoryFeatures, Placement, when
from .membership import Membership
from .sessions import Sessions
from .sittings import Sittings
from .state import EngineState
from .upkeep import Upkeep

EPISODE_STATUS = {"assigned": "assigned", "pending": "pending"}  # any other state: unassigned


def episode_status(detection_state: str | None) -> str:
    """``episode_status`` of a memory (assigned, pending, unassigned) from its detection."""
    return EPISODE_STATUS.get(detection_state or "", "unassigned")


class Detection:
    """Decides the episode of each new memory."""

    def __init__(
        self,
        state: EngineState,
        membership: Membership,
        upkeep: Upkeep,
        *,
        budget: Budget,
        sessions: Sessions,
        sittings: Sittings,
        events: Events,
    ) -> None:
        self.state = state
        self.store = state.store
        self.membership = membership
        self.upkeep = upkeep
        self.budget = budget
        self.sessions = sessions
        """Declared episodes: a session's memory joins its episode before any decision."""
        self.sittings = sittings
        """A conversation's turns said close together: one episode."""
        self.events = events
        """Where a memory about to be decided, an episode grown and a doubtful decision are
        announced."""

    def register_pending(self, memory: Memory) -> None:
        """Before the memory is stored: note it in the intent log (one appended line, no
        transaction on the request path)."""
        self.store.intents.note(memory.id, to_epoch(memory.created_at))

    def register_pending_many(self, memories: list[Memory]) -> None:
        """Before a page of memories is stored (an import): their detect jobs, and their
        wait for their entities (found after the decision), in one transaction."""
        now = self.state.clock()
        with self.store.transaction() as db:
            for memory in memories:
                self.store.note_pending(db, memory.id, to_epoch(memory.created_at), now)

    def keep_pending(self, memory: Memory) -> None:
        """The memory's decision failed: a fresh memory (noted in the intent log only) gets
        its durable detect job, which the worker runs."""
        if self.store.intents.is_fresh(memory.id):
            with self.store.transaction() as db:
                self.store.note_pending(
                    db, memory.id, to_epoch(memory.created_at), self.state.clock()
                )

    async def detect(self, memory: Memory, vector: np.ndarray) -> dict[str, Any]:
        """Decide the memory's episode now when the embedding path can; else queue the LLM."""
        state = self.state
        async with state.detect_lock:
            if not self.store.intents.is_fresh(memory.id):  # fresh: pending, no row yet
                detection = self.store.detections.get(memory.id)
                if detection is None:  # forgotten meanwhile
                    return {}
                if detection["state"] != "pending":
                    return self.status_of(memory.id)
            features = state.memory_features(memory, vector)
            await self.upkeep.close_idle(to_epoch(memory.created_at), memory.project)
            llm_wanted = self.budget.llm_wanted()  # asked once: it reads the LLM's state
            await self.events.arriving.announce(
                Arriving(memory.created_at, memory.project, llm_wanted)
            )
            if await self.sessions.claim(memory, features):
                self.budget.count(memories=1)
                self.events.decided.announce(Decided(memory))
                return self.status_of(memory.id)  # joined its session's declared episode
            decision = self.sittings.placement(memory, features)
            if decision is None:
                decision = self.correcting(memory, features)
            if decision is None:
                decision = state.matcher.decide(
                    features,
                    state.active_for(features),
                    state.seed_pool(features),
                    doubt_share=self.budget.doubt_share(llm_wanted),
                    learn=True,
                    project=memory.project,
                    seeds_eligible=True,
                )
            self.budget.count(memories=1)
            episode_id = await self.apply(memory, features, decision)
            self.sittings.placed(memory)
            state.after_decision()
            self.events.decided.announce(Decided(memory))
            # what apply did, under the lock that every change of a membership takes: the
            # same as status_of, without reading it back
            return {
                "episode_id": episode_id,
                "episode_status": "assigned" if episode_id else "unassigned",
            }

    def correcting(self, memory: Memory, features: MemoryFeatures) -> Placement | None:
        """A correction (or an updated fact) continues the thread of the memory it supersedes:
        it joins that memory's episode while the episode is active. None: decided as any
        memory (the episode is closed, or the old memory was in none)."""
        if memory.supersedes is None:
            return None
        episode_id = self.store.memberships.episode_of(memory.supersedes)
        episode = self.state.active.get(episode_id or "")
        if episode is None:
            return None
        similarity = float(episode.centroid @ features.vector)
        return Placement(kind="join", target=episode_id, score=1.0, similarity=similarity)

    async def run_job(self, memory_id: str) -> None:
        """A detect job left by a crash: run the write-time decision now."""
        memories = await self.state.host.get_memories([memory_id])
        vectors = await self.state.host.get_vectors([memory_id])
        if not memories or memory_id not in vectors:  # never stored: nothing to decide
            with self.store.transaction() as db:
                self.store.forget_detection(db, memory_id)
            return
        await self.detect(memories[0], vectors[memory_id])

    def status_of(self, memory_id: str) -> dict[str, Any]:
        detection = self.store.detections.get(memory_id)
        return {
            "episode_id": self.store.memberships.episode_of(memory_id),
            "episode_status": episode_status(detection["state"] if detection else None),
        }

    def health(self) -> dict[str, Any]:
        """The detector's model and its budget figures, for ``/v1/health``."""
        return {"detector_model": DEFAULT_MODEL.describe(), **self.budget.health()}

    async def apply(
        self,
        memory: Memory,
        features: MemoryFeatures,
        decision: Placement,
        title_hint: str | None = None,
    ) -> str | None:
        """Carry out a detection decision (the caller holds the detect lock). Returns the
        episode the memory is in now (None: it is a seed or stands alone)."""
        state = self.state
        now = state.clock()
        if decision.kind == "join" and not self.pins_allow(memory.id, decision.target):
            decision = Placement.new_seed()  # the user took it out of that episode
        if not state.same_project(memory, decision.kind, decision.target):
            decision = Placement.new_seed()  # an episode never spans two projects
        kind = decision.kind
        if kind == "join" and decision.target in state.active:
            episode_id = decision.target
            old_count = state.active[episode_id].memory_count
            with self.store.transaction() as db:
                self.store.add_member(
                    db,
                    episode_id,
                    memory.id,
                    when(features),
                    now,
                    decision.score,
                    lifecycle.surprise(decision.similarity),
                )
                self.store.finish_detection(db, memory.id)
                state.record(db, episode_id, "detector", "join", {"memory_id": memory.id})
                state.queue_summary(db, episode_id, now, trigger=memory.id)
            state.active[episode_id] = state.matcher.add(state.active[episode_id], features)
            state.seeds.pop(memory.id, None)
            self.events.grown.announce(Grown(episode_id, old_count, old_count + 1, now))
            return episode_id
        if kind == "seed" and (seed := state.seeds.get(decision.target or "")) is not None:
            return await self._start_from_seed(memory, features, seed, decision, title_hint)
        if kind == "ambiguous":  # decided by embeddings now, reviewed by the LLM later
            embedded = decision.embedded or self.decide(features, doubt_share=0.0)
            placed = await self.apply(memory, features, embedded)
            self.events.doubtful.announce(Doubtful(memory.id, memory.project, now))
            return placed
        detection = "standalone" if kind == "none" else "seed"
        with self.store.transaction() as db:
            self.store.detections.record(db, memory.id, detection, when(features), title_hint)
            self.store.finish_detection(db, memory.id)
        if detection == "seed":
            state.seeds[memory.id] = features
        else:
            state.seeds.pop(memory.id, None)
        return None

    async def _start_from_seed(
        self,
        memory: Memory,
        features: MemoryFeatures,
        seed: MemoryFeatures,
        decision: Placement,
        title_hint: str | None,
    ) -> str | None:
        seed_memory = await self.state.host.get_memories([seed.id])
        if not seed_memory:  # the seed was forgotten meanwhile
            self.state.seeds.pop(seed.id, None)
            return await self.apply(memory, features, Placement.new_seed())
        seed_row = self.store.detections.get(seed.id)
        hint = title_hint or (seed_row["hint"] if seed_row else None)
        members = sorted(
            [(seed_memory[0], seed), (memory, features)], key=lambda pair: when(pair[1])
        )
        created = await self.membership.create(
            [m for m, _ in members],
            [f for _, f in members],
            title=hint,
            title_source="llm" if hint else "keyword",
            scores={memory.id: (decision.score, decision.similarity)},
            finish_detection_of=[memory.id, seed.id],
        )
        return created.id

    def decide(self, features: MemoryFeatures, *, doubt_share: float) -> Placement:
        return self.state.matcher.decide(
            features,
            self.state.active_for(features),
            self.state.seed_pool(features),
            doubt_share=doubt_share,
            project=self.state.project_of_memory(features.id),
            seeds_eligible=True,
        )

    def pins_allow(self, memory_id: str, episode_id: str | None) -> bool:
        """Manual edits win (see :mod:`.edits`): no join where the user removed the memory,
        no move of a memory the user placed."""
        pins = [Pin.from_row(r) for r in self.store.pins.of([memory_id])]
        if not pins:  # nothing the user did to this memory: no membership to read
            return True
        current = self.store.memberships.episode_of(memory_id)
        return may_join(pins, memory_id, episode_id or "") and may_move(pins, memory_id, current)
