"""Consolidation: splitting an episode that mixes two threads (split checks, the ``split`` job).

With ``split_checks`` on (strategies ``hybrid`` and ``llm``), an episode the detector grows to
one of :data:`SPLIT_CHECK_SIZES` members is looked at again: its members are cut in two by
their embeddings (:func:`split_proposal`). Only when the two parts look like two threads of the
stream -- as unlike each other as the stream's background, each as tight as a thread -- is the
LLM asked whether they are two threads (up to :data:`BATCH` proposals in one call, within
``classify_calls_per_memory``).

A split needs two answers that agree: the first "two threads" asks again in a later call, with
the parts as they stand then, and only a second one splits. The larger part keeps the episode's
id; the other becomes a new episode recorded as ``split_from`` it (and the old one's history
says ``split``); both summaries are refreshed by the summary jobs. Episodes the user edited are
never split by it (see :mod:`.edits`). When the LLM cannot answer, or the budget is spent,
nothing changes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..llm import MemoryText, SplitCheck
from ..llm.prompts import SNIPPETS_PER_CHECK
from ..plural import counted
from . import detector
from .checks import GrowthChecks, reached
from .detector import DetectorContext
from .store import Job

log = logging.getLogger("tribalmemory.episodes")

SPLIT_CHECK_SIZES = (8, 16, 32, 64)
"""An episode is looked at for two threads when the detector grows it to one of these sizes:
by 8 both threads of a mixture can have :data:`MIN_PART` members, and each doubling lets both
grow before another look."""
MIN_PART = 4
"""The fewest members a part needs: fewer are strays, which the reviews re-home one by one."""
BATCH = 4
"""Proposals answered in one call."""
MAX_ROUNDS = 50
"""Two-means iterations at most (it settles in a handful)."""


@dataclass(frozen=True)
class Proposal:
    """Two parts of an episode that look like two threads: ``keep`` (the larger, or on a tie
    the one with the oldest member) stays, ``move`` would become a new episode."""

    keep: tuple[str, ...]
    move: tuple[str, ...]
    cross: float
    """Mean cosine between the parts' members."""
    tightness: float
    """Mean cosine between members within the looser part."""


def two_means(vectors: np.ndarray) -> np.ndarray:
    """Cut unit ``vectors`` (rows) in two by cosine k-means, started deterministically from
    the member least like the centroid and the member least like that one. Labels 0/1."""
    centroid = vectors.sum(axis=0)
    first = int(np.argmin(vectors @ centroid))
    second = int(np.argmin(vectors @ vectors[first]))
    centres = np.stack([vectors[first], vectors[second]])
    labels = np.zeros(len(vectors), dtype=int)
    for _ in range(MAX_ROUNDS):
        new = np.argmax(vectors @ centres.T, axis=1)
        if (new == labels).all() and _ > 0:
            break
        labels = new
        for k in (0, 1):
            total = vectors[labels == k].sum(axis=0)
            norm = float(np.linalg.norm(total))
            if norm > 0:
                centres[k] = total / norm
    return labels


def _mean_within(vectors: np.ndarray) -> float:
    n = len(vectors)
    sims = vectors @ vectors.T
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def split_proposal(members: Sequence[tuple[str, Any]], context: DetectorContext) -> Proposal | None:
    """Does an episode with ``members`` (id, vector; oldest first) look like two threads?

    Its two-means parts are proposed when each has :data:`MIN_PART` members or more, the mean
    cosine between them is at most the stream's background (``context.cos_mean``: what a new
    memory and the members it is compared with score on average), and each part's mean cosine
    within is at least one standard deviation (``context.cos_std``) above it. Both bounds move
    with the stream: no absolute similarity is assumed. Pure."""
    if len(members) < 2 * MIN_PART:
        return None
    vectors = np.stack([np.asarray(v, dtype=float) for _, v in members])
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    labels = two_means(vectors)
    parts = [[int(i) for i in np.flatnonzero(labels == k)] for k in (0, 1)]
    if min(len(p) for p in parts) < MIN_PART:
        return None
    cross = float((vectors[parts[0]] @ vectors[parts[1]].T).mean())
    tightness = min(_mean_within(vectors[p]) for p in parts)
    if cross > context.cos_mean or tightness < context.cos_mean + context.cos_std:
        return None
    # larger part first; on a tie the part holding the oldest member (members are oldest first)
    parts.sort(key=lambda p: (-len(p), p[0]))
    keep, move = ([members[i][0] for i in p] for p in parts)
    return Proposal(tuple(keep), tuple(move), cross, tightness)


def confirms(asked: Any, proposal: Proposal) -> bool:
    """Is ``proposal`` the one a first "two threads" was about? ``asked`` is the part that
    answer would have moved (``None``: no first answer yet); more than half of it must still be
    on one side of the proposal. Pure."""
    if not isinstance(asked, list) or not asked:
        return False
    moved = set(asked)
    return any(2 * len(moved & set(part)) > len(moved) for part in (proposal.keep, proposal.move))


def wants_split_check(old_count: int, new_count: int) -> bool:
    """Did growing an episode from ``old_count`` to ``new_count`` members reach a check size?"""
    return reached(old_count, new_count, SPLIT_CHECK_SIZES)


class Splitting(GrowthChecks):
    """Queues and runs the split checks."""

    kind = "split"
    sizes = SPLIT_CHECK_SIZES

    def enabled(self) -> bool:
        settings = self.state.settings
        return settings.split_checks and settings.detector_strategy != "embedding"

    async def run(self, episode_id: str) -> None:
        """The ``split`` job: this episode's proposal and those of other waiting checks, asked
        in one call; two agreeing answers split."""
        jobs = self.store.jobs.waiting("split", BATCH, episode_id, self._claimed)
        if not jobs or jobs[0].key != episode_id:
            return  # in another call, or done by one
        self._claimed.update(job.key for job in jobs)
        proposals: dict[str, Proposal] = {}
        checks: list[SplitCheck] = []
        answers: dict[str, bool] | None = None
        try:
            if self.enabled():
                for job in jobs:
                    proposal, vectors = await self._proposal(job.key)
                    if proposal is not None:
                        proposals[job.key] = proposal
                        second_look = "confirm" in job.payload
                        checks.append(await self._check(job.key, proposal, vectors, second_look))
            if checks and self.summariser.ready() and self.budget.spend_call():
                answers = await self.summariser.split(checks)
                await self.state.host.background_turn()
            if answers:
                await self._settle(jobs, proposals, answers)
            self._finish(jobs, proposals, answers or {})
        finally:  # on an error the jobs stay, and the worker runs them again later
            self._claimed.difference_update(job.key for job in jobs)

    async def _settle(
        self, jobs: list[Job], proposals: dict[str, Proposal], answers: dict[str, bool]
    ) -> None:
        """Split the episodes whose second "two threads" this is, about the same parts."""
        for job in jobs:
            proposal = proposals.get(job.key)
            if proposal is None or not answers.get(job.key):
                continue
            if not confirms(job.payload.get("confirm"), proposal):
                log.info("episode %s may mix two threads: asking again", job.key)
                continue
            await self.state.host.background_turn()  # a split uses the CPU
            async with self.state.detect_lock:
                await self._split(job.key, proposal)

    def _finish(
        self, jobs: list[Job], proposals: dict[str, Proposal], answers: dict[str, bool]
    ) -> None:
        """Finish the jobs; a first "two threads" is queued again as its confirmation, with
        the part it would move."""
        now = self.state.clock()
        wait = self.state.settings.classify_batch_wait_seconds
        again = {
            job.key: list(proposals[job.key].move)
            for job in jobs
            if job.key in proposals
            and answers.get(job.key)
            and not confirms(job.payload.get("confirm"), proposals[job.key])
        }
        with self.store.transaction() as db:
            for job in jobs:
                self.store.finish_job(db, job)
            for key, move in again.items():
                self.store.jobs.enqueue(db, "split", key, now, wait, {"confirm": move})
        if again:
            self.state.wake()

    async def _proposal(self, episode_id: str) -> tuple[Proposal | None, dict[str, np.ndarray]]:
        """The proposal for an active episode no user edited, as its members stand now, and
        the members' vectors."""
        state = self.state
        if episode_id not in state.active or self.store.pins.on([episode_id]):
            return None, {}  # closed, merged, or the user's shape of an episode stands
        members = self.store.memberships.member_ids(episode_id)
        vectors = await state.host.get_vectors(members)
        present = [(m, vectors[m]) for m in members if m in vectors]
        context = state.matcher.context(state.project_of_episode(episode_id))
        return split_proposal(present, context), vectors

    async def _check(
        self,
        episode_id: str,
        proposal: Proposal,
        vectors: dict[str, np.ndarray],
        second_look: bool,
    ) -> SplitCheck:
        """A proposal as the prompt shows it: each part by its members nearest its centroid;
        a confirmation (``second_look``) shows the parts the other way round, each by its
        latest members, so that it is not the first question asked again word for word."""
        row = self.store.episodes.get(episode_id)
        parts = []
        for ids in (
            (proposal.move, proposal.keep) if second_look else (proposal.keep, proposal.move)
        ):
            if second_look:
                chosen = list(ids[-SNIPPETS_PER_CHECK:])
            else:
                pool = [(m, vectors[m]) for m in ids if m in vectors]
                chosen = detector.representatives(pool, SNIPPETS_PER_CHECK)
            shown = sorted(await self.state.host.get_memories(chosen), key=lambda m: m.created_at)
            parts.append(tuple(MemoryText(id=m.id, content=m.content) for m in shown))
        title = row.title if row else ""
        return SplitCheck(episode_id, title, parts[0], parts[1])

    async def _split(self, episode_id: str, proposal: Proposal) -> None:
        """Move the proposal's smaller part into a new episode, if the episode is still active,
        unedited and still holds it (the caller holds the detect lock)."""
        state = self.state
        if episode_id not in state.active:
            return  # closed or merged meanwhile
        if self.store.pins.on([episode_id]):
            return
        members = set(self.store.memberships.member_ids(episode_id))
        move = [m for m in proposal.move if m in members]
        if len(move) < MIN_PART or len(members) - len(move) < MIN_PART:
            return
        found = await state.in_time_order(move)
        log.info(
            "episode %s mixes two threads: %s split off", episode_id, counted(len(found), "memory")
        )
        await self.membership.create(
            [m for m, _ in found],
            [f for _, f in found],
            title=None,
            title_source="keyword",
            actor="consolidation",
            split_from=episode_id,
        )  # which records the split on both sides, queues both summaries and rebuilds this one
