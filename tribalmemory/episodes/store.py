"""Episode state in SQLite beside the memory store: episodes, memberships, detection state, jobs.

One connection, used from the event loop's thread only. WAL with ``synchronous=NORMAL``:
a committed transaction survives the process being killed (not a power cut before the next
checkpoint). Every change that must stay consistent (membership and the episode it belongs to,
a job and the state it advances) happens in one transaction. ``memory_count`` is never stored:
it is counted from ``memberships``, so it cannot drift from the real membership.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    title_source TEXT NOT NULL,            -- keyword | llm | user
    summary TEXT NOT NULL DEFAULT '',
    summary_kind TEXT NOT NULL DEFAULT 'extractive',   -- llm | extractive
    summary_status TEXT NOT NULL DEFAULT 'current',    -- current | pending
    summary_memory_id TEXT,
    llm_summary TEXT NOT NULL DEFAULT '',  -- last LLM summary (base of cheap updates)
    llm_summary_mark INTEGER,              -- membership rowid covered by the last LLM summary
    needs_full INTEGER NOT NULL DEFAULT 0, -- a removal made the LLM summary stale
    since_regen INTEGER NOT NULL DEFAULT 0,-- memories added since the last full regeneration
    status TEXT NOT NULL,                  -- active | closed | archived
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    closed_at REAL,
    last_activity REAL NOT NULL,           -- newest member's created_at (memory time)
    parent_episode_id TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    user_metadata TEXT NOT NULL DEFAULT '{}',  -- fields set by PATCH: kept over engine metadata
    structured TEXT NOT NULL DEFAULT '{}', -- task, outcome, decisions, events, lessons, metrics
    project TEXT NOT NULL DEFAULT 'default' -- the project of every member
);
CREATE INDEX IF NOT EXISTS episodes_status ON episodes(status, last_activity);
CREATE INDEX IF NOT EXISTS episodes_project ON episodes(project, last_activity);
CREATE TABLE IF NOT EXISTS memberships (
    memory_id TEXT PRIMARY KEY,            -- a memory is in at most one episode
    episode_id TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    memory_time REAL NOT NULL,             -- the memory's created_at
    joined_at REAL NOT NULL,
    score REAL,                            -- detector score when it joined (null: manual)
    surprise REAL
);
CREATE INDEX IF NOT EXISTS memberships_episode ON memberships(episode_id, memory_time);
CREATE TABLE IF NOT EXISTS detections (
    memory_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,                   -- pending | seed | standalone | assigned
    memory_time REAL NOT NULL,
    hint TEXT                              -- LLM title suggestion for a seed
);
CREATE INDEX IF NOT EXISTS detections_state ON detections(state, memory_time);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,                    -- detect | classify | summary | link
    key TEXT NOT NULL,                     -- memory id or episode id
    payload TEXT NOT NULL DEFAULT '{}',
    not_before REAL NOT NULL,
    created_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    gen INTEGER NOT NULL DEFAULT 0         -- bumped when the job is re-armed while queued
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_unique ON jobs(kind, key);
CREATE INDEX IF NOT EXISTS jobs_due ON jobs(not_before);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS term_counts (   -- the detector's word counts (online IDF)
    project TEXT NOT NULL,
    term TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (project, term)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    episode_id TEXT NOT NULL,              -- kept after the episode is merged or deleted
    at REAL NOT NULL,
    actor TEXT NOT NULL,                   -- user | detector | consolidation
    action TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS history_episode ON history(episode_id, id);
CREATE TABLE IF NOT EXISTS pins (
    memory_id TEXT NOT NULL,
    episode_id TEXT NOT NULL,
    kind TEXT NOT NULL,                    -- in (placed by the user) | out (removed by the user)
    at REAL NOT NULL,
    PRIMARY KEY (memory_id, episode_id)
);
CREATE INDEX IF NOT EXISTS pins_episode ON pins(episode_id);
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY,              -- a client session (MCP session, REST session field)
    episode_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    started_at REAL NOT NULL
);
"""

ADDED_COLUMNS = {
    "episodes": {
        "user_metadata": "TEXT NOT NULL DEFAULT '{}'",
        "structured": "TEXT NOT NULL DEFAULT '{}'",
        "project": "TEXT NOT NULL DEFAULT 'default'",  # episodes from before projects
    },
}
"""Columns added after the first release: a database that lacks one gets it at open
(``ALTER TABLE ... ADD COLUMN`` with its default), before the schema's indexes are used."""

EPISODE_COLUMNS = (
    "id, title, title_source, summary, summary_kind, summary_status, summary_memory_id, "
    "llm_summary, llm_summary_mark, needs_full, since_regen, status, created_at, updated_at, "
    "closed_at, last_activity, parent_episode_id, metadata, user_metadata, structured, project"
)


def new_episode_id() -> str:
    return "ep-" + uuid.uuid4().hex[:16]


@dataclass
class EpisodeRow:
    id: str
    title: str
    title_source: str
    summary: str
    summary_kind: str
    summary_status: str
    summary_memory_id: str | None
    llm_summary: str
    llm_summary_mark: int | None
    needs_full: bool
    since_regen: int
    status: str
    created_at: float
    updated_at: float
    closed_at: float | None
    last_activity: float
    parent_episode_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    user_metadata: dict[str, Any] = field(default_factory=dict)
    structured: dict[str, Any] = field(default_factory=dict)
    project: str = "default"
    memory_count: int = 0
    first_activity: float | None = None

    @property
    def outcome(self) -> str | None:
        """The episode's outcome: its structured record's, else its metadata's (None: not
        known). The one rule for every view of an episode (list, get, replay, patterns); the
        ``outcome`` filter of :meth:`EpisodeStore.episodes` applies it in SQL."""
        found = self.structured.get("outcome") or self.metadata.get("outcome")
        return str(found) if found else None

    @classmethod
    def from_sql(cls, row: sqlite3.Row) -> EpisodeRow:
        data = dict(row)
        data["metadata"] = json.loads(data.get("metadata") or "{}")
        data["user_metadata"] = json.loads(data.get("user_metadata") or "{}")
        data["structured"] = json.loads(data.get("structured") or "{}")
        data["needs_full"] = bool(data["needs_full"])
        return cls(**data)

    @classmethod
    def new(cls, title: str, title_source: str, now: float, **values: Any) -> EpisodeRow:
        """A new active episode created at ``now``: no summary, no parent, not closed;
        ``values`` set any other column."""
        defaults: dict[str, Any] = {
            "id": new_episode_id(),
            "summary": "",
            "summary_kind": "extractive",
            "summary_status": "current",
            "summary_memory_id": None,
            "llm_summary": "",
            "llm_summary_mark": None,
            "needs_full": False,
            "since_regen": 0,
            "status": "active",
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
            "last_activity": now,
            "parent_episode_id": None,
        }
        return cls(title=title, title_source=title_source, **{**defaults, **values})


@dataclass
class Job:
    id: int
    kind: str
    key: str
    payload: dict[str, Any]
    not_before: float
    created_at: float
    attempts: int
    gen: int = 0


def _job(row: sqlite3.Row) -> Job:
    return Job(
        id=row["id"],
        kind=row["kind"],
        key=row["key"],
        payload=json.loads(row["payload"]),
        not_before=row["not_before"],
        created_at=row["created_at"],
        attempts=row["attempts"],
        gen=row["gen"],
    )


BACKSTOP_CHECKPOINT_PAGES = 20_000
"""WAL pages (4 KiB each) after which a commit checkpoints by itself: only when
:meth:`EpisodeStore.checkpoint` has not run for a long while."""


def migrate(db: sqlite3.Connection) -> None:
    """Add the :data:`ADDED_COLUMNS` an older database lacks (its tables exist already)."""
    for table, columns in ADDED_COLUMNS.items():
        present = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
        if not present:  # a new database: the schema creates the table whole
            continue
        for name, definition in columns.items():
            if name not in present:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")


class EpisodeStore:
    """Typed access to the episode database."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
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

    def close(self) -> None:
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
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on error)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- episodes ---------------------------------------------------------------------------

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

    def episode(self, episode_id: str) -> EpisodeRow | None:
        rows = self._select("WHERE e.id = ?", (episode_id,))
        return rows[0] if rows else None

    def episodes(
        self,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
        filters: dict[str, Any] | None = None,
    ) -> list[EpisodeRow]:
        """Newest activity first. ``filters``: project (None: every project), outcome (the
        structured record's, else the metadata's), task (substring, any case), tag /
        participant / tool / entity (an item of that metadata list), since / until (epoch
        seconds: the members' time span overlaps)."""
        clauses: list[str] = []
        args: list[Any] = []
        if status:
            clauses.append("e.status = ?")
            args.append(status)
        lists = {"tag": "tags", "participant": "participants", "tool": "tools_used"}
        lists["entity"] = "entities"
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

    def active_episodes(self, project: str | None = None) -> list[EpisodeRow]:
        """Active episodes (of ``project``, when given), most recently active first."""
        if project is None:
            return self._select("WHERE e.status = 'active'", (), "ORDER BY e.last_activity DESC")
        return self._select(
            "WHERE e.status = 'active' AND e.project = ?",
            (project,),
            "ORDER BY e.last_activity DESC",
        )

    def active_activity(self, project: str | None = None) -> list[tuple[str, float]]:
        """(id, last_activity) of the active episodes (of ``project``, when given): the cheap
        query the write path needs."""
        scoped = " AND project = ?" if project is not None else ""
        args = (project,) if project is not None else ()
        return [
            (r[0], r[1])
            for r in self.db.execute(
                "SELECT id, last_activity FROM episodes WHERE status = 'active'" + scoped, args
            )
        ]

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

    def episode_titles(self, episode_ids: list[str]) -> dict[str, str]:
        """The title of each of ``episode_ids`` that is stored ("" when none is written)."""
        found: dict[str, str] = {}
        for start in range(0, len(episode_ids), 500):
            part = episode_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            sql = f"SELECT id, title FROM episodes WHERE id IN ({marks})"
            found.update((r[0], r[1] or "") for r in self.db.execute(sql, part))
        return found

    def existing_episode_ids(self, episode_ids: list[str]) -> set[str]:
        """Those of ``episode_ids`` that are stored."""
        return set(self.episode_titles(episode_ids))

    def all_episode_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM episodes")]

    def is_blank(self) -> bool:
        """No row in any table: a new database, or one that was lost or emptied (H5)."""
        tables = ("episodes", "memberships", "detections", "jobs", "meta")
        return all(
            self.db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is None for table in tables
        )

    def status_counts(self) -> dict[str, int]:
        """Number of episodes by status (every status, zeros included)."""
        rows = self.db.execute("SELECT status, COUNT(*) FROM episodes GROUP BY status")
        counts = dict(rows.fetchall())
        return {status: counts.get(status, 0) for status in ("active", "closed", "archived")}

    def insert_episode(self, db: sqlite3.Connection, row: EpisodeRow) -> None:
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

    def update_episode(self, db: sqlite3.Connection, episode_id: str, **values: Any) -> None:
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

    def reopen_episode(self, db: sqlite3.Connection, episode_id: str, now: float) -> bool:
        """Make a closed or archived episode active again; False when it already is."""
        cur = db.execute(
            "UPDATE episodes SET status = 'active', closed_at = NULL, updated_at = ? "
            "WHERE id = ? AND status != 'active'",
            (now, episode_id),
        )
        return bool(cur.rowcount)

    def absorb_episode(
        self, db: sqlite3.Connection, survivor: str, absorbed: str, now: float
    ) -> list[str]:
        """Merge: move every member of ``absorbed`` into ``survivor`` (its summary is then
        stale), re-point its children and pins, drop its jobs and row. Returns the moved ids."""
        moved = self.member_ids(absorbed, db)
        db.execute(
            "UPDATE memberships SET episode_id = ?, joined_at = ? WHERE episode_id = ?",
            (survivor, now, absorbed),
        )
        db.execute(
            "UPDATE episodes SET needs_full = 1, since_regen = since_regen + ?, updated_at = ?, "
            "last_activity = MAX(last_activity, (SELECT last_activity FROM episodes "
            "WHERE id = ?)) WHERE id = ?",
            (len(moved), now, absorbed, survivor),
        )
        db.execute(
            "UPDATE episodes SET parent_episode_id = NULL WHERE id = ? AND parent_episode_id = ?",
            (survivor, absorbed),
        )
        db.execute(
            "UPDATE episodes SET parent_episode_id = ? WHERE parent_episode_id = ?",
            (survivor, absorbed),
        )
        db.execute(
            "UPDATE OR REPLACE pins SET episode_id = ? WHERE episode_id = ?", (survivor, absorbed)
        )
        db.execute("UPDATE sessions SET episode_id = ? WHERE episode_id = ?", (survivor, absorbed))
        db.execute(
            "DELETE FROM jobs WHERE kind IN ('summary', 'link', 'merge') AND key = ?", (absorbed,)
        )
        db.execute("DELETE FROM episodes WHERE id = ?", (absorbed,))
        return moved

    def close_episode(self, db: sqlite3.Connection, episode_id: str, now: float) -> bool:
        """Close the episode if it is active; False when it is not (or is gone)."""
        cur = db.execute(
            "UPDATE episodes SET status = 'closed', closed_at = ?, updated_at = ? "
            "WHERE id = ? AND status = 'active'",
            (now, now, episode_id),
        )
        return bool(cur.rowcount)

    def delete_episode(self, db: sqlite3.Connection, episode_id: str) -> list[str]:
        """Delete the episode; its memories become unassigned standalone memories."""
        members = self.member_ids(episode_id, db)
        db.execute("DELETE FROM memberships WHERE episode_id = ?", (episode_id,))
        db.executemany(
            "UPDATE detections SET state = 'standalone' WHERE memory_id = ?",
            [(m,) for m in members],
        )
        db.execute(
            "DELETE FROM jobs WHERE kind IN ('summary', 'link', 'merge') AND key = ?",
            (episode_id,),
        )
        db.execute(
            "UPDATE episodes SET parent_episode_id = NULL WHERE parent_episode_id = ?",
            (episode_id,),
        )
        db.execute("DELETE FROM pins WHERE episode_id = ?", (episode_id,))
        db.execute("DELETE FROM sessions WHERE episode_id = ?", (episode_id,))
        db.execute("DELETE FROM episodes WHERE id = ?", (episode_id,))
        return members

    # -- memberships ------------------------------------------------------------------------

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

    def membership_mark(self, episode_id: str) -> int | None:
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
        row = db.execute(
            "SELECT episode_id FROM memberships WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        previous = row[0] if row else None
        if previous == episode_id:
            return None
        if previous is not None:
            db.execute("DELETE FROM memberships WHERE memory_id = ?", (memory_id,))
            db.execute(
                "UPDATE episodes SET needs_full = 1, updated_at = ? WHERE id = ?", (now, previous)
            )
        db.execute(
            "INSERT INTO memberships VALUES (?,?,?,?,?,?)",
            (memory_id, episode_id, memory_time, now, score, surprise),
        )
        db.execute(
            "UPDATE episodes SET since_regen = since_regen + 1, updated_at = ?, "
            "last_activity = MAX(last_activity, ?) WHERE id = ?",
            (now, memory_time, episode_id),
        )
        self.set_detection(db, memory_id, "assigned", memory_time)
        return previous

    def remove_member(
        self, db: sqlite3.Connection, episode_id: str, memory_id: str, now: float
    ) -> bool:
        cur = db.execute(
            "DELETE FROM memberships WHERE memory_id = ? AND episode_id = ?",
            (memory_id, episode_id),
        )
        if cur.rowcount:
            db.execute(
                "UPDATE episodes SET needs_full = 1, updated_at = ? WHERE id = ?", (now, episode_id)
            )
        return bool(cur.rowcount)

    # -- detection state --------------------------------------------------------------------

    def set_detection(
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

    def detection(self, memory_id: str) -> sqlite3.Row | None:
        return self.db.execute(
            "SELECT * FROM detections WHERE memory_id = ?", (memory_id,)
        ).fetchone()

    def detection_states(self, memory_ids: list[str]) -> dict[str, str]:
        if not memory_ids:
            return {}
        marks = ",".join("?" * len(memory_ids))
        return dict(
            self.db.execute(
                f"SELECT memory_id, state FROM detections WHERE memory_id IN ({marks})", memory_ids
            ).fetchall()
        )

    def newest_detection_time(self) -> float | None:
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

    def finish_detection(self, db: sqlite3.Connection, memory_id: str) -> None:
        """The memory's detection is decided: drop its detect job (a review, the classify job,
        may still follow)."""
        db.execute("DELETE FROM jobs WHERE kind = 'detect' AND key = ?", (memory_id,))

    def forget_detection(self, db: sqlite3.Connection, memory_id: str) -> None:
        db.execute("DELETE FROM detections WHERE memory_id = ?", (memory_id,))
        db.execute(
            "DELETE FROM jobs WHERE kind IN ('detect', 'classify') AND key = ?", (memory_id,)
        )

    # -- jobs -------------------------------------------------------------------------------

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

    def delete_job(self, db: sqlite3.Connection, kind: str, key: str) -> None:
        db.execute("DELETE FROM jobs WHERE kind = ? AND key = ?", (kind, key))

    def queue_summary(
        self,
        db: sqlite3.Connection,
        episode_id: str,
        now: float,
        delay: float,
        trigger: str | None,
    ) -> None:
        """Mark the episode's summary ``pending`` and (re-)arm its summary job."""
        self.update_episode(db, episode_id, summary_status="pending")
        self.enqueue(db, "summary", episode_id, now, delay, {"trigger": trigger})

    def due_jobs(self, now: float, exclude_keys: set[str], limit: int = 8) -> list[Job]:
        rows = self.db.execute(
            "SELECT * FROM jobs WHERE not_before <= ? ORDER BY id LIMIT ?",
            (now, limit + len(exclude_keys)),
        ).fetchall()
        jobs = [_job(r) for r in rows]
        return [j for j in jobs if j.key not in exclude_keys][:limit]

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

    def finish_job(self, db: sqlite3.Connection, job: Job) -> None:
        """Delete the job unless it was re-armed while it ran (then it runs again). A
        finished summary job leaves its episode's summary ``current`` unless re-armed."""
        db.execute("DELETE FROM jobs WHERE id = ? AND gen = ?", (job.id, job.gen))
        if job.kind == "summary":
            db.execute(
                "UPDATE episodes SET summary_status = 'current' WHERE id = ? AND NOT EXISTS "
                "(SELECT 1 FROM jobs WHERE kind = 'summary' AND key = ?)",
                (job.key, job.key),
            )

    def retry_job(self, job: Job, not_before: float) -> None:
        self.db.execute(
            "UPDATE jobs SET attempts = attempts + 1, not_before = ? WHERE id = ?",
            (not_before, job.id),
        )

    def has_job(self, kind: str, key: str) -> bool:
        row = self.db.execute("SELECT 1 FROM jobs WHERE kind = ? AND key = ?", (kind, key))
        return row.fetchone() is not None

    def count_jobs(self, kind: str) -> int:
        return self.db.execute("SELECT COUNT(*) FROM jobs WHERE kind = ?", (kind,)).fetchone()[0]

    def jobs(self, kind: str, limit: int = 64) -> list[Job]:
        """The jobs of one kind, oldest first."""
        rows = self.db.execute(
            "SELECT * FROM jobs WHERE kind = ? ORDER BY created_at, id LIMIT ?", (kind, limit)
        ).fetchall()
        return [_job(r) for r in rows]

    def job_keys(self, kind: str, limit: int = 64) -> list[str]:
        """Keys of the jobs of one kind, oldest first."""
        return [job.key for job in self.jobs(kind, limit)]

    def make_due(self, db: sqlite3.Connection, kind: str, now: float) -> int:
        """Jobs of one kind that wait for later fall due now; how many did."""
        return db.execute(
            "UPDATE jobs SET not_before = ? WHERE kind = ? AND not_before > ?", (now, kind, now)
        ).rowcount

    def queue_stats(self, now: float) -> dict[str, Any]:
        row = self.db.execute("SELECT COUNT(*), MIN(created_at) FROM jobs").fetchone()
        depth, oldest = row[0], row[1]
        return {
            "queue_depth": depth,
            "oldest_pending_age_seconds": round(now - oldest, 3) if oldest else 0.0,
        }

    # -- history, pins and sessions ---------------------------------------------------------

    def add_history(
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

    def history(self, episode_id: str) -> list[sqlite3.Row]:
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

    def pin(
        self, db: sqlite3.Connection, memory_id: str, episode_id: str, kind: str, at: float
    ) -> None:
        """Record that the user put a memory in (``in``) or took it out of (``out``) an
        episode; the opposite pin of the same pair is replaced."""
        db.execute(
            "INSERT INTO pins VALUES (?,?,?,?) ON CONFLICT(memory_id, episode_id) DO UPDATE "
            "SET kind = excluded.kind, at = excluded.at",
            (memory_id, episode_id, kind, at),
        )

    def pins_on(self, episode_ids: list[str]) -> list[sqlite3.Row]:
        """The pins that name any of ``episode_ids``."""
        marks = ",".join("?" * len(episode_ids))
        return list(
            self.db.execute(
                f"SELECT memory_id, episode_id, kind FROM pins WHERE episode_id IN ({marks})",
                episode_ids,
            )
        )

    def pins_of(self, memory_ids: list[str]) -> list[sqlite3.Row]:
        if not memory_ids:
            return []
        marks = ",".join("?" * len(memory_ids))
        return list(
            self.db.execute(
                f"SELECT memory_id, episode_id, kind FROM pins WHERE memory_id IN ({marks})",
                memory_ids,
            )
        )

    def start_session(
        self, db: sqlite3.Connection, session: str, episode_id: str, topic: str, at: float
    ) -> None:
        db.execute(
            "INSERT INTO sessions VALUES (?,?,?,?) ON CONFLICT(session) DO UPDATE SET "
            "episode_id = excluded.episode_id, topic = excluded.topic, "
            "started_at = excluded.started_at",
            (session, episode_id, topic, at),
        )

    def session(self, session: str) -> sqlite3.Row | None:
        return self.db.execute(
            "SELECT episode_id, topic, started_at FROM sessions WHERE session = ?", (session,)
        ).fetchone()

    # -- meta -------------------------------------------------------------------------------

    def get_meta(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_meta(self, db: sqlite3.Connection, key: str, value: Any) -> None:
        db.execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def term_counts(self) -> dict[str, dict[str, int]]:
        """The detector's word counts: project -> word -> count."""
        out: dict[str, dict[str, int]] = {}
        for project, term, count in self.db.execute("SELECT project, term, count FROM term_counts"):
            out.setdefault(project, {})[term] = count
        return out

    def set_term_counts(
        self, db: sqlite3.Connection, project: str, counts: Mapping[str, int]
    ) -> None:
        """Write these words' counts; a word counted 0 times is deleted (a forgotten memory's
        rare words leave the file)."""
        db.executemany(
            "INSERT INTO term_counts VALUES (?, ?, ?) "
            "ON CONFLICT(project, term) DO UPDATE SET count = excluded.count",
            [(project, t, n) for t, n in counts.items() if n > 0],
        )
        db.executemany(
            "DELETE FROM term_counts WHERE project = ? AND term = ?",
            [(project, t) for t, n in counts.items() if n <= 0],
        )
