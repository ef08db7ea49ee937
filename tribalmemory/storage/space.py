"""Free disk space: refuse writes (507) before the disk is full, not after.

Qdrant Edge writes its WAL and its appendable segment through memory-mapped, sparse files:
a page is allocated on disk when it is first written. On a full disk that write cannot be
refused with an error: the kernel kills the process with SIGBUS (measured: the daemon died at
the 40th write on a nearly full tmpfs). So the daemon keeps ``storage.min_free_mb`` free on the
filesystems of the data folder and the store: a write that would leave less is refused with
:class:`~tribalmemory.errors.InsufficientStorage` before anything is written, reads go on, and
writes succeed again as soon as space returns (each write checks; ``statvfs`` costs ~2 µs).
Another process can still take the last bytes between the check and the write: the reserve
is the margin for that.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import InsufficientStorage

log = logging.getLogger("tribalmemory.storage")

MB = 1024 * 1024
Statvfs = Callable[[str], os.statvfs_result]


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says that the disk (or the file size limit) is exhausted."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    if isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc):
        return True
    text = str(exc)
    return "No space left on device" in text or "Disk quota exceeded" in text


def existing_parent(path: Path) -> Path:
    """``path`` or its nearest existing ancestor (statvfs needs an existing path)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


class DiskSpace:
    """The free space of the filesystems holding ``paths``; refuses writes below the reserve."""

    def __init__(
        self, paths: Iterable[Path], reserve_bytes: int, statvfs: Statvfs = os.statvfs
    ) -> None:
        self.paths = list(dict.fromkeys(Path(p) for p in paths))
        self.reserve_bytes = reserve_bytes
        self._statvfs = statvfs
        self.full = False  # the last check found less than the reserve
        self.refused = 0  # writes refused since start

    def free_bytes(self) -> int:
        """The smallest free space (for unprivileged users) among the filesystems."""
        free = []
        for path in self.paths:
            st = self._statvfs(str(existing_parent(path)))
            free.append(st.f_bavail * st.f_frsize)
        return min(free)

    def check(self, writing: int = 0) -> None:
        """Raise InsufficientStorage if writing ``writing`` bytes would leave less than the
        reserve; log when the state changes."""
        free = self.free_bytes()
        if free - writing >= self.reserve_bytes:
            if self.full:
                self.full = False
                log.warning(
                    "disk space is back (%d MB free): writes are accepted again", free // MB
                )
            return
        self.refused += 1
        if not self.full:
            self.full = True
            log.warning(
                "disk nearly full: %d MB free on %s, %d MB kept free (storage.min_free_mb); "
                "writes get 507 until space is freed",
                free // MB,
                ", ".join(map(str, self.paths)),
                self.reserve_bytes // MB,
            )
        raise InsufficientStorage(self.message(free))

    def message(self, free: int) -> str:
        return (
            f"the disk holding the data is nearly full ({free // MB} MB free, "
            f"{self.reserve_bytes // MB} MB are kept free: storage.min_free_mb); nothing was "
            f"stored. Free disk space on {', '.join(map(str, self.paths))} and retry"
        )

    def status(self) -> dict[str, Any]:
        """For /v1/health."""
        try:
            free = self.free_bytes()
        except OSError as exc:
            return {
                "state": "unknown",
                "free_mb": None,
                "reserve_mb": self.reserve_bytes // MB,
                "writes_refused": self.refused,
                "error": str(exc),
            }
        return {
            "state": "ok" if free >= self.reserve_bytes else "full",
            "free_mb": free // MB,
            "reserve_mb": self.reserve_bytes // MB,
            "writes_refused": self.refused,
            "error": None,
        }
