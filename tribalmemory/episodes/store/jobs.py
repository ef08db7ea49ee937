"""The ``jobs`` table: the durable work queue (one job per kind and key; re-arming a queued job
coalesces into it)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from typing import Any

from .rows import Job
from .table import Table


class Jobs(Table):
    """Reads and writes of the ``jobs`` table."""

    def enqueue(
        self,
        db: sqlite3.Connection,
        kind: str,
        key: str,
        now: float,
        delay: float = 0.0,
        payload: dict[str, Any] | None = None,
    ) -> None:
        """Add a job; an existing job of the same kind and key absorbs it (coalescing)."""
        db.execute(
            "INSERT INTO jobs (kind, key, payload, not_before, created_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT(kind, key) DO UPDATE SET payload = excluded.payload, gen = gen + 1",
            (kind, key, json.dumps(payload or {}), now + delay, now),
        )

    def delete(self, db: sqlite3.Connection, kind: str, key: str) -> None:
        db.execute("DELETE FROM jobs WHERE kind = ? AND key = ?", (kind, key))

    def drop(self, db: sqlite3.Connection, kinds: tuple[str, ...], key: str) -> None:
        """Delete the jobs of any of ``kinds`` for ``key``."""
        marks = ",".join("?" * len(kinds))
        db.execute(f"DELETE FROM jobs WHERE kind IN ({marks}) AND key = ?", (*kinds, key))

    def finish_detection(self, db: sqlite3.Connection, memory_id: str) -> None:
        """The memory's detection is decided: drop its detect job (a review, the classify job,
        may still follow)."""
        db.execute("DELETE FROM jobs WHERE kind = 'detect' AND key = ?", (memory_id,))

    def due(self, now: float, exclude_keys: Collection[str], limit: int = 8) -> list[Job]:
        """Up to ``limit`` jobs due at ``now``, oldest first, leaving out those of
        ``exclude_keys``. Rows are read until ``limit`` are found: a key may have a job of
        each kind, so reading ``limit + len(exclude_keys)`` rows could return none while a
        due job waited behind them (the worker's loops then slept, woken by every job queued)."""
        rows = self.db.execute("SELECT * FROM jobs WHERE not_before <= ? ORDER BY id", (now,))
        jobs: list[Job] = []
        try:
            for row in rows:
                if row["key"] not in exclude_keys:
                    jobs.append(Job.from_sql(row))
                    if len(jobs) >= limit:
                        break
        finally:
            rows.close()  # read no further than the last job taken
        return jobs

    def next_due(self, exclude_keys: Collection[str] = ()) -> float | None:
        """When the next job falls due, leaving out the jobs of ``exclude_keys`` (running, or a
        memory's detect job while its request decides it): a loop sleeps until then."""
        rows = self.db.execute("SELECT not_before, key FROM jobs ORDER BY not_before")
        try:
            for not_before, key in rows:
                if key not in exclude_keys:
                    return float(not_before)
            return None
        finally:
            rows.close()  # read no further than the first job that counts

    def delete_run(self, db: sqlite3.Connection, job: Job) -> None:
        """Delete the job unless it was re-armed while it ran (then it runs again)."""
        db.execute("DELETE FROM jobs WHERE id = ? AND gen = ?", (job.id, job.gen))

    def retry(self, job: Job, not_before: float) -> None:
        self.db.execute(
            "UPDATE jobs SET attempts = attempts + 1, not_before = ? WHERE id = ?",
            (not_before, job.id),
        )

    def has(self, kind: str, key: str) -> bool:
        row = self.db.execute("SELECT 1 FROM jobs WHERE kind = ? AND key = ?", (kind, key))
        return row.fetchone() is not None

    def count(self, kind: str) -> int:
        """Jobs of ``kind`` queued, from ``job_counts`` (the write path asks on each doubtful
        memory; counting the rows took longer the longer the queue grew)."""
        row = self.db.execute("SELECT n FROM job_counts WHERE kind = ?", (kind,)).fetchone()
        return int(row[0]) if row else 0

    def recount(self, db: sqlite3.Connection) -> None:
        """Count the jobs of every kind again (at open: a database from before ``job_counts``
        has jobs its triggers never counted)."""
        db.execute("DELETE FROM job_counts")
        db.execute("INSERT INTO job_counts SELECT kind, COUNT(*) FROM jobs GROUP BY kind")

    def of_kind(self, kind: str, limit: int = 64) -> list[Job]:
        """The jobs of one kind, oldest first."""
        rows = self.db.execute(
            "SELECT * FROM jobs WHERE kind = ? ORDER BY created_at, id LIMIT ?", (kind, limit)
        ).fetchall()
        return [Job.from_sql(r) for r in rows]

    def waiting(
        self, kind: str, limit: int, first: str | None = None, skip: Collection[str] = ()
    ) -> list[Job]:
        """Up to ``limit`` jobs of one kind whose keys are not in ``skip``: ``first`` first
        when it is queued, then the oldest. Reads the few it may return, not the kind's
        whole queue (a batch of checks is taken on the event loop)."""
        out: list[Job] = []
        if first is not None and first not in skip and limit > 0:
            row = self.db.execute(
                "SELECT * FROM jobs WHERE kind = ? AND key = ?", (kind, first)
            ).fetchone()
            if row is not None:
                out.append(Job.from_sql(row))
        # the oldest: enough to fill ``limit`` past the skipped ones and ``first``
        for job in self.of_kind(kind, limit + len(skip) + 1):
            if len(out) >= limit:
                break
            if job.key != first and job.key not in skip:
                out.append(job)
        return out

    def keys(self, kind: str, limit: int = 64) -> list[str]:
        """Keys of the jobs of one kind, oldest first."""
        return [job.key for job in self.of_kind(kind, limit)]

    def make_due(self, db: sqlite3.Connection, kind: str, now: float) -> int:
        """Jobs of one kind that wait for later fall due now; how many did (through the
        ``jobs_kind_due`` index: only those still waiting are read, not the kind's backlog)."""
        return db.execute(
            "UPDATE jobs SET not_before = ? WHERE kind = ? AND not_before > ?", (now, kind, now)
        ).rowcount

    def stats(self, now: float) -> dict[str, Any]:
        row = self.db.execute("SELECT COUNT(*), MIN(created_at) FROM jobs").fetchone()
        depth, oldest = row[0], row[1]
        return {
            "queue_depth": depth,
            "oldest_pending_age_seconds": round(now - oldest, 3) if oldest else 0.0,
        }
