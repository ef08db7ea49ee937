"""Patterns and anti-patterns across closed episodes.

The lessons and decisions of closed (and archived) episodes are grouped by the embeddings of
their LESSON / DECISION memories plus shared entities and tools: an item joins the group whose
centroid is nearest when the cosine is at least :data:`SIMILAR`, or at least :data:`RELATED` and
the item's episode shares an entity or tool with the group. A group that spans at least two
episodes is a pattern ``{statement, trigger, action, episodes, success, failure,
success_rate}``; one whose episodes mostly failed (success rate below 0.5) is an
**anti-pattern**. Computed from the current records on request (cached until a closed
episode changes), so patterns follow episodes as they close, are edited or are deleted.

:func:`group` and :func:`pattern` are pure; :class:`Patterns` reads the records and vectors.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..models import RecallHit, SourceType
from .derived import derived_id
from .state import EngineState
from .store import EpisodeRow

SIMILAR = 0.8
RELATED = 0.65
MIN_EPISODES = 2


@dataclass(frozen=True)
class Item:
    """A lesson or decision of a closed episode, with its memory's vector."""

    memory_id: str
    kind: str  # lesson | decision
    text: str
    context: str
    episode_id: str
    keys: frozenset[str]  # entities and tools of its episode, lower case
    vector: np.ndarray


def group(
    items: Sequence[Item], similar: float = SIMILAR, related: float = RELATED
) -> list[list[int]]:
    """Greedy single pass in the given order: each item joins the nearest group's centroid
    when similar enough (or related and sharing an entity or tool), else starts a group."""
    groups: list[list[int]] = []
    keys: list[set[str]] = []
    if not items:
        return groups
    sums = np.zeros((len(items), len(items[0].vector)))  # one row per group, at most one each
    unit = np.zeros_like(sums)  # the groups' centroids, normalised
    for index, item in enumerate(items):
        count = len(groups)
        scores = unit[:count] @ item.vector if count else np.empty(0)
        best = int(np.argmax(scores)) if count else -1
        score = float(scores[best]) if count else -1.0
        if best >= 0 and (score >= similar or (score >= related and bool(item.keys & keys[best]))):
            groups[best].append(index)
            keys[best] |= item.keys
        else:
            best = count
            groups.append([index])
            keys.append(set(item.keys))
        sums[best] += item.vector
        unit[best] = sums[best] / (float(np.linalg.norm(sums[best])) or 1.0)
    return groups


def pattern(members: Sequence[Item], rows: dict[str, EpisodeRow]) -> dict[str, Any] | None:
    """The pattern of a group, or None when it rests on fewer than two episodes."""
    episode_ids = list(dict.fromkeys(m.episode_id for m in members))
    if len(episode_ids) < MIN_EPISODES:
        return None
    centroid = np.mean([m.vector for m in members], axis=0)
    central = max(members, key=lambda m: float(m.vector @ centroid))
    decisions = [m for m in members if m.kind == "decision"]
    action_item = max(decisions, key=lambda m: float(m.vector @ centroid)) if decisions else central
    shared = Counter(k for m in members for k in m.keys)
    common = [k for k, n in shared.most_common(3) if n > 1]
    trigger = (
        action_item.context
        if action_item.kind == "decision" and action_item.context
        else ("working on " + ", ".join(common) if common else "a similar situation")
    )
    outcomes = Counter(_outcome(rows[e]) for e in episode_ids)
    success, failure = outcomes["success"], outcomes["failure"]
    rate = round(success / (success + failure), 4) if success + failure else None
    kind = "antipattern" if rate is not None and rate < 0.5 else "pattern"
    ident = hashlib.sha1("|".join(sorted(m.memory_id for m in members)).encode()).hexdigest()
    return {
        "id": "pt-" + ident[:16],
        "kind": kind,
        "statement": central.text,
        "trigger": trigger,
        "action": action_item.text,
        "episodes": [
            {"id": e, "title": rows[e].title, "outcome": _outcome(rows[e])} for e in episode_ids
        ],
        "evidence": [
            {"episode_id": m.episode_id, "kind": m.kind, "text": m.text, "memory_id": m.memory_id}
            for m in members
        ],
        "success": success,
        "failure": failure,
        "success_rate": rate,
    }


def _outcome(row: EpisodeRow) -> str:
    return row.outcome or "unknown"


def items_of(row: EpisodeRow) -> list[tuple[str, str, str, str]]:
    """(memory id, kind, text, context) of each lesson and decision of an episode."""
    record = row.structured or {}
    out = [
        (derived_id(row.id, "lessons", i), "lesson", item["text"], "")
        for i, item in enumerate(record.get("lessons") or [])
    ]
    out += [
        (derived_id(row.id, "decisions", i), "decision", item["chosen"], item.get("context") or "")
        for i, item in enumerate(record.get("decisions") or [])
    ]
    return out


class Patterns:
    """Patterns from the episode store and the LESSON / DECISION memories' vectors."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self.store = state.store
        self._cache: dict[str | None, tuple[Any, list[dict[str, Any]]]] = {}  # by project

    async def all(self, project: str | None) -> list[dict[str, Any]]:
        """The patterns of one project's closed episodes (None: of every project's)."""
        version = self.store.episodes.closed_version()
        cached = self._cache.get(project)
        if cached is not None and cached[0] == version:
            return cached[1]
        rows = {r.id: r for r in self.store.episodes.closed_with_records(project)}
        wanted = [(row, *it) for row in rows.values() for it in items_of(row)]
        vectors = await self.state.host.get_vectors([w[1] for w in wanted])
        await self.state.host.background_turn()
        items = []
        for row, memory_id, kind, text, context in wanted:
            vector = vectors.get(memory_id)
            if vector is None:
                continue
            meta = row.metadata
            keys = {
                str(k).lower() for k in [*meta.get("entities", []), *meta.get("tools_used", [])]
            }
            unit = vector / (float(np.linalg.norm(vector)) or 1.0)
            items.append(Item(memory_id, kind, text, context, row.id, frozenset(keys), unit))
        found = [pattern([items[i] for i in g], rows) for g in group(items)]
        patterns = [p for p in found if p is not None]
        patterns.sort(key=lambda p: (-len(p["episodes"]), p["id"]))
        if len(vectors) == len(wanted):  # else a rewrite is under way: compute again next time
            self._cache = {k: v for k, v in self._cache.items() if v[0] == version}
            self._cache[project] = (version, patterns)
        return patterns

    async def search(self, query: str, project: str | None) -> list[RecallHit]:
        """LESSON / DECISION memories of ``project`` relevant to ``query`` (hybrid search,
        best 50)."""
        return await self.state.host.search(
            query,
            [SourceType.LESSON, SourceType.DECISION],
            limit=50,
            min_relevance=0.0,
            project=project,
        )

    async def query(
        self,
        kind: str | None,
        query: str | None,
        limit: int,
        project: str | None,
        hits: list[RecallHit] | None = None,
    ) -> dict[str, Any]:
        """``hits``: the result of :meth:`search` for ``query``, when the caller has it."""
        patterns = [p for p in await self.all(project) if kind is None or p["kind"] == kind]
        if query:
            if hits is None:
                hits = await self.search(query, project)
            relevance = {h.memory.id: h.similarity_score for h in hits}
            scored = []
            for p in patterns:
                ids = [e["memory_id"] for e in p["evidence"]]
                best = max((relevance.get(i, 0.0) for i in ids), default=0.0)
                if best > 0:
                    scored.append({**p, "relevance": round(best, 4)})
            patterns = sorted(scored, key=lambda p: -p["relevance"])
        else:
            patterns = [{**p, "relevance": None} for p in patterns]
        shown = patterns[:limit]
        return {"kind": kind, "query": query, "patterns": shown, "count": len(shown)}
