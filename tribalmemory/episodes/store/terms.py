"""The ``term_counts`` table: the detector's word counts by project (online IDF)."""

from __future__ import annotations

import json
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
        rare words leave the file).

        One statement for all the words (passed as JSON), not one per word: the event loop's
        thread gives up the GIL for each statement SQLite runs, and a request's thread that
        takes it then can keep it for the switch interval. Word by word, a save beside a
        thread running Python took about twice as long as alone; in one statement, as long
        (docs/benchmarks.md)."""
        kept = {t: n for t, n in counts.items() if n > 0}
        gone = [t for t, n in counts.items() if n <= 0]
        if kept:
            db.execute(
                "INSERT INTO term_counts SELECT ?, key, value FROM json_each(?) WHERE true "
                "ON CONFLICT(project, term) DO UPDATE SET count = excluded.count",
                (project, json.dumps(kept)),
            )
        if gone:
            db.execute(
                "DELETE FROM term_counts WHERE project = ? "
                "AND term IN (SELECT value FROM json_each(?))",
                (project, json.dumps(gone)),
            )
