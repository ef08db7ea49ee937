"""The store folder: its lock, its commit record (store.json) and the shard folders in it."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ...timeutil import to_iso, utc_now
from .. import lexical
from ..base import LAYOUT_KEY, store_locked
from ..integrity import DamagedDataError, write_json_atomically

META_FILE = "store.json"
LOCK_FILE = "lock"
FORMAT = 1
SHARD_DIR = re.compile(r"^shard-(\d+)$")


class FolderLock:
    """An exclusive, non-blocking ``flock`` on a file; released on close or process exit."""

    def __init__(self, path: Path, location: str) -> None:
        self.path = path
        self.location = location
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the engine's WAL lock still applies
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise store_locked(self.location, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def read_meta(root: Path) -> dict[str, Any] | None:
    path = root / META_FILE
    if not path.exists():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        meta["model_name"], meta["dim"], meta["shard"]  # noqa: B018 - required keys
        if not SHARD_DIR.match(str(meta["shard"])):
            raise ValueError(f"shard {meta['shard']!r} is not a shard folder name")
        int(meta["dim"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedDataError(path, f"is damaged ({type(exc).__name__}: {exc})") from None
    return meta


def write_meta(
    root: Path,
    model_name: str,
    dim: int,
    shard: str,
    state: dict[str, Any] | None = None,
    *,
    layout: int | None = None,
) -> None:
    """Atomically replace store.json (write, fsync, rename, fsync the folder). ``layout``:
    the shard's :data:`~..base.SPARSE_LAYOUT` once it is known to hold it (None: not
    recorded, and the next open migrates the shard, which changes nothing if it need not)."""
    meta: dict[str, Any] = {
        "format": FORMAT,
        "backend": "edge",
        "model_name": model_name,
        "dim": dim,
        "shard": shard,
        "lexical": lexical.SIGNATURE,
        "written_at": to_iso(utc_now()),
    }
    if layout is not None:
        meta[LAYOUT_KEY] = layout
    if state is not None:
        meta["state"] = state
    write_json_atomically(root / META_FILE, meta)


def remove_stale_shards(root: Path, keep: str) -> None:
    """Delete shard folders store.json does not name (an interrupted or finished rebuild)."""
    for path in root.iterdir():
        if path.is_dir() and SHARD_DIR.match(path.name) and path.name != keep:
            shutil.rmtree(path, ignore_errors=True)
