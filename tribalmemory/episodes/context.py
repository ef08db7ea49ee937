"""Session-start context: what an agent should read before it starts, within a token budget.

Four sections, in this priority order (a later one gets what the earlier ones left):

1. active episodes, most recently active first (title, status, last decision);
2. recently failed episodes (outcome ``failure``), newest first, with their lessons;
3. the patterns and anti-patterns most relevant to the query (:mod:`.patterns`; without a
   query, those resting on the most episodes);
4. the lessons most relevant to the query (hybrid search over ``LESSON`` memories; without a
   query, the lessons of the most recently active episodes).

Each line is counted with litellm's ``token_counter`` for the configured model (litellm is
imported off the event loop on first use); a line that does not fit is left out, with every
line after it in its section, and ``truncated`` says so. The JSON holds exactly what the text
shows. :func:`assemble` is the pure part.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..llm.client import load_litellm
from ..models import RecallHit, SourceType
from ..plural import counted
from ..timeutil import from_epoch, to_iso
from .derived import derived_id
from .patterns import Patterns
from .state import EngineState
from .store import EpisodeRow
from .summariser import Summariser

log = logging.getLogger("tribalmemory.episodes")

MAX_ACTIVE = 10
MAX_FAILED = 5
MAX_LESSONS = 10
MAX_PATTERNS = 5
LESSONS_PER_FAILED = 3
MIN_LESSON_RELEVANCE = 0.1

Counter = Callable[[str], int]


@dataclass
class Section:
    """A heading and its items: (line of text, JSON item)."""

    name: str
    heading: str
    items: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def assemble(
    sections: list[Section], budget: int, count: Counter
) -> tuple[str, dict[str, list[dict[str, Any]]], int, bool]:
    """The text, the JSON items shown per section, the tokens used and whether anything was
    left out. A section's heading is shown only with at least one of its items."""
    used = 0
    lines: list[str] = []
    shown: dict[str, list[dict[str, Any]]] = {s.name: [] for s in sections}
    truncated = False
    for section in sections:
        head_cost = count(section.heading + "\n")
        head_shown = False
        for line, item in section.items:
            cost = count(line + "\n") + (0 if head_shown else head_cost)
            if used + cost > budget:
                truncated = True
                break
            if not head_shown:
                lines.append(section.heading)
                head_shown = True
            lines.append(line)
            shown[section.name].append(item)
            used += cost
    return "\n".join(lines), shown, used, truncated


def _last_decision(row: EpisodeRow) -> str | None:
    decisions = (row.structured or {}).get("decisions") or []
    return decisions[-1]["chosen"] if decisions else None


def _iso(seconds: float | None) -> str | None:
    return None if seconds is None else to_iso(from_epoch(seconds))


def active_section(rows: list[EpisodeRow]) -> Section:
    section = Section("active", "Active episodes:")
    for row in rows[:MAX_ACTIVE]:
        decision = _last_decision(row)
        line = f"- {row.title} [{row.id}, {row.status}]"
        if decision:
            line += f" Last decision: {decision}"
        item = {
            "id": row.id,
            "title": row.title,
            "status": row.status,
            "last_decision": decision,
            "last_activity_at": _iso(row.last_activity),
        }
        section.items.append((line, item))
    return section


def failed_section(rows: list[EpisodeRow]) -> Section:
    section = Section("failed", "Recently failed:")
    for row in rows[:MAX_FAILED]:
        record = row.structured or {}
        lessons = [lesson["text"] for lesson in record.get("lessons") or []][:LESSONS_PER_FAILED]
        reason = record.get("outcome_reason")
        line = f"- {row.title} [{row.id}]" + (f": {reason}" if reason else "")
        if lessons:
            line += " Lessons: " + " | ".join(lessons)
        item = {
            "id": row.id,
            "title": row.title,
            "outcome_reason": reason,
            "lessons": lessons,
            "last_activity_at": _iso(row.last_activity),
        }
        section.items.append((line, item))
    return section


def patterns_section(found: list[dict[str, Any]]) -> Section:
    section = Section("patterns", "Patterns and anti-patterns:")
    for p in found[:MAX_PATTERNS]:
        rate = "n/a" if p["success_rate"] is None else f"{p['success_rate']:.0%}"
        label = "Anti-pattern" if p["kind"] == "antipattern" else "Pattern"
        line = (
            f"- {label}: {p['statement']} (when: {p['trigger']}; success {rate} over "
            f"{counted(len(p['episodes']), 'episode')})"
        )
        item = {
            "id": p["id"],
            "kind": p["kind"],
            "statement": p["statement"],
            "trigger": p["trigger"],
            "success_rate": p["success_rate"],
            "episodes": len(p["episodes"]),
        }
        section.items.append((line, item))
    return section


def lessons_section(found: list[tuple[str, str, str, float | None]]) -> Section:
    """``found``: (lesson text, episode id, episode title, relevance)."""
    section = Section("lessons", "Lessons:")
    for text, episode_id, title, relevance in found[:MAX_LESSONS]:
        item = {
            "text": text,
            "episode_id": episode_id,
            "episode_title": title,
            "relevance": relevance,
        }
        section.items.append((f"- {text} (from: {title})", item))
    return section


class Context:
    """Builds the session-start context."""

    def __init__(self, state: EngineState, summariser: Summariser, patterns: Patterns) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser
        self.patterns = patterns
        self._litellm: Any = None

    async def counter(self) -> tuple[Counter, str]:
        """litellm's token counter for the configured model (imported once, off the loop)."""
        client = self.summariser.client
        model = (client.model if client is not None else "") or (
            self.state.settings.summarizer_model
        )
        if self._litellm is None:
            self._litellm = await asyncio.to_thread(load_litellm)
        lit = self._litellm
        return (lambda text: int(lit.token_counter(model=model, text=text))), model

    def _lessons(
        self, hits: list[RecallHit] | None, project: str | None
    ) -> list[tuple[str, str, str, float | None]]:
        """The lessons among the search hits (best first), or the most recent lessons."""
        out: list[tuple[str, str, str, float | None]] = []
        if hits is not None:
            for hit in hits:
                if hit.memory.source_type is not SourceType.LESSON:
                    continue
                if hit.similarity_score < MIN_LESSON_RELEVANCE or len(out) >= MAX_LESSONS:
                    break
                row = self.store.episodes.get(str(hit.memory.metadata.get("episode_id", "")))
                lesson = _lesson_of(row, hit.memory.id) if row else None
                if row is not None and lesson is not None:
                    out.append((lesson, row.id, row.title, round(hit.similarity_score, 4)))
            return out
        for row in self.store.episodes.find(None, 20, 0, {"project": project}):
            for lesson in (row.structured or {}).get("lessons") or []:
                out.append((lesson["text"], row.id, row.title, None))
                if len(out) >= MAX_LESSONS:
                    return out
        return out

    async def build(self, query: str | None, budget: int, project: str | None) -> dict[str, Any]:
        """What to read before starting work in ``project`` (None: in any project)."""
        count, model = await self.counter()
        active = self.store.episodes.active(project)
        failed = self.store.episodes.find(
            None, MAX_FAILED, 0, {"outcome": "failure", "project": project}
        )
        hits = await self.patterns.search(query, project) if query else None  # one search
        patterns = await self.patterns.query(None, query, MAX_PATTERNS, project, hits)
        sections = [
            active_section(active),
            failed_section(failed),
            patterns_section(patterns["patterns"]),
            lessons_section(self._lessons(hits, project)),
        ]
        text, shown, used, truncated = assemble(sections, budget, count)
        return {
            "query": query,
            "budget_tokens": budget,
            "used_tokens": used,
            "token_model": model,
            "truncated": truncated,
            "text": text,
            **shown,
        }


def _lesson_of(row: EpisodeRow, memory_id: str) -> str | None:
    """The text of the lesson whose memory is ``memory_id`` (None: not in the record now)."""
    for index, lesson in enumerate((row.structured or {}).get("lessons") or []):
        if derived_id(row.id, "lessons", index) == memory_id:
            return str(lesson["text"])
    return None
