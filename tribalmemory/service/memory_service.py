"""The memory service: remember, recall, get, forget, correct and stats over one store.

Every interface (HTTP, MCP, CLI) calls these methods with raw client values; validation
happens here, once. Plugins extend the service through :class:`HookRegistry`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .. import retrievability as fsrs
from .. import validation as check
from ..config import Config
from ..embeddings import Embedder
from ..embeddings.background import BackgroundEmbedder
from ..embeddings.placement import RequestThreads
from ..errors import Busy, InsufficientStorage, InvalidInput, NotFound
from ..models import ENGINE_WRITTEN, Memory, RecallHit, SourceType, new_memory_id
from ..shapes import (
    MAX_BATCH,
    MAX_CONTEXT_CHARS,
    MAX_SESSION_CHARS,
    MAX_SOURCE_INSTANCE_CHARS,
    MAX_TAG_CHARS,
    MEMORIES_LIMIT,
    MIN_RELEVANCE,
    RECALL_LIMIT,
    RememberRequest,
)
from ..storage.base import MemoryFilter, MemoryStore, SearchHit
from ..storage.space import DiskSpace, is_disk_full
from ..timeutil import utc_now
from . import access as stats
from . import dedup, listing, ranking
from .access import AccessStats
from .activity import RequestActivity
from .hooks import HookRegistry

log = logging.getLogger("tribalmemory.service")

# Batches being embedded and stored at once; one more gets 429. Each holds at most one ONNX
# run of TOKEN_BUDGET tokens at a time (embeddings/embedder.py), so this bounds the memory that
# batches take (docs/benchmarks.md#memory).
MAX_CONCURRENT_BATCHES = 2
BATCH_RETRY_AFTER = 2  # seconds, sent as Retry-After with the 429
DEDUP_PROBE = 4  # nearest memories fetched, unfiltered, to find the nearest non-summary
RERANK_POOL = 3  # recall.rerank: retrievability re-orders this many times ``limit`` candidates
NO_STATS = {"access_count": None, "last_accessed_at": None, "retrievability": None}


@dataclass
class RememberResult:
    success: bool
    memory_id: str | None = None
    duplicate_of: str | None = None
    episode_id: str | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = {
            "success": self.success,
            "memory_id": self.memory_id,
            "duplicate_of": self.duplicate_of,
            "episode_id": self.episode_id,
            "error": self.error,
        }
        data.update(self.extra)
        return data


@dataclass
class NewMemory:
    """A validated remember() request, before it is embedded and stored."""

    content: str
    source_type: SourceType
    source_instance: str
    tags: list[str]
    context: str | None
    created_at: datetime | None
    skip_dedup: bool
    session: str | None = None
    project: str = "default"
    shared: bool = False


@dataclass
class ImportItem:
    """An exported memory to store under its own id, with its vector. ``placed``: the import
    recreates its episode itself, so no plugin sees it as new (no hooks, no detection)."""

    memory: Memory
    vector: np.ndarray
    placed: bool = False


def write_estimate(text: str) -> int:
    """Disk a stored memory may take before the store compacts it (WAL entry, payload, vectors
    and indexes of the plain segment), generously: 4 bytes per character plus 16 KB."""
    return 4 * len(text) + 16384


def similarity(cosine: float) -> float:
    """The score recall shows: the cosine clamped to 0–1, rounded to 6 decimals."""
    return round(max(0.0, min(1.0, cosine)), 6)


def shown_order(hits: list[SearchHit], floor: float = 0.0) -> list[RecallHit]:
    """Recall results ordered by the score they show, best first, equal scores by memory id;
    those scored below ``floor`` are left out."""
    results = [RecallHit(memory=h.memory, similarity_score=similarity(h.cosine)) for h in hits]
    results.sort(key=lambda r: (-r.similarity_score, r.memory.id))
    return [r for r in results if r.similarity_score >= floor]


def candidate(hit: SearchHit, episode_id: str | None) -> ranking.Candidate:
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
    return ranking.Candidate(memory.id, similarity(hit.cosine), kind, episode_id, sources)


class MemoryService:
    """Stores and finds memories; runs the registered write-time hooks."""

    def __init__(
        self,
        config: Config,
        store: MemoryStore,
        embedder: Embedder,
        background: BackgroundEmbedder | None = None,
        space: DiskSpace | None = None,
        access: AccessStats | None = None,
        activity: RequestActivity | None = None,
        request_threads: RequestThreads | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        # requests' embeddings and store calls: kept off onnxruntime's CPUs (see placement)
        self.request_threads = request_threads or RequestThreads()
        self.background = background  # embeds plugins' texts at low priority, if given
        self.space = space  # refuses writes when the disk is nearly full, if given
        self.access = access  # access statistics (retrievability), if given
        self.hooks = HookRegistry()
        # requests first: plugins' background work (and ``background``) waits for them
        self.activity = activity or RequestActivity()
        self.started_at = time.monotonic()
        self._write_lock = asyncio.Lock()
        self.batches_in_flight = 0
        self.warm_up: dict[str, Any] | None = None  # what the daemon warmed up (see runtime)

    # -- validation -------------------------------------------------------------------------

    def _parse_new(
        self,
        content: Any,
        source_type: Any = None,
        source_instance: Any = None,
        tags: Any = None,
        context: Any = None,
        created_at: Any = None,
        skip_dedup: Any = None,
        session: Any = None,
        project: Any = None,
        shared: Any = None,
    ) -> NewMemory:
        limit = self.config.server.max_content_chars
        text = check.text("content", content, limit, setting="server.max_content_chars")
        assert text is not None
        stype = check.source_type(source_type)
        if stype in ENGINE_WRITTEN:
            raise InvalidInput(
                f"source_type {stype.json_name} is written by the episode engine only"
            )
        instance = check.text(
            "source_instance", source_instance, MAX_SOURCE_INSTANCE_CHARS, required=False
        )
        return NewMemory(
            content=text,
            source_type=stype,
            source_instance=instance or self.config.memory.default_source_instance,
            tags=check.tags(tags),
            context=check.text("context", context, MAX_CONTEXT_CHARS, required=False),
            created_at=check.memory_time("created_at", created_at),
            skip_dedup=check.boolean("skip_dedup", skip_dedup),
            session=check.text("session", session, MAX_SESSION_CHARS, required=False),
            project=check.project(project),
            shared=check.boolean("shared", shared),
        )

    # -- writes -----------------------------------------------------------------------------

    def check_space(self, texts: list[str]) -> None:
        """Raise InsufficientStorage (507) unless storing ``texts`` leaves the disk reserve."""
        if self.space is not None:
            self.space.check(sum(write_estimate(t) for t in texts))

    async def _upsert(self, memories: list[Memory], vectors: np.ndarray) -> None:
        """The store's upsert; a full disk becomes InsufficientStorage (507)."""
        try:
            await self.request_threads.run(self.store.upsert, memories, vectors)
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            log.warning("store write failed, the disk is full: %s", exc)
            raise InsufficientStorage(
                f"the disk holding the store is full ({exc}); nothing was stored. Free disk "
                "space and retry"
            ) from None

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await self.request_threads.run(self.embedder.embed, texts)

    async def embed_bulk(self, texts: list[str]) -> np.ndarray:
        """Embed many texts (an import's page) with the single-threaded copy of the model
        (the background embedder's), at normal priority on a request thread; without a
        background embedder, as :meth:`embed`. The request model splits each run between two
        threads that spin between its steps: on a busy 2-CPU machine it embedded a page at
        half the speed for twice the CPU, and left none to the episode engine placing the
        page before (docs/benchmarks.md)."""
        if self.background is None:
            return await self.embed(texts)
        model = self.background.model
        return await self.request_threads.run(lambda: model().embed(texts))

    async def remember(
        self,
        content: Any,
        source_type: Any = None,
        source_instance: Any = None,
        tags: Any = None,
        context: Any = None,
        created_at: Any = None,
        skip_dedup: Any = None,
        session: Any = None,
        project: Any = None,
        shared: Any = None,
    ) -> RememberResult:
        """Store one memory (unless it restates a near-duplicate, see :mod:`.dedup`) and run
        the write-time hooks. A near-duplicate that changes a number, version, date, name or
        negation is an updated fact: stored, superseding the nearest such memory. ``session``
        (a client session) is kept in its ``metadata.session``. ``project`` (default
        ``default``) scopes it; ``shared`` makes every project see it."""
        new = self._parse_new(
            content,
            source_type,
            source_instance,
            tags,
            context,
            created_at,
            skip_dedup,
            session,
            project,
            shared,
        )
        self.check_space([new.content])
        with self.activity.request():
            vector = (await self.embed([new.content]))[0]
            return await self._store_new(new, vector)

    async def remember_batch(self, items: Any) -> list[RememberResult]:
        """1–1000 memories; all are validated before any is stored. At most
        :data:`MAX_CONCURRENT_BATCHES` batches run at once (Busy beyond)."""
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
            raise InvalidInput(f"memories must be a list of 1 to {MAX_BATCH} items")
        parsed: list[NewMemory] = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise InvalidInput(f"memories[{index}] must be an object")
            try:
                check.fields(item, RememberRequest)
                parsed.append(self._parse_new(**item))
            except InvalidInput as exc:
                raise InvalidInput(f"memories[{index}]: {exc.message}", exc.detail) from None
        self.check_space([p.content for p in parsed])
        if self.batches_in_flight >= MAX_CONCURRENT_BATCHES:
            raise Busy(
                f"{self.batches_in_flight} batches are being stored already (at most "
                f"{MAX_CONCURRENT_BATCHES} at once); retry in {BATCH_RETRY_AFTER} s",
                BATCH_RETRY_AFTER,
            )
        self.batches_in_flight += 1
        try:
            with self.activity.request():
                vectors = await self.embed([p.content for p in parsed])
                return [await self._store_new(p, v) for p, v in zip(parsed, vectors, strict=True)]
        finally:
            self.batches_in_flight -= 1

    async def _store_new(
        self, new: NewMemory, vector: np.ndarray, corrects: Memory | None = None
    ) -> RememberResult:
        """Store ``new`` unless it restates a near-duplicate. With ``corrects`` (a correction,
        no duplicate check): ``corrects`` is marked superseded before any plugin hears of the
        new memory, so that nothing built from memories (episode summaries) sees both."""
        supersedes = corrects.id if corrects is not None else None
        async with self._write_lock:
            if not new.skip_dedup:
                candidates = await self.request_threads.run(
                    self._near_duplicates, vector, new.project
                )
                decision = dedup.decide(new.content, candidates)
                if decision.duplicate_of is not None:
                    return RememberResult(
                        success=False,
                        duplicate_of=decision.duplicate_of,
                        error=dedup.duplicate_message(decision.duplicate_of),
                    )
                supersedes = supersedes or decision.supersedes  # an updated fact
            self.check_space([new.content])  # again: the disk may have filled meanwhile
            now = utc_now()
            memory = Memory(
                id=new_memory_id(),
                content=new.content,
                source_type=new.source_type,
                source_instance=new.source_instance,
                tags=new.tags,
                context=new.context,
                created_at=new.created_at or now,
                updated_at=now,
                supersedes=supersedes,
                metadata={"session": new.session.strip()} if new.session else {},
                project=new.project,
                shared=new.shared,
            )
            try:
                await self.hooks.before_remember(memory)  # durable intent: failing fails the write
                await self._upsert([memory], vector[None, :])
            except BaseException:
                await self.hooks.store_failed(memory)
                raise
            if corrects is not None:
                corrects = await self._mark_superseded(corrects.id, memory.id)
        if corrects is not None:
            await self.hooks.after_correct(corrects, memory)
        extra = await self.hooks.after_remember(memory, vector)
        episode_id = extra.pop("episode_id", None)
        return RememberResult(success=True, memory_id=memory.id, episode_id=episode_id, extra=extra)

    def _near_duplicates(self, vector: np.ndarray, project: str) -> list[dedup.Candidate]:
        """Memories (not episode summaries, not superseded by a correction) at or above
        ``memory.dedup_threshold`` that ``project`` sees, nearest first: restating a corrected
        fact stores it again, and so does stating in one project what another one holds.

        Among the unfiltered nearest neighbours the non-summaries are those memories; an
        unfiltered query is much cheaper than a must_not filter, which the engine checks point
        by point. Only when no probed neighbour can be reported (each is engine-written or
        another project's) and the farthest of them still reaches the threshold does the
        filtered query run: every memory it could return lies no nearer than that farthest
        neighbour (exactly so on the store's unsealed part; on sealed parts as closely as their
        int8 scan ranks).
        """
        threshold = self.config.memory.dedup_threshold
        hits = self.store.dense_search(vector, DEDUP_PROBE)
        found = [
            h
            for h in hits
            if h.memory.source_type not in ENGINE_WRITTEN
            and (h.memory.project == project or h.memory.shared)
        ]
        if not found and len(hits) == DEDUP_PROBE and hits[-1].cosine >= threshold:
            where = MemoryFilter(exclude_source_types=sorted(ENGINE_WRITTEN), project=project)
            found = self.store.dense_search(vector, 1, where)
        return [
            dedup.Candidate(h.memory.id, h.memory.content)
            for h in found
            if h.cosine >= threshold and h.memory.superseded_by is None  # hidden: not a match
        ]

    async def correct(
        self,
        memory_id: Any,
        content: Any,
        source_instance: Any = None,
        tags: Any = None,
        context: Any = None,
    ) -> RememberResult:
        """Store a CORRECTION memory that supersedes ``memory_id``. The old memory is kept as
        history, marked ``superseded_by`` the correction: recall leaves it out unless asked
        (``include_superseded``), and episode summaries leave it out."""
        old = await self.get(memory_id)
        if old.source_type is SourceType.EPISODE_SUMMARY:
            raise InvalidInput(
                f"memory {old.id} is an episode summary; correct the memories it summarises"
            )
        if old.source_type in ENGINE_WRITTEN:
            raise InvalidInput(
                f"memory {old.id} is an episode's {old.source_type.value}; correct the memories "
                "it rests on or edit the episode (PATCH /v1/episodes/{id})"
            )
        new = self._parse_new(
            content,
            SourceType.CORRECTION,
            source_instance,
            old.tags if tags is None else tags,
            context,
            None,
            True,
            project=old.project,
            shared=old.shared,
        )
        self.check_space([new.content, old.content])
        with self.activity.request():
            vector = (await self.embed([new.content]))[0]
            return await self._store_new(new, vector, corrects=old)

    async def finish_corrections(self) -> int:
        """At start: mark the memories that a stored correction supersedes but that are not
        marked (a crash between the two writes), and tell the plugins. Returns how many."""
        where = MemoryFilter(source_types=[SourceType.CORRECTION])
        corrections = await asyncio.to_thread(lambda: list(self.store.scroll(where)))
        newest: dict[str, Memory] = {}
        for correction in sorted(corrections, key=lambda m: (m.created_at, m.id)):
            if correction.supersedes:
                newest[correction.supersedes] = correction
        olds = await self.get_many(list(newest))
        unmarked = [old for old in olds if old.superseded_by is None]
        for old in unmarked:
            correction = newest[old.id]
            async with self._write_lock:
                marked = await self._mark_superseded(old.id, correction.id)
            if marked is not None:
                await self.hooks.after_correct(marked, correction)
        if unmarked:
            log.warning(
                "marked %d corrected memories superseded (their correction was stored, then "
                "the daemon stopped before marking them)",
                len(unmarked),
            )
        return len(unmarked)

    async def _mark_superseded(self, old_id: str, new_id: str) -> Memory | None:
        """Record on ``old_id`` that ``new_id`` supersedes it; the caller holds the write lock.
        None when it was forgotten meanwhile."""
        found = await asyncio.to_thread(self.store.get, [old_id])
        vectors = await self.vectors([old_id])
        if not found or old_id not in vectors:
            return None
        old = found[0]
        old.superseded_by = new_id
        old.updated_at = utc_now()
        await self._upsert([old], vectors[old_id][None, :])
        return old

    async def forget(self, memory_id: Any) -> None:
        """Delete a memory; hooks take it out of anything built from it (e.g. its episode)
        before this returns. The hooks run outside the request marker: they may wait for an
        episode's summary job, which waits for requests to end before it uses the CPU."""
        memory = await self.get(memory_id)
        self.hooks.check_forget(memory)
        with self.activity.request():
            async with self._write_lock:
                await asyncio.to_thread(self.store.delete, [memory.id])
        if self.access is not None:
            self.access.delete([memory.id])
        await self.hooks.after_forget(memory)

    def write_lock(self) -> asyncio.Lock:
        """Held while a memory is written: holding it pauses every write (e.g. for a backup)."""
        return self._write_lock

    async def import_memory(
        self, memory: Memory, vector: np.ndarray | None, placed: bool = False
    ) -> bool:
        """Store an exported memory under its own id, with the write-time hooks (so the
        episode engine places it), unless a memory with that id exists: then False.

        ``placed``: the import recreates the memory's episode itself, so no plugin sees it
        as a new memory (no hooks: no detection)."""
        if vector is None:
            vector = (await self.embed([memory.content]))[0]
        item = ImportItem(memory, np.asarray(vector, dtype=np.float32), placed)
        return bool(await self.import_page([item]))

    async def import_page(self, page: list[ImportItem]) -> list[str]:
        """Store a page of exported memories at once (an import), each under its own id,
        unless a memory with that id exists; returns the ids stored.

        One existence check, one durable upsert and one ``before_remember_batch`` for the
        page; then ``after_remember`` for each memory not ``placed``, in the page's order
        (the importer orders by memory time, so the episode engine decides as it would
        for the memories remembered one at a time). Marked as a request: background work
        (summaries) waits for quiet moments as during other requests."""
        with self.activity.request():
            async with self._write_lock:
                ids = [item.memory.id for item in page]
                known = {m.id for m in await asyncio.to_thread(self.store.get, ids)}
                todo: list[ImportItem] = []
                for item in page:
                    if item.memory.id not in known:
                        known.add(item.memory.id)  # twice in a page: stored once
                        todo.append(item)
                if not todo:
                    return []
                self.check_space([item.memory.content for item in todo])
                hooked = [item.memory for item in todo if not item.placed]
                vectors = np.stack([np.asarray(i.vector, dtype=np.float32) for i in todo])
                try:
                    await self.hooks.before_remember_batch(hooked)
                    await self._upsert([item.memory for item in todo], vectors)
                except BaseException:
                    for memory in hooked:
                        await self.hooks.store_failed(memory)
                    raise
            for item in todo:
                if not item.placed:
                    await self.hooks.after_remember(item.memory, item.vector)
        return [item.memory.id for item in todo]

    # -- internal writes for plugins (no hooks, no dedup) -----------------------------------

    async def embed_background(self, texts: list[str]) -> np.ndarray:
        """Embed for background work: on the low-priority embedder when there is one."""
        if self.background is None:
            return await self.embed(texts)
        return await self.background.embed(texts)

    async def put_internal(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        """Insert or replace memories written by a plugin (episode summaries, lessons), in one
        store write, with their ``vectors`` if the plugin embedded them already."""
        if not memories:
            return
        texts = [m.content for m in memories]
        self.check_space(texts)
        if vectors is None:
            vectors = await self.embed_background(texts)
        async with self._write_lock:
            self.check_space(texts)
            await self._upsert(memories, vectors)

    async def delete_internal(self, memory_ids: list[str]) -> None:
        async with self._write_lock:
            await asyncio.to_thread(self.store.delete, memory_ids)
        if self.access is not None:
            self.access.delete(memory_ids)

    # -- reads ------------------------------------------------------------------------------

    async def get(self, memory_id: Any) -> Memory:
        mid = check.memory_id(memory_id)
        found = await asyncio.to_thread(self.store.get, [mid])
        if not found:
            raise NotFound(f"no memory with id {mid}")
        return found[0]

    async def get_many(self, memory_ids: list[str]) -> list[Memory]:
        return await asyncio.to_thread(self.store.get, memory_ids)

    async def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        return await asyncio.to_thread(self.store.get_vectors, memory_ids)

    async def recall(
        self,
        query: Any,
        limit: Any = None,
        min_relevance: Any = None,
        tags: Any = None,
        source_types: Any = None,
        after: Any = None,
        before: Any = None,
        include_superseded: Any = None,
        ids: list[str] | None = None,
        rerank: bool = True,
        project: Any = None,
    ) -> list[RecallHit]:
        """Hybrid search: the ``limit`` memories that dense + BM25 rank best (reciprocal rank
        fusion), ordered by the score shown.

        ``similarity_score`` is the cosine similarity of the memory to the query, clamped to
        0–1 and rounded to 6 decimals; results are ordered by it, best first, equal scores by
        memory id, so the same query on the same store always gives the same list.
        ``min_relevance`` drops results scored below it. Memories a correction superseded
        are left out unless ``include_superseded``.
        ``min_relevance`` drops results scored below it. ``ids`` restricts the search to
        those memories (an episode's members). With ``recall.rerank: retrievability`` (and
        ``rerank``), :data:`RERANK_POOL` × ``limit`` candidates are re-ordered by
        :func:`.access.reranked` and the first ``limit`` kept. ``project`` (default
        ``default``): only its memories and the shared ones; ``*``: every project's.
        """
        text = check.text(
            "query", query, self.config.server.max_content_chars, setting="server.max_content_chars"
        )
        assert text is not None
        where = MemoryFilter(
            tags_any=check.tags(tags) or None,
            source_types=check.source_types(source_types),
            after=check.timestamp("after", after),
            before=check.timestamp("before", before),
            exclude_superseded=not check.boolean("include_superseded", include_superseded),
            ids=ids,
            project=check.scope(project),
        )
        size = check.integer("limit", limit, RECALL_LIMIT)
        floor = check.number("min_relevance", min_relevance, MIN_RELEVANCE)
        if ids is not None and not ids:
            return []
        access = self.access if rerank and self.config.recall.rerank != "none" else None
        if access is not None and not access.available:
            access = None  # logged and shown in /v1/health when it failed
        wanted = size * RERANK_POOL if access is not None else size
        with self.activity.request():
            vector = (await self.embed([text]))[0]
            pool = ranking.pool_size(wanted)
            hits = await self.request_threads.run(self.store.search, text, vector, pool, where)
        shown = shown_order(self._admitted(hits)[:wanted], floor)
        if access is None:
            return shown
        found = access.get(h.memory.id for h in shown)
        floor_share = self.config.recall.rerank_floor
        return stats.reranked(shown, found, access.now(), floor_share)[:size]

    def _admitted(self, hits: list[SearchHit]) -> list[SearchHit]:
        """``hits`` (fused order) that :func:`.ranking.admitted` lets recall show."""
        if not any(h.memory.source_type in ENGINE_WRITTEN for h in hits):
            return hits
        episodes = self.hooks.annotate([h.memory for h in hits])
        pool = [candidate(h, episodes.get(h.memory.id, {}).get("episode_id")) for h in hits]
        kept = {c.id for c in ranking.admitted(pool)}
        return [h for h in hits if h.memory.id in kept]

    async def list_memories(
        self,
        tag: Any = None,
        source_type: Any = None,
        since: Any = None,
        until: Any = None,
        limit: Any = None,
        cursor: Any = None,
        ids: list[str] | None = None,
        project: Any = None,
    ) -> tuple[list[Memory], str | None]:
        """Memories without a query, newest first, a page at a time (see :mod:`.listing`);
        ``ids`` restricts the listing to those memories (an episode's members). Episode
        summaries are listed only when ``source_type`` asks for them."""
        label = check.text("tag", tag, MAX_TAG_CHARS, required=False)
        kind = None if source_type is None else check.source_type(source_type)
        where = MemoryFilter(
            tags_any=[label.strip()] if label else None,
            source_types=None if kind is None else [kind],
            exclude_source_types=[SourceType.EPISODE_SUMMARY] if kind is None else None,
            after=check.timestamp("since", since),
            before=check.timestamp("until", until),
            ids=ids,
            project=check.scope(project),
        )
        size = check.integer("limit", limit, MEMORIES_LIMIT)
        start = None if cursor is None else listing.decode_cursor(cursor)
        if ids is not None and not ids:
            return [], None
        with self.activity.request():
            return await asyncio.to_thread(listing.page, self.store, where, size, start)

    # -- access statistics ------------------------------------------------------------------

    def access_fields(
        self, items: list[tuple[str, datetime]], known: dict[str, fsrs.Stats] | None = None
    ) -> dict[str, dict[str, Any]]:
        """``access_count``, ``last_accessed_at`` and ``retrievability`` of each ``(id,
        created_at)`` (a memory or an episode); null when statistics are unavailable.
        ``known``: statistics just written (not read again)."""
        if self.access is None or not self.access.available:
            return {item_id: dict(NO_STATS) for item_id, _ in items}
        known = known or {}
        found = dict(known)
        found.update(self.access.get(i for i, _ in items if i not in known))
        now = self.access.now()
        return {
            item_id: stats.fields_of(found.get(item_id), now, created_at)
            for item_id, created_at in items
        }

    def record_access(
        self, memories: list[Memory], episode_of: dict[str, str | None], grade: int
    ) -> dict[str, fsrs.Stats]:
        """Review ``memories`` and the episodes they belong to (``episode_of``: memory id →
        episode id, summaries included) with ``grade``; an episode is reviewed once. An
        episode never reviewed counts from its oldest memory among these."""
        if self.access is None or not memories:
            return {}
        key = self.hooks.key_moments(memories)
        items = [(m.id, m.created_at.timestamp(), m.id in key) for m in memories]
        born: dict[str, float] = {}
        for memory in memories:
            episode_id = episode_of.get(memory.id)
            if episode_id:
                at = memory.created_at.timestamp()
                born[episode_id] = min(born.get(episode_id, at), at)
        items += [(episode_id, at, False) for episode_id, at in born.items()]
        return self.access.record(items, grade)

    def forget_access(self, ids: list[str]) -> None:
        """Drop the statistics of ``ids`` (a deleted or merged-away episode)."""
        if self.access is not None:
            self.access.delete(ids)

    async def mark_used(self, memory_id: Any) -> dict[str, Any]:
        """Record that ``memory_id`` was used (a good review, see :mod:`..retrievability`),
        and its episode with it; its statistics after."""
        memory = await self.get(memory_id)
        episode_id = self.annotate([memory]).get(memory.id, {}).get("episode_id")
        self.record_access([memory], {memory.id: episode_id}, fsrs.USED)
        fields = self.access_fields([(memory.id, memory.created_at)])[memory.id]
        return {"memory_id": memory.id, "episode_id": episode_id, **fields}

    async def projects(self) -> list[dict[str, Any]]:
        """Every project that holds memories: how many, how many of them are shared, and
        its newest memory's ``created_at`` (episode counts come from the episode engine)."""

        def read() -> list[dict[str, Any]]:
            out = []
            for name, count in self.store.project_counts().items():
                own = MemoryFilter(project=name, include_shared=False)
                newest = self.store.newest(own, 1)
                shared = MemoryFilter(project=name, include_shared=False, shared_only=True)
                out.append(
                    {
                        "name": name,
                        "memories": count,
                        "shared_memories": self.store.count(shared),
                        "last_activity": newest[0].created_at if newest else None,
                    }
                )
            return out

        return await asyncio.to_thread(read)

    def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        """Extra per-memory fields from plugins (e.g. ``episode_id``) for JSON output."""
        return self.hooks.annotate(memories)

    async def stats(self) -> dict[str, Any]:
        def count_all() -> dict[str, Any]:
            by_type = {
                st.json_name: self.store.count(MemoryFilter(source_types=[st])) for st in SourceType
            }
            return {"total_memories": sum(by_type.values()), "by_source_type": by_type}

        data = await asyncio.to_thread(count_all)
        data["embedding_model"] = self.embedder.model_name
        data.update(self.hooks.stats())
        return data

    def health(self) -> dict[str, Any]:
        from .. import __version__

        info = self.store.info
        data: dict[str, Any] = {
            "status": "ok",
            "version": __version__,
            "uptime_seconds": round(time.monotonic() - self.started_at, 1),
            "store": {"backend": info.backend, "location": info.location},
            "embedding": {
                "model": info.model_name,
                "dim": info.dim,
                "request_cpus": self.request_threads.status(),
            },
            "batches": {"in_flight": self.batches_in_flight, "max": MAX_CONCURRENT_BATCHES},
        }
        if self.space is not None:
            data["disk"] = self.space.status()
        if self.background is not None:
            data["background_embeddings"] = self.background.status()
        if self.warm_up is not None:
            data["warm_up"] = self.warm_up
        if self.access is not None:
            data["access"] = self.access.health()
        data.update(self.hooks.health())
        return data
