"""Consolidation: merging two episodes that are one thread (merge checks, the ``merge`` job).

With ``merge_checks`` on (strategies ``hybrid`` and ``llm``), an episode the detector grows to
one of :data:`.detector.MERGE_CHECK_SIZES` members is queued for a check: is it the same thread
as one of its :data:`.detector.MERGE_CANDIDATES` most similar active episodes of its project?
A check rides along in the next review call (:meth:`Consolidation.take`, then
:meth:`Consolidation.settle`): no call of its own, a few more tokens. A check that no review
call has carried in time runs on its own (the ``merge`` job, up to :data:`BATCH` checks a call,
within ``classify_calls_per_memory``): a confirmation after ``classify_batch_wait_seconds``, a
first look only after ``active_window_days`` while reviews are on (:func:`first_check_wait`).
A first look mostly answers "none", and a call of its own spends the budget the reviews of
the next memories need (on streams where the budget binds, own calls of first looks cost more
reviews than their merges gave back); a confirmation follows a "same as" and mostly merges.

A merge needs two answers that agree. "A is the same thread as B" queues a *confirmation*: B
is checked in a later call against its own most similar episodes with A among them (not
against A alone: a "yes" to one named episode is what a wrong answer most often is), and only
when that answer names A are they merged (the larger keeps its id, the other's history ends
with ``merged_into``, the survivor's summary is rewritten). A wrong merge mixes two threads in
every summary, recall and replay, and is far dearer than a merge that comes one call later;
one mistaken answer does not make one.

Episodes the user edited are never merged by it (see :mod:`.edits`). When the LLM cannot
answer, or the budget is spent, nothing changes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..llm import EpisodeText, MergeCheck
from ..llm.prompts import SNIPPETS_PER_CHECK
from . import detector, lifecycle
from .checks import GrowthChecks, reached
from .store import Job

log = logging.getLogger("tribalmemory.episodes")

BATCH = 4
"""Checks answered in one call of their own."""


@dataclass
class Taken:
    """Checks claimed for one call: their jobs, candidates and what the prompt shows."""

    keys: list[str]
    proposals: dict[str, list[str]] = field(default_factory=dict)
    checks: list[MergeCheck] = field(default_factory=list)
    confirming: dict[str, str] = field(default_factory=dict)
    """Checks that confirm an earlier answer: episode -> the one episode it was said to be."""
    jobs: list[Job] = field(default_factory=list)
    """The claimed jobs as they were read (one re-armed meanwhile is not finished)."""


def agreed(
    taken: Taken, answers: Mapping[str, str | None]
) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Which answers merge and which need confirming: a "same as" that confirms an earlier
    one, or that two checks of one call give of each other, merges; any other asks the named
    episode about the checked one alone (twin -> checked episode). Pure."""
    merges: list[tuple[str, str]] = []
    confirms: dict[str, str] = {}
    for key, same_as in answers.items():
        if same_as is None or same_as not in taken.proposals.get(key, []):
            continue
        if taken.confirming.get(key) == same_as or answers.get(same_as) == key:
            if (same_as, key) not in merges:
                merges.append((key, same_as))
        else:
            confirms[same_as] = key
    return merges, confirms


def survivor_of(into: Mapping[str, str], episode_id: str) -> str:
    """The episode that holds ``episode_id`` after the merges ``into`` (absorbed -> survivor,
    in the order they were made): itself when none absorbed it. Pure."""
    while episode_id in into:
        episode_id = into[episode_id]
    return episode_id


def reviews_on(strategy: str, doubt_share: float) -> bool:
    """Does the detector queue reviews (a doubt share above 0, or the ``llm`` strategy)?"""
    return strategy == "llm" or doubt_share > 0


def first_check_wait(review_wait: float, window_days: float, reviews: bool) -> float:
    """Seconds a first check of an episode waits for a review call to carry it before it is
    asked on its own: with ``reviews`` on, as long as an episode stays active without a new
    memory (``window_days``; never less than a confirmation waits, ``review_wait``): a first
    look is worth the tokens it adds to a review, rarely a call of its own. With reviews off
    none comes: ``review_wait``, as a confirmation. Pure."""
    return max(review_wait, window_days * lifecycle.DAY) if reviews else review_wait


def wants_check(old_count: int, new_count: int) -> bool:
    """Did growing an episode from ``old_count`` to ``new_count`` members reach a check size?"""
    return reached(old_count, new_count, detector.MERGE_CHECK_SIZES)


class Consolidation(GrowthChecks):
    """Queues and runs the merge checks."""

    kind = "merge"
    sizes = detector.MERGE_CHECK_SIZES
    unanswered = 0
    """Checks that rode along in a review call whose answer left them out (since start)."""

    def enabled(self) -> bool:
        settings = self.state.settings
        return settings.merge_checks and settings.detector_strategy != "embedding"

    def first_wait(self) -> float:
        settings = self.state.settings  # for a review call to carry it
        wait = settings.classify_batch_wait_seconds
        reviews = reviews_on(settings.detector_strategy, settings.llm_doubt_share)
        return first_check_wait(wait, settings.active_window_days, reviews)

    async def take(self, limit: int = BATCH, first: str | None = None) -> Taken:
        """Claim up to ``limit`` waiting checks (``first`` first) and prepare them: candidates
        now, and each episode as the prompt shows it. Checks with no candidate are claimed
        too (they are done). Always hand the result to :meth:`settle`."""
        jobs = self.store.jobs.waiting("merge", limit, first, self._claimed)
        taken = Taken([job.key for job in jobs], jobs=jobs)
        for job in jobs:
            if "confirm" in job.payload:
                taken.confirming[job.key] = str(job.payload["confirm"])
        self._claimed.update(taken.keys)
        if not taken.keys or not self.enabled():
            return taken
        try:
            async with self.state.detect_lock:
                for key in taken.keys:
                    candidates = self._candidates(key, taken.confirming.get(key))
                    if candidates:
                        taken.proposals[key] = candidates
            for key, candidates in taken.proposals.items():
                checked = await self._describe(key)
                shown = [c for c in [await self._describe(c) for c in candidates] if c]
                if checked is not None and shown:  # none gone meanwhile
                    taken.checks.append(MergeCheck(checked, tuple(shown)))
        except BaseException:
            self._claimed.difference_update(taken.keys)  # their jobs stay: retried later
            raise
        return taken

    def health(self) -> dict[str, int]:
        return {**super().health(), "merge_unanswered": self.unanswered}

    async def settle(
        self, taken: Taken, answers: dict[str, str | None] | None, error: str | None = None
    ) -> None:
        """Carry out the answers to the checks of :meth:`take` (``None``: the LLM did not
        answer; ``error``: the review call that carried them answered its memories but not
        them) and finish their jobs; an answer that needs confirming queues its confirmation
        (:func:`agreed`)."""
        confirms: dict[str, str] = {}
        into: dict[str, str] = {}  # absorbed -> survivor, of this call's merges
        if error is not None and taken.checks:
            self.unanswered += len(taken.checks)
            log.warning(
                "%d merge check(s) riding along in a review call got no valid answer (%s): the "
                "review's decisions stand; the checks are asked again when their episodes "
                "reach the next check size",
                len(taken.checks),
                error,
            )
        try:
            if answers:
                merges, confirms = agreed(taken, answers)
                if merges:
                    await self.state.host.background_turn()  # a merge uses the CPU
                    async with self.state.detect_lock:
                        for first, second in merges:
                            merged = await self._merge(first, second)
                            if merged is not None:
                                into[merged[1]] = merged[0]
                # a twin this call merged away: its survivor holds it now, and is asked instead
                confirms = {survivor_of(into, twin): c for twin, c in confirms.items()}
                for twin, checked in confirms.items():
                    log.info("episode %s may be the same thread as %s: asking again", checked, twin)
        finally:
            now = self.state.clock()
            wait = self.state.settings.classify_batch_wait_seconds
            with self.store.transaction() as db:
                for job in taken.jobs:  # a confirmation queued meanwhile (re-armed) stays
                    self.store.finish_job(db, job)
                for twin, checked in confirms.items():
                    self.store.jobs.enqueue(db, "merge", twin, now, wait, {"confirm": checked})
            self._claimed.difference_update(taken.keys)
            if confirms:
                self.state.wake()

    async def run(self, episode_id: str) -> None:
        """The ``merge`` job: checks no review call carried, asked in one call of their own."""
        if episode_id in self._claimed or not self.store.jobs.has("merge", episode_id):
            return  # in another call, or done by one
        taken = await self.take(BATCH, first=episode_id)
        answers = None
        try:
            if taken.checks and self.summariser.ready() and self.budget.spend_call():
                answers = await self.summariser.merge(taken.checks)
                await self.state.host.background_turn()
        finally:
            await self.settle(taken, answers)

    def _candidates(self, episode_id: str, twin: str | None = None) -> list[str]:
        """The active episodes of the same project most like this one, with ``twin`` among
        them for a confirmation (:func:`.detector.confirm_candidates`); none when it is not
        active or the user edited it. The caller holds the detect lock."""
        state = self.state
        episode = state.active.get(episode_id)
        if episode is None:
            return []
        others = self.membership.merge_partners(episode_id)
        if not others:  # none left, or the user edited this one
            return []
        context = state.matcher.context(state.project_of_episode(episode_id))
        if twin is not None:
            return [e.id for e in detector.confirm_candidates(episode, others, twin, context)]
        return [e.id for e in detector.merge_candidates(episode, others, context)]

    async def _describe(self, episode_id: str) -> EpisodeText | None:
        """An episode as a check shows it (:meth:`.state.EngineState.describe`); None when it
        is gone."""
        row = self.store.episodes.get(episode_id)
        return await self.state.describe(row, SNIPPETS_PER_CHECK) if row else None

    async def _merge(self, first: str, second: str) -> tuple[str, str] | None:
        """Merge two episodes the LLM found to be one thread (see
        :meth:`.membership.Membership.merge_found`; the caller holds the detect lock): the
        survivor and the absorbed one, or None when they were not merged."""
        merged = await self.membership.merge_found(first, second)
        if merged is not None:
            survivor, absorbed = merged
            log.info("episode %s is the same thread as %s: merged", absorbed, survivor)
        return merged
