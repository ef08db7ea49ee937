"""Backup and restore of the data folder.

A backup is a folder: ``store/`` (a copy of the embedded store, taken with its lock held and
its segments flushed, while no memory is being written), ``episodes.sqlite3``,
``ledger.sqlite3`` and ``access.sqlite3`` (SQLite's online backup API: a consistent copy
while the daemon writes), the episode database's intent log when a memory stored is not yet
decided,
the small JSON files of the data folder and ``backup.json`` (what was copied, when, by which
version). It can be taken while the daemon runs (``POST /v1/backup`` or the CLI through it).

Restore copies a backup into a data folder that holds no data yet (``--force`` replaces the
data files that are there), with no daemon running on it.

A backup that fills its disk stops with :class:`~tribalmemory.errors.InsufficientStorage`
(507) and what it had copied is removed. One into the data's own disk must leave the reserve
that the store needs (storage.min_free_mb): it is refused before anything is copied when the
files to copy would not leave it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import Config
from ..datafolder import IDENTITY_FILE
from ..errors import Conflict, InsufficientStorage, InvalidInput
from ..service import MemoryService
from ..service.access import ACCESS_FILE
from ..storage.base import FolderStore
from ..storage.edge.folder import LOCK_FILE, FolderLock
from ..storage.integrity import INTENT_LOG, INTENT_SUFFIX, SQLITE_FILES, write_json_atomically
from ..storage.space import MB, allocated, existing_parent, is_disk_full
from ..timeutil import to_iso, utc_now
from .sparse import copy_sparse

log = logging.getLogger("tribalmemory.backup")

MANIFEST = "backup.json"
STORE = "store"
KEEP_OUT = {"lock", "daemon.pid", "daemon.log"}  # per process, not data
DATA_JSON = ("datafiles.json", "auth.json")
"""Copied as they are. Not ``identity.json``: a data folder keeps an identity of its own (see
:func:`restored`)."""


def _empty_folder(path: Path) -> bool:
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


DATABASES = (*(db.name for db in SQLITE_FILES), ACCESS_FILE)
"""The SQLite files backed up; ``access.sqlite3`` holds the access statistics."""


def sqlite_copy(source: Path, target: Path) -> None:
    """A consistent copy of a live SQLite database (online backup API)."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def _copy_store(service: MemoryService, target: Path) -> int:
    """Copy the embedded store with its lock held (no write can start), segments flushed."""
    store = service.store
    if not isinstance(store, FolderStore):
        raise InvalidInput(
            "backup copies the embedded store; a Qdrant server is backed up with its own "
            "snapshots (`tribalmemory export --vectors` saves the memories meanwhile)"
        )
    with store.lock:
        store.flush()
        shutil.copytree(
            store.root,
            target,
            ignore=lambda _d, names: [n for n in names if n in KEEP_OUT],
            copy_function=copy_sparse,
        )
    return int(store.count())


async def backup(config: Config, service: MemoryService, dest: Path) -> dict[str, Any]:
    """Write a backup of the running data folder into ``dest`` (new or empty); a full disk
    is InsufficientStorage (507), with what was copied removed."""
    dest = dest.expanduser().resolve()
    if dest.exists() and not dest.is_dir():
        raise InvalidInput(f"{dest} is a file; back up into a new or empty folder")
    if not _empty_folder(dest):
        raise Conflict(f"{dest} is not empty; back up into a new or empty folder")
    data = config.data_path.resolve()
    if dest == data or data in dest.parents:
        raise InvalidInput(f"{dest} is inside the data folder {data}; choose a folder outside")
    _check_room(config, service, dest)
    existed = dest.exists()
    try:
        dest.mkdir(parents=True, exist_ok=True, mode=0o700)
        return await _write(config, service, dest, data)
    except Exception as exc:
        if isinstance(exc, OSError) and not is_disk_full(exc) and not dest.is_dir():
            raise InvalidInput(
                f"cannot create the folder {dest} ({exc.strerror or exc}); back up into a "
                "folder that can be created and written"
            ) from None
        if not is_disk_full(exc):
            raise
        _remove_partial(dest, existed)
        log.warning("backup into %s failed, its disk is full: %s", dest, _first_line(exc))
        raise InsufficientStorage(
            f"the disk holding {dest} is full ({_first_line(exc)}); the backup was not "
            "written and what it had copied was removed. Free disk space there, or back up "
            "to another disk, and retry"
        ) from None


async def _write(config: Config, service: MemoryService, dest: Path, data: Path) -> dict[str, Any]:
    async with service.write_lock():
        memories = await asyncio.to_thread(_copy_store, service, dest / STORE)
        files = [STORE]
        # before the episode database: each memory it names (stored, its decision not yet
        # written) is decided in the database's copy or pending by it when the copy starts
        intents = data / INTENT_LOG
        noted = intents.exists() and intents.stat().st_size > 0
        if noted:
            shutil.copy2(intents, dest / INTENT_LOG)
        for name in DATABASES:
            if (data / name).exists():
                await asyncio.to_thread(sqlite_copy, data / name, dest / name)
                files.append(name)
        if noted:  # listed after the databases: a restore puts it back once they are
            files.append(INTENT_LOG)
    for name in DATA_JSON:
        if (data / name).exists():
            shutil.copy2(data / name, dest / name)
            files.append(name)
    manifest = {
        "format": "tribalmemory-backup",
        "version": 1,
        "created_at": to_iso(utc_now()),
        "tribalmemory": __version__,
        "model": service.embedder.model_name,
        "memories": memories,
        "files": files,
    }
    write_json_atomically(dest / MANIFEST, manifest)
    return {"path": str(dest), **manifest}


def backup_size(config: Config) -> int:
    """Bytes a backup writes, about: what the store's files take on disk (their holes stay
    holes: :mod:`.sparse`) and the sizes of the databases and JSON files."""
    total = 0
    roots = [config.store_path] if config.store_path.is_dir() else []
    for root in roots:
        for folder, _dirs, names in os.walk(root):
            total += sum(allocated(Path(folder) / n) for n in names if n not in KEEP_OUT)
    for name in (*DATABASES, *DATA_JSON):
        total += _size(config.data_path / name)
    return total


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _check_room(config: Config, service: MemoryService, dest: Path) -> None:
    """A backup into the disk of the data must leave the reserve (storage.min_free_mb): the
    store needs it (a full disk stops the daemon). Refused (507) before anything is copied."""
    space = service.space
    if space is None:
        return
    try:
        target = os.stat(existing_parent(dest)).st_dev
        shared = any(os.stat(existing_parent(p)).st_dev == target for p in space.paths)
        if not shared:
            return
        needed, free = backup_size(config), space.free_bytes()
    except OSError as exc:
        log.warning("cannot compare the backup's disk with the data's (%s)", exc)
        return
    if free - needed < space.reserve_bytes:
        log.warning(
            "backup into %s refused: %d MB to copy, %d MB free on the data's disk",
            dest,
            needed // MB,
            free // MB,
        )
        raise InsufficientStorage(
            f"a backup into {dest} would copy up to {needed // MB + 1} MB onto the disk of the "
            f"data, which has {free // MB} MB free and must keep {space.reserve_bytes // MB} MB "
            "free (storage.min_free_mb); nothing was copied. Back up to another disk, or free "
            "disk space and retry"
        )


def _remove_partial(dest: Path, existed: bool) -> None:
    """Remove what a failed backup wrote into ``dest`` (the folder too if it made it)."""
    if not existed:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for child in dest.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _first_line(exc: BaseException) -> str:
    """An error's message, short: shutil.Error lists every file that failed."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "No space left on device" in text and len(text) > 200:
        return "No space left on device"
    return text[:200]


BACKED_UP = frozenset({STORE, *DATABASES, *DATA_JSON, INTENT_LOG, IDENTITY_FILE})
"""Every name a backup's ``files`` may list: what :func:`backup` writes, and ``identity.json``,
which backups of earlier versions hold (:func:`restored` leaves it out)."""


def restored(manifest: dict[str, Any]) -> list[str]:
    """The files of a backup that a restore copies: all but ``identity.json``. A client checks
    that the daemon on its port proves the identity of its own data folder; a copy restored
    beside the original with the same identity could answer for it. The folder restored into
    keeps its identity, or gets a new one when its daemon first starts."""
    return [name for name in manifest["files"] if name != IDENTITY_FILE]


def read_manifest(source: Path) -> dict[str, Any]:
    """``backup.json`` of the backup ``source``, checked whole before anything is restored:
    version 1, a count of memories, and files that a backup writes and that are there (a
    name outside :data:`BACKED_UP`, ``config.yaml`` or ``../x``, would be restored over a file
    restore never touches)."""
    path = source / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{source} is not a tribalmemory backup ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "tribalmemory-backup":
        raise InvalidInput(f"{path} is not a tribalmemory backup manifest")
    version = manifest.get("version")
    if version != 1:
        made = manifest.get("tribalmemory", "another version")
        raise InvalidInput(
            f"{path} is a backup of format version {version!r} (made by tribalmemory {made}); "
            "this version restores format 1: restore it with the version that made it"
        )
    files, memories = manifest.get("files"), manifest.get("memories")
    if not isinstance(memories, int) or isinstance(memories, bool) or memories < 0:
        raise InvalidInput(f"{path}: memories must be a count, got {memories!r}")
    if not isinstance(files, list) or not files:
        raise InvalidInput(f"{path}: files must be the list of the files backed up")
    for name in files:
        if not isinstance(name, str) or name not in BACKED_UP or files.count(name) > 1:
            raise InvalidInput(
                f"{path}: {name!r} is not a file a backup writes (or is listed twice); "
                f"expected some of {', '.join(sorted(BACKED_UP))}"
            )
        found = source / name
        if not (found.is_dir() if name == STORE else found.is_file()):
            raise InvalidInput(f"{path} lists {name}, which is missing from {source}")
    return manifest


def target(config: Config, name: str) -> Path:
    """Where a backed-up file goes back to (the store may live outside the data folder)."""
    return config.store_path if name == STORE else config.data_path / name


def data_files(config: Config) -> list[str]:
    """What a restore would replace (the folder's data, not its configuration)."""
    names = {STORE, *DATABASES, *DATA_JSON}
    found = (n for n in names if target(config, n).exists())
    return sorted(n for n in found if n != STORE or any(config.store_path.iterdir()))


def restore(
    source: Path,
    config: Config,
    force: bool,
    progress: Callable[[int], None] | None = None,
    manifest: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Copy the backup ``source`` into the configured data folder, with no daemon on it (the
    caller checks its port and pid file; the store's lock is held throughout, so a daemon
    started elsewhere is refused here). The backup is copied in full beside the files it
    replaces first, then each is swapped in: a backup that cannot be copied (a file missing,
    a full disk) leaves the data folder as it was. ``manifest``: what :func:`read_manifest`
    gave the caller for ``source`` (read here otherwise)."""
    source = source.expanduser().resolve()
    if manifest is None:
        manifest = read_manifest(source)
    names = restored(manifest)
    data = config.data_path
    present = data_files(config)
    if present and not force:
        raise Conflict(
            f"the data folder {data} holds data already ({', '.join(present)}); restore "
            "into an empty one, or add --force to replace it",
        )
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = _hold_store(config)
    staged: dict[str, Path] = {}
    try:
        tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        for name in names:
            src, dst = source / name, target(config, name)
            staged[name] = dst.with_name(f".restore-{tag}-{dst.name}")
            if src.is_dir():
                shutil.copytree(src, staged[name], copy_function=copy_sparse)
            else:
                shutil.copy2(src, staged[name])
            if progress is not None:
                progress(1)
        _swap_in(config, staged, tag)
    finally:
        for path in staged.values():  # what was not swapped in (a failed copy)
            _remove(path)
        if lock is not None:
            lock.release()
    return {"path": str(data), "restored": names, "memories": manifest["memories"]}


def _hold_store(config: Config) -> FolderLock | None:
    """The embedded store's lock, held (StoreLockedError when a daemon holds it)."""
    root = config.store_path
    if config.storage.qdrant_url or not root.is_dir():
        return None
    lock = FolderLock(root / LOCK_FILE, str(root))
    lock.acquire()
    return lock


SIDE_FILES = ("-wal", "-shm", INTENT_SUFFIX)
"""What goes with a database it replaces: its journal, and the episode database's intent log."""


def _swap_in(config: Config, staged: dict[str, Path], tag: str) -> None:
    """Put each staged file in place of the one it replaces (renames, on one disk); the
    replaced ones, with their :data:`SIDE_FILES`, are set aside, then removed. A rename that
    fails puts every file back as it was."""
    aside: list[tuple[Path, Path]] = []
    placed: list[Path] = []
    try:
        for name, path in staged.items():
            dst = target(config, name)
            for old in (dst, *(dst.with_name(dst.name + side) for side in SIDE_FILES)):
                if old.exists() or old.is_symlink():
                    moved = old.with_name(f".replaced-{tag}-{old.name}")
                    os.replace(old, moved)
                    aside.append((moved, old))
            os.replace(path, dst)
            placed.append(dst)
    except OSError:
        for dst in placed:
            _remove(dst)
        for moved, old in reversed(aside):
            os.replace(moved, old)
        raise
    for moved, _ in aside:
        _remove(moved)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
