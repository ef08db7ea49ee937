"""The write path: remember and remember_batch, with the near-duplicate check and the
write-time hooks around each store write."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from .. import validation as check
from ..config import Config
from ..errors import Busy, Conflict, InvalidInput
from ..models import ENGINE_WRITTEN, Memory, SourceType, new_memory_id
from ..shapes import (
    MAX_BATCH,
    MAX_CONTEXT_CHARS,
    MAX_RUN_CHARS,
    MAX_SESSION_CHARS,
    MAX_SOURCE_INSTANCE_CHARS,
    RememberRequest,
)
from ..storage.base import MemoryFilter
from ..timeutil import utc_now
from . import dedup
from .state import ServiceState

# Batches being embedded and stored at once; one more gets 429. Each holds at most one ONNX
# run of TOKEN_BUDGET tokens at a time (embeddings/embedder.py), so this bounds the memory that
# batches take (docs/benchmarks.md#memory).
MAX_CONCURRENT_BATCHES = 2
BATCH_RETRY_AFTER = 2  # seconds, sent as Retry-After with the 429
DEDUP_PROBE = 4  # nearest memories fetched, unfiltered, to find the nearest non-summary


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
    run: str | None = None

    def metadata(self) -> dict[str, str]:
        """What the memory's metadata keeps of the request: its session and run."""
        kept = {"session": self.session, "run": self.run}
        return {key: value.strip() for key, value in kept.items() if value}


def new_memory(request: RememberRequest, config: Config) -> NewMemory:
    """The checked fields of a remember request (values as the client sent them)."""
    limit = config.server.max_content_chars
    text = check.text("content", request.content, limit, setting="server.max_content_chars")
    assert text is not None
    stype = check.source_type(request.source_type)
    if stype in ENGINE_WRITTEN:
        raise InvalidInput(f"source_type {stype.json_name} is written by the episode engine only")
    instance = check.text(
        "source_instance", request.source_instance, MAX_SOURCE_INSTANCE_CHARS, required=False
    )
    return NewMemory(
        content=text,
        source_type=stype,
        source_instance=instance or config.memory.default_source_instance,
        tags=check.tags(request.tags),
        context=check.text("context", request.context, MAX_CONTEXT_CHARS, required=False),
        created_at=check.memory_time("created_at", request.created_at),
        skip_dedup=check.boolean("skip_dedup", request.skip_dedup),
        # a blank session or run is refused, as the reads refuse it: dropped, the memory
        # would silently belong to none
        session=check.given_text("session", request.session, MAX_SESSION_CHARS),
        project=check.project(request.project),
        shared=check.boolean("shared", request.shared),
        run=check.given_text("run", request.run, MAX_RUN_CHARS),
    )


class RememberOperations(ServiceState):
    """remember and remember_batch: check, embed, deduplicate, store, run the hooks."""

    async def remember(self, request: RememberRequest) -> RememberResult:
        """Store one memory (unless it restates a near-duplicate, see :mod:`.dedup`) and run
        the write-time hooks. A near-duplicate that changes a number, version, date, name or
        negation is an updated fact: stored, superseding the nearest such memory. ``session``
        (a client session) is kept in its ``metadata.session``. ``project`` (default
        ``default``) scopes it; ``shared`` makes every project see it."""
        new = new_memory(request, self.config)
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
                parsed.append(new_memory(RememberRequest.model_construct(**item), self.config))
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
            if corrects is not None:  # read under the lock: a correction stored meanwhile counts
                found = await asyncio.to_thread(self.store.get, [corrects.id])
                if found:
                    refuse_corrected(found[0])
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
                metadata=new.metadata(),
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

    def _near_duplicates(self, vector: np.ndarray, project: str) -> list[dedup.NearDuplicate]:
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
            dedup.NearDuplicate(h.memory.id, h.memory.content)
            for h in found
            if h.cosine >= threshold and h.memory.superseded_by is None  # hidden: not a match
        ]

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


def refuse_corrected(old: Memory) -> None:
    """A memory already superseded is not corrected again: two corrections of one memory
    would both stand as current."""
    if old.superseded_by is not None:
        raise Conflict(
            f"memory {old.id} is already corrected by {old.superseded_by}; correct that "
            "memory instead",
            f"Correct {old.superseded_by} (the newer memory) with the same call.",
        )
