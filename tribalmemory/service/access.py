"""Access statistics of memories and episodes in ``access.sqlite3`` in the data folder.

Kept out of the vector store's payloads: a recall would otherwise rewrite every payload it
returns. One row per memory or episode that was ever accessed (:class:`~tribalmemory.
retrievability.Stats`); an item never accessed has no row. One connection, used from the event
loop's thread only; WAL with ``synchronous=NORMAL`` (a committed transaction survives
``kill -9``). All the updates of one recall are one transaction (a few hundred microseconds,
see docs/benchmarks.md#retrievability-re-ranking).

If the file cannot be opened or written, a WARNING is logged, ``/v1/health`` shows
``access.state: unavailable`` with the reason, and the service goes on without statistics:
recall answers as with ``recall.rerank: none`` and the fields are null.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import retrievability as fsrs
from ..datafolder import FILE_MODE
from ..models import RecallHit
from ..timeutil import from_epoch, to_iso, utc_now

log = logging.getLogger("tribalmemory.access")

ACCESS_FILE = "access.sqlite3"
STAT_COLUMNS = tuple(f.name for f in fields(fsrs.Stats))
WHOLE = ("access_count", "use_count", "last_grade")


def _affinity(name: str) -> str:
    return "INTEGER" if name in WHOLE else "REAL"


SCHEMA = f"""
CREATE TABLE IF NOT EXISTS access_stats (
    id TEXT PRIMARY KEY,                   -- a memory id or an episode id (ep-...)
    {", ".join(f"{name} {_affinity(name)}" for name in STAT_COLUMNS)}
);
"""
CHUNK = 500  # ids per SELECT ... IN (...)


class AccessStats:
    """Reads and updates the statistics; degrades to none when the file is unusable."""

    def __init__(self, path: Path, clock: Callable[[], datetime] = utc_now) -> None:
        self.path = path
        self.clock = clock
        self.error: str | None = None
        self.db: sqlite3.Connection | None = None
        try:
            self.db = _open(path)
        except (sqlite3.Error, OSError) as exc:
            self._fail("open", exc)

    def now(self) -> float:
        return self.clock().timestamp()

    def _fail(self, action: str, exc: Exception) -> None:
        self.error = f"cannot {action} {self.path}: {exc}"
        log.warning(
            "%s; recall goes on without access statistics (no re-ranking, fields null)",
            self.error,
        )
        if self.db is not None:
            try:
                self.db.close()
            except sqlite3.Error:
                pass
        self.db = None

    @property
    def available(self) -> bool:
        return self.db is not None

    def get(self, ids: Iterable[str]) -> dict[str, fsrs.Stats]:
        """The stored statistics of those of ``ids`` that have any."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, fsrs.Stats] = {}
        if self.db is None or not wanted:
            return found
        try:
            for start in range(0, len(wanted), CHUNK):
                chunk = wanted[start : start + CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self.db.execute(
                    f"SELECT id, {', '.join(STAT_COLUMNS)} FROM access_stats WHERE id IN ({marks})",
                    chunk,
                )
                for row in rows:
                    found[row[0]] = _stats(row[1:])
        except sqlite3.Error as exc:
            self._fail("read", exc)
            return {}
        return found

    def record(
        self, items: list[tuple[str, float, bool]], grade: int, now: float | None = None
    ) -> dict[str, fsrs.Stats]:
        """Review each ``(id, created_at, key_moment)`` with ``grade``, in one transaction;
        the new statistics by id (empty when statistics are unavailable)."""
        if self.db is None or not items:
            return {}
        at = self.now() if now is None else now
        current = self.get(i[0] for i in items)
        updated: dict[str, fsrs.Stats] = {}
        for item_id, created_at, key_moment in items:
            before = updated.get(item_id) or current.get(item_id) or fsrs.Stats()
            updated[item_id] = fsrs.review(before, grade, at, created_at, key_moment)
        marks = ",".join("?" * (len(STAT_COLUMNS) + 1))
        try:
            with self.db:
                self.db.executemany(
                    f"INSERT OR REPLACE INTO access_stats (id, {', '.join(STAT_COLUMNS)}) "
                    f"VALUES ({marks})",
                    [(item_id, *_row(s)) for item_id, s in updated.items()],
                )
        except sqlite3.Error as exc:
            self._fail("write", exc)
            return {}
        return updated

    def delete(self, ids: list[str]) -> None:
        """Forget the statistics of ``ids`` (a forgotten memory, a deleted episode)."""
        if self.db is None or not ids:
            return
        try:
            with self.db:
                self.db.executemany("DELETE FROM access_stats WHERE id = ?", [(i,) for i in ids])
        except sqlite3.Error as exc:
            self._fail("write", exc)

    def health(self) -> dict[str, Any]:
        if self.db is None:
            return {"state": "unavailable", "reason": self.error or "closed"}
        return {"state": "ok", "reason": ""}

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
            self.error = self.error or "closed"


def _open(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=FILE_MODE, exist_ok=True)
    db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        db.executescript(SCHEMA)
        db.isolation_level = "DEFERRED"  # ``with db`` commits one transaction
    except sqlite3.Error:
        db.close()
        raise
    return db


def _row(stats: fsrs.Stats) -> tuple[Any, ...]:
    """The columns of ``stats`` (:data:`STAT_COLUMNS` order): its fields are numbers, so no
    deep copy (``dataclasses.astuple`` took most of a recall's own time)."""
    return tuple(getattr(stats, name) for name in STAT_COLUMNS)


def _stats(row: tuple[Any, ...]) -> fsrs.Stats:
    values = dict(zip(STAT_COLUMNS, row, strict=True))
    for name in WHOLE:
        if values[name] is not None:
            values[name] = int(values[name])
    return fsrs.Stats(**values)


def retrievability_of(stats: fsrs.Stats | None, now: float, created_at: datetime | float) -> float:
    """R of an item now: from its statistics, or from its creation if it has none."""
    born = created_at.timestamp() if isinstance(created_at, datetime) else created_at
    return (stats or fsrs.Stats()).retrievability(now, born)


def reranked(
    hits: list[RecallHit], stats: dict[str, fsrs.Stats], now: float, floor: float
) -> list[RecallHit]:
    """``hits`` ordered by ``similarity_score × (floor + (1 − floor) × R)``, best first,
    equal scores by memory id."""

    def score(hit: RecallHit) -> float:
        recall = retrievability_of(stats.get(hit.memory.id), now, hit.memory.created_at)
        return hit.similarity_score * fsrs.rerank_factor(recall, floor)

    return sorted(hits, key=lambda h: (-score(h), h.memory.id))


def fields_of(stats: fsrs.Stats | None, now: float, created_at: datetime | float) -> dict[str, Any]:
    """The JSON fields of an item's statistics: ``access_count``, ``last_accessed_at``,
    ``retrievability`` (rounded to 4 decimals)."""
    last = None if stats is None else stats.last_accessed_at
    return {
        "access_count": 0 if stats is None else stats.access_count,
        "last_accessed_at": None if last is None else to_iso(from_epoch(last)),
        "retrievability": round(retrievability_of(stats, now, created_at), 4),
    }
