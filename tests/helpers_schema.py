"""Episode databases of an earlier version, for the tests of what a newer one opens."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from tribalmemory.episodes.store import EpisodeStore
from tribalmemory.episodes.store.schema import SCHEMA


def older_store(
    folder: Path, columns: tuple[str, ...], rows: tuple[str, ...], tables: tuple[str, ...] = ()
) -> EpisodeStore:
    """The episode store opened on a database written in ``folder`` with the schema without
    the added ``columns`` (each as its line starts: name and type) and ``tables``, holding
    ``rows`` (``INSERT`` statements): what a newer version opens."""
    path = folder / "episodes.sqlite3"
    schema = SCHEMA
    for column in columns:
        schema, found = re.subn(rf"\n    {re.escape(column)}[^\n]*", "", schema)
        assert found == 1, column
    for table in tables:
        pattern = rf"CREATE TABLE IF NOT EXISTS {table} \(.*?WITHOUT ROWID;"
        schema, found = re.subn(pattern, "", schema, flags=re.S)
        assert found == 1, table
    old = sqlite3.connect(path)
    try:
        old.executescript(schema)
        for row in rows:
            old.execute(row)
        old.commit()
    finally:
        old.close()
    return EpisodeStore(path)
