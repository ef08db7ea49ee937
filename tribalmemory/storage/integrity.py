"""Damaged files never destroy data: start-up checks what it is about to open, and stops.

A damaged or missing data file must not be mistaken for a new one: a truncated
``episodes.sqlite3`` used to start empty (and then delete every episode summary as an orphan),
a truncated ledger silently reset the month's LLM spend. So before the daemon opens anything:

- ``datafiles.json`` in the data folder lists the files the daemon has created (and the store's
  folder); a listed file that is now missing or empty is damaged, not new;
- each SQLite file must pass ``PRAGMA quick_check`` and still hold its main table;
- the embedded store checks its own folder (``storage/edge/checks.py``).

A problem raises :class:`DamagedDataError`: start-up stops with a message naming the file and
how to recover (``tribalmemory doctor``), and nothing is changed or deleted.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..datafolder import FILE_MODE
from ..timeutil import to_iso, utc_now
from .base import StorageError

log = logging.getLogger("tribalmemory.storage")

MANIFEST = "datafiles.json"
DOCTOR_HINT = (
    "Run `tribalmemory doctor` to see what is damaged and `tribalmemory doctor --repair` to "
    "move damaged files aside (nothing is deleted) and rebuild what can be rebuilt, or restore "
    "the file from a backup."
)


class DamagedDataError(StorageError):
    """A data file is damaged or missing; start-up stops and nothing is changed."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{path} {problem}. Start-up stopped; nothing was deleted. {DOCTOR_HINT}")


@dataclass(frozen=True)
class SqliteFile:
    """A SQLite file of the data folder and the table that holds its data."""

    name: str
    table: str
    holds: str


EPISODES_DB = SqliteFile(
    "episodes.sqlite3", "episodes", "the episodes, their memberships and their work queue"
)
LEDGER_DB = SqliteFile("ledger.sqlite3", "calls", "every LLM call and this month's spend")
SQLITE_FILES = (EPISODES_DB, LEDGER_DB)
INTENT_SUFFIX = "-intents"
"""The episode database's intent log is the file of its name and this suffix: the memories noted
before they are stored and not yet decided (``episodes/store/intents.py``)."""
INTENT_LOG = EPISODES_DB.name + INTENT_SUFFIX
BLANK_EPISODES: dict[str, str] = {
    "episodes": "SELECT 1 FROM episodes LIMIT 1",
    "memberships": "SELECT 1 FROM memberships LIMIT 1",
    "meta": "SELECT 1 FROM meta LIMIT 1",
    "detections": "SELECT 1 FROM detections WHERE state != 'pending' LIMIT 1",
    "jobs": "SELECT 1 FROM jobs WHERE kind != 'detect' LIMIT 1",
}
"""An episode database is blank (new, or lost or emptied: the rule of reconcile(),
``episodes/safety.py``) when none of these finds a row, by table. Memories waiting for their
first decision do not count: those the intent log puts in at start must not hide a lost one."""


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` in one step (write a temporary file, fsync, rename, fsync the folder)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), FILE_MODE)  # private, like every file of the data folder
        json.dump(data, handle, indent=2)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# -- the manifest: which files the daemon has created ---------------------------------------


def read_manifest(data: Path) -> dict[str, Any]:
    """``datafiles.json`` (empty when there is none yet); DamagedDataError if unreadable."""
    path = data / MANIFEST
    if not path.exists():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files", {}), dict):
            raise ValueError("not an object with a 'files' object")
    except (OSError, ValueError) as exc:
        raise DamagedDataError(path, f"is damaged ({exc})") from None
    return manifest


def record_manifest(data: Path, files: dict[str, str]) -> None:
    """Add ``files`` (name -> what) to the manifest, keeping what it lists."""
    manifest = read_manifest(data)
    listed = manifest.setdefault("files", {})
    new = {name: what for name, what in files.items() if name not in listed}
    store = files.get("store")
    if not new and (store is None or listed.get("store") == store):
        return
    now = to_iso(utc_now())
    for name, what in files.items():
        if name == "store":
            listed["store"] = what  # the store's folder: the latest configured one
        elif name not in listed:
            listed[name] = what
    manifest.setdefault("created_at", now)
    manifest["updated_at"] = now
    write_json_atomically(data / MANIFEST, manifest)


def store_entry(data: Path, store_path: Path) -> str:
    """How the manifest names the store folder: relative to the data folder when inside it
    (so that a copied or moved data folder still checks its store), else absolute."""
    try:
        return str(store_path.resolve().relative_to(data.resolve()))
    except ValueError:
        return str(store_path.resolve())


def present_files(data: Path, store_path: Path | None) -> dict[str, str]:
    """What the manifest should list now: the SQLite files that exist and the store folder."""
    files = {f.name: f.holds for f in SQLITE_FILES if (data / f.name).exists()}
    if store_path is not None and (store_path / "store.json").exists():
        files["store"] = store_entry(data, store_path)
    return files


# -- checks ---------------------------------------------------------------------------------


def sqlite_problem(path: Path, table: str, known: bool) -> str | None:
    """What is wrong with a SQLite file, or None. A file the manifest lists (``known``) must
    exist and hold ``table``; an unlisted missing file is simply new."""
    if not path.exists():
        return (
            "is missing, though it was created before (datafiles.json lists it)" if known else None
        )
    try:
        conn = sqlite3.connect(str(path), isolation_level=None)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return f"is not a readable SQLite database ({exc})"
    if rows != ["ok"]:
        return f"is damaged (SQLite quick_check: {'; '.join(map(str, rows[:3]))})"
    if known and table not in tables:
        return (
            f"is empty: it had a {table!r} table, which is gone (truncated or replaced by an "
            "empty file?)"
        )
    return None


def check_store_present(manifest: dict[str, Any], data: Path, store_path: Path) -> None:
    """The embedded store the manifest lists must still be there (else it would start empty)."""
    if manifest.get("files", {}).get("store") != store_entry(data, store_path):
        return  # never opened here, or the configured store folder changed on purpose
    if not (store_path / "store.json").exists():
        what = "is gone" if not store_path.exists() else "has no store.json any more"
        raise DamagedDataError(
            store_path,
            f"{what}, though it held the memories (datafiles.json lists it); starting would "
            "create an empty store",
        )


def check_sqlite_files(data: Path, manifest: dict[str, Any]) -> None:
    """Every SQLite file of the episode engine passes :func:`sqlite_problem`."""
    listed = manifest.get("files", {})
    for sqlite_file in SQLITE_FILES:
        path = data / sqlite_file.name
        problem = sqlite_problem(path, sqlite_file.table, sqlite_file.name in listed)
        if problem:
            raise DamagedDataError(path, f"{problem}. It holds {sqlite_file.holds}")
