"""The LLM's review of doubtful decisions: the ``classify`` job.

A decision the detector doubts (:attr:`.events.Events.doubtful`: the least confident share of
decisions, see :func:`.detector.confidence`) stands at once and is queued for review
(:meth:`Review.queue`), within the call budget of :mod:`.budget`. Reviews are batched (a few
doubtful memories per call, each waiting a few of the stream's paces for company); the LLM sees
each memory's candidates as they are by then (its own episode without it included), and a
memory it places elsewhere is moved (:meth:`.detection.Detection.apply` carries out the new
decision). Waiting merge checks ride along in the call (:mod:`.consolidation`). When the budget
is spent or the LLM cannot answer, the embedding decision stands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Iterable

from ..llm import Classification, EpisodeText, MemoryText, Verdicts
from ..llm.prompts import SEED_TITLE, SNIPPETS_PER_CANDIDATE
from ..models import Memory
from .consolidation import Consolidation
from .detection import Detection
from .events import Doubtful
from .matching import MemoryFeatures, Option, Placement, when
from .summariser import Summariser

log = logging.getLogger("tribalmemory.episodes")

MAX_CHECKS_PER_REVIEW = 8
"""Waiting merge checks a review call carries at most (see :mod:`.consolidation`)."""
MAX_BATCH_CANDIDATES = 12
"""At most this many candidates (the union over a batch) in one classification prompt."""


def _union(decisions: Iterable[Placement], reviewed: Collection[str]) -> dict[str, Option]:
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


class Review:
    """Queues doubtful memories for review and runs the ``classify`` job."""

    def __init__(
        self,
        detection: Detection,
        consolidation: Consolidation,
        summariser: Summariser,
    ) -> None:
        self.detection = detection
        """Carries out the decision a verdict makes; its state, members and call budget are
        the review's."""
        self.state = detection.state
        self.store = detection.store
        self.membership = detection.membership
        self.budget = detection.budget
        self.consolidation = consolidation
        """Merge checks: their waiting checks ride along in review calls."""
        self.summariser = summariser
        self._asking: dict[str, asyncio.Event] = {}  # memory -> its batch's call is done

    def queue(self, event: Doubtful) -> None:
        """Queue the LLM's review of a doubtful memory: it waits up to
        ``classify_batch_wait_paces`` of the stream's own pace (at most
        ``classify_batch_wait_seconds``) for others to share the call; a full batch asks now.
        Memories whose call is out are not counted: a memory queued then would be asked alone."""
        settings = self.state.settings
        now = event.now
        wait = min(
            settings.classify_batch_wait_seconds,
            settings.classify_batch_wait_paces * self.state.matcher.context(event.project).pace,
        )
        with self.store.transaction() as db:
            self.store.jobs.enqueue(db, "classify", event.memory_id, now, wait)
            # memories already in a call keep their jobs until it is over: not company
            waiting = self.store.jobs.count("classify") - len(self._asking)
            full = waiting >= settings.classify_batch_size
            if full:
                self.store.jobs.make_due(db, "classify", now)  # a full batch: ask now
        self.state.wake(None if full else now + wait)  # a loop looking by then is left asleep

    async def classify(self, memory_id: str) -> None:
        """The LLM reviews a doubtful memory's provisional decision, in one call with other
        waiting doubtful memories (up to ``classify_batch_size``); a memory it places elsewhere
        is moved. When the LLM cannot answer, or answers something invalid, the embedding
        decisions stand."""
        if not self._reviewable(memory_id):
            return
        done = asyncio.Event()
        batch: list[tuple[Memory, MemoryFeatures, Placement]] = []
        try:
            batch = await self._batch(memory_id, done)
            if batch:
                await self._ask(batch)
        finally:
            try:
                with self.store.transaction() as db:
                    for memory, _, _ in batch:
                        self.store.jobs.delete(db, "classify", memory.id)
            finally:  # even when that write fails: the jobs waiting on this call go on
                for memory, _, _ in batch:
                    self._asking.pop(memory.id, None)
                done.set()

    async def _ask(self, batch: list[tuple[Memory, MemoryFeatures, Placement]]) -> None:
        """One classification call for the batch; carry out each answer (or keep the
        provisional decision). The budget is checked again here, as a hard cap: batches that
        split more than the routing expected must not overspend it."""
        if not self.budget.spend_call(classified=len(batch)):
            return  # spent: the embedding decisions stand
        reviewed = {m.id for m, _, _ in batch}
        options = _union((decision for _, _, decision in batch), reviewed)
        candidates = await self._describe_candidates(options, reviewed)
        rider = self.consolidation
        taken = None
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
            if taken is not None:
                await rider.settle(
                    taken,
                    answer.merges if answer else None,
                    answer.checks_error if answer else None,
                )

    async def _carry_out(
        self,
        batch: list[tuple[Memory, MemoryFeatures, Placement]],
        answer: Verdicts,
        options: dict[str, Option],
    ) -> None:
        """Apply the LLM's verdicts on a reviewed batch, in memory time order, each memory in
        a background turn of its own, holding the detect lock for that memory only."""
        state = self.state
        titles: dict[str, str] = {}  # title of a created thread -> its first memory
        left: dict[str, None] = {}  # episodes a memory moved out of, in order
        for memory, features, _ in sorted(batch, key=lambda item: when(item[1])):
            verdict = answer.get(memory.id)
            if verdict is None:
                continue
            await self._turn()
            async with state.detect_lock:
                if not self._reviewable(memory.id, queued=False):
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
    ) -> list[tuple[Memory, MemoryFeatures, Placement]]:
        """The memory and other waiting doubtful memories (up to ``classify_batch_size``, the
        union of their candidates at most :data:`MAX_BATCH_CANDIDATES`), each with its
        candidates now, claimed for this call (``done`` is set when it is over). A memory with
        no candidate left keeps its decision; one that another call claimed is done when that
        call is. Each memory's options are found in a background turn of their own (the host's
        ``background_turn``: requests first), holding the detect lock for that memory only:
        the options of a batch's 40 candidates in one stretch held a request arriving then for
        up to 200 ms."""
        state = self.state
        keys = [memory_id] + [k for k in self.store.jobs.keys("classify") if k != memory_id]
        keys = keys[: 4 * state.settings.classify_batch_size]
        memories = {m.id: m for m in await state.host.get_memories(keys)}
        vectors = await state.host.get_vectors(list(memories))
        if memory_id not in memories or memory_id not in vectors:  # forgotten meanwhile
            return []
        batch: list[tuple[Memory, MemoryFeatures, Placement]] = []
        while (claimed := self._asking.get(memory_id)) is not None:
            await claimed.wait()  # in another call, or looked at for one: wait until it is over
        if not self._reviewable(memory_id):
            return batch  # a call that was out while this job waited reviewed it: done
        # claimed at once for this call (so that the jobs of the others wait for it), and let
        # go again if left out of it
        taken = [k for k in keys if k in memories and k in vectors and k not in self._asking]
        self._asking.update(dict.fromkeys(taken, done))
        shared: set[str] = set()
        read: dict[str, MemoryFeatures] = {}  # members' features read so far, for the next key
        try:
            for key in taken:
                if key != memory_id:  # the job's own memory: the turn it started with
                    await self._turn()
                async with state.detect_lock:  # taken for one memory at a time
                    if not self._reviewable(key):
                        continue
                    features = state.memory_features(memories[key], vectors[key])
                    if self._still_pending(key):  # queued by an older version: decide it first
                        embedding = self.detection.decide(features, doubt_share=0.0)
                        await self.detection.apply(memories[key], features, embedding)
                    decision = await self._review_options(features, read)
                ids = set(decision.candidate_ids())
                if decision.kind != "ambiguous" or not ids:
                    continue
                if len(shared | ids) > MAX_BATCH_CANDIDATES and batch:
                    continue
                batch.append((memories[key], features, decision))
                shared |= ids
                if len(batch) >= state.settings.classify_batch_size:
                    break
        except BaseException:
            batch = []  # the caller never sees this batch: every memory is let go
            raise
        finally:
            kept = {m.id for m, _, _ in batch}
            for key in taken:
                if key not in kept:
                    self._asking.pop(key, None)
        return batch

    async def _review_options(
        self, features: MemoryFeatures, read: dict[str, MemoryFeatures]
    ) -> Placement:
        """The memory's candidates as they are now, as if it were new: the active episodes
        (its own without it) and the seeds. The caller holds the detect lock. ``read`` keeps
        the members' features read so far (a memory's features never change; several memories
        of a batch are often in one episode; who is a member is read each time)."""
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
            features,
            episodes,
            state.seed_pool(features),
            doubt_share=1.0,
            project=project,
            seeds_eligible=True,
        )

    async def _move(
        self,
        memory: Memory,
        features: MemoryFeatures,
        decision: Placement,
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
            if current not in state.active or not self.detection.pins_allow(memory.id, None):
                return None  # closed meanwhile, or placed by the user
            await self.membership.remove(current, memory.id, actor="detector", rewrite=False)
            await self._dissolve_if_single(current)
        state.seeds.pop(memory.id, None)
        await self.detection.apply(memory, features, decision, title_hint=title)
        return current

    async def _dissolve_if_single(self, episode_id: str) -> None:
        """An episode the detector left with one member is no thread: the member becomes a
        seed again (unless the user placed it there)."""
        state = self.state
        members = self.store.memberships.member_ids(episode_id)
        if len(members) != 1 or episode_id not in state.active:
            return
        last = members[0]
        if not self.detection.pins_allow(last, None):
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
    ) -> tuple[Placement, str | None]:
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
                return Placement(option.kind, target, option.score, option.similarity), None
        if verdict.action == "create":
            first = titles.get(verdict.title or "")
            episode_id = self.store.memberships.episode_of(first) if first else None
            if episode_id in state.active:
                similarity = state.matcher.similarity(features, state.active[episode_id])
                return Placement("join", episode_id, 0.0, similarity), None
            if first in state.seeds:
                return Placement("seed", first, 0.0, 0.0), None
            return Placement("new_seed"), verdict.title
        if verdict.action == "none":
            return Placement("none"), None
        return self.detection.decide(features, doubt_share=0.0), None  # an option no longer open

    async def _turn(self) -> None:
        """Before the next memory of a batch: requests waiting for the event loop go first,
        then a background turn (in a quiet moment it is given at once, without yielding)."""
        await asyncio.sleep(0)
        await self.state.host.background_turn()

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
    ) -> list[EpisodeText]:
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
                described.append(EpisodeText(option.candidate_id, SEED_TITLE, "", (memory,)))
        return described
