"""The ``history`` table: an episode's edits, who made them and when (kept after the episode is
merged or deleted)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from .table import Table


class History(Table):
    """Reads and writes of the ``history`` table."""

    def add(
        self,
        db: sqlite3.Connection,
        episode_id: str,
        actor: str,
        action: str,
        details: dict[str, Any],
        at: float,
    ) -> None:
        db.execute(
            "INSERT INTO history (episode_id, at, actor, action, details) VALUES (?,?,?,?,?)",
            (episode_id, at, actor, action, json.dumps(details)),
        )

    def of(self, episode_id: str) -> list[sqlite3.Row]:
        """The episode's edits, oldest first."""
        return list(
            self.db.execute(
                "SELECT at, actor, action, details FROM history WHERE episode_id = ? ORDER BY id",
                (episode_id,),
            )
        )

    def fate(self, episode_id: str) -> sqlite3.Row | None:
        """The last ``merged_into`` or ``deleted`` entry of an episode that is gone."""
        return self.db.execute(
            "SELECT action, details FROM history WHERE episode_id = ? AND action IN "
            "('merged_into', 'deleted') ORDER BY id DESC LIMIT 1",
            (episode_id,),
        ).fetchone()
