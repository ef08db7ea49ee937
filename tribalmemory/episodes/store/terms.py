"""The ``term_counts`` table: the detector's word counts by project (online IDF)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from .table import Table


class TermCounts(Table):
    """Reads and writes of the ``term_counts`` table."""

    def counts(self) -> dict[str, dict[str, int]]:
        """The detector's word counts: project -> word -> count."""
        out: dict[str, dict[str, int]] = {}
        for project, term, count in self.db.execute("SELECT project, term, count FROM term_counts"):
            out.setdefault(project, {})[term] = count
        return out

    def write(self, db: sqlite3.Connection, project: str, counts: Mapping[str, int]) -> None:
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
