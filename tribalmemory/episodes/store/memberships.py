"""The ``memberships`` table: which episode each memory is in (at most one), and when it joined."""

from __future__ import annotations

import sqlite3

from .table import Table

MembershipRow = tuple[str, str, float, float, float | None, float | None]
"""memory_id, episode_id, memory_time, joined_at, score, surprise."""


class Memberships(Table):
    """Reads and writes of the ``memberships`` table (numbered in insertion order, by rowid)."""

    def member_ids(self, episode_id: str, db: sqlite3.Connection | None = None) -> list[str]:
        conn = db or self.db
        return [
            r[0]
            for r in conn.execute(
                "SELECT memory_id FROM memberships WHERE episode_id = ? "
                "ORDER BY memory_time, joined_at",
                (episode_id,),
            )
        ]

    def all_member_ids(self) -> list[str]:
        """Every memory that is a member of an episode."""
        return [r[0] for r in self.db.execute("SELECT memory_id FROM memberships ORDER BY rowid")]

    def mark(self, episode_id: str) -> int | None:
        """The number of the episode's newest membership (memberships are numbered in
        insertion order, by rowid); None when it has none."""
        row = self.db.execute(
            "SELECT MAX(rowid) FROM memberships WHERE episode_id = ?", (episode_id,)
        ).fetchone()
        return row[0] if row else None

    def members_after(self, episode_id: str, mark: int | None) -> set[str]:
        """Members that joined after the membership numbered ``mark`` (all when None)."""
        return {
            r[0]
            for r in self.db.execute(
                "SELECT memory_id FROM memberships WHERE episode_id = ? AND rowid > ?",
                (episode_id, mark or 0),
            )
        }

    def members(self, episode_id: str) -> list[sqlite3.Row]:
        return list(
            self.db.execute(
                "SELECT * FROM memberships WHERE episode_id = ? ORDER BY memory_time, joined_at",
                (episode_id,),
            )
        )

    def episode_of(self, memory_id: str) -> str | None:
        row = self.db.execute(
            "SELECT episode_id FROM memberships WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        return row[0] if row else None

    def episodes_of(self, memory_ids: list[str]) -> dict[str, str]:
        if not memory_ids:
            return {}
        marks = ",".join("?" * len(memory_ids))
        return dict(
            self.db.execute(
                f"SELECT memory_id, episode_id FROM memberships WHERE memory_id IN ({marks})",
                memory_ids,
            ).fetchall()
        )

    def surprising(self, memory_ids: list[str], threshold: float) -> list[str]:
        """The ids among ``memory_ids`` whose surprise when they joined was ``threshold`` or
        more (key moments)."""
        if not memory_ids:
            return []
        marks = ",".join("?" * len(memory_ids))
        return [
            r[0]
            for r in self.db.execute(
                f"SELECT memory_id FROM memberships WHERE memory_id IN ({marks}) AND surprise >= ?",
                [*memory_ids, threshold],
            )
        ]

    def insert(self, db: sqlite3.Connection, row: MembershipRow) -> None:
        """Insert a membership: ``row`` in column order."""
        db.execute("INSERT INTO memberships VALUES (?,?,?,?,?,?)", row)

    def delete(self, db: sqlite3.Connection, memory_id: str, episode_id: str | None = None) -> bool:
        """Take the memory out of its episode (of ``episode_id`` only, when given); False when
        it was not in it."""
        if episode_id is None:
            cur = db.execute("DELETE FROM memberships WHERE memory_id = ?", (memory_id,))
        else:
            cur = db.execute(
                "DELETE FROM memberships WHERE memory_id = ? AND episode_id = ?",
                (memory_id, episode_id),
            )
        return bool(cur.rowcount)

    def move_all(self, db: sqlite3.Connection, absorbed: str, survivor: str, now: float) -> None:
        """Merge: every member of ``absorbed`` joins ``survivor`` now."""
        db.execute(
            "UPDATE memberships SET episode_id = ?, joined_at = ? WHERE episode_id = ?",
            (survivor, now, absorbed),
        )

    def delete_episode(self, db: sqlite3.Connection, episode_id: str) -> None:
        """The episode is deleted: its members are in no episode."""
        db.execute("DELETE FROM memberships WHERE episode_id = ?", (episode_id,))
