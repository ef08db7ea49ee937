"""Deterministic, LLM-free titles, summaries and metadata (the documented fallback).

Titles and summaries say what a thread is about by its distinctive terms
(:mod:`.distinctive`: used in several members, rare in the project's stream), never by a
speaker's name or a member's first clause; a summary gives the time span once, not a date
per line, so a question that names a month or a year does not pull every summary.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from ..models import Memory
from ..plural import counted
from . import statements
from .distinctive import Background, Ranked, best, ranked

TITLE_CHARS = 80
SUMMARY_CHARS = 1200
POINT_CHARS = 220
MAX_POINTS = 5
TITLE_TERMS = 4
ABOUT_TERMS = 8
MAX_DECIDED = 2

_ENTITY = re.compile(
    r"`([^`]{2,60})`|\b([\w./-]+\.(?:py|js|ts|go|rs|sql|yaml|yml|json|md|toml))\b"
    r"|(#\d{2,7})\b"
)


_LABEL = re.compile(r"^(?:decision|decided)\s*:\s*", re.I)  # "Decided: Decided: ..." reads badly


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,.;:-")
    return cut + "…"


def clip_keeping_lines(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters with its line breaks kept (a summary is a
    header and one line per point): spaces within a line collapsed, blank lines dropped, cut
    at a word with "…" when too long."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    joined = "\n".join(line for line in lines if line)
    if len(joined) <= limit:
        return joined
    cut = joined[: limit - 1]
    cut = cut[: max(cut.rfind(" "), cut.rfind("\n"))] if " " in cut or "\n" in cut else cut
    return cut.rstrip(" ,.;:-\n") + "…"


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


def keyword_title(
    memories: Sequence[Memory], vectors: np.ndarray, background: Background | None = None
) -> str:
    """Up to four of the episode's distinctive terms, at most 80 characters ("Refresh token,
    grace window, tabs"); without any, the most representative memory's text after its
    speaker's ``Name:``."""
    return _title(memories, vectors, ranked(memories, background))


def title_and_summary(
    memories: Sequence[Memory], vectors: np.ndarray, background: Background | None = None
) -> tuple[str, str]:
    """:func:`keyword_title` and :func:`extractive_summary`, reading the members' terms once
    (an episode created on the request path)."""
    found = ranked(memories, background)
    return _title(memories, vectors, found), _summary(memories, vectors, found)


def _title(memories: Sequence[Memory], vectors: np.ndarray, found: Ranked) -> str:
    if not memories:
        return "Untitled episode"
    picked: list[str] = []
    for term in best(found, TITLE_TERMS):
        if len(", ".join([*picked, term])) > TITLE_CHARS:
            break
        picked.append(term)
    if picked:
        title = ", ".join(picked)
        return title if _as_written(picked[0]) else title[0].upper() + title[1:]
    first = memories[representative_order(vectors, 1)[0]].content
    return clip(statements.without_speaker(first), TITLE_CHARS) or "Untitled episode"


_CODE = re.compile(r"[_./\d]|[a-z][A-Z]")
"""What a name in code holds (``query_tag``, ``raw.events``, ``v2``, ``gRPC``), and a word never
(a term is a token of :mod:`.distinctive`: letters, digits and ``_./-``)."""


def _as_written(term: str) -> bool:
    """Whether a title keeps its first term's first letter as written: a name in code keeps
    it (``query_tag config``, not ``Query_tag config``); a word takes a capital."""
    return bool(_CODE.search(term.split(" ", 1)[0]))


def _day(moment: datetime) -> str:
    return moment.date().isoformat()  # strftime writes year 1 as "1"


def top_tags(memories: Sequence[Memory], limit: int = 8) -> list[str]:
    counts = Counter(tag for m in memories for tag in m.tags)
    return [tag for tag, _ in counts.most_common(limit)]


def span(memories: Sequence[Memory]) -> str:
    """The days the memories cover: "2025-03-03" or "2025-03-03 to 2025-03-08"."""
    times = sorted(m.created_at for m in memories)
    first, last = _day(times[0]), _day(times[-1])
    return first if first == last else f"{first} to {last}"


def extractive_summary(
    memories: Sequence[Memory], vectors: np.ndarray, background: Background | None = None
) -> str:
    """What the thread is about, without an LLM, in at most 1200 characters: its size and time
    span (once), tags, distinctive terms, what was decided, the most representative memories in
    time order (no dates), and the latest memory (how it ended, or stands)."""
    return _summary(memories, vectors, ranked(memories, background))


def _summary(memories: Sequence[Memory], vectors: np.ndarray, found: Ranked) -> str:
    if not memories:
        return ""
    header = f"{counted(len(memories), 'memory')}, {span(memories)}."
    tags = top_tags(memories)
    if tags:
        header += " Tags: " + ", ".join(tags) + "."
    lines = [header]
    about = best(found, ABOUT_TERMS)
    if about:
        lines.append("About: " + ", ".join(about) + ".")
    ordered = sorted(range(len(memories)), key=lambda i: memories[i].created_at)
    decided = {i: d for i in ordered if (d := statements.decision(memories[i].content))}
    shown = list(decided)[-MAX_DECIDED:]
    if shown:
        said = (clip(_LABEL.sub("", decided[i]), POINT_CHARS) for i in shown)
        lines.append("Decided: " + " ".join(said))
    last = ordered[-1]
    ending = f"Latest: {clip(memories[last].content, POINT_CHARS)}" if len(memories) > 1 else ""
    budget = SUMMARY_CHARS - sum(len(line) + 1 for line in lines) - len(ending)
    told = set(shown) | ({last} if ending else set())
    picks = sorted(
        (i for i in representative_order(vectors) if i not in told),
        key=lambda i: memories[i].created_at,
    )
    for i in picks:
        line = f"- {clip(memories[i].content, POINT_CHARS)}"
        if len(line) + 1 > budget:
            break
        lines.append(line)
        budget -= len(line) + 1
    if ending:
        lines.append(ending)
    return clip_lines(lines, SUMMARY_CHARS)


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
    """The last LLM summary followed by the memories added since (no LLM call), their time
    span given once."""
    shown = list(new_memories[-MAX_POINTS:])
    heading = f"New since this summary ({span(shown)}):" if shown else "New since this summary:"
    lines = [llm_summary.strip(), heading]
    for memory in shown:
        lines.append(f"- {clip(memory.content, POINT_CHARS)}")
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
