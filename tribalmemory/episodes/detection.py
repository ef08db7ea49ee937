"""Write-time detection: which episode a new memory belongs to, and the classify job.

``remember()`` records a durable ``detect`` job before the memory is stored
(:meth:`Detection.register_pending`), then decides at once on the embedding path
(:meth:`Detection.detect`). An ambiguous memory becomes a ``classify`` job that asks the LLM
off the request path (:meth:`Detection.classify`); when the LLM cannot answer, the embedding
decision stands. Decisions hold ``detect_lock``, so concurrent writers decide as a sequential
run would.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..models import Memory
from ..timeutil import to_epoch
from . import lifecycle
from .matching import Decision, MemoryFeatures, when
from .membership import Membership
from .state import EngineState
from .summariser import Summariser
from .upkeep import Upkeep

EPISODE_STATUS = {"assigned": "assigned", "pending": "pending"}  # any other state: unassigned


def episode_status(detection_state: str | None) -> str:
    """``episode_status`` of a memory (assigned, pending, unassigned) from its detection."""
    return EPISODE_STATUS.get(detection_state or "", "unassigned")


class Detection:
    """Decides the episode of each new memory."""

    def __init__(
        self, state: EngineState, summariser: Summariser, membership: Membership, upkeep: Upkeep
    ) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser
        self.membership = membership
        self.upkeep = upkeep

    def register_pending(self, memory: Memory) -> None:
        """Before the memory is stored: record a durable detect job for it."""
        with self.store.transaction() as db:
            self.store.set_detection(db, memory.id, "pending", to_epoch(memory.created_at))
            self.store.enqueue(db, "detect", memory.id, self.state.clock())

    async def detect(self, memory: Memory, vector: np.ndarray) -> dict[str, Any]:
        """Decide the memory's episode now when the embedding path can; else queue the LLM."""
        state = self.state
        async with state.detect_lock:
            detection = self.store.detection(memory.id)
            if detection is None:
                return {}
            if detection["state"] != "pending":
                return self.status_of(memory.id)
            features = state.matcher.memory(memory, vector)
            await self.upkeep.close_idle(reference=to_epoch(memory.created_at))
            decision = state.matcher.decide(
                features,
                list(state.active.values()),
                state.seed_pool(features),
                ambiguous_allowed=self._llm_wanted(),
                learn=True,
            )
            await self._apply(memory, features, decision)
            state.save_detector()
            return self.status_of(memory.id)

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
        detection = self.store.detection(memory_id)
        return {
            "episode_id": self.store.episode_of(memory_id),
            "episode_status": episode_status(detection["state"] if detection else None),
        }

    def _llm_wanted(self) -> bool:
        return self.state.settings.detector_strategy != "embedding" and self.summariser.ready()

    async def _apply(
        self,
        memory: Memory,
        features: MemoryFeatures,
        decision: Decision,
        title_hint: str | None = None,
    ) -> None:
        """Carry out a detection decision (the caller holds the detect lock)."""
        state = self.state
        now = state.clock()
        kind = decision.kind
        if kind == "join" and decision.target in state.active:
            episode_id = decision.target
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
                state.queue_summary(db, episode_id, now, trigger=memory.id)
            state.active[episode_id] = state.matcher.add(state.active[episode_id], features)
            state.seeds.pop(memory.id, None)
        elif kind == "seed" and decision.target in state.seeds:
            seed = state.seeds[decision.target]
            await self._start_from_seed(memory, features, seed, decision, title_hint)
        elif kind == "ambiguous":
            with self.store.transaction() as db:
                self.store.delete_job(db, "detect", memory.id)
                self.store.enqueue(db, "classify", memory.id, now)
            state.seeds[memory.id] = features
            state.wake()
        else:
            detection = "standalone" if kind == "none" else "seed"
            with self.store.transaction() as db:
                self.store.set_detection(db, memory.id, detection, when(features), title_hint)
                self.store.finish_detection(db, memory.id)
            if detection == "seed":
                state.seeds[memory.id] = features
            else:
                state.seeds.pop(memory.id, None)

    async def _start_from_seed(
        self,
        memory: Memory,
        features: MemoryFeatures,
        seed: MemoryFeatures,
        decision: Decision,
        title_hint: str | None,
    ) -> None:
        seed_memory = await self.state.host.get_memories([seed.id])
        if not seed_memory:  # the seed was forgotten meanwhile
            self.state.seeds.pop(seed.id, None)
            await self._apply(memory, features, Decision.new_seed())
            return
        seed_row = self.store.detection(seed.id)
        hint = title_hint or (seed_row["hint"] if seed_row else None)
        members = sorted(
            [(seed_memory[0], seed), (memory, features)], key=lambda pair: when(pair[1])
        )
        await self.membership.create(
            [m for m, _ in members],
            [f for _, f in members],
            title=hint,
            title_source="llm" if hint else "keyword",
            scores={memory.id: (decision.score, decision.similarity)},
            finish_detection_of=[memory.id, seed.id],
        )

    # -- the classify job -------------------------------------------------------------------

    async def classify(self, memory_id: str) -> None:
        """The LLM decides an ambiguous memory; invalid or missing answers fall back."""
        state = self.state
        memories = await state.host.get_memories([memory_id])
        vectors = await state.host.get_vectors([memory_id])
        if not memories or memory_id not in vectors:
            with self.store.transaction() as db:
                self.store.forget_detection(db, memory_id)
            state.seeds.pop(memory_id, None)
            return
        memory = memories[0]
        features = state.matcher.memory(memory, vectors[memory_id])
        async with state.detect_lock:
            decision = self._decide(features, ambiguous_allowed=True)
        if decision.kind != "ambiguous":
            async with state.detect_lock:
                if self._still_pending(memory_id):
                    await self._apply(memory, features, decision)
            return
        candidates = await self._describe_candidates(decision)
        answer = await self.summariser.classify(memory, candidates)
        await state.host.background_turn()  # applying it uses the CPU
        async with state.detect_lock:
            if not self._still_pending(memory_id):
                return
            if answer is None:  # LLM unavailable: the embedding decision stands
                await self._apply(memory, features, self._decide(features, ambiguous_allowed=False))
                return
            action, target, title = answer
            if action == "join" and target is not None:
                chosen = decision.pick(target)
                if chosen is not None and (
                    chosen.target in state.active or chosen.target in state.seeds
                ):
                    await self._apply(memory, features, chosen, title_hint=title)
                    return
            kind = "none" if action == "none" else "new_seed"
            await self._apply(memory, features, Decision(kind=kind), title_hint=title)

    def _decide(self, features: MemoryFeatures, *, ambiguous_allowed: bool) -> Decision:
        return self.state.matcher.decide(
            features,
            list(self.state.active.values()),
            self.state.seed_pool(features),
            ambiguous_allowed=ambiguous_allowed,
        )

    def _still_pending(self, memory_id: str) -> bool:
        row = self.store.detection(memory_id)
        return row is not None and row["state"] == "pending"

    async def _describe_candidates(self, decision: Decision) -> list[dict[str, Any]]:
        """The candidates as the classification prompt shows them."""
        host = self.state.host
        described = []
        for option in decision.candidates:
            if option.kind == "join":
                row = self.store.episode(option.target or "")
                if row is None or row.status != "active":
                    continue
                recent = await host.get_memories(self.store.member_ids(row.id)[-3:])
                described.append(
                    {
                        "id": option.target,
                        "title": row.title,
                        "summary": row.llm_summary or row.summary,
                        "recent": [(m.id, m.content) for m in recent],
                    }
                )
            else:
                seed = await host.get_memories([option.target or ""])
                if seed:
                    described.append(
                        {
                            "id": option.candidate_id,
                            "title": "(new thread)",
                            "summary": "",
                            "recent": [(seed[0].id, seed[0].content)],
                        }
                    )
        return described
