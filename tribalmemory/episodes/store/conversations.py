"""The ``conversations`` and ``sittings`` tables: each ingested conversation's latest turn,
and the episodes that are a conversation's sittings (:mod:`..sittings`)."""

from __future__ import annotations

import sqlite3

from .table import Table


class Conversations(Table):
    """Reads and writes of the ``conversations`` and ``sittings`` tables."""

    def latest(self, project: str, conversation: str) -> tuple[str, float] | None:
        """The conversation's latest turn: its memory id and memory time."""
        row = self.db.execute(
            "SELECT memory_id, memory_time FROM conversations "
            "WHERE project = ? AND conversation = ?",
            (project, conversation),
        ).fetchone()
        return (row[0], row[1]) if row else None

    def record_turn(
        self,
        db: sqlite3.Connection,
        project: str,
        conversation: str,
        memory_id: str,
        said: float,
    ) -> None:
        """Keep ``memory_id`` as the conversation's latest turn unless a later one is kept."""
        db.execute(
            "INSERT INTO conversations VALUES (?,?,?,?) ON CONFLICT(project, conversation) "
            "DO UPDATE SET memory_id = excluded.memory_id, memory_time = excluded.memory_time "
            "WHERE excluded.memory_time >= conversations.memory_time",
            (project, conversation, memory_id, said),
        )

    def mark_sitting(self, db: sqlite3.Connection, episode_id: str) -> None:
        db.execute("INSERT OR IGNORE INTO sittings VALUES (?)", (episode_id,))

    def is_sitting(self, episode_id: str) -> bool:
        found = self.db.execute("SELECT 1 FROM sittings WHERE episode_id = ?", (episode_id,))
        return found.fetchone() is not None

    def forget_memory(self, db: sqlite3.Connection, memory_id: str) -> None:
        """A forgotten turn is no conversation's latest: the next turn is decided as any."""
        db.execute("DELETE FROM conversations WHERE memory_id = ?", (memory_id,))
