"""The read path: recall (hybrid search, ranked and optionally re-ranked by access
statistics) and the listing of memories without a query."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from .. import validation as check
from ..models import ENGINE_WRITTEN, Memory, RecallHit, SourceType
from ..shapes import (
    MAX_TAG_CHARS,
    MEMORIES_LIMIT,
    MIN_RELEVANCE,
    RECALL_LIMIT,
    MemoriesListQuery,
    RecallRequest,
)
from ..storage.base import MemoryFilter, SearchHit, scoped
from ..timeutil import utc_now
from . import access as stats
from . import listing, periods, ranking
from .state import ServiceState

RERANK_POOL = 3  # recall.rerank: retrievability re-orders this many times ``limit`` candidates


def similarity(cosine: float) -> float:
    """The score recall shows: the cosine clamped to 0–1, rounded to 6 decimals."""
    return round(max(0.0, min(1.0, cosine)), 6)


def shown_order(
    hits: list[SearchHit], floor: float = 0.0, first: frozenset[str] = frozenset()
) -> list[RecallHit]:
    """Recall results ordered by the score they show, best first, equal scores by memory id,
    the memories of ``first`` (dated in the period the query names) before the others;
    those scored below ``floor`` are left out."""
    results = [RecallHit(memory=h.memory, similarity_score=similarity(h.cosine)) for h in hits]
    results.sort(key=lambda r: (r.memory.id not in first, -r.similarity_score, r.memory.id))
    return [r for r in results if r.similarity_score >= floor]


@dataclass(frozen=True)
class Recalled:
    """What recall found, and the period of the query it put first (None: none)."""

    hits: list[RecallHit]
    period: periods.Period | None


def dated_first(
    hits: list[SearchHit], period: periods.Period
) -> tuple[list[SearchHit], frozenset[str]]:
    """``hits`` (fused order) with those dated in ``period``'s window first
    (:func:`.ranking.in_period_first`), and the ids of those."""
    start, end = (moment.timestamp() for moment in period.window())
    pool = [
        ranking.Ranked(h.memory.id, 0.0, created_at=h.memory.created_at.timestamp()) for h in hits
    ]
    ordered = ranking.in_period_first(pool, start, end)
    by_id = {h.memory.id: h for h in hits}
    inside = frozenset(c.id for c in ranking.dated_in(pool, start, end))
    return [by_id[c.id] for c in ordered], inside


def engine_written(found: SearchHit | RecallHit) -> bool:
    """Whether a search hit or a result is a memory the engine wrote (summary, lesson, ...)."""
    return found.memory.source_type in ENGINE_WRITTEN


def candidate(hit: SearchHit, episode_id: str | None) -> ranking.Ranked:
    """A search hit as the ranking rules see it (``episode_id``: the memory's episode)."""
    memory = hit.memory
    kind = ranking.Kind.MEMORY
    sources: tuple[str, ...] = ()
    if memory.source_type is SourceType.EPISODE_SUMMARY:
        kind = ranking.Kind.SUMMARY
        episode_id = memory.metadata.get("episode_id") or episode_id
    elif memory.source_type in ENGINE_WRITTEN:
        kind = ranking.Kind.DERIVED
        sources = tuple(memory.metadata.get("memory_ids") or ())
    return ranking.Ranked(memory.id, similarity(hit.cosine), kind, episode_id, sources)


class RecallOperations(ServiceState):
    """recall and list_memories."""

    async def recall(
        self, request: RecallRequest, ids: list[str] | None = None, rerank: bool = True
    ) -> list[RecallHit]:
        """:meth:`recall_dated`'s results."""
        return (await self.recall_dated(request, ids, rerank)).hits

    async def recall_dated(
        self, request: RecallRequest, ids: list[str] | None = None, rerank: bool = True
    ) -> Recalled:
        """Hybrid search: the ``limit`` memories that dense + BM25 rank best (reciprocal rank
        fusion), with the engine-written memories the ranking rules keep among them beside
        them (:func:`.ranking.beside_written`), ordered by the score shown.

        ``similarity_score`` is the cosine similarity of the memory to the query, clamped to
        0–1 and rounded to 6 decimals; results are ordered by it, best first, equal scores by
        memory id, so the same query on the same store always gives the same list.
        ``min_relevance`` drops results scored below it. Memories a correction superseded
        are left out unless ``include_superseded``. ``ids`` restricts the search to those
        memories (an episode's members: the API resolves the request's ``episode_id``). With
        ``recall.rerank: retrievability`` (and ``rerank``), :data:`RERANK_POOL` × ``limit``
        candidates are re-ordered by :func:`.access.reranked` and the first ``limit`` kept.
        ``project`` (default ``default``): only its memories and the shared ones; ``*``: every
        project's; ``source_instance``, ``session`` and ``run`` narrow the search in the
        store's filter (:func:`~tribalmemory.storage.base.scoped`). A period the query names
        (:mod:`.periods`; ``query_dates``, and neither ``after`` nor ``before``) puts the
        memories dated in it first.
        """
        max_chars = self.config.server.max_content_chars
        text = check.text("query", request.query, max_chars, setting="server.max_content_chars")
        assert text is not None
        superseded = check.boolean("include_superseded", request.include_superseded)
        where = MemoryFilter(
            tags_any=check.tags(request.tags) or None,
            source_types=check.source_types(request.source_types),
            after=check.timestamp("after", request.after),
            before=check.timestamp("before", request.before),
            exclude_superseded=not superseded,
            ids=ids,
            project=check.scope(request.project),
        )
        check.time_range("after", where.after, "before", where.before)
        scoped(where, check.scopes(request))
        size = check.integer("limit", request.limit, RECALL_LIMIT)
        floor = check.number("min_relevance", request.min_relevance, MIN_RELEVANCE)
        period = None
        if check.boolean("query_dates", request.query_dates, default=True) and (
            where.after is None and where.before is None
        ):
            period = periods.named_period(text, utc_now())
        if ids is not None and not ids:
            return Recalled([], period)
        access = self.access if rerank and self.config.recall.rerank != "none" else None
        if access is not None and not access.available:
            access = None  # logged and shown in /v1/health when it failed
        wanted = size * RERANK_POOL if access is not None else size
        with self.activity.request():
            vector = (await self.embed([text]))[0]
            pool = ranking.pool_size(wanted)
            hits = await self.request_threads.run(self.store.search, text, vector, pool, where)
        admitted, inside = self._admitted(hits), frozenset[str]()
        if period is not None:
            admitted, inside = dated_first(admitted, period)
        shown = shown_order(ranking.beside_written(admitted, wanted, engine_written), floor, inside)
        if access is None:
            return Recalled(shown, period)
        found = access.get(h.memory.id for h in shown)
        floor_share = self.config.recall.rerank_floor
        reranked = stats.reranked(shown, found, access.now(), floor_share)
        return Recalled(ranking.beside_written(reranked, size, engine_written), period)

    def _admitted(self, hits: list[SearchHit]) -> list[SearchHit]:
        """``hits`` (fused order) that :func:`.ranking.admitted` lets recall show."""
        if not any(engine_written(h) for h in hits):
            return hits
        episodes = self.hooks.annotate([h.memory for h in hits])
        pool = [candidate(h, episodes.get(h.memory.id, {}).get("episode_id")) for h in hits]
        kept = {c.id for c in ranking.admitted(pool)}
        return [h for h in hits if h.memory.id in kept]

    async def list_memories(
        self, request: MemoriesListQuery, ids: list[str] | None = None
    ) -> tuple[list[Memory], str | None]:
        """Memories without a query, newest first, a page at a time (see :mod:`.listing`);
        ``ids`` restricts the listing to those memories (an episode's members: the API
        resolves the request's ``episode_id``). Episode summaries are listed only when
        ``source_type`` asks for them. The scope filters (``source_instance``, ``session``,
        ``run``) are conditions of the store's filter, so every page is full."""
        label = check.given_text("tag", request.tag, MAX_TAG_CHARS)
        kind = None if request.source_type is None else check.source_type(request.source_type)
        where = MemoryFilter(
            tags_any=[label.strip()] if label else None,
            source_types=None if kind is None else [kind],
            exclude_source_types=[SourceType.EPISODE_SUMMARY] if kind is None else None,
            after=check.timestamp("since", request.since),
            before=check.timestamp("until", request.until),
            ids=ids,
            project=check.scope(request.project),
        )
        check.time_range("since", where.after, "until", where.before)
        scoped(where, check.scopes(request))
        size = check.integer("limit", request.limit, MEMORIES_LIMIT)
        cursor = request.cursor
        start = None if cursor is None else listing.decode_cursor(cursor)
        if ids is not None and not ids:
            return [], None
        with self.activity.request():
            return await asyncio.to_thread(listing.page, self.store, where, size, start)
