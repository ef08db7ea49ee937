"""The intent log: the memories about to be stored whose decision is not yet in the database.

``remember()`` notes each memory here before storing it, one appended line in a file beside the
database (``episodes.sqlite3-intents``): a ``write()`` the operating system keeps across a
kill -9, as it keeps the SQLite WAL, for a fraction of what a transaction costs on the request
path. The decision then writes the memory's detection row; until it has, the memory is
*fresh*: pending, known from this log. When the database is opened, every memory of the log
without a detection row gets one (``pending``) with its detect job, and the log is emptied: a
memory stored and never decided (the process died between the two) is decided by the worker,
as before. The log is emptied whenever no memory is fresh, and rewritten with the fresh ones
when it grows long under a load that never leaves none.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

REWRITE_LINES = 10_000
"""Lines after which the log is rewritten with the fresh memories only (when some always are)."""


class IntentLog:
    """The fresh memories (in memory) and the file they are noted in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fresh: dict[str, float] = {}
        """Memory id -> its time, for every memory noted and not yet settled."""
        self._lines = 0
        self._fd = self._open()

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def logged(self) -> dict[str, float]:
        """The memories noted in the file (at start: those of the process before)."""
        out: dict[str, float] = {}
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                memory_id, at = json.loads(line)
                out[str(memory_id)] = float(at)
            except (ValueError, TypeError):  # cut short by a crash: never acknowledged
                continue
        return out

    def note(self, memory_id: str, memory_time: float) -> None:
        """Before the memory is stored: it is fresh until settled."""
        os.write(self._fd, _line(memory_id, memory_time))
        self.fresh[memory_id] = memory_time
        self._lines += 1

    def is_fresh(self, memory_id: str) -> bool:
        return memory_id in self.fresh

    def settle(self, memory_id: str) -> None:
        """The memory's decision is committed, or it is gone: the log need not keep it."""
        if self.fresh.pop(memory_id, None) is None:
            return
        if not self.fresh:
            self.clear()
        elif self._lines >= REWRITE_LINES:
            self._rewrite()

    def clear(self) -> None:
        """Empty the file (nothing noted is fresh any more)."""
        os.ftruncate(self._fd, 0)
        self._lines = 0

    def _rewrite(self) -> None:
        """Replace the file by one with the fresh memories only (a rename: a crash leaves the
        old file or the new one, both complete)."""
        new = self.path.with_name(self.path.name + ".new")
        new.write_bytes(b"".join(_line(m, t) for m, t in self.fresh.items()))
        os.replace(new, self.path)
        os.close(self._fd)
        self._fd = self._open()
        self._lines = len(self.fresh)

    def close(self) -> None:
        os.close(self._fd)


def _line(memory_id: str, memory_time: float) -> bytes:
    return (json.dumps([memory_id, memory_time]) + "\n").encode()
