"""The detector's budget of LLM calls: ``classify_calls_per_memory`` calls a decided memory.

Every decision is counted (:meth:`Budget.count`), and every call of the detector (a review of
doubtful memories, or merge and split checks in a call of their own) is spent only when the
budget allows it (:meth:`Budget.spend_call`). What is left sets the share of decisions the LLM
may review (:meth:`Budget.doubt_share`). The counts live in memory and in the ``meta`` table
(:data:`BUDGET_KEY`), so that a restart keeps them.
"""

from __future__ import annotations

import math
from typing import Any

from .state import EngineState
from .summariser import Summariser

BUDGET_KEY = "classify_budget"
"""Meta key of the budget counters: memories decided, classification calls made."""
BUDGET_SAVE_EVERY = 25
"""Decisions counted between two saves of the budget's counts (a call is saved at once)."""
BUDGET_BURST = 1.0
"""Calls allowed ahead of the budget, so the first doubtful memory of a stream can be asked."""


def within_budget(memories: int, committed: int, calls_per_memory: float) -> bool:
    """May one more classification call be committed (made or queued) after ``memories``
    decisions? Keeps ``committed <= calls_per_memory * memories + BUDGET_BURST``."""
    return committed + 1 <= calls_per_memory * memories + BUDGET_BURST


def memories_per_review(classified: int, reviews: int) -> float:
    """Memories one review call has classified on average, 1 before any has. Checks asked in
    calls of their own classify no memory and do not count: counted, a store whose first calls
    were checks would take the reviews to carry none, and never queue one again."""
    return classified / reviews if classified and reviews else 1.0


class Budget:
    """Counts decisions and calls, and says whether one more call may be made."""

    def __init__(self, state: EngineState, summariser: Summariser) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser
        self._counts: dict[str, int] | None = None  # counts(), read once from the database

    def llm_wanted(self) -> bool:
        """Does the detector want the LLM now: a strategy that asks for one, and one ready?"""
        return self.state.settings.detector_strategy != "embedding" and self.summariser.ready()

    def counts(self) -> dict[str, int]:
        """``memories`` decided, classification ``calls`` made (reviews and checks alone), the
        ``reviews`` among them and the memories they ``classified``, since the store began. A
        store from before reviews were counted apart counts every call as one."""
        if self._counts is None:
            data = self.store.get_meta(BUDGET_KEY) or {}
            counts = {k: int(data.get(k, 0)) for k in ("memories", "calls", "classified")}
            counts["reviews"] = int(data.get("reviews", counts["calls"]))
            self._counts = counts
        return dict(self._counts)

    def count(self, *, memories: int = 0, calls: int = 0, classified: int = 0) -> None:
        """Count decisions and calls (kept in memory, read by :meth:`counts`). A call is saved
        at once, so that no crash lets the budget be overspent; decisions are saved every
        :data:`BUDGET_SAVE_EVERY` and at stop (:meth:`save`): a crash forgets at most a few,
        which only lowers the budget a little, and the request path is spared a transaction
        per memory."""
        counts = self.counts()
        counts["memories"] += memories
        counts["calls"] += calls
        counts["reviews"] += 1 if classified else 0
        counts["classified"] += classified
        self._counts = counts
        if calls or counts["memories"] % BUDGET_SAVE_EVERY == 0:
            self.save()

    def save(self) -> None:
        """Write the counts of :meth:`counts` to the database."""
        if self._counts is not None:
            with self.store.transaction() as db:
                self.store.set_meta(db, BUDGET_KEY, self._counts)

    def spend_call(self, classified: int = 0) -> bool:
        """Count one LLM call of the detector (a review of ``classified`` memories, or merge
        checks alone) if the budget allows it; False when it is spent. Checked and counted
        with no await in between, so concurrent callers never overspend."""
        counts = self.counts()
        per_memory = self.state.settings.classify_calls_per_memory
        if not within_budget(counts["memories"], counts["calls"], per_memory):
            return False
        self.count(calls=1, classified=classified)
        return True

    def doubt_share(self, wanted: bool | None = None) -> float:
        """The share of decisions the LLM may take now: ``llm_doubt_share`` (1 for the ``llm``
        strategy), capped by what the call budget pays for at the memories per call seen so
        far, 0 when the LLM is not wanted or the budget is spent (waiting memories count as
        the calls their batches will make). ``wanted``: :meth:`llm_wanted`, when the caller
        has just asked it (it reads the LLM's state, tens of microseconds a call)."""
        if not (self.llm_wanted() if wanted is None else wanted):
            return 0.0
        settings = self.state.settings
        counts = self.counts()
        size = settings.classify_batch_size
        committed = counts["calls"] + math.ceil(self.store.jobs.count("classify") / size)
        if not within_budget(counts["memories"], committed, settings.classify_calls_per_memory):
            return 0.0
        share = 1.0 if settings.detector_strategy == "llm" else settings.llm_doubt_share
        per_review = memories_per_review(counts["classified"], counts["reviews"])
        return min(share, settings.classify_calls_per_memory * per_review)

    def health(self) -> dict[str, Any]:
        """Budget figures for ``/v1/health``."""
        counts = self.counts()
        per = self.state.settings.classify_calls_per_memory
        return {
            "classify_calls": counts["calls"],
            "classified_memories": counts["classified"],
            "classify_calls_per_memory": round(counts["calls"] / max(counts["memories"], 1), 4),
            "classify_waiting": self.store.jobs.count("classify"),
            "classify_budget_left": max(
                0, int(per * counts["memories"] + BUDGET_BURST) - counts["calls"]
            ),
        }
