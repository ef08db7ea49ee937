"""Deterministic, LLM-free titles, summaries and metadata (the documented fallback)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from ..models import Memory
from ..plural import counted

TITLE_CHARS = 80
SUMMARY_CHARS = 1200
POINT_CHARS = 220
MAX_POINTS = 5

_ENTITY = re.compile(
    r"`([^`]{2,60})`|\b([\w./-]+\.(?:py|js|ts|go|rs|sql|yaml|yml|json|md|toml))\b"
    r"|(#\d{2,7})\b"
)


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,.;:-")
    return cut + "…"


def representative_order(vectors: np.ndarray, count: int = MAX_POINTS) -> list[int]:
    """The ``count`` most representative indices, preferring diverse picks (MMR, λ=0.7)."""
    if len(vectors) == 0:
        return []
    centroid = vectors.mean(axis=0)
    norm = np.linalg.norm(centroid) or 1.0
    relevance = 0.7 * (vectors @ (centroid / norm))
    redundancy = np.full(len(vectors), -np.inf)
    chosen: list[int] = []
    for _ in range(min(count, len(vectors))):
        scores = relevance - 0.3 * np.maximum(redundancy, 0.0)
        scores[chosen] = -np.inf
        best = int(np.argmax(scores))
        chosen.append(best)
        redundancy = np.maximum(redundancy, vectors @ vectors[best])
    return chosen


def keyword_title(memories: Sequence[Memory], vectors: np.ndarray) -> str:
    """The most representative memory's first sentence, at most 80 characters."""
    if not memories:
        return "Untitled episode"
    first = memories[representative_order(vectors, 1)[0]].content
    sentence = re.split(r"(?<=[.!?])\s|\n|: ", first.strip(), maxsplit=1)[0]
    return clip(sentence, TITLE_CHARS) or "Untitled episode"


def _day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")


def top_tags(memories: Sequence[Memory], limit: int = 8) -> list[str]:
    counts = Counter(tag for m in memories for tag in m.tags)
    return [tag for tag, _ in counts.most_common(limit)]


def extractive_summary(memories: Sequence[Memory], vectors: np.ndarray) -> str:
    """Date range, size and tags, then the most representative memories in time order."""
    if not memories:
        return ""
    times = sorted(m.created_at for m in memories)
    span = (
        _day(times[0])
        if _day(times[0]) == _day(times[-1])
        else f"{_day(times[0])} to {_day(times[-1])}"
    )
    header = f"{counted(len(memories), 'memory')}, {span}."
    tags = top_tags(memories)
    if tags:
        header += " Tags: " + ", ".join(tags) + "."
    picks = sorted(representative_order(vectors), key=lambda i: memories[i].created_at)
    lines = [header]
    budget = SUMMARY_CHARS - len(header)
    for i in picks:
        line = f"- {_day(memories[i].created_at)}: {clip(memories[i].content, POINT_CHARS)}"
        if len(line) + 1 > budget:
            break
        lines.append(line)
        budget -= len(line) + 1
    return "\n".join(lines)


def fallback_metadata(memories: Sequence[Memory], status: str) -> dict[str, object]:
    """Structured metadata without an LLM: what can be read off the memories themselves."""
    entities: Counter[str] = Counter()
    for memory in memories:
        for match in _ENTITY.finditer(memory.content):
            entities[next(g for g in match.groups() if g)] += 1
    times = sorted(m.created_at for m in memories)
    return {
        "participants": sorted({m.source_instance for m in memories}),
        "tools_used": [],
        "entities": [e for e, _ in entities.most_common(12)],
        "key_decisions": [],
        "outcome": "ongoing" if status == "active" else "unknown",
        "tags": top_tags(memories, 12),
        "first_memory_at": times[0].isoformat().replace("+00:00", "Z") if times else None,
        "last_memory_at": times[-1].isoformat().replace("+00:00", "Z") if times else None,
        "source": "extractive",
    }


def interim_summary(llm_summary: str, new_memories: Sequence[Memory]) -> str:
    """The last LLM summary followed by the memories added since (no LLM call)."""
    lines = [llm_summary.strip(), "New since this summary:"]
    for memory in new_memories[-MAX_POINTS:]:
        lines.append(f"- {_day(memory.created_at)}: {clip(memory.content, POINT_CHARS)}")
    return clip_lines(lines, SUMMARY_CHARS + POINT_CHARS * MAX_POINTS)


def clip_lines(lines: list[str], limit: int) -> str:
    """Join lines, dropping trailing ones that would pass ``limit`` characters."""
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > limit:
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)
