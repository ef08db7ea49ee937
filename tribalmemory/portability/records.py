"""The export format: one JSON object per line (pure functions, no I/O).

Line 1 is the header (``{"type": "header", "format": "tribalmemory-export", "version": 1,
...}``); then ``memory`` lines (a memory with its tags, times, source, the episode it belongs
to and, optionally, its vector) and ``episode`` lines (an episode with its summary, structured
fields, status, chain parent and member ids), then ``cause`` lines (the causal links a user
added by hand whose two nodes are in the file; derived links are derived again from the
records); the last line is ``{"type": "end", "memories": N, "episodes": M, "causes": K}``, so
a file cut short (a dropped connection, a full disk) is recognised.
Episode summary memories are not exported as memories: they are the episodes' ``summary``.

Import also takes plain lines: one memory per line, ``{"content": ..., "created_at": ...,
"tags": [...], "source_instance": ..., "project": ...}`` (the keys of
:data:`~tribalmemory.shapes.PLAIN_IMPORT_FIELDS`), without header, ids or end line. Each gets
an id derived from what it says (:func:`plain_id`), so importing the same file twice adds
nothing.
"""

from __future__ import annotations

import json
import typing
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import validation as check
from ..episodes import derived, structured
from ..errors import InvalidInput, TribalError
from ..models import ENGINE_WRITTEN, Memory
from ..shapes import (
    EPISODE_STATUSES,
    MAX_CAUSE_NOTE_CHARS,
    MAX_CONTEXT_CHARS,
    MAX_RUN_CHARS,
    MAX_SESSION_CHARS,
    MAX_SOURCE_INSTANCE_CHARS,
    PLAIN_IMPORT_FIELDS,
    HistoryActor,
)
from ..storage.base import check_rows

FORMAT = "tribalmemory-export"
VERSION = 1
MAX_LINE_BYTES = 4 * 1024 * 1024  # one memory with its vector is a few kB
TYPES = ("header", "memory", "episode", "cause", "end")
TITLE_SOURCES = ("keyword", "llm", "user")
SUMMARY_KINDS = ("extractive", "llm")
MAX_IMPORTED_TITLE = 2000  # a bound against garbage: the engine's own titles are far shorter
HISTORY_ACTORS: tuple[str, ...] = typing.get_args(HistoryActor)


def header(
    model: str,
    dim: int,
    exported_at: str,
    since: str | None,
    vectors: bool,
    project: str | None = None,
) -> dict:
    """``project``: the one project exported (null: every project)."""
    return {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at,
        "model": model,
        "dim": dim,
        "since": since,
        "vectors": vectors,
        "project": project,
    }


def end(memories: int, episodes: int, causes: int = 0) -> dict[str, Any]:
    return {"type": "end", "memories": memories, "episodes": episodes, "causes": causes}


def memory_record(
    memory: Memory, episode_id: str | None, vector: list[float] | None
) -> dict[str, Any]:
    record = {"type": "memory", **memory.to_json(), "episode_id": episode_id}
    if vector is not None:
        record["vector"] = vector
    return record


ACCESS_FIELDS = ("access_count", "last_accessed_at", "retrievability")
"""Access statistics: not exported (an imported item starts fresh)."""


def _as_stored(structured: Any) -> Any:
    """A structured record without what a read adds to it: each decision's and event's
    ``links`` (the causal links of the memory it rests on, kept in a table of their own)."""
    if not isinstance(structured, dict):
        return structured
    out = dict(structured)
    for key in ("decisions", "events"):
        if isinstance(out.get(key), list):
            out[key] = [
                {k: v for k, v in item.items() if k != "links"} if isinstance(item, dict) else item
                for item in out[key]
            ]
    return out


def episode_record(detail: dict[str, Any]) -> dict[str, Any]:
    """An episode line from ``TribalAPI.episode_get``'s answer (with its history), without
    its access statistics and without the causal links a read adds to its record."""
    episode = {k: v for k, v in detail["episode"].items() if k not in ACCESS_FIELDS}
    if "structured" in episode:
        episode["structured"] = _as_stored(episode["structured"])
    return {
        "type": "episode",
        **episode,
        "memory_ids": list(detail["memory_ids"]),
        "history": list(detail.get("history") or []),
    }


def episode_nodes(line: dict[str, Any]) -> set[str]:
    """The causal nodes an episode line brings: the episode, and the memories the engine
    writes for it again on import (its summary, lessons, decisions and facts: their ids are
    the episode's)."""
    episode_id = line["id"]
    owned = derived.expected_ids(episode_id, line.get("structured") or {})
    if line.get("summary_memory_id"):
        owned.append(line["summary_memory_id"])
    return {f"episode:{episode_id}", *(f"memory:{m}" for m in owned)}


def cause_record(link: dict[str, Any]) -> dict[str, Any]:
    """A cause line: a user's link as ``GET /v1/causes`` shows it, with its project."""
    return {"type": "cause", **link}


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


PLAIN_IDS = uuid.UUID("6d2f3c1e-8b4a-5e0f-9c7d-2a1b3c4d5e6f")
"""The namespace of plain lines' ids (:func:`plain_id`)."""


@dataclass
class Header:
    """An export's header; for plain lines (``plain``), what their memories get when a line
    does not say: ``imported_at`` as created_at, ``default_instance`` as source_instance."""

    model: str
    dim: int
    vectors: bool
    plain: bool = False
    imported_at: datetime | None = None
    default_instance: str = "default"


def plain_header(imported_at: datetime, default_instance: str) -> Header:
    """The header of a file of plain lines (it has none): no model, no vectors."""
    return Header("", 0, False, True, imported_at, default_instance)


@dataclass
class ImportedMemory:
    memory: Memory
    vector: list[float] | None = None


@dataclass
class ImportedEpisode:
    """An episode line, checked; times are epoch seconds (as the episode store keeps them).
    ``as_record()`` is what the episode engine's ``restore_episode`` takes."""

    id: str
    title: str
    title_source: str
    summary: str
    summary_kind: str
    summary_memory_id: str | None
    status: str
    created_at: float
    updated_at: float
    closed_at: float | None
    last_activity: float | None
    parent_episode_id: str | None
    metadata: dict[str, Any]
    structured: dict[str, Any]
    memory_ids: list[str] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ImportedCause:
    """A cause line, checked: a user's link (``created_at`` in epoch seconds). ``as_record()``
    is what the episode engine's ``restore_causes`` takes."""

    id: str
    project: str
    cause: str
    effect: str
    note: str
    created_at: float

    def as_record(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _bad(line: int, message: str) -> InvalidInput:
    return InvalidInput(f"line {line}: {message}")


def parse_line(raw: bytes | str, line: int) -> dict[str, Any] | None:
    """The JSON object of one export line (None for a blank line)."""
    data = parse_object(raw, line)
    if data is not None and data.get("type") not in TYPES:
        raise _bad(line, 'must be an object whose "type" is header, memory, episode, cause or end')
    return data


def parse_object(raw: bytes | str, line: int) -> dict[str, Any] | None:
    """The JSON object of one line, export or plain (None for a blank line)."""
    if len(raw) > MAX_LINE_BYTES:
        raise _bad(line, f"longer than {MAX_LINE_BYTES} bytes")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise _bad(line, "is not valid UTF-8") from None
    text = text.removeprefix("\ufeff")  # a byte order mark, as some editors save UTF-8
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _bad(line, f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _bad(line, "must be a JSON object")
    return data


def is_plain(data: dict[str, Any]) -> bool:
    """Whether a file whose first object is ``data`` holds plain lines (no export header)."""
    return "type" not in data


def parse_header(data: dict[str, Any], line: int) -> Header:
    if line != 1 or data.get("type") != "header":
        raise _bad(line, "the first line must be the export header")
    version = data.get("version")
    if data.get("format") == FORMAT and isinstance(version, int) and version > VERSION:
        raise _bad(
            line,
            f"an export of format version {version}, from a newer tribalmemory; this one "
            f"reads format {VERSION}: upgrade tribalmemory to import it",
        )
    if data.get("format") != FORMAT or version != VERSION:
        raise _bad(line, f"not a {FORMAT} version {VERSION} file")
    model, dim = data.get("model"), data.get("dim")
    if not isinstance(model, str) or not isinstance(dim, int) or isinstance(dim, bool):
        raise _bad(line, "the header needs model (text) and dim (integer)")
    return Header(model=model, dim=dim, vectors=data.get("vectors") is True)


def parse_memory(data: dict[str, Any], line: int, head: Header, max_chars: int) -> ImportedMemory:
    """A memory line, checked as ``remember`` checks its input (and the id kept); a plain
    line when ``head`` is plain (:func:`parse_plain`)."""
    if head.plain:
        return parse_plain(data, line, head, max_chars)
    try:
        memory_id = check.memory_id(data.get("id"))
        content = check.text("content", data.get("content"), max_chars)
        stype = check.source_type(data.get("source_type"))
        if stype in ENGINE_WRITTEN:
            raise InvalidInput(f"{stype.value} memories are written by the episode engine")
        tags = check.tags(data.get("tags"))
        context = check.text("context", data.get("context"), 10_000, required=False)
        instance = check.text("source_instance", data.get("source_instance"), 200)
        created = check.memory_time(
            "created_at", _time(data, "created_at"), advice="Correct the line's {field}."
        )
        updated = check.memory_time(
            "updated_at", _time(data, "updated_at"), advice="Correct the line's {field}."
        )
        project = check.project(data.get("project"))  # absent: exported before projects
        shared = check.boolean("shared", data.get("shared"))
    except TribalError as exc:
        raise _bad(line, exc.message) from None
    metadata = data.get("metadata") or {}
    supersedes, superseded_by = data.get("supersedes"), data.get("superseded_by")
    links_ok = all(v is None or isinstance(v, str) for v in (supersedes, superseded_by))
    if not isinstance(metadata, dict) or not links_ok:
        raise _bad(line, "metadata must be an object, supersedes and superseded_by ids or null")
    vector = data.get("vector")
    if vector is not None:
        if not head.vectors or not _is_vector(vector, head.dim):
            raise _bad(
                line,
                f"vector must be {head.dim} finite numbers within float32's range "
                "(header vectors: true)",
            )
    assert content is not None and instance is not None and created and updated
    memory = Memory(
        id=memory_id,
        content=content,
        source_type=stype,
        source_instance=instance,
        tags=tags,
        context=context,
        created_at=created,
        updated_at=updated,
        supersedes=supersedes,
        superseded_by=superseded_by,
        metadata=metadata,
        project=project,
        shared=shared,
    )
    return ImportedMemory(memory, vector)


def parse_plain(data: dict[str, Any], line: int, head: Header, max_chars: int) -> ImportedMemory:
    """A plain line, checked as ``remember`` checks its input; its id from :func:`plain_id`,
    its times ``created_at`` (the import's time when it has none)."""
    try:
        if "type" in data:
            raise InvalidInput(
                'a plain line has no "type" (an export file starts with its header line)'
            )
        check.names(data, PLAIN_IMPORT_FIELDS, ["content"])
        content = check.text("content", data["content"], max_chars)
        stype = check.source_type(data.get("source_type"))
        if stype in ENGINE_WRITTEN:
            raise InvalidInput(f"{stype.value} memories are written by the episode engine")
        given_instance = data.get("source_instance")
        instance = check.text(
            "source_instance", given_instance, MAX_SOURCE_INSTANCE_CHARS, required=False
        )
        tags = check.tags(data.get("tags"))
        context = check.text("context", data.get("context"), MAX_CONTEXT_CHARS, required=False)
        given = check.memory_time("created_at", data.get("created_at"), advice=PLAIN_ADVICE)
        project = check.project(data.get("project"))
        shared = check.boolean("shared", data.get("shared"))
        kept = {  # a blank session or run is refused, as remember refuses it
            key: check.given_text(key, data.get(key), chars)
            for key, chars in (("session", MAX_SESSION_CHARS), ("run", MAX_RUN_CHARS))
        }
    except TribalError as exc:
        raise _bad(line, exc.message) from None
    assert content is not None and head.imported_at is not None
    created = given or head.imported_at
    memory = Memory(
        id=plain_id(content, given, project, instance),
        content=content,
        source_type=stype,
        source_instance=instance or head.default_instance,
        tags=tags,
        context=context,
        created_at=created,
        updated_at=created,
        metadata={key: value.strip() for key, value in kept.items() if value},
        project=project,
        shared=shared,
    )
    return ImportedMemory(memory)


PLAIN_ADVICE = "Correct the line's {field}, or leave it out to date the memory now."


def plain_id(content: str, created_at: datetime | None, project: str, instance: str | None) -> str:
    """A plain line's memory id: the same for the same content, time, project and author, so
    that a file imported again (after an import cut short, say) adds nothing twice."""
    when = created_at.isoformat() if created_at is not None else None
    key = json.dumps([content, when, project, instance], ensure_ascii=False)
    return str(uuid.uuid5(PLAIN_IDS, key))


def parse_episode(data: dict[str, Any], line: int) -> ImportedEpisode:
    """An episode line, checked field by field (the first problem names the line)."""
    try:
        return _episode(data)
    except TribalError as exc:
        raise _bad(line, exc.message) from None


def _episode(data: dict[str, Any]) -> ImportedEpisode:
    eid = data.get("id")
    if not isinstance(eid, str) or not eid.startswith("ep-"):
        raise InvalidInput("an episode needs its id (ep-...)")
    eid = check.episode_id(eid, "id")
    title = check.text("title", data.get("title"), MAX_IMPORTED_TITLE)
    summary = data.get("summary")
    if not isinstance(summary, str):
        raise InvalidInput("summary must be a string (empty when there is none)")
    summary_id = data.get("summary_memory_id")
    members = data.get("memory_ids")
    if not isinstance(members, list):
        raise InvalidInput("memory_ids must be a list of memory ids")
    ids = [check.memory_id(m, "memory_ids") for m in members]
    if len(set(ids)) != len(ids):
        raise InvalidInput("memory_ids lists a memory twice")
    parent = data.get("parent_episode_id")
    structured = data.get("structured")
    metadata = data.get("metadata")
    if structured is not None and not isinstance(structured, dict):
        raise InvalidInput("structured must be an object or null")
    _check_structured(structured or {}, ids)
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be an object")
    created = _epoch("created_at", data.get("created_at"), required=True)
    assert title is not None and created is not None
    return ImportedEpisode(
        id=eid,
        title=title,
        title_source=_one_of("title_source", data.get("title_source"), TITLE_SOURCES),
        summary=summary,
        summary_kind=_one_of("summary_kind", data.get("summary_kind"), SUMMARY_KINDS),
        summary_memory_id=None
        if summary_id is None
        else check.memory_id(summary_id, "summary_memory_id"),
        status=_one_of("status", data.get("status"), EPISODE_STATUSES),
        created_at=created,
        updated_at=_epoch("updated_at", data.get("updated_at"), required=True) or created,
        closed_at=_epoch("closed_at", data.get("closed_at")),
        last_activity=_epoch("last_activity_at", data.get("last_activity_at")),
        parent_episode_id=None if parent is None else check.episode_id(parent, "parent_episode_id"),
        metadata=metadata,
        structured=structured or {},
        memory_ids=ids,
        history=_history(data.get("history")),
    )


def parse_cause(data: dict[str, Any], line: int) -> ImportedCause:
    """A cause line, checked as ``POST /v1/causes`` checks a link (whether its nodes exist is
    known once the file's memories and episodes are stored)."""
    try:
        if data.get("source") != "user":
            raise InvalidInput(
                "source must be user: links an episode derived are derived again from its "
                "record on import"
            )
        cause, effect = (
            check.node(data.get("cause"), "cause"),
            check.node(data.get("effect"), "effect"),
        )
        if cause == effect:
            raise InvalidInput("cause and effect are the same node")
        note = check.text("note", data.get("note"), MAX_CAUSE_NOTE_CHARS, required=False)
        created = _epoch("created_at", data.get("created_at"), required=True)
        assert created is not None
        return ImportedCause(
            id=check.link_id(data.get("id"), "id"),
            project=check.project(data.get("project")),
            cause=cause,
            effect=effect,
            note=note or "",
            created_at=created,
        )
    except TribalError as exc:
        raise _bad(line, exc.message) from None


def _check_structured(record: dict[str, Any], members: list[str]) -> None:
    """The record's editable fields pass the checks a user's edit passes (the rest, metrics
    and bookkeeping, is recomputed by the engine when the episode next changes)."""
    editable = {k: record[k] for k in structured.EDITABLE if record.get(k) is not None}
    if not editable:
        return
    try:
        structured.from_user(editable, members)
    except structured.InvalidPart as exc:
        raise InvalidInput(str(exc)) from None


def _one_of(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidInput(f"{name} must be one of {', '.join(allowed)}, got {str(value)[:40]!r}")
    return value


def _epoch(name: str, value: Any, required: bool = False) -> float | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be an ISO 8601 time")
    stamp = check.memory_time(name, value, advice="Correct the line's {field}.")  # not ahead
    assert stamp is not None
    return stamp.timestamp()


def _history(value: Any) -> list[dict[str, Any]]:
    """The episode's history entries (an export written before they were exported has none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput("history must be a list of entries")
    out = []
    for n, entry in enumerate(value):
        where = f"history[{n}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("details", {}), dict):
            raise InvalidInput(f"{where} must be an object with at, actor, action, details")
        action = check.text(f"{where}.action", entry.get("action"), 100)
        out.append(
            {
                "at": _epoch(f"{where}.at", entry.get("at"), required=True),
                "actor": _one_of(f"{where}.actor", entry.get("actor"), HISTORY_ACTORS),
                "action": action,
                "details": entry.get("details") or {},
            }
        )
    return out


def _time(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise InvalidInput(f"{key} must be an ISO 8601 time")
    return value


_NUMBERS = frozenset({int, float})


def _is_vector(value: Any, dim: int) -> bool:
    """``dim`` numbers (not booleans: ``bool`` is its own type here) that the store takes
    (:func:`~tribalmemory.storage.base.check_rows`: finite in float32, and so is the
    vector's length). Checked with C-level ``map``/``set``: a 384-number vector per imported
    memory is on the import's hot path."""
    if not (isinstance(value, list) and len(value) == dim and set(map(type, value)) <= _NUMBERS):
        return False
    try:
        check_rows([value], 1, dim)
    except ValueError:
        return False
    return True
