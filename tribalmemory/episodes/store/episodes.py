"""The ``episodes`` table: an episode's row (title, summary, status, activity, metadata).

``memory_count`` and ``first_activity`` are never stored: every read counts them from
``memberships``, so they cannot drift from the real membership."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from .rows import EpisodeRow
from .table import Table

EPISODE_COLUMNS = (
    "id, title, title_source, summary, summary_kind, summary_status, summary_memory_id, "
    "llm_summary, llm_summary_mark, needs_full, since_regen, status, created_at, updated_at, "
    "closed_at, last_activity, parent_episode_id, metadata, user_metadata, structured, project"
)


MEMBERS_OF = (
    "SELECT episode_id FROM memberships WHERE memory_id IN (SELECT value FROM json_each(?))"
)
"""The episodes of the memory ids of one JSON array parameter (one key lookup per id)."""


class Episodes(Table):
    """Reads and writes of the ``episodes`` table."""

    def _select(
        self, where: str = "", args: tuple[Any, ...] = (), tail: str = ""
    ) -> list[EpisodeRow]:
        sql = (
            f"SELECT {', '.join('e.' + c.strip() for c in EPISODE_COLUMNS.split(','))}, "
            "(SELECT COUNT(*) FROM memberships m WHERE m.episode_id = e.id) AS memory_count, "
            "(SELECT MIN(memory_time) FROM memberships m WHERE m.episode_id = e.id) "
            "AS first_activity FROM episodes e " + where + " " + tail
        )
        return [EpisodeRow.from_sql(r) for r in self.db.execute(sql, args)]

    def get(self, episode_id: str) -> EpisodeRow | None:
        rows = self._select("WHERE e.id = ?", (episode_id,))
        return rows[0] if rows else None

    def find(
        self,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
        filters: dict[str, Any] | None = None,
    ) -> list[EpisodeRow]:
        """Newest activity first. ``filters``: project (None: every project), outcome (the
        structured record's, else the metadata's), task (substring, any case), tag /
        participant / tool (an item of that metadata list), since / until (epoch seconds: the
        members' time span overlaps), members and naming (each a list of memory ids: one of
        them is a member; both given, one of each)."""
        clauses: list[str] = []
        args: list[Any] = []
        if status:
            clauses.append("e.status = ?")
            args.append(status)
        lists = {"tag": "tags", "participant": "participants", "tool": "tools_used"}
        for name, value in (filters or {}).items():
            if name == "project" and value is None:
                continue  # every project
            if name == "outcome":
                clauses.append(
                    "COALESCE(json_extract(e.structured, '$.outcome'), "
                    "json_extract(e.metadata, '$.outcome')) = ?"
                )
            elif name == "task":
                clauses.append("json_extract(e.structured, '$.task') LIKE ? ESCAPE '\\'")
                value = "%" + re.sub(r"([\\%_])", r"\\\1", value) + "%"
            elif name in lists:
                clauses.append(
                    f"EXISTS (SELECT 1 FROM json_each(e.metadata, '$.{lists[name]}') "
                    "WHERE value = ?)"
                )
            elif name in ("members", "naming"):
                clauses.append(f"e.id IN ({MEMBERS_OF})")
                value = json.dumps(list(value))
            elif name == "project":
                clauses.append("e.project = ?")
            elif name == "since":
                clauses.append("e.last_activity >= ?")
            elif name == "until":
                clauses.append(
                    "(SELECT MIN(memory_time) FROM memberships m WHERE m.episode_id = e.id) <= ?"
                )
            else:
                raise ValueError(f"unknown episode filter {name!r}")
            args.append(value)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        return self._select(
            where, (*args, limit, offset), "ORDER BY e.last_activity DESC, e.id LIMIT ? OFFSET ?"
        )

    def summaries_with_members(self, memory_ids: list[str]) -> list[str]:
        """The summary memory ids of the episodes that have one of ``memory_ids``."""
        sql = (
            "SELECT summary_memory_id FROM episodes WHERE summary_memory_id IS NOT NULL "
            f"AND id IN ({MEMBERS_OF})"
        )
        return [r[0] for r in self.db.execute(sql, (json.dumps(memory_ids),))]

    def closed_version(self) -> tuple[int, float | None, int]:
        """Changes whenever a closed or archived episode is added (closed), changed or
        deleted: a cache key for what is computed from them (active episodes change at every
        memory and do not count)."""
        row = self.db.execute(
            "SELECT COUNT(*), MAX(updated_at), COALESCE(SUM(LENGTH(structured)), 0) "
            "FROM episodes WHERE status != 'active'"
        ).fetchone()
        return int(row[0]), row[1], int(row[2])

    def closed_with_records(self, project: str | None = None) -> list[EpisodeRow]:
        """Closed and archived episodes (of ``project``, when given) that have lessons or
        decisions, oldest first."""
        return self._select(
            "WHERE e.status != 'active' AND (json_array_length(e.structured, '$.lessons') > 0 "
            "OR json_array_length(e.structured, '$.decisions') > 0)"
            + (" AND e.project = ?" if project is not None else ""),
            (project,) if project is not None else (),
            "ORDER BY e.last_activity, e.id",
        )

    def chain_candidates(
        self, since: float, ended_by: float, limit: int = 50, project: str | None = None
    ) -> list[str]:
        """Ids of closed or archived episodes (of ``project``, when given) whose last memory
        is from ``since`` to ``ended_by`` (memory time), the most recently active first."""
        scoped = "AND project = ? " if project is not None else ""
        args = (since, ended_by, *([project] if project is not None else []), limit)
        return [
            r[0]
            for r in self.db.execute(
                "SELECT id FROM episodes WHERE status != 'active' AND last_activity >= ? "
                f"AND last_activity <= ? {scoped}ORDER BY last_activity DESC, id LIMIT ?",
                args,
            )
        ]

    def project_stats(self) -> dict[str, tuple[int, float | None]]:
        """(episodes, newest last_activity) by project."""
        rows = self.db.execute(
            "SELECT project, COUNT(*), MAX(last_activity) FROM episodes GROUP BY project"
        )
        return {r[0]: (int(r[1]), r[2]) for r in rows}

    def children(self, episode_id: str) -> list[EpisodeRow]:
        return self._select("WHERE e.parent_episode_id = ?", (episode_id,))

    def active(self, project: str | None = None) -> list[EpisodeRow]:
        """Active episodes (of ``project``, when given), most recently active first."""
        if project is None:
            return self._select("WHERE e.status = 'active'", (), "ORDER BY e.last_activity DESC")
        return self._select(
            "WHERE e.status = 'active' AND e.project = ?",
            (project,),
            "ORDER BY e.last_activity DESC",
        )

    def active_activity(
        self, project: str | None = None, before: float | None = None
    ) -> list[tuple[str, float]]:
        """(id, last_activity) of the active episodes (of ``project``, when given; with
        ``before``, only those last active before it): the cheap query the write path needs.
        It reads the active episodes through the status index, on ``(status,
        last_activity)``: with ``before`` only the few old enough (``+project`` keeps SQLite
        off the project index, which would read every episode the project ever had, closed
        ones included, on each ``remember``)."""
        sql = "SELECT id, last_activity FROM episodes WHERE status = 'active'"
        args: list[str | float] = []
        if before is not None:
            sql += " AND last_activity < ?"
            args.append(before)
        if project is not None:
            sql += " AND +project = ?"
            args.append(project)
        return [(r[0], r[1]) for r in self.db.execute(sql, args)]

    def active_last_added(self) -> dict[str, float]:
        """When each active episode last gained a member (``joined_at``, engine clock; its
        creation when it has none): the scheduler's view of arrival time."""
        return dict(
            self.db.execute(
                "SELECT e.id, COALESCE(MAX(m.joined_at), e.created_at) FROM episodes e "
                "LEFT JOIN memberships m ON m.episode_id = e.id WHERE e.status = 'active' "
                "GROUP BY e.id"
            ).fetchall()
        )

    def _by_id(self, columns: str, episode_ids: list[str]) -> list[sqlite3.Row]:
        """``columns`` of each stored episode of ``episode_ids`` (table alias ``e``; its id
        first), read 500 ids a query (SQLite's bound on parameters)."""
        rows: list[sqlite3.Row] = []
        for start in range(0, len(episode_ids), 500):
            part = episode_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            sql = f"SELECT e.id, {columns} FROM episodes e WHERE e.id IN ({marks})"
            rows.extend(self.db.execute(sql, part))
        return rows

    def titles(self, episode_ids: list[str]) -> dict[str, str]:
        """The title of each of ``episode_ids`` that is stored ("" when none is written)."""
        return {r[0]: r[1] or "" for r in self._by_id("e.title", episode_ids)}

    def outlines(self, episode_ids: list[str]) -> dict[str, tuple[str, str, str | None, int]]:
        """Each stored episode of ``episode_ids`` as (title, summary, its summary memory's id,
        its number of members)."""
        columns = (
            "e.title, e.summary, e.summary_memory_id, "
            "(SELECT COUNT(*) FROM memberships m WHERE m.episode_id = e.id)"
        )
        rows = self._by_id(columns, episode_ids)
        return {r[0]: (r[1] or "", r[2] or "", r[3], r[4]) for r in rows}

    def existing_ids(self, episode_ids: list[str]) -> set[str]:
        """Those of ``episode_ids`` that are stored."""
        return set(self.titles(episode_ids))

    def all_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM episodes")]

    def status_counts(self) -> dict[str, int]:
        """Number of episodes by status (every status, zeros included)."""
        rows = self.db.execute("SELECT status, COUNT(*) FROM episodes GROUP BY status")
        counts = dict(rows.fetchall())
        return {status: counts.get(status, 0) for status in ("active", "closed", "archived")}

    def insert(self, db: sqlite3.Connection, row: EpisodeRow) -> None:
        db.execute(
            f"INSERT INTO episodes ({EPISODE_COLUMNS}) VALUES "
            f"({','.join('?' * len(EPISODE_COLUMNS.split(',')))})",
            (
                row.id,
                row.title,
                row.title_source,
                row.summary,
                row.summary_kind,
                row.summary_status,
                row.summary_memory_id,
                row.llm_summary,
                row.llm_summary_mark,
                int(row.needs_full),
                row.since_regen,
                row.status,
                row.created_at,
                row.updated_at,
                row.closed_at,
                row.last_activity,
                row.parent_episode_id,
                json.dumps(row.metadata),
                json.dumps(row.user_metadata),
                json.dumps(row.structured),
                row.project,
            ),
        )

    def update(self, db: sqlite3.Connection, episode_id: str, **values: Any) -> None:
        """Set columns; new engine ``metadata`` keeps the fields the user set (PATCH)."""
        for name in ("metadata", "user_metadata", "structured"):
            if name in values:
                values[name] = json.dumps(values[name])
        if "needs_full" in values:
            values["needs_full"] = int(values["needs_full"])
        assigns = ", ".join(
            "metadata = json_patch(?, user_metadata)" if k == "metadata" else f"{k} = ?"
            for k in values
        )
        db.execute(f"UPDATE episodes SET {assigns} WHERE id = ?", (*values.values(), episode_id))

    def patch_metadata(
        self, db: sqlite3.Connection, episode_id: str, patch: dict[str, Any], now: float
    ) -> None:
        """The user sets (or, with null, removes) metadata fields; they stay over what the
        summaries write later (RFC 7396 merge patch on both columns)."""
        text = json.dumps(patch)
        db.execute(
            "UPDATE episodes SET metadata = json_patch(metadata, ?), "
            "user_metadata = json_patch(user_metadata, ?), updated_at = ? WHERE id = ?",
            (text, text, now, episode_id),
        )

    def reopen(self, db: sqlite3.Connection, episode_id: str, now: float) -> bool:
        """Make a closed or archived episode active again; False when it already is."""
        cur = db.execute(
            "UPDATE episodes SET status = 'active', closed_at = NULL, updated_at = ? "
            "WHERE id = ? AND status != 'active'",
            (now, episode_id),
        )
        return bool(cur.rowcount)

    def close(self, db: sqlite3.Connection, episode_id: str, now: float) -> bool:
        """Close the episode if it is active; False when it is not (or is gone)."""
        cur = db.execute(
            "UPDATE episodes SET status = 'closed', closed_at = ?, updated_at = ? "
            "WHERE id = ? AND status = 'active'",
            (now, now, episode_id),
        )
        return bool(cur.rowcount)

    def mark_stale(self, db: sqlite3.Connection, episode_id: str, now: float) -> None:
        """A member left: the LLM summary no longer covers the membership."""
        db.execute(
            "UPDATE episodes SET needs_full = 1, updated_at = ? WHERE id = ?", (now, episode_id)
        )

    def count_joined(
        self, db: sqlite3.Connection, episode_id: str, memory_time: float, now: float
    ) -> None:
        """A member joined: one more since the last full summary, activity up to its time."""
        db.execute(
            "UPDATE episodes SET since_regen = since_regen + 1, updated_at = ?, "
            "last_activity = MAX(last_activity, ?) WHERE id = ?",
            (now, memory_time, episode_id),
        )

    def take_over(
        self, db: sqlite3.Connection, survivor: str, absorbed: str, moved: int, now: float
    ) -> None:
        """Merge: ``survivor`` gains ``moved`` members and the activity and children of
        ``absorbed`` (its summary is then stale); it is no longer a child of ``absorbed``."""
        db.execute(
            "UPDATE episodes SET needs_full = 1, since_regen = since_regen + ?, updated_at = ?, "
            "last_activity = MAX(last_activity, (SELECT last_activity FROM episodes "
            "WHERE id = ?)) WHERE id = ?",
            (moved, now, absorbed, survivor),
        )
        db.execute(
            "UPDATE episodes SET parent_episode_id = NULL WHERE id = ? AND parent_episode_id = ?",
            (survivor, absorbed),
        )
        db.execute(
            "UPDATE episodes SET parent_episode_id = ? WHERE parent_episode_id = ?",
            (survivor, absorbed),
        )

    def orphan_children(self, db: sqlite3.Connection, episode_id: str) -> None:
        """The episode is deleted: its children have no parent."""
        db.execute(
            "UPDATE episodes SET parent_episode_id = NULL WHERE parent_episode_id = ?",
            (episode_id,),
        )

    def delete_row(self, db: sqlite3.Connection, episode_id: str) -> None:
        """Delete the episode's row alone (its deletion as a whole:
        :meth:`.EpisodeStore.delete_episode`)."""
        db.execute("DELETE FROM episodes WHERE id = ?", (episode_id,))
