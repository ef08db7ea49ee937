"""The ``detections`` table: the detector's state of each memory (pending, seed, standalone,
assigned) and a seed's title hint."""

from __future__ import annotations

import sqlite3

from .table import Table


class Detections(Table):
    """Reads and writes of the ``detections`` table."""

    def record(
        self,
        db: sqlite3.Connection,
        memory_id: str,
        state: str,
        memory_time: float,
        hint: str | None = None,
    ) -> None:
        db.execute(
            "INSERT INTO detections VALUES (?,?,?,?) ON CONFLICT(memory_id) DO UPDATE SET "
            "state = excluded.state, hint = COALESCE(excluded.hint, detections.hint)",
            (memory_id, state, memory_time, hint),
        )

    def get(self, memory_id: str) -> sqlite3.Row | None:
        return self.db.execute(
            "SELECT * FROM detections WHERE memory_id = ?", (memory_id,)
        ).fetchone()

    def states(self, memory_ids: list[str]) -> dict[str, str]:
        if not memory_ids:
            return {}
        marks = ",".join("?" * len(memory_ids))
        return dict(
            self.db.execute(
                f"SELECT memory_id, state FROM detections WHERE memory_id IN ({marks})", memory_ids
            ).fetchall()
        )

    def newest_time(self) -> float | None:
        """The newest memory time the detector has seen (None before the first memory)."""
        return self.db.execute("SELECT MAX(memory_time) FROM detections").fetchone()[0]

    def seeds_since(self, earliest: float) -> list[sqlite3.Row]:
        """Unassigned memories (seeds and pending ones) young enough to start an episode."""
        return list(
            self.db.execute(
                "SELECT * FROM detections WHERE state IN ('seed', 'pending') AND memory_time >= ? "
                "ORDER BY memory_time",
                (earliest,),
            )
        )

    def delete(self, db: sqlite3.Connection, memory_id: str) -> None:
        db.execute("DELETE FROM detections WHERE memory_id = ?", (memory_id,))

    def mark_standalone(self, db: sqlite3.Connection, memory_ids: list[str]) -> None:
        """Their episode is deleted: these memories stand alone."""
        db.executemany(
            "UPDATE detections SET state = 'standalone' WHERE memory_id = ?",
            [(m,) for m in memory_ids],
        )
