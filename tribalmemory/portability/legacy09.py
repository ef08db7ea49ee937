"""Read a tribalmemory 0.9 data folder as an export file, which the importer then imports.

0.9 kept its memories in the LanceDB table ``memories`` and its episodes in ``episodes.db``
(SQLite), both in its ``db.path`` (default ``~/.tribal-memory/lancedb``). LanceDB is read
with the ``lancedb`` package from PyPI (the optional extra ``tribalmemory[import09]``);
``episodes.db`` with :mod:`sqlite3`, read-only.

The mapping (pure functions below, documented in docs/portability.md):

- memories keep their id, content, source instance and type, tags, context and times (0.9
  wrote naive UTC times); rows 0.9 deleted (``deleted = true``) are left out; ``supersedes``
  is kept and the superseded memory gets ``superseded_by``; ``confidence`` (when not 1) and
  ``related_to`` (when not empty) go into ``metadata``; 0.9's vectors are not used (another
  model): the memories are embedded on import.
- ``EPISODE_SUMMARY`` memories are not memories here: they are their episodes' summaries.
- episodes keep title, status, times, metadata and members; their id becomes ``ep-`` and the
  0.9 id's 32 hex digits; the summary is kept as an LLM summary (0.9's were), its summary
  memory id too; a memory that 0.9 had in several episodes joins the first it was added to.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..timeutil import to_iso, utc_now
from . import records

SOURCE = "tribalmemory-0.9"
TABLE = "memories"
EPISODES_DB = "episodes.db"
SUMMARY_TYPE = "episode_summary"
EXTRA = "pip install 'tribalmemory[import09]'"
COLUMNS = [
    "id",
    "content",
    "source_instance",
    "source_type",
    "created_at",
    "updated_at",
    "tags",
    "context",
    "confidence",
    "supersedes",
    "related_to",
    "deleted",
]


@dataclass
class Counts:
    memories: int = 0
    deleted: int = 0  # rows 0.9 had deleted: left out
    episodes: int = 0
    memberships_dropped: int = 0  # a memory 0.9 had in a second episode


def find_folder(path: Path) -> Path:
    """The folder that holds ``memories.lance``: the one given, or its ``lancedb``."""
    path = path.expanduser().resolve()
    for folder in (path, path / "lancedb"):
        if (folder / f"{TABLE}.lance").is_dir():
            return folder
    raise InvalidInput(
        f"{path} is not a tribalmemory 0.9 data folder: no {TABLE}.lance in it or in its "
        "lancedb/ (0.9 keeps it in ~/.tribal-memory/lancedb by default)"
    )


# -- pure mapping ----------------------------------------------------------------------------


def utc(text: str | None) -> str | None:
    """A 0.9 time (naive ISO 8601, UTC) with its zone."""
    if not text:
        return None
    return text if text.endswith("Z") or "+" in text[10:] else f"{text}Z"


def episode_id(old: str) -> str:
    """The id of a 0.9 episode here (its UUID's 32 hex digits after ``ep-``)."""
    try:
        return "ep-" + uuid.UUID(old).hex
    except ValueError:
        return "ep-" + "".join(c for c in old.lower() if c.isalnum())[:60]


def superseded_by(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Old memory id → the id of the memory that corrects it."""
    return {r["supersedes"]: r["id"] for r in rows if r.get("supersedes")}


def memory_record(
    row: dict[str, Any], corrected_by: str | None, episode: str | None
) -> dict[str, Any]:
    """A 0.9 LanceDB row as an export ``memory`` line."""
    metadata: dict[str, Any] = {}
    confidence = row.get("confidence")
    if confidence is not None and abs(confidence - 1.0) > 1e-6:
        metadata["confidence"] = round(float(confidence), 6)
    related = json.loads(row.get("related_to") or "[]")
    if related:
        metadata["related_to"] = related
    return {
        "type": "memory",
        "id": row["id"],
        "content": row["content"],
        "source_type": (row.get("source_type") or "unknown").upper(),
        "source_instance": row.get("source_instance") or "unknown",
        "tags": json.loads(row.get("tags") or "[]"),
        "context": row.get("context") or None,
        "created_at": utc(row.get("created_at")),
        "updated_at": utc(row.get("updated_at") or row.get("created_at")),
        "supersedes": row.get("supersedes") or None,
        "superseded_by": corrected_by,
        "metadata": metadata,
        "episode_id": episode,
    }


def episode_record(row: dict[str, Any], members: list[str]) -> dict[str, Any]:
    """A 0.9 ``episodes`` row and its members as an export ``episode`` line."""
    summary = row.get("summary") or ""
    return {
        "type": "episode",
        "id": episode_id(row["id"]),
        "title": row["title"],
        "title_source": "llm",
        "summary": summary,
        "summary_kind": "llm" if summary else "extractive",
        "summary_memory_id": row.get("summary_memory_id") or None,
        "status": row["status"],
        "created_at": utc(row["created_at"]),
        "updated_at": utc(row["updated_at"]),
        "closed_at": utc(row.get("closed_at")),
        "last_activity_at": None,
        "parent_episode_id": None,
        "metadata": json.loads(row.get("metadata_json") or "{}"),
        "structured": None,
        "memory_ids": members,
        "history": [],
    }


# -- reading ---------------------------------------------------------------------------------


def read_memories(folder: Path) -> list[dict[str, Any]]:
    """Every row of 0.9's memory table (without vectors)."""
    try:
        import lancedb
    except ImportError:
        raise InvalidInput(
            f"reading a 0.9 data folder needs the LanceDB reader: {EXTRA}; or import an "
            "export file instead"
        ) from None
    try:
        table = lancedb.connect(str(folder)).open_table(TABLE)
        present = set(table.schema.names)
        data = table.to_arrow().select([c for c in COLUMNS if c in present])
    except Exception as exc:  # lancedb raises its own and OSError kinds
        raise InvalidInput(f"cannot read the 0.9 memories in {folder}: {exc}") from None
    return data.to_pylist()


def read_episodes(folder: Path) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """0.9's episodes (oldest first) and their member ids in the order they were added."""
    path = folder / EPISODES_DB
    if not path.exists():
        return [], {}
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        episodes = [dict(r) for r in db.execute("SELECT * FROM episodes ORDER BY created_at, id")]
        members: dict[str, list[str]] = {}
        for r in db.execute(
            "SELECT episode_id, memory_id FROM episode_memories ORDER BY added_at, rowid"
        ):
            members.setdefault(r["episode_id"], []).append(r["memory_id"])
    except sqlite3.Error as exc:
        raise InvalidInput(f"cannot read the 0.9 episodes in {path}: {exc}") from None
    finally:
        db.close()
    return episodes, members


def export_lines(path: Path, model: str, dim: int, counts: Counts) -> Iterator[str]:
    """The 0.9 data folder at ``path`` as the lines of an export file."""
    folder = find_folder(path)
    rows = read_memories(folder)
    episodes, members = read_episodes(folder)
    live = [r for r in rows if not r.get("deleted")]
    counts.deleted = len(rows) - len(live)
    memories = [r for r in live if (r.get("source_type") or "") != SUMMARY_TYPE]
    known = {r["id"] for r in memories}
    placed: dict[str, str] = {}
    kept: dict[str, list[str]] = {}
    for episode in episodes:
        ids = []
        for memory_id in members.get(episode["id"], []):
            if memory_id not in known:
                continue
            if memory_id in placed:
                counts.memberships_dropped += 1
                continue
            placed[memory_id] = episode_id(episode["id"])
            ids.append(memory_id)
        kept[episode["id"]] = ids
    corrected = superseded_by(memories)
    yield records.dumps(records.header(model, dim, to_iso(utc_now()), None, False))
    for row in memories:
        yield records.dumps(memory_record(row, corrected.get(row["id"]), placed.get(row["id"])))
    for episode in episodes:
        yield records.dumps(episode_record(episode, kept[episode["id"]]))
    counts.memories, counts.episodes = len(memories), len(episodes)
    yield records.dumps(records.end(len(memories), len(episodes)))


def write_export(path: Path, target: Path, model: str, dim: int) -> Counts:
    """Write the 0.9 data folder at ``path`` as an export file ``target``."""
    counts = Counts()
    with target.open("w", encoding="utf-8") as handle:
        for line in export_lines(path, model, dim, counts):
            handle.write(line)
    return counts
