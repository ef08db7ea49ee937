"""What every table class shares: the store's one connection."""

from __future__ import annotations

import sqlite3


class Table:
    """One table's statements. Reads run on the store's connection; writes take the connection
    the caller's transaction holds (``with store.transaction() as db``, the same connection), so
    that a change spanning tables stays one transaction."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
