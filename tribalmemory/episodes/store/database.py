"""The episode database: one SQLite connection, its schema, its transactions, and the table
classes that hold every SQL statement of the engine.

One connection, used from the event loop's thread only. WAL with ``synchronous=NORMAL``:
a committed transaction survives the process being killed (not a power cut before the next
checkpoint). Every change that must stay consistent (membership and the episode it belongs to,
a job and the state it advances) happens in one transaction: the table classes share the
connection, and a change that spans tables is a method here made of their statements, run on the
connection the caller's transaction holds.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...storage.integrity import BLANK_EPISODES, INTENT_SUFFIX
from .causes import CausalLinks
from .conversations import Conversations
from .detections import Detections
from .entities import Entities
from .episode_entities import EpisodeEntities
from .episodes import Episodes
from .history import History
from .intents import IntentLog
from .jobs import Jobs
from .memberships import Memberships
from .pins import Pins
from .rows import Job
from .schema import SCHEMA, migrate
from .sessions import Sessions
from .terms import TermCounts

EPISODE_JOBS = ("summary", "link", "merge")
"""The job kinds keyed by an episode id, dropped with the episode."""

BACKSTOP_CHECKPOINT_PAGES = 20_000
"""WAL pages (4 KiB each) after which a commit checkpoints by itself: only when
:meth:`EpisodeStore.checkpoint` has not run for a long while."""


class EpisodeStore:
    """The episode database: its connection and transactions, its meta values, the changes that
    span tables, and one class per table (``store.episodes``, ``store.memberships``,
    ``store.detections``, ``store.jobs``, ``store.history``, ``store.pins``,
    ``store.sessions``, ``store.conversations``, ``store.terms``, ``store.entities``,
    ``store.episode_entities``, ``store.causes``), and the log of the memories noted before they
    are stored and not yet decided (``store.intents``)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        intents = path.with_name(path.name + INTENT_SUFFIX)
        if not path.exists():  # the log belongs to the database beside it, not to a new one
            intents.unlink(missing_ok=True)
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA busy_timeout=5000")
        # Deleted and overwritten rows are zeroed on disk, not left in free pages (forget).
        self.db.execute("PRAGMA secure_delete=ON")
        # The WAL is copied into the database by checkpoint(), on a thread; a commit on the
        # event loop does it only as a backstop, when the WAL is much longer than usual.
        self.db.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_CHECKPOINT_PAGES}")
        migrate(self.db)
        self.db.executescript(SCHEMA)
        self._checkpointer: sqlite3.Connection | None = None
        self._checkpoint_lock = threading.Lock()
        self._closed = False
        self.episodes = Episodes(self.db)
        self.memberships = Memberships(self.db)
        self.detections = Detections(self.db)
        self.jobs = Jobs(self.db)
        self.history = History(self.db)
        self.pins = Pins(self.db)
        self.sessions = Sessions(self.db)
        self.conversations = Conversations(self.db)
        self.terms = TermCounts(self.db)
        self.entities = Entities(self.db)
        self.episode_entities = EpisodeEntities(self.db)
        self.causes = CausalLinks(self.db)
        self.intents = IntentLog(intents)
        self._settled: list[str] = []
        """Fresh memories a transaction decided or forgot: settled once it is committed."""
        with self.transaction() as db:
            self.jobs.recount(db)
        self._recover_intents()

    def _recover_intents(self) -> None:
        """The memories the intent log kept that have no detection row (stored, perhaps, and
        never decided: the process died first) get one, ``pending``, with their detect job
        and their wait for their entities (:meth:`note_pending`); then the log is emptied. A
        memory that was never stored is dropped by its job."""
        logged = self.intents.logged()
        if logged:
            known = self.detections.states(list(logged))
            with self.transaction() as db:
                for memory_id, memory_time in logged.items():
                    if memory_id not in known:
                        now = min(memory_time, time.time())  # due at once, even in a replay
                        self.note_pending(db, memory_id, memory_time, now)
        self.intents.clear()

    def close(self) -> None:
        self.intents.close()
        with self._checkpoint_lock:
            self._closed = True
            if self._checkpointer is not None:
                self._checkpointer.close()
                self._checkpointer = None
        self.db.close()

    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL's committed pages into the database file (``PASSIVE``: it never waits
        for a writer), on a connection of its own so that it can run on a thread while the
        event loop writes. Returns the pages in the WAL and how many of them are copied now. A
        checkpoint fsyncs both files; run by a commit on the event loop (SQLite's default,
        every 1,000 pages), it held about one request in 60 for 4-5 ms."""
        with self._checkpoint_lock:
            if self._closed:  # a late call from a thread: nothing to do
                return 0, 0
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(
                    str(self.path), isolation_level=None, check_same_thread=False
                )
            _, pages, copied = self._checkpointer.execute(
                "PRAGMA wal_checkpoint(PASSIVE)"
            ).fetchone()
        return pages, copied

    def wipe_freed(self) -> None:
        """Checkpoint the WAL into the database and truncate it, so that older versions of
        rows (e.g. a summary quoting a forgotten memory) leave the WAL file too."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on error); then the fresh memories it
        decided or forgot leave the intent log."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self._settled.clear()
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")
        if self._settled:
            for memory_id in self._settled:
                self.intents.settle(memory_id)
            self._settled.clear()

    def get_meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_meta(self, db: sqlite3.Connection, key: str, value: Any) -> None:
        db.execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def is_blank(self) -> bool:
        """A new database, or one that was lost or emptied (H5): see ``BLANK_EPISODES``."""
        return all(self.db.execute(sql).fetchone() is None for sql in BLANK_EPISODES.values())

    # -- changes that span tables ------------------------------------------------------------

    def add_member(
        self,
        db: sqlite3.Connection,
        episode_id: str,
        memory_id: str,
        memory_time: float,
        now: float,
        score: float | None = None,
        surprise: float | None = None,
    ) -> str | None:
        """Put a memory in an episode; returns the episode it was moved from, if any."""
        previous = self.memberships.episode_of(memory_id)
        if previous == episode_id:
            return None
        if previous is not None:
            self.memberships.delete(db, memory_id)
            self.episodes.mark_stale(db, previous, now)
            self.causes.member_left(db, previous, memory_id)
        self.memberships.insert(db, (memory_id, episode_id, memory_time, now, score, surprise))
        self.episodes.count_joined(db, episode_id, memory_time, now)
        self.detections.record(db, memory_id, "assigned", memory_time)
        return previous

    def remove_member(
        self, db: sqlite3.Connection, episode_id: str, memory_id: str, now: float
    ) -> bool:
        removed = self.memberships.delete(db, memory_id, episode_id)
        if removed:
            self.episodes.mark_stale(db, episode_id, now)
            self.causes.member_left(db, episode_id, memory_id)
        return removed

    def note_pending(
        self, db: sqlite3.Connection, memory_id: str, memory_time: float, now: float
    ) -> None:
        """The memory waits for its decision (a durable detect job) and, after it, for its
        entities; a fresh one leaves the intent log once this is committed."""
        self.detections.record(db, memory_id, "pending", memory_time)
        self.jobs.enqueue(db, "detect", memory_id, now)
        self.entities.wait(db, memory_id)
        self._settle_at_commit(memory_id)

    def finish_detection(self, db: sqlite3.Connection, memory_id: str) -> None:
        """The memory's detection is decided: its detect job is dropped or, for a fresh memory
        (known from the intent log only, it has none), its wait for its entities begins and it
        leaves the log once the transaction is committed."""
        if self.intents.is_fresh(memory_id):
            self.entities.wait(db, memory_id)
            self._settle_at_commit(memory_id)
        else:
            self.jobs.finish_detection(db, memory_id)

    def _settle_at_commit(self, memory_id: str) -> None:
        """A fresh memory leaves the intent log when the caller's transaction commits (a
        rolled-back one leaves it fresh)."""
        if self.intents.is_fresh(memory_id):
            self._settled.append(memory_id)

    def forget_detection(self, db: sqlite3.Connection, memory_id: str) -> None:
        self._settle_at_commit(memory_id)
        self.detections.delete(db, memory_id)
        self.jobs.drop(db, ("detect", "classify"), memory_id)
        self.conversations.forget_memory(db, memory_id)
        self.entities.forget_memory(db, memory_id)
        self.causes.forget_node(db, f"memory:{memory_id}")

    def queue_summary(
        self,
        db: sqlite3.Connection,
        episode_id: str,
        now: float,
        delay: float,
        trigger: str | None,
    ) -> None:
        """Mark the episode's summary ``pending`` and (re-)arm its summary job."""
        self.episodes.update(db, episode_id, summary_status="pending")
        self.jobs.enqueue(db, "summary", episode_id, now, delay, {"trigger": trigger})

    def finish_job(self, db: sqlite3.Connection, job: Job) -> None:
        """Delete the job unless it was re-armed while it ran (then it runs again). A
        finished summary job leaves its episode's summary ``current`` unless re-armed."""
        self.jobs.delete_run(db, job)
        if job.kind == "summary" and not self.jobs.has(job.kind, job.key):
            self.episodes.update(db, job.key, summary_status="current")

    def absorb_episode(
        self, db: sqlite3.Connection, survivor: str, absorbed: str, now: float
    ) -> list[str]:
        """Merge: move every member of ``absorbed`` into ``survivor`` (its summary is then
        stale), re-point its children and pins, drop its jobs and row. Returns the moved ids."""
        moved = self.memberships.member_ids(absorbed, db)
        self.memberships.move_all(db, absorbed, survivor, now)
        self.episodes.take_over(db, survivor, absorbed, len(moved), now)
        self.pins.move_all(db, absorbed, survivor)
        self.sessions.move_all(db, absorbed, survivor)
        self.causes.move_episode(db, absorbed, survivor)
        self.jobs.drop(db, EPISODE_JOBS, absorbed)
        self.episodes.delete_row(db, absorbed)
        return moved

    def delete_episode(self, db: sqlite3.Connection, episode_id: str) -> list[str]:
        """Delete the episode; its memories become unassigned standalone memories."""
        members = self.memberships.member_ids(episode_id, db)
        self.memberships.delete_episode(db, episode_id)
        self.detections.mark_standalone(db, members)
        self.jobs.drop(db, EPISODE_JOBS, episode_id)
        self.episodes.orphan_children(db, episode_id)
        self.pins.delete_episode(db, episode_id)
        self.sessions.delete_episode(db, episode_id)
        self.causes.delete_episode(db, episode_id)
        self.episodes.delete_row(db, episode_id)
        return members
