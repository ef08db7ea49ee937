"""The ``causal_links`` table: what led to what, between ``episode:<id>`` and ``memory:<id>``
nodes (docs/causes.md). A derived link (``llm``, ``reference``, ``order``) is owned by the
episode whose summary job found it and replaced at its next one; a user's link has no owner
and stays until removed, or until a node it rests on is forgotten or deleted."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterable

from ..causes import Link
from .table import Table

COLUMNS = "id, project, cause, effect, confidence, source, note, owner, created_at"


def new_link_id() -> str:
    return "cl-" + secrets.token_hex(6)


def _values(link: Link) -> tuple[str, str, float, str, str]:
    return (link.cause, link.effect, link.confidence, link.source, link.note)


class CausalLinks(Table):
    """Reads and writes of the ``causal_links`` table."""

    def add(
        self, db: sqlite3.Connection, project: str, link: Link, owner: str | None, now: float
    ) -> sqlite3.Row:
        """Insert a link (one per cause, effect and source: an existing one is kept); returns
        the stored row."""
        db.execute(
            f"INSERT OR IGNORE INTO causal_links ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
            (new_link_id(), project, *_values(link), owner, now),
        )
        return db.execute(
            f"SELECT {COLUMNS} FROM causal_links WHERE project = ? AND cause = ? AND effect = ? "
            "AND source = ?",
            (project, link.cause, link.effect, link.source),
        ).fetchone()

    def restore(
        self, db: sqlite3.Connection, project: str, link: Link, link_id: str, created_at: float
    ) -> bool:
        """Insert a user's link as exported (its id, unless another link has it now, and its
        time); False when the same link is stored already."""
        if db.execute("SELECT 1 FROM causal_links WHERE id = ?", (link_id,)).fetchone():
            link_id = new_link_id()
        inserted = db.execute(
            f"INSERT OR IGNORE INTO causal_links ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
            (link_id, project, *_values(link), None, created_at),
        )
        return inserted.rowcount == 1

    def user_links(self, project: str | None) -> list[sqlite3.Row]:
        """The links a user added by hand (no episode derived them), of one project or all."""
        where, args = ("AND project = ?", (project,)) if project is not None else ("", ())
        return list(
            self.db.execute(
                f"SELECT {COLUMNS} FROM causal_links WHERE owner IS NULL {where} "
                "ORDER BY project, created_at, id",
                args,
            )
        )

    def replace_derived(
        self, db: sqlite3.Connection, project: str, owner: str, links: Iterable[Link], now: float
    ) -> None:
        """The episode's derived links become ``links`` (a user's links are left alone)."""
        db.execute("DELETE FROM causal_links WHERE owner = ?", (owner,))
        for link in links:
            self.add(db, project, link, owner, now)

    def get(self, link_id: str) -> sqlite3.Row | None:
        return self.db.execute(
            f"SELECT {COLUMNS} FROM causal_links WHERE id = ?", (link_id,)
        ).fetchone()

    def delete(self, db: sqlite3.Connection, link_id: str) -> None:
        db.execute("DELETE FROM causal_links WHERE id = ?", (link_id,))

    def of_nodes(self, project: str, nodes: list[str], limit: int) -> list[sqlite3.Row]:
        """The links with any of ``nodes`` as cause or effect, the most confident first."""
        if not nodes:
            return []
        marks = ",".join("?" * len(nodes))
        return list(
            self.db.execute(
                f"SELECT {COLUMNS} FROM causal_links WHERE project = ? AND (cause IN ({marks}) "
                f"OR effect IN ({marks})) ORDER BY confidence DESC, created_at, id LIMIT ?",
                (project, *nodes, *nodes, limit),
            )
        )

    def from_node(self, project: str, cause: str) -> list[sqlite3.Row]:
        return list(
            self.db.execute(
                f"SELECT {COLUMNS} FROM causal_links WHERE project = ? AND cause = ?",
                (project, cause),
            )
        )

    def causes_in_episode(self, project: str, episode_id: str) -> list[str]:
        """The episode's members that are the cause of some link (as ``memory:<id>``)."""
        return [
            r[0]
            for r in self.db.execute(
                "SELECT DISTINCT l.cause FROM causal_links l JOIN memberships b "
                "ON l.cause = 'memory:' || b.memory_id WHERE l.project = ? AND b.episode_id = ?",
                (project, episode_id),
            )
        ]

    def forget_node(self, db: sqlite3.Connection, node: str) -> None:
        """Every link that rests on the node (a forgotten memory, a deleted episode)."""
        db.execute("DELETE FROM causal_links WHERE cause = ? OR effect = ?", (node, node))

    def member_left(self, db: sqlite3.Connection, episode_id: str, memory_id: str) -> None:
        """A memory left the episode: the links its record gave that rest on the memory go
        (the episode's next summary job derives its links afresh)."""
        node = f"memory:{memory_id}"
        db.execute(
            "DELETE FROM causal_links WHERE owner = ? AND (cause = ? OR effect = ?)",
            (episode_id, node, node),
        )

    def delete_episode(self, db: sqlite3.Connection, episode_id: str) -> None:
        """A deleted episode: the links naming it and the links its record gave."""
        self.forget_node(db, f"episode:{episode_id}")
        db.execute("DELETE FROM causal_links WHERE owner = ?", (episode_id,))

    def move_episode(self, db: sqlite3.Connection, absorbed: str, survivor: str) -> None:
        """Merge: links naming or owned by ``absorbed`` name or belong to ``survivor`` (a link
        that would then exist twice, or from the survivor to itself, goes)."""
        old, new = f"episode:{absorbed}", f"episode:{survivor}"
        db.execute("UPDATE OR IGNORE causal_links SET cause = ? WHERE cause = ?", (new, old))
        db.execute("UPDATE OR IGNORE causal_links SET effect = ? WHERE effect = ?", (new, old))
        db.execute("DELETE FROM causal_links WHERE cause = ? OR effect = ?", (old, old))
        db.execute("DELETE FROM causal_links WHERE cause = effect")
        db.execute("UPDATE causal_links SET owner = ? WHERE owner = ?", (survivor, absorbed))

    def first_episode_naming(self, project: str, name: str, before: float) -> str | None:
        """The episode of the earliest memory before ``before`` that names ``name`` (memories
        in no episode skipped)."""
        row = self.db.execute(
            "SELECT b.episode_id FROM mentions m JOIN memberships b ON b.memory_id = m.memory_id "
            "WHERE m.project = ? AND m.name = ? AND m.memory_time < ? "
            "ORDER BY m.memory_time LIMIT 1",
            (project, name, before),
        ).fetchone()
        return None if row is None else str(row[0])
