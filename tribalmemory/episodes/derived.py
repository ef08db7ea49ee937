"""Lessons, decisions and facts as memories (``LESSON``, ``DECISION``, ``FACT``) so plain
``recall()`` finds them.

Pure builders. Each lesson, decision or fact of an episode's structured record is one plugin-owned
memory whose id is derived from the episode id, the kind and the position (``uuid5``), so a
rewrite replaces the same memories, and the ids an episode should have can be computed from its
record alone (reconcile deletes any other, e.g. left by a crash mid-rewrite). They are tagged
like the episode's summary memory and carry ``episode_id`` in their metadata.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..models import Memory, SourceType
from ..timeutil import from_epoch, parse_iso
from .store import EpisodeRow

NAMESPACE = uuid.UUID("6f1d2c1e-4b8a-4e4f-9a57-1b7d0f3c9e21")
KINDS = {"lessons": SourceType.LESSON, "decisions": SourceType.DECISION, "facts": SourceType.FACT}
INSTANCE = "tribalmemory"


def derived_id(episode_id: str, kind: str, index: int) -> str:
    """The id of an episode's ``index``-th lesson or decision memory."""
    return str(uuid.uuid5(NAMESPACE, f"{episode_id}/{kind}/{index}"))


def expected_ids(episode_id: str, record: dict[str, Any]) -> list[str]:
    """The derived memory ids an episode with this record has."""
    return [
        derived_id(episode_id, kind, i)
        for kind in KINDS
        for i in range(len(record.get(kind) or []))
    ]


def owned_ids(row: EpisodeRow) -> list[str]:
    """Every memory an episode owns: its lessons, decisions and facts, and its summary; they
    go when the episode goes (deleted, emptied or merged into another)."""
    owned = expected_ids(row.id, row.structured)
    if row.summary_memory_id:
        owned.append(row.summary_memory_id)
    return owned


def stale_ids(episode_id: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Ids the old record had and the new one has not (lists that got shorter)."""
    keep = set(expected_ids(episode_id, new))
    return [i for i in expected_ids(episode_id, old) if i not in keep]


def content(kind: str, item: dict[str, Any], title: str) -> str:
    if kind == "lessons":
        return f"Lesson (episode: {title}): {item['text']}"
    if kind == "facts":
        return f"Fact (episode: {title}): {item['text']}"
    text = f"Decision (episode: {title}): {item['chosen']}"
    if item.get("rationale"):
        text += f" Why: {item['rationale']}"
    if item.get("context"):
        text += f" Context: {item['context']}"
    if item.get("options"):
        text += " Options: " + "; ".join(item["options"])
    return text


def memories(
    row: EpisodeRow,
    record: dict[str, Any],
    members: Sequence[Memory],
    title: str,
    now: datetime,
) -> list[Memory]:
    """The lesson, decision and fact memories of an episode, tagged like its summary memory."""
    tags = sorted({t for m in members for t in m.tags} | {f"episode:{row.id}"})
    times = {m.id: m.created_at for m in members}
    start = from_epoch(row.first_activity or row.created_at)
    out = []
    for kind, source_type in KINDS.items():
        for index, item in enumerate(record.get(kind) or []):
            cited = [times[i] for i in item.get("memory_ids", []) if i in times]
            when = min(cited) if cited else (parse_iso(item["at"]) if item.get("at") else start)
            out.append(
                Memory(
                    id=derived_id(row.id, kind, index),
                    content=content(kind, item, title),
                    source_type=source_type,
                    source_instance=INSTANCE,
                    tags=tags,
                    context=None,
                    created_at=when,
                    updated_at=now,
                    metadata={
                        "episode_id": row.id,
                        "memory_ids": list(item.get("memory_ids", [])),
                    },
                    project=row.project,
                )
            )
    return out


def unchanged(old: Memory, new: Memory) -> bool:
    """Same text, tags and cited memories: no rewrite (and no re-embedding) needed."""
    return (
        old.content == new.content
        and old.tags == new.tags
        and old.metadata == new.metadata
        and old.created_at == new.created_at
    )
