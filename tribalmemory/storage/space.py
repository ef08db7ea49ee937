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

Opening the store maps its files too: started on a full disk, the daemon died of SIGBUS
before it could say anything (issue 40 item 15). So the store is not opened while less than the
reserve is free (:func:`check_room_to_start`): start-up stops with :class:`DiskFullError` and a
one-line reason. On a filesystem in memory (tmpfs), loading the store also fills the holes of
its sparse files (measured: 80 MB for a store of 6 memories, whose files take 0.5 MB on ext4),
so there the holes must be free too.
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
from .base import StorageError

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


class DiskFullError(StorageError):
    """Start-up refused: less than the reserve is free on the data's disk."""


MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "shm"})
"""Filesystems where mapping a sparse file fills its holes (they have no blocks to defer to)."""


def check_room_to_start(space: DiskSpace, store: Path | None = None) -> None:
    """Raise DiskFullError unless the reserve (and, on a filesystem in memory, the holes of
    the ``store`` folder's sparse files) is free, before the store is opened; a filesystem
    whose free space cannot be read is let through (logged)."""
    try:
        free = space.free_bytes()
        filling = 0
        if store is not None and filesystem_type(store, _mounts()) in MEMORY_FILESYSTEMS:
            filling = holes(store)
    except OSError as exc:
        log.warning("cannot read the free disk space (%s); starting without that check", exc)
        return
    needed = space.reserve_bytes + filling
    if free < needed:
        fills = ""
        if filling:
            fills = f", and opening the store fills {filling // MB} MB of its sparse files"
        raise DiskFullError(
            f"the disk holding the data is full ({free // MB} MB free on "
            f"{', '.join(map(str, space.paths))}; {space.reserve_bytes // MB} MB must stay "
            f"free: storage.min_free_mb{fills}). Nothing was opened or changed. Free disk "
            "space and start again"
        )


def _on_disk(st: os.stat_result) -> int:
    return min(st.st_size, st.st_blocks * 512)


def allocated(path: Path) -> int:
    """Bytes ``path`` takes on disk (at most its size; 0 when it cannot be read): a sparse
    file's holes take none."""
    try:
        return _on_disk(path.stat())
    except OSError:
        return 0


def holes(folder: Path) -> int:
    """Bytes of the files under ``folder`` not allocated yet (sparse files' holes)."""
    total = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            try:
                st = os.stat(Path(root) / name)
            except OSError:
                continue
            total += st.st_size - _on_disk(st)
    return total


def filesystem_type(path: Path, mounts: str) -> str | None:
    """The type of the filesystem holding ``path``, from the text of ``/proc/self/mounts``
    (the longest mount point above it); None when unknown."""
    path = existing_parent(path.resolve())
    best: tuple[int, str | None] = (-1, None)
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        point = Path(parts[1].replace("\\040", " "))
        if (point == path or point in path.parents) and len(point.parts) > best[0]:
            best = (len(point.parts), parts[2])
    return best[1]


def _mounts() -> str:
    try:
        return Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""  # not Linux: no filesystem in memory is recognised


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
