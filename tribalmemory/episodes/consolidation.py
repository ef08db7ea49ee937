"""Consolidation: merging two episodes that are one thread (the ``merge`` job).

With ``merge_checks`` on (strategies ``hybrid`` and ``llm``), an episode the detector grows to
one of :data:`.detector.MERGE_CHECK_SIZES` members is queued for a check: is it the same thread
as one of its :data:`.detector.MERGE_CANDIDATES` most similar active episodes of its project?
Checks wait for company like reviews do (up to :data:`BATCH` in one call, at most
``classify_batch_wait_paces`` of the stream's pace) and spend the same budget
(``classify_calls_per_memory``). A "same as" answer merges the two: the larger keeps its id, the
other's history ends with ``merged_into``, the survivor's summary is rewritten. Episodes the
user edited are never merged by it (see :mod:`.edits`). When the LLM cannot answer, or the budget
is spent, nothing changes.
"""

from __future__ import annotations

import logging

from ..llm import Candidate, MemoryText, MergeCheck
from . import detector
from .detection import Detection
from .edits import Pin, may_merge, merge_roles
from .matching import EpisodeFeatures
from .membership import Membership
from .state import EngineState
from .summariser import Summariser

log = logging.getLogger("tribalmemory.episodes")

BATCH = 4
"""Checks answered in one call."""


def wants_check(old_count: int, new_count: int) -> bool:
    """Did growing an episode from ``old_count`` to ``new_count`` members reach a check size?"""
    return any(old_count < size <= new_count for size in detector.MERGE_CHECK_SIZES)


class Consolidation:
    """Queues and runs the merge checks."""

    def __init__(
        self,
        state: EngineState,
        summariser: Summariser,
        membership: Membership,
        detection: Detection,
    ) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser
        self.membership = membership
        self.detection = detection
        self._claimed: set[str] = set()  # episodes in a check call now

    def enabled(self) -> bool:
        settings = self.state.settings
        return settings.merge_checks and settings.detector_strategy != "embedding"

    def health(self) -> dict[str, int]:
        return {"merge_waiting": self.store.count_jobs("merge")}

    def grown(self, episode_id: str, old_count: int, new_count: int, now: float) -> None:
        """The detector grew an episode: queue its check when it reached a check size."""
        if not self.enabled() or not wants_check(old_count, new_count):
            return
        settings = self.state.settings
        project = self.state.project_of_episode(episode_id)
        wait = min(
            settings.classify_batch_wait_seconds,
            settings.classify_batch_wait_paces * self.state.matcher.context(project).pace,
        )
        with self.store.transaction() as db:
            self.store.enqueue(db, "merge", episode_id, now, wait)
            if self.store.count_jobs("merge") >= BATCH:
                self.store.make_due(db, "merge", now)  # a full batch: ask now
        self.state.wake()

    async def run(self, episode_id: str) -> None:
        """The ``merge`` job: check this episode and others waiting, in one call."""
        if episode_id in self._claimed or not self.store.has_job("merge", episode_id):
            return  # in another call, or done by one
        keys = [episode_id] + [
            k for k in self.store.job_keys("merge") if k != episode_id and k not in self._claimed
        ]
        keys = keys[:BATCH]
        self._claimed.update(keys)
        try:
            await self._check(keys)
        finally:
            with self.store.transaction() as db:
                for key in keys:
                    self.store.delete_job(db, "merge", key)
            self._claimed.difference_update(keys)

    async def _check(self, keys: list[str]) -> None:
        state = self.state
        if not self.summariser.ready():
            return  # the LLM is off or failing: no merge (its state is in /v1/health)
        async with state.detect_lock:
            proposals = {key: self._candidates(key) for key in keys}
        proposals = {k: v for k, v in proposals.items() if v}
        if not proposals or not self.detection.spend_call():
            return
        checks = [
            MergeCheck(await self._describe(key), tuple([await self._describe(c) for c in cands]))
            for key, cands in proposals.items()
        ]
        answer = await self.summariser.merge(checks)
        if not answer:
            return
        await state.host.background_turn()
        async with state.detect_lock:
            for key, same_as in answer.items():
                if same_as is not None and same_as in proposals.get(key, []):
                    await self._merge(key, same_as)

    def _candidates(self, episode_id: str) -> list[str]:
        """The active episodes of the same project most like this one (none when it is not
        active or the user edited it). The caller holds the detect lock."""
        state = self.state
        episode = state.active.get(episode_id)
        if episode is None:
            return []
        project = state.project_of_episode(episode_id)
        others: list[EpisodeFeatures] = [
            e
            for e in state.active.values()
            if e.id != episode_id and state.project_of_episode(e.id) == project
        ]
        pins = [Pin.from_row(r) for r in self.store.pins_on([episode_id, *(e.id for e in others)])]
        others = [e for e in others if may_merge(pins, episode_id, e.id)]
        if not others or not may_merge(pins, episode_id, episode_id):
            return []
        context = state.matcher.context(project)
        return [e.id for e in detector.merge_candidates(episode, others, context)]

    async def _describe(self, episode_id: str) -> Candidate:
        row = self.store.episode(episode_id)
        members = self.store.member_ids(episode_id)
        recent = await self.state.host.get_memories(members[-3:])
        return Candidate(
            id=episode_id,
            title=row.title if row else "",
            summary=(row.llm_summary or row.summary) if row else "",
            recent=tuple(MemoryText(id=m.id, content=m.content) for m in recent),
        )

    async def _merge(self, first: str, second: str) -> None:
        """Merge two episodes the LLM found to be one thread, if both are still active, in
        one project and unedited (the caller holds the detect lock)."""
        state = self.state
        if first not in state.active or second not in state.active:
            return  # closed or merged meanwhile
        if state.project_of_episode(first) != state.project_of_episode(second):
            return
        pins = [Pin.from_row(r) for r in self.store.pins_on([first, second])]
        if not may_merge(pins, first, second):
            return
        survivor, absorbed = merge_roles(
            first, state.active[first].memory_count, second, state.active[second].memory_count
        )
        log.info("episode %s is the same thread as %s: merged", absorbed, survivor)
        await self.membership.merge(survivor, absorbed, actor="detector")
