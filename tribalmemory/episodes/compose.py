"""Episodes that compose: chains (an episode that continues another), replay and search.

A new episode's parent is looked for by a durable ``link`` job (:meth:`Compose.link_parent`),
off the request path; replay and search find episodes through their summary memories with the
host's hybrid search.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..models import SourceType
from ..timeutil import from_epoch, to_iso
from . import extractive, lifecycle
from .shapes import episode_summary_json
from .state import EngineState
from .store import EpisodeRow
from .summariser import Summariser

log = logging.getLogger("tribalmemory.episodes")

CHAIN_LIMIT = 50
SEARCH_SUMMARY_CHARS = 500
REPLAY_SUMMARY_CHARS = 300


@dataclass(frozen=True)
class Floor:
    """The relevance an episode needs to be returned: at least ``absolute`` and at least
    ``relative`` × the best hit's (relevance is the cosine of the query and the episode's
    summary memory, as ``recall``'s ``similarity_score``)."""

    absolute: float
    relative: float

    def cut(self, best: float) -> float:
        """The lowest relevance kept when the best hit scores ``best``. Pure."""
        return max(self.absolute, self.relative * best)


#: Search lists candidates to browse: a looser floor. Measured with the bundled model
#: (all-MiniLM-L6-v2) on two labelled streams: a topic unrelated to every episode mostly scores
#: under 0.3 against their summaries (now and then up to 0.34), the episode a topic names
#: 0.33-0.78 (a one-word topic 0.26); hits under half the best are another thread's.
SEARCH_FLOOR = Floor(absolute=0.25, relative=0.5)
#: Replay tells one story: a stricter floor (it admitted an unrelated episode at 0.208 at 0.2).
REPLAY_FLOOR = Floor(absolute=0.3, relative=0.6)


def above_floor(
    found: list[tuple[EpisodeRow, float]], floor: Floor
) -> list[tuple[EpisodeRow, float]]:
    """The hits (best first) whose relevance reaches ``floor`` relative to the best. Pure."""
    if not found:
        return []
    cut = floor.cut(max(relevance for _, relevance in found))
    return [(row, relevance) for row, relevance in found if relevance >= cut]


class Compose:
    """Chains, replay and search over episodes."""

    def __init__(self, state: EngineState, summariser: Summariser) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser

    # -- chains -----------------------------------------------------------------------------

    async def find_parent(
        self, episode_id: str, start: dict[str, Any] | None = None
    ) -> tuple[str, float] | None:
        """A recently ended episode on the same topic that the new episode continues.

        ``start`` is the new episode as it started (:meth:`.membership.Membership.create`
        takes it): ``members``, its first memories, and ``candidates``, the episodes that were
        closed (or archived) then and that went idle, or were closed early, at most
        ``chain_window_hours`` before its first memory -- in memory time. So a link job that
        runs late (a fast import) decides as it would have at once. A job queued without them
        (by an older version) looks them up now. The best :func:`chain_score` at or above
        ``chain_similarity_threshold`` wins.
        """
        state = self.state
        settings = state.settings
        row = self.store.episodes.get(episode_id)
        if row is None or row.first_activity is None or row.parent_episode_id is not None:
            return None
        start = start or {}
        candidates = start.get("candidates")
        if candidates is None:
            horizon = lifecycle.chain_horizon(
                row.first_activity, settings.active_window_days, settings.chain_window_hours
            )
            candidates = self.store.episodes.chain_candidates(
                horizon, row.first_activity, project=row.project
            )
        if not candidates:
            return None
        await state.host.background_turn()  # reading and scoring them uses the CPU
        first = (
            start.get("members")
            or self.store.memberships.member_ids(episode_id)[: lifecycle.CHAIN_MEMBERS]
        )
        first_features = await state.features(first)
        if not first_features:
            return None
        new = state.matcher.episode(episode_id, first_features)
        best: tuple[str, float] | None = None
        for candidate in candidates:
            newest = self.store.memberships.member_ids(candidate)[-lifecycle.CHAIN_MEMBERS :]
            members = await state.features(newest)
            if not members:  # deleted meanwhile, or its memories forgotten
                continue
            project = state.project_of_episode(episode_id)
            score = state.matcher.chain_score(
                new, state.matcher.episode(candidate, members), project
            )
            if score >= settings.chain_similarity_threshold and (best is None or score > best[1]):
                best = (candidate, score)
        return best

    async def link_parent(self, episode_id: str, start: dict[str, Any] | None = None) -> None:
        """The link job of a new episode: record the parent that :meth:`find_parent` finds."""
        found = await self.find_parent(episode_id, start)
        if found is None:
            return
        parent, score = found
        with self.store.transaction() as db:
            self.store.episodes.update(db, episode_id, parent_episode_id=parent)
        log.info("episode %s continues %s (chain score %.2f)", episode_id, parent, score)

    async def chain(self, episode_id: str) -> dict[str, Any]:
        """The whole chain the episode belongs to, root first (cycle-safe, at most 50)."""
        row = self.state.episode(episode_id)
        seen = {row.id}
        ancestors: list[EpisodeRow] = []
        current = row
        while current.parent_episode_id and len(seen) < CHAIN_LIMIT:
            parent = self.store.episodes.get(current.parent_episode_id)
            if parent is None or parent.id in seen:
                break
            seen.add(parent.id)
            ancestors.append(parent)
            current = parent
        chain = list(reversed(ancestors)) + [row]
        frontier = [row.id]
        while frontier and len(chain) < CHAIN_LIMIT:
            children = [
                r for r in self.store.episodes.children(frontier.pop(0)) if r.id not in seen
            ]
            for child in sorted(children, key=lambda r: r.first_activity or 0.0):
                if len(chain) >= CHAIN_LIMIT:
                    break
                seen.add(child.id)
                chain.append(child)
                frontier.append(child.id)
        items = [episode_summary_json(r, self.summariser.episode_cost(r.id)) for r in chain]
        return {
            "episode_id": episode_id,
            "root_id": chain[0].id,
            "chain": items,
            "count": len(items),
        }

    # -- replay and search ------------------------------------------------------------------

    async def _relevant(
        self,
        query: str,
        fetch: int,
        floor: Floor,
        project: str | None,
        members: list[str] | None = None,
    ) -> list[tuple[EpisodeRow, float]]:
        """Episodes of ``project`` (None: of every project) whose summary memory matches
        ``query`` (hybrid search), best first, those under ``floor`` left out
        (:func:`above_floor`); with ``members``, only the episodes that have one of those
        memories (the search is restricted to their summaries)."""
        summaries = None
        if members is not None:
            summaries = self.store.episodes.summaries_with_members(members)
        hits = await self.state.host.search(
            query,
            [SourceType.EPISODE_SUMMARY],
            limit=min(50, fetch),
            min_relevance=floor.absolute,
            project=project,
            ids=summaries,
        )
        found: list[tuple[EpisodeRow, float]] = []
        for hit in hits:
            row = self.store.episodes.get(str(hit.memory.metadata.get("episode_id", "")))
            if row is None or project is not None and row.project != project:
                continue
            if all(row.id != r.id for r, _ in found):
                found.append((row, hit.similarity_score))
        return above_floor(found, floor)

    async def replay(
        self, topic: str, limit: int, project: str | None, members: list[str] | None = None
    ) -> dict[str, Any]:
        """The episodes of ``project`` relevant to ``topic`` in chronological order, as JSON
        and as text; with ``members``, only those that have one of these memories."""
        relevant = await self._relevant(topic, limit * 3, REPLAY_FLOOR, project, members)
        found = relevant[:limit]
        found.sort(key=lambda pair: pair[0].first_activity or pair[0].created_at)
        items = []
        lines = (
            [f"Episodes about {topic!r}, oldest first:"]
            if found
            else [f"No episode matches {topic!r}."]
        )
        for index, (row, relevance) in enumerate(found, 1):
            parent = (
                self.store.episodes.get(row.parent_episode_id) if row.parent_episode_id else None
            )
            start = to_iso(from_epoch(row.first_activity or row.created_at))[:10]
            end = to_iso(from_epoch(row.last_activity))[:10]
            short = extractive.clip_keeping_lines(row.summary, REPLAY_SUMMARY_CHARS)
            items.append(
                {
                    "id": row.id,
                    "title": row.title,
                    "status": row.status,
                    "start": to_iso(from_epoch(row.first_activity or row.created_at)),
                    "end": to_iso(from_epoch(row.last_activity)),
                    "continues": parent.id if parent else None,
                    "continues_title": parent.title if parent else None,
                    "summary": short,
                    "tags": row.metadata.get("tags", []),
                    "outcome": row.outcome,
                    "relevance": round(relevance, 4),
                }
            )
            marker = f" (continues: {parent.title})" if parent else ""
            outcome = row.outcome or "unknown"
            text = "\n".join(f"   {line}" for line in short.splitlines())
            lines.append(f"{index}. {start} to {end}: {row.title}{marker} [{outcome}]\n{text}")
        return {"topic": topic, "episodes": items, "count": len(items), "text": "\n".join(lines)}

    async def search(
        self,
        query: str,
        time_start: float | None,
        time_end: float | None,
        status: str | None,
        limit: int,
        project: str | None,
        members: list[str] | None = None,
    ) -> dict[str, Any]:
        """Hybrid search over the summaries and titles of ``project``'s episodes with time
        and status filters; with ``members``, only those that have one of these memories (as
        replay and the episode list).

        An episode matches the time range when its memories' span overlaps it. Ranking:
        ``relevance × (0.8 + 0.2 × 2^(−days since last activity / 14))`` — a recency boost
        of at most 25 % that halves every two weeks.
        """
        now = self.state.clock()
        results = []
        for row, relevance in await self._relevant(query, 50, SEARCH_FLOOR, project, members):
            start = row.first_activity or row.created_at
            if status is not None and row.status != status:
                continue
            if time_start is not None and row.last_activity < time_start:
                continue
            if time_end is not None and start > time_end:
                continue
            age_days = max(0.0, (now - row.last_activity) / 86400.0)
            boosted = relevance * (0.8 + 0.2 * 2 ** (-age_days / 14.0))
            item = episode_summary_json(row, self.summariser.episode_cost(row.id))
            item["summary"] = extractive.clip_keeping_lines(row.summary, SEARCH_SUMMARY_CHARS)
            item["relevance"] = round(relevance, 4)
            item["score"] = round(boosted, 4)
            results.append(item)
        results.sort(key=lambda item: -item["score"])
        return {"query": query, "episodes": results[:limit], "count": len(results[:limit])}
