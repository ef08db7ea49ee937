"""Keeping episodes in order over time: auto-close, the active cap, archiving, crash recovery.

The rules are pure functions in :mod:`.lifecycle`; this module applies them to the store.
"""

from __future__ import annotations

import logging

from ..models import ENGINE_WRITTEN
from ..plural import counted
from . import derived, lifecycle
from .safety import refuse_unaccounted_summaries
from .state import EngineState

log = logging.getLogger("tribalmemory.episodes")


class Upkeep:
    """Closes, archives and reconciles episodes."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self.store = state.store

    async def close(self, episode_id: str, reason: str, actor: str = "detector") -> None:
        """Close an active episode and queue its final summary (no-op when not active)."""
        now = self.state.clock()
        with self.store.transaction() as db:
            if not self.store.episodes.close(db, episode_id, now):
                return
            self.state.record(db, episode_id, actor, "close", {"reason": reason})
            self.state.queue_summary(db, episode_id, now, trigger=None, delay=0.0)
        self.state.active.pop(episode_id, None)
        log.info("episode %s closed (%s)", episode_id, reason)

    async def close_idle(self, reference: float, project: str) -> None:
        """At write time: close active episodes of ``project`` with no memory dated within
        ``active_window_days`` before ``reference`` (the new memory's ``created_at``). Memory
        time is per project: one project's history never closes another's episodes."""
        window = self.state.settings.active_window_days
        before = lifecycle.idle_before(reference, window)
        active = [
            lifecycle.Activity(episode_id, "active", last)
            for episode_id, last in self.store.episodes.active_activity(project, before)
        ]
        for episode_id in lifecycle.idle(active, reference, window):
            await self.close(episode_id, reason="idle")

    async def close_quiet(self, now: float) -> None:
        """On the scheduler's tick: close active episodes idle both in memory time and in
        arrival time by the wall clock ``now`` (see :func:`.lifecycle.idle_on_tick`)."""
        added = self.store.episodes.active_last_added()
        active = [
            lifecycle.Activity(episode_id, "active", last, last_added=added.get(episode_id))
            for episode_id, last in self.store.episodes.active_activity()
        ]
        window = self.state.settings.active_window_days
        for episode_id in lifecycle.idle_on_tick(active, now, window):
            await self.close(episode_id, reason="idle")

    async def make_room(self, adding: int, project: str) -> None:
        """Close the least recently active episodes of ``project`` so that ``adding`` new ones
        fit the cap (``max_active_episodes`` is per project: a busy project never closes a
        quiet one's threads)."""
        cap = self.state.settings.max_active_episodes
        active = [
            lifecycle.Activity(episode_id, "active", last)
            for episode_id, last in self.store.episodes.active_activity(project)
        ]
        for episode_id in lifecycle.over_cap(active, cap, adding):
            log.info(
                "closing %s: more than max_active_episodes=%d active episodes", episode_id, cap
            )
            await self.close(episode_id, reason="active cap")

    async def tick(self) -> None:
        """The scheduler's turn (wall clock): close quiet episodes, archive old closed ones."""
        now = self.state.clock()
        async with self.state.detect_lock:
            await self.close_quiet(now)
        closed = [
            lifecycle.Activity(r.id, r.status, r.last_activity, r.closed_at)
            for r in self.store.episodes.find("closed", limit=100000)
        ]
        days = self.state.settings.archive_after_days
        ids = lifecycle.archivable(closed, now, days)
        if ids:
            with self.store.transaction() as db:
                for episode_id in ids:
                    self.store.episodes.update(db, episode_id, status="archived", updated_at=now)
                    self.state.record(db, episode_id, "detector", "archive", {"after_days": days})
            log.info("archived %s closed over %s days ago", counted(len(ids), "episode"), days)

    async def reconcile(self) -> None:
        """After a crash: re-queue missing summaries, delete orphaned summary memories."""
        host = self.state.host
        rows = {r: self.store.episodes.get(r) for r in self.store.episodes.all_ids()}
        expected = {
            row.summary_memory_id: eid
            for eid, row in rows.items()
            if row is not None and row.summary_memory_id
        }
        for eid, row in rows.items():
            if row is not None:
                expected.update(dict.fromkeys(derived.expected_ids(eid, row.structured), eid))
        present = {m.id for m in await host.get_memories(list(expected))}
        now = self.state.clock()
        with self.store.transaction() as db:
            for episode_id in dict.fromkeys(e for m, e in expected.items() if m not in present):
                self.state.queue_summary(db, episode_id, now, trigger=None, delay=0.0)
        stored = [m for kind in ENGINE_WRITTEN for m in await host.memories_of_type(kind)]
        orphans = [m.id for m in stored if m.id not in expected]
        # H5 (issue 18.5): never delete summaries that a blank database cannot account for.
        refuse_unaccounted_summaries(self.store.is_blank(), self.store.path, len(orphans))
        if orphans:
            log.warning("deleting %d orphaned episode summary memories", len(orphans))
            await host.delete_owned(orphans)
