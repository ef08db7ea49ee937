"""The ``pins`` table: the memories a user put in (``in``) or took out of (``out``) an episode."""

from __future__ import annotations

import sqlite3

from .table import Table


class Pins(Table):
    """Reads and writes of the ``pins`` table.

    Most stores never hold a pin (the user never moved a memory by hand), yet every write-time
    decision asks for the new memory's: whether the table holds any is read once and kept
    (this class writes every pin, and one process has the store open), so that those reads
    cost nothing until the first pin. A pin recorded in a transaction that rolls back leaves
    the table counted as holding one: the reads then run as before."""

    def __init__(self, db: sqlite3.Connection) -> None:
        super().__init__(db)
        self._any: bool | None = None

    def any(self) -> bool:
        """Whether the table may hold a pin (False: it holds none)."""
        if self._any is None:
            self._any = self.db.execute("SELECT 1 FROM pins LIMIT 1").fetchone() is not None
        return self._any

    def record(
        self, db: sqlite3.Connection, memory_id: str, episode_id: str, kind: str, at: float
    ) -> None:
        """Record that the user put a memory in (``in``) or took it out of (``out``) an
        episode; the opposite pin of the same pair is replaced."""
        db.execute(
            "INSERT INTO pins VALUES (?,?,?,?) ON CONFLICT(memory_id, episode_id) DO UPDATE "
            "SET kind = excluded.kind, at = excluded.at",
            (memory_id, episode_id, kind, at),
        )
        self._any = True

    def on(self, episode_ids: list[str]) -> list[sqlite3.Row]:
        """The pins that name any of ``episode_ids``."""
        return self._where("episode_id", episode_ids)

    def of(self, memory_ids: list[str]) -> list[sqlite3.Row]:
        """The pins of any of ``memory_ids``."""
        return self._where("memory_id", memory_ids)

    def _where(self, column: str, ids: list[str]) -> list[sqlite3.Row]:
        if not ids or not self.any():
            return []
        marks = ",".join("?" * len(ids))
        sql = f"SELECT memory_id, episode_id, kind FROM pins WHERE {column} IN ({marks})"
        return list(self.db.execute(sql, ids))

    def move_all(self, db: sqlite3.Connection, absorbed: str, survivor: str) -> None:
        """Merge: the pins on ``absorbed`` name ``survivor`` (one of a pair replaces the other)."""
        db.execute(
            "UPDATE OR REPLACE pins SET episode_id = ? WHERE episode_id = ?", (survivor, absorbed)
        )

    def delete_episode(self, db: sqlite3.Connection, episode_id: str) -> None:
        db.execute("DELETE FROM pins WHERE episode_id = ?", (episode_id,))
