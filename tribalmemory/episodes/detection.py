"""Write-time detection: which episode a new memory belongs to, and the review job.

``remember()`` records a durable ``detect`` job before the memory is stored
(:meth:`Detection.register_pending`), then decides at once on the embedding path
(:meth:`Detection.detect`). Every decision is made at once and is provisional: a doubtful one
(the least confident share of decisions, see :func:`.detector.confidence`) is also queued for
review by the LLM (the ``classify`` job, :meth:`Detection.classify`), within a running budget of
``classify_calls_per_memory``. Reviews are batched (a few doubtful memories per call, each
waiting a few of the stream's paces for company); the LLM sees each memory's candidates as they
are by then (its own episode without it included), and a memory it places elsewhere is moved.
When the budget is spent or the LLM cannot answer, the embedding decision stands. Decisions
hold ``detect_lock``, so concurrent writers decide as a sequential run would.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..llm import Candidate, Classification, MemoryText, Verdicts
from ..llm.prompts import SEED_TITLE, SNIPPETS_PER_CANDIDATE
from ..models import Memory
from ..timeutil import to_epoch
from . import lifecycle
from .detector import DEFAULT_MODEL
from .edits import Pin, may_join, may_move
from .matching import Decision, MemoryFeatures, Option, when
from .membership import Membership
from .sessions import Sessions
from .state import EngineState
from .summariser import Summariser
from .upkeep import Upkeep

if TYPE_CHECKING:
    from .consolidation import Consolidation
    from .resumption import Resumption
    from .splitting import Splitting

log = logging.getLogger("tribalmemory.episodes")

EPISODE_STATUS = {"assigned": "assigned", "pending": "pending"}  # any other state: unassigned
BUDGET_KEY = "classify_budget"
"""Meta key of the budget counters: memories decided, classification calls made."""
BUDGET_SAVE_EVERY = 25
"""Decisions counted between two saves of the budget's counts (a call is saved at once)."""
MAX_CHECKS_PER_REVIEW = 8
"""Waiting merge checks a review call carries at most (see :mod:`.consolidation`)."""
MAX_BATCH_CANDIDATES = 12
"""At most this many candidates (the union over a batch) in one classification prompt."""
BUDGET_BURST = 1.0
"""Calls allowed ahead of the budget, so the first doubtful memory of a stream can be asked."""


def _union(decisions: Iterable[Decision], reviewed: Collection[str]) -> dict[str, Option]:
    """The candidates of several decisions by candidate id, best first per decision, at most
    :data:`MAX_BATCH_CANDIDATES`; not the seeds among the ``reviewed`` memories (shown as a
    candidate, a memory's own text is one it would "join"; memories of one call that start a
    thread together say so with one ``create`` title)."""
    out: dict[str, Option] = {}
    for decision in decisions:
        for option in decision.candidates:
            if option.kind == "seed" and option.target in reviewed:
                continue
            if len(out) < MAX_BATCH_CANDIDATES:
                out.setdefault(option.candidate_id, option)
    return out


def within_budget(memories: int, committed: int, calls_per_memory: float) -> bool:
    """May one more classification call be committed (made or queued) after ``memories``
    decisions? Keeps ``committed <= calls_per_memory * memories + BUDGET_BURST``."""
    return committed + 1 <= calls_per_memory * memories + BUDGET_BURST


def memories_per_review(classified: int, reviews: int) -> float:
    """Memories one review call has classified on average, 1 before any has. Checks asked in
    calls of their own classify no memory and do not count: counted, a store whose first calls
    were checks would take the reviews to carry none, and never queue one again."""
    return classified / reviews if classified and reviews else 1.0


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
        self._asking: dict[str, asyncio.Event] = {}  # memory -> its batch's call is done
        self._budget: dict[str, int] | None = None  # budget(), read once from the database
        self.sessions: Sessions | None = None  # declared episodes (set by the engine)
        self.consolidation: Consolidation | None = None
        """Merge checks: told when a join grows an episode, and their waiting checks ride
        along in review calls (set by the engine)."""
        self.splitting: Splitting | None = None
        """Split checks: told when a join grows an episode (set by the engine)."""
        self.resumption: Resumption | None = None
        """Without an LLM: merges a quiet episode into the older one it resumes (set by the
        engine)."""

    def register_pending(self, memory: Memory) -> None:
        """Before the memory is stored: record a durable detect job for it."""
        self.register_pending_many([memory])

    def register_pending_many(self, memories: list[Memory]) -> None:
        """Before a page of memories is stored (an import): their detect jobs, in one
        transaction."""
        now = self.state.clock()
        with self.store.transaction() as db:
            for memory in memories:
                self.store.detections.record(db, memory.id, "pending", to_epoch(memory.created_at))
                self.store.jobs.enqueue(db, "detect", memory.id, now)

    async def detect(self, memory: Memory, vector: np.ndarray) -> dict[str, Any]:
        """Decide the memory's episode now when the embedding path can; else queue the LLM."""
        state = self.state
        async with state.detect_lock:
            detection = self.store.detections.get(memory.id)
            if detection is None:
                return {}
            if detection["state"] != "pending":
                return self.status_of(memory.id)
            features = state.matcher.memory(memory, vector)
            await self.upkeep.close_idle(to_epoch(memory.created_at), memory.project)
            if self.resumption is not None and not self._llm_wanted():  # else the LLM merges
                await self.resumption.check(memory.created_at, memory.project)
            if self.sessions is not None and await self.sessions.claim(memory, features):
                self._count(memories=1)
                return self.status_of(memory.id)  # joined its session's declared episode
            decision = state.matcher.decide(
                features,
                state.active_for(features),
                state.seed_pool(features),
                doubt_share=self.doubt_share(),
                learn=True,
                project=memory.project,
            )
            self._count(memories=1)
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
        detection = self.store.detections.get(memory_id)
        return {
            "episode_id": self.store.memberships.episode_of(memory_id),
            "episode_status": episode_status(detection["state"] if detection else None),
        }

    def _llm_wanted(self) -> bool:
        return self.state.settings.detector_strategy != "embedding" and self.summariser.ready()

    def budget(self) -> dict[str, int]:
        """``memories`` decided, classification ``calls`` made (reviews and checks alone), the
        ``reviews`` among them and the memories they ``classified``, since the store began. A
        store from before reviews were counted apart counts every call as one."""
        if self._budget is None:
            data = self.store.get_meta(BUDGET_KEY) or {}
            counts = {k: int(data.get(k, 0)) for k in ("memories", "calls", "classified")}
            counts["reviews"] = int(data.get("reviews", counts["calls"]))
            self._budget = counts
        return dict(self._budget)

    def _count(self, *, memories: int = 0, calls: int = 0, classified: int = 0) -> None:
        """Count decisions and calls (kept in memory, read by :meth:`budget`). A call is saved
        at once, so that no crash lets the budget be overspent; decisions are saved every
        :data:`BUDGET_SAVE_EVERY` and at stop (:meth:`save_budget`): a crash forgets at most
        a few, which only lowers the budget a little, and the request path is spared a
        transaction per memory."""
        counts = self.budget()
        counts["memories"] += memories
        counts["calls"] += calls
        counts["reviews"] += 1 if classified else 0
        counts["classified"] += classified
        self._budget = counts
        if calls or counts["memories"] % BUDGET_SAVE_EVERY == 0:
            self.save_budget()

    def save_budget(self) -> None:
        """Write the counts of :meth:`budget` to the database."""
        if self._budget is not None:
            with self.store.transaction() as db:
                self.store.set_meta(db, BUDGET_KEY, self._budget)

    def spend_call(self, classified: int = 0) -> bool:
        """Count one LLM call of the detector (a review of ``classified`` memories, or merge
        checks alone) if the budget allows it; False when it is spent. Checked and counted
        with no await in between, so concurrent callers never overspend."""
        counts = self.budget()
        per_memory = self.state.settings.classify_calls_per_memory
        if not within_budget(counts["memories"], counts["calls"], per_memory):
            return False
        self._count(calls=1, classified=classified)
        return True

    def doubt_share(self) -> float:
        """The share of decisions the LLM may take now: ``llm_doubt_share`` (1 for the ``llm``
        strategy), capped by what the call budget pays for at the memories per call seen so
        far, 0 when the LLM is not wanted or the budget is spent (waiting memories count as
        the calls their batches will make)."""
        if not self._llm_wanted():
            return 0.0
        settings = self.state.settings
        counts = self.budget()
        size = settings.classify_batch_size
        committed = counts["calls"] + math.ceil(self.store.jobs.count("classify") / size)
        if not within_budget(counts["memories"], committed, settings.classify_calls_per_memory):
            return 0.0
        share = 1.0 if settings.detector_strategy == "llm" else settings.llm_doubt_share
        per_review = memories_per_review(counts["classified"], counts["reviews"])
        return min(share, settings.classify_calls_per_memory * per_review)

    def health(self) -> dict[str, Any]:
        """Budget figures for ``/v1/health``."""
        counts = self.budget()
        per = self.state.settings.classify_calls_per_memory
        return {
            "detector_model": DEFAULT_MODEL.describe(),
            "classify_calls": counts["calls"],
            "classified_memories": counts["classified"],
            "classify_calls_per_memory": round(counts["calls"] / max(counts["memories"], 1), 4),
            "classify_waiting": self.store.jobs.count("classify"),
            "classify_budget_left": max(
                0, int(per * counts["memories"] + BUDGET_BURST) - counts["calls"]
            ),
        }

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
        if decision.kind == "join" and not self._pins_allow(memory.id, decision.target):
            decision = Decision.new_seed()  # the user took it out of that episode
        if not state.same_project(memory, decision.kind, decision.target):
            decision = Decision.new_seed()  # an episode never spans two projects
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
                self.store.jobs.finish_detection(db, memory.id)
                state.record(db, episode_id, "detector", "join", {"memory_id": memory.id})
                state.queue_summary(db, episode_id, now, trigger=memory.id)
            state.active[episode_id] = state.matcher.add(state.active[episode_id], features)
            state.seeds.pop(memory.id, None)
            if self.consolidation is not None:
                self.consolidation.grown(episode_id, old_count, old_count + 1, now)
            if self.splitting is not None:
                self.splitting.grown(episode_id, old_count, old_count + 1, now)
        elif kind == "seed" and (seed := state.seeds.get(decision.target or "")) is not None:
            await self._start_from_seed(memory, features, seed, decision, title_hint)
        elif kind == "ambiguous":  # decided by embeddings now, reviewed by the LLM later
            embedded = decision.embedded or self._decide(features, doubt_share=0.0)
            await self._apply(memory, features, embedded)
            self._queue_review(memory.id, memory.project, now)
        else:
            detection = "standalone" if kind == "none" else "seed"
            with self.store.transaction() as db:
                self.store.detections.record(db, memory.id, detection, when(features), title_hint)
                self.store.jobs.finish_detection(db, memory.id)
            if detection == "seed":
                state.seeds[memory.id] = features
            else:
                state.seeds.pop(memory.id, None)

    def _queue_review(self, memory_id: str, project: str, now: float) -> None:
        """Queue the LLM's review of a doubtful memory: it waits up to
        ``classify_batch_wait_paces`` of the stream's own pace (at most
        ``classify_batch_wait_seconds``) for others to share the call; a full batch asks now.
        Memories whose call is out are not counted: a memory queued then would be asked alone."""
        settings = self.state.settings
        wait = min(
            settings.classify_batch_wait_seconds,
            settings.classify_batch_wait_paces * self.state.matcher.context(project).pace,
        )
        with self.store.transaction() as db:
            self.store.jobs.enqueue(db, "classify", memory_id, now, wait)
            # memories already in a call keep their jobs until it is over: not company
            waiting = self.store.jobs.count("classify") - len(self._asking)
            full = waiting >= settings.classify_batch_size
            if full:
                self.store.jobs.make_due(db, "classify", now)  # a full batch: ask now
        self.state.wake(None if full else now + wait)  # a loop looking by then is left asleep

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
        seed_row = self.store.detections.get(seed.id)
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
        """The LLM reviews a doubtful memory's provisional decision, in one call with other
        waiting doubtful memories (up to ``classify_batch_size``); a memory it places elsewhere
        is moved. When the LLM cannot answer, or answers something invalid, the embedding
        decisions stand."""
        if not self._reviewable(memory_id):
            return
        done = asyncio.Event()
        batch: list[tuple[Memory, MemoryFeatures, Decision]] = []
        try:
            batch = await self._batch(memory_id, done)
            if batch:
                await self._ask(batch)
        finally:
            with self.store.transaction() as db:
                for memory, _, _ in batch:
                    self.store.jobs.delete(db, "classify", memory.id)
            for memory, _, _ in batch:
                self._asking.pop(memory.id, None)
            done.set()

    async def _ask(self, batch: list[tuple[Memory, MemoryFeatures, Decision]]) -> None:
        """One classification call for the batch; carry out each answer (or keep the
        provisional decision). The budget is checked again here, as a hard cap: batches that
        split more than the routing expected must not overspend it."""
        if not self.spend_call(classified=len(batch)):
            return  # spent: the embedding decisions stand
        reviewed = {m.id for m, _, _ in batch}
        options = _union((decision for _, _, decision in batch), reviewed)
        candidates = await self._describe_candidates(options, reviewed)
        rider = self.consolidation
        taken = None
        if rider is not None:
            try:
                taken = await rider.take(MAX_CHECKS_PER_REVIEW)
            except Exception as exc:  # the review goes on; the checks wait for another call
                log.warning("merge checks not prepared for this review call: %s", exc)
        answer = None
        try:
            answer = await self.summariser.classify(
                [m for m, _, _ in batch], candidates, taken.checks if taken else None
            )
            if answer:
                await self._carry_out(batch, answer, options)
        finally:
            if rider is not None and taken is not None:
                await rider.settle(
                    taken,
                    answer.merges if answer else None,
                    answer.checks_error if answer else None,
                )

    async def _carry_out(
        self,
        batch: list[tuple[Memory, MemoryFeatures, Decision]],
        answer: Verdicts,
        options: dict[str, Option],
    ) -> None:
        """Apply the LLM's verdicts on a reviewed batch, in memory time order."""
        state = self.state
        await state.host.background_turn()  # applying it uses the CPU
        titles: dict[str, str] = {}  # title of a created thread -> its first memory
        left: dict[str, None] = {}  # episodes a memory moved out of, in order
        async with state.detect_lock:
            for memory, features, _ in sorted(batch, key=lambda item: when(item[1])):
                verdict = answer.get(memory.id)
                if verdict is None or not self._reviewable(memory.id, queued=False):
                    continue
                decision, title = self._follow(verdict, features, options, titles)
                if (gone_from := await self._move(memory, features, decision, title)) is not None:
                    left[gone_from] = None
                if verdict.action == "create" and verdict.title not in titles:
                    titles[verdict.title or ""] = memory.id
        for episode_id in left:
            await self.membership.rewrite_left(episode_id)

    async def _batch(
        self, memory_id: str, done: asyncio.Event
    ) -> list[tuple[Memory, MemoryFeatures, Decision]]:
        """The memory and other waiting doubtful memories (up to ``classify_batch_size``, the
        union of their candidates at most :data:`MAX_BATCH_CANDIDATES`), each with its
        candidates now, claimed for this call (``done`` is set when it is over). A memory with
        no candidate left keeps its decision; one that another call claimed is done when that
        call is."""
        state = self.state
        keys = [memory_id] + [k for k in self.store.jobs.keys("classify") if k != memory_id]
        keys = keys[: 4 * state.settings.classify_batch_size]
        memories = {m.id: m for m in await state.host.get_memories(keys)}
        vectors = await state.host.get_vectors(list(memories))
        if memory_id not in memories or memory_id not in vectors:  # forgotten meanwhile
            return []
        batch: list[tuple[Memory, MemoryFeatures, Decision]] = []
        shared: set[str] = set()
        read: dict[str, MemoryFeatures] = {}  # members read for one key's options, for the next
        async with state.detect_lock:
            claimed = self._asking.get(memory_id)
            if claimed is None and not self._reviewable(memory_id):
                return []  # a call that was out while this job waited reviewed it: done
            for key in keys if claimed is None else ():
                if key not in memories or key not in vectors or not self._reviewable(key):
                    continue
                if key in self._asking:  # already in a call
                    continue
                features = state.matcher.memory(memories[key], vectors[key])
                if self._still_pending(key):  # queued by an older version: decide it first
                    embedding = self._decide(features, doubt_share=0.0)
                    await self._apply(memories[key], features, embedding)
                decision = await self._review_options(features, read)
                ids = set(decision.candidate_ids())
                if decision.kind != "ambiguous" or not ids:
                    continue
                if len(shared | ids) > MAX_BATCH_CANDIDATES and batch:
                    continue
                batch.append((memories[key], features, decision))
                self._asking[key] = done
                shared |= ids
                if len(batch) >= state.settings.classify_batch_size:
                    break
        if claimed is not None:  # in another call: done when that one is
            await claimed.wait()
        return batch

    async def _review_options(
        self, features: MemoryFeatures, read: dict[str, MemoryFeatures]
    ) -> Decision:
        """The memory's candidates as they are now, as if it were new: the active episodes
        (its own without it) and the seeds. The caller holds the detect lock. ``read`` keeps
        the members' features read so far under it (a memory's features do not change while
        it is held; several memories of a batch are often in one episode)."""
        state = self.state
        current = self.store.memberships.episode_of(features.id)
        episodes = [e for e in state.active_for(features) if e.id != current]
        if current in state.active:
            others = [m for m in self.store.memberships.member_ids(current) if m != features.id]
            if missing := [m for m in others if m not in read]:
                read.update((f.id, f) for f in await state.features(missing))
            rest = [read[m] for m in others if m in read]
            if rest:
                episodes.append(state.matcher.episode(current, rest))
        project = state.project_of_memory(features.id)
        return state.matcher.decide(
            features, episodes, state.seed_pool(features), doubt_share=1.0, project=project
        )

    async def _move(
        self,
        memory: Memory,
        features: MemoryFeatures,
        decision: Decision,
        title: str | None,
    ) -> str | None:
        """Carry out the LLM's verdict on a memory already decided (the caller holds the detect
        lock): nothing when it confirms the memory's place, else the memory leaves its episode
        (or the seeds) and the verdict is applied as a new decision. An episode left with one
        member by the detector is dissolved (its member becomes a seed again). A memory the
        user placed is never moved (see :mod:`.edits`). Returns the episode the memory left,
        whose summary the caller rewrites (:meth:`Membership.rewrite_left`) once it has let go
        of the detect lock."""
        state = self.state
        current = self.store.memberships.episode_of(memory.id)
        if decision.kind == "join" and decision.target == current:
            return None  # confirmed
        seed_confirmed = decision.kind == "new_seed" and not title and memory.id in state.seeds
        if current is None and seed_confirmed:
            return None  # confirmed: it stays a seed (a title would start a named thread)
        if current is not None:
            if current not in state.active or not self._pins_allow(memory.id, None):
                return None  # closed meanwhile, or placed by the user
            await self.membership.remove(current, memory.id, actor="detector", rewrite=False)
            await self._dissolve_if_single(current)
        state.seeds.pop(memory.id, None)
        await self._apply(memory, features, decision, title_hint=title)
        return current

    async def _dissolve_if_single(self, episode_id: str) -> None:
        """An episode the detector left with one member is no thread: the member becomes a
        seed again (unless the user placed it there)."""
        state = self.state
        members = self.store.memberships.member_ids(episode_id)
        if len(members) != 1 or episode_id not in state.active:
            return
        last = members[0]
        if not self._pins_allow(last, None):
            return
        rest = await state.features([last])
        await self.membership.remove(episode_id, last, actor="detector")
        if rest:
            with self.store.transaction() as db:
                self.store.detections.record(db, last, "seed", when(rest[0]))
            state.seeds[last] = rest[0]

    def _follow(
        self,
        verdict: Classification,
        features: MemoryFeatures,
        options: dict[str, Option],
        titles: dict[str, str],
    ) -> tuple[Decision, str | None]:
        """The decision that carries out the LLM's verdict on one memory (the caller holds the
        detect lock): a join names a candidate of the batch (a seed that has since started an
        episode means that episode); creates with one title start one thread together."""
        state = self.state
        if verdict.action == "join" and verdict.episode_id in options:
            option = options[verdict.episode_id]
            target = option.target or ""
            if option.kind == "seed" and target not in state.seeds:
                target = self.store.memberships.episode_of(target) or ""
                option = Option("join", target, option.score, option.similarity)
            if (option.kind == "join" and target in state.active) or (
                option.kind == "seed" and target in state.seeds
            ):
                return Decision(option.kind, target, option.score, option.similarity), None
        if verdict.action == "create":
            first = titles.get(verdict.title or "")
            episode_id = self.store.memberships.episode_of(first) if first else None
            if episode_id in state.active:
                similarity = state.matcher.similarity(features, state.active[episode_id])
                return Decision("join", episode_id, 0.0, similarity), None
            if first in state.seeds:
                return Decision("seed", first, 0.0, 0.0), None
            return Decision("new_seed"), verdict.title
        if verdict.action == "none":
            return Decision("none"), None
        return self._decide(features, doubt_share=0.0), None  # an option no longer open

    def _decide(self, features: MemoryFeatures, *, doubt_share: float) -> Decision:
        return self.state.matcher.decide(
            features,
            self.state.active_for(features),
            self.state.seed_pool(features),
            doubt_share=doubt_share,
            project=self.state.project_of_memory(features.id),
        )

    def _pins_allow(self, memory_id: str, episode_id: str | None) -> bool:
        """Manual edits win (see :mod:`.edits`): no join where the user removed the memory,
        no move of a memory the user placed."""
        pins = [Pin.from_row(r) for r in self.store.pins.of([memory_id])]
        current = self.store.memberships.episode_of(memory_id)
        return may_join(pins, memory_id, episode_id or "") and may_move(pins, memory_id, current)

    def _still_pending(self, memory_id: str) -> bool:
        row = self.store.detections.get(memory_id)
        return row is not None and row["state"] == "pending"

    def _reviewable(self, memory_id: str, queued: bool = True) -> bool:
        """The memory still exists for the engine (and, with ``queued``, waits for review)."""
        if self.store.detections.get(memory_id) is None:
            return False
        return not queued or self.store.jobs.has("classify", memory_id)

    async def _describe_candidates(
        self, options: dict[str, Option], reviewed: set[str]
    ) -> list[Candidate]:
        """The candidates as the classification prompt shows them: an active episode as
        :meth:`.state.EngineState.describe` does, without the ``reviewed`` memories (a memory is
        judged against its episode without it); a seed as a new thread of its one memory."""
        described = []
        for option in options.values():
            if option.kind == "join":
                row = self.store.episodes.get(option.target or "")
                if row is not None and row.status == "active":
                    shown = await self.state.describe(row, SNIPPETS_PER_CANDIDATE, reviewed)
                    described.append(shown)
                continue
            seed = await self.state.host.get_memories([option.target or ""])
            if seed:
                memory = MemoryText(id=seed[0].id, content=seed[0].content)
                described.append(Candidate(option.candidate_id, SEED_TITLE, "", (memory,)))
        return described
