"""The ``kind_words`` table: the acronyms each memory uses as a kind of thing (``NRFs``, ``each
NRF``: :func:`...entities.acronyms.kind_words`), which the extraction then takes for no name
anywhere in the project. Derived from each memory's text, so it goes with the memory."""

from __future__ import annotations

import sqlite3

from .table import Table


class KindWords(Table):
    """Reads and writes of ``kind_words``, one row per (project, acronym, memory)."""

    def replace(
        self, db: sqlite3.Connection, project: str, memory_id: str, words: set[str]
    ) -> set[str]:
        """Store ``words`` as the memory's (idempotent); returns the project's words whose
        count of memories changed (added or taken away)."""
        before = {w for p, w in self.forget(db, memory_id) if p == project}
        db.executemany(
            "INSERT INTO kind_words (project, word, memory_id) VALUES (?,?,?)",
            [(project, word, memory_id) for word in sorted(words)],
        )
        return before ^ words

    def forget(self, db: sqlite3.Connection, memory_id: str) -> set[tuple[str, str]]:
        """A memory's words go (forgotten, or written again); returns them as (project, word)."""
        rows = db.execute("SELECT project, word FROM kind_words WHERE memory_id = ?", (memory_id,))
        before = {(r[0], r[1]) for r in rows}
        db.execute("DELETE FROM kind_words WHERE memory_id = ?", (memory_id,))
        return before

    @staticmethod
    def uses(db: sqlite3.Connection, project: str, word: str) -> int:
        """How many of the project's memories use ``word`` as a kind of thing."""
        return int(
            db.execute(
                "SELECT COUNT(*) FROM kind_words WHERE project = ? AND word = ?", (project, word)
            ).fetchone()[0]
        )

    def most_used(self, project: str, limit: int) -> list[str]:
        """The project's words, the most used first (then by name), at most ``limit``."""
        rows = self.db.execute(
            "SELECT word FROM kind_words WHERE project = ? GROUP BY word "
            "ORDER BY COUNT(*) DESC, word LIMIT ?",
            (project, limit),
        )
        return [r[0] for r in rows]
