"""Summaries written during an LLM outage are upgraded when the LLM returns.

A summary job whose LLM call could not be made or failed (provider down, answers of no use,
the monthly ceiling) while an LLM is configured writes the extractive fallback and leaves the
episode's id in a durable set (the ``llm_upgrades`` meta key), so that a restart keeps it.
:class:`Upgrades` watches the LLM's state:

- ``ready``: the waiting episodes that are still extractive get a full summary job each (a
  regeneration, or the final summary of a closed episode), through the worker and the cost
  ledger like any other: the ceiling bounds them, and one that fails again waits again.
- a provider outage whose re-probe is due: one waiting episode is summarised here, and that
  call is the probe (so an idle daemon notices the LLM's return: nothing else would call it);
  when it fails nothing is written and the next probe is awaited. This is what the schedule
  of :mod:`tribalmemory.llm.recovery` paces: at most one call per probe.
- ``degraded`` or ``ceiling_reached``: they wait for the state to change (the client reports
  each change; the month's turn is looked at every :data:`MAX_WAIT` seconds).

Offline (no LLM configured) nothing is ever added, and what is left is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import suppress

from ..plural import counted
from .state import EngineState
from .store import EpisodeStore
from .summariser import Summariser

log = logging.getLogger("tribalmemory.episodes")

KEY = "llm_upgrades"
MAX_WAIT = 300.0
"""Longest sleep while episodes wait (a new month ends ``ceiling_reached`` with no event)."""
MIN_WAIT = 0.05
WAIT_STATES = frozenset({"ceiling_reached", "degraded"})
"""States that a probe cannot end (the ledger refuses calls, or calls go on anyway)."""


def mark(store: EpisodeStore, db: sqlite3.Connection, episode_id: str, waiting: bool) -> bool:
    """Add the episode to the waiting set (``waiting``) or take it out, in the caller's
    transaction; True when the set changed."""
    ids = list(store.get_meta(KEY) or [])
    if waiting == (episode_id in ids):
        return False
    ids = [*ids, episode_id] if waiting else [i for i in ids if i != episode_id]
    store.set_meta(db, KEY, ids)
    return True


class Upgrades:
    """The waiting set and the task that upgrades it (see the module docstring).

    ``summarise(episode_id)`` writes an LLM summary of the episode and returns True, or writes
    nothing and returns False when the LLM could not give one (:meth:`.summaries.Summaries.run`
    with ``upgrade=True``)."""

    def __init__(
        self,
        state: EngineState,
        summariser: Summariser,
        summarise: Callable[[str], Awaitable[bool]],
    ) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser
        self.summarise = summarise
        self._event = asyncio.Event()

    def waiting(self) -> list[str]:
        """The episodes waiting for an LLM summary, oldest mark first."""
        return list(self.store.get_meta(KEY) or [])

    def wake(self) -> None:
        self._event.set()

    async def run(self) -> None:
        """Upgrade whenever the state allows, until cancelled."""
        while True:
            self._event.clear()
            try:
                wait = await self.step()
            except Exception as exc:  # noqa: BLE001 - logged; the set stays for the next turn
                log.warning("upgrading extractive summaries failed: %s", exc, exc_info=True)
                wait = MAX_WAIT
            if wait == 0.0:
                continue
            with suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._event.wait()

    async def step(self) -> float | None:
        """One look: queue, probe or wait. Returns how long to sleep (None: until woken)."""
        waiting = self.waiting()
        if not waiting or not self.summariser.checked:
            return None
        if not self.summariser.configured():  # offline now: nothing can upgrade them
            self._drop(waiting)
            return None
        state = self.summariser.status()["state"]
        if state == "ready":
            self._queue(waiting)
            return None
        probe_in = self.summariser.outage_probe_in()
        if probe_in is None or state in WAIT_STATES:  # wait for a change of state
            return MAX_WAIT
        if probe_in > 0 or not self.summariser.ready():
            return min(MAX_WAIT, max(MIN_WAIT, probe_in))
        first = next((e for e in waiting if self._still_extractive(e)), None)
        if first is None:
            self._drop(waiting)
            return None
        if await self.summarise(first):  # the re-probe; written only if the LLM answered
            return 0.0  # back: the others are queued at once
        after = self.summariser.outage_probe_in()
        # None: the provider answered (ready or degraded now: look again); else its next probe
        return MIN_WAIT if after is None else min(MAX_WAIT, max(after, 1.0))

    def _still_extractive(self, episode_id: str) -> bool:
        row = self.store.episodes.get(episode_id)
        return row is not None and row.summary_kind == "extractive"

    def _queue(self, waiting: list[str]) -> None:
        """A full summary job for each waiting episode still extractive; the set emptied."""
        now = self.state.clock()
        queued = 0
        with self.store.transaction() as db:
            for episode_id in waiting:
                if self._still_extractive(episode_id):
                    self.store.episodes.update(db, episode_id, needs_full=True)
                    self.state.queue_summary(db, episode_id, now, trigger=None, delay=0.0)
                    queued += 1
            self.store.set_meta(db, KEY, [])
        if queued:
            log.info(
                "LLM ready: %s written during its outage queued for an LLM summary",
                counted(queued, "extractive summary"),
            )

    def _drop(self, waiting: list[str]) -> None:
        with self.store.transaction() as db:
            self.store.set_meta(db, KEY, [])
        log.info("%s no longer wait for an LLM summary", counted(len(waiting), "episode"))
