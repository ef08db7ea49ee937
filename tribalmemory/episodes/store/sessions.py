"""The ``sessions`` table: the episode a client session declared, and its topic."""

from __future__ import annotations

import sqlite3

from .table import Table


class Sessions(Table):
    """Reads and writes of the ``sessions`` table."""

    def start(
        self, db: sqlite3.Connection, session: str, episode_id: str, topic: str, at: float
    ) -> None:
        db.execute(
            "INSERT INTO sessions VALUES (?,?,?,?) ON CONFLICT(session) DO UPDATE SET "
            "episode_id = excluded.episode_id, topic = excluded.topic, "
            "started_at = excluded.started_at",
            (session, episode_id, topic, at),
        )

    def get(self, session: str) -> sqlite3.Row | None:
        return self.db.execute(
            "SELECT episode_id, topic, started_at FROM sessions WHERE session = ?", (session,)
        ).fetchone()

    def move_all(self, db: sqlite3.Connection, absorbed: str, survivor: str) -> None:
        """Merge: the sessions of ``absorbed`` declare ``survivor``."""
        db.execute("UPDATE sessions SET episode_id = ? WHERE episode_id = ?", (survivor, absorbed))

    def delete_episode(self, db: sqlite3.Connection, episode_id: str) -> None:
        db.execute("DELETE FROM sessions WHERE episode_id = ?", (episode_id,))
