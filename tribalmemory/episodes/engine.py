"""The episode engine: detection at write time, lifecycle operations and summary upkeep.

State lives in :class:`EpisodeStore` (SQLite); memories and summary memories live in the host's
memory store, reached only through the plugin host (service/host.py). LLM work (classification
of ambiguous memories, summaries) runs as durable jobs, off the request path (see :mod:`.worker`).

Locks: ``_detect_lock`` serialises detection decisions (so concurrent writers decide as a
sequential run would), and one lock per episode serialises everything that writes an
episode's summary or membership (so summaries of one episode are never written concurrently).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..config import Config
from ..errors import InvalidInput, NotFound
from ..models import Memory, SourceType, new_memory_id
from ..service.host import PluginHost
from ..timeutil import from_epoch, to_epoch, to_iso
from . import extractive, lifecycle
from .matching import Decision, Matcher, MemoryFeatures, when
from .shapes import episode_json, episode_summary_json
from .store import EpisodeRow, EpisodeStore, new_episode_id
from .summariser import Summariser, SummaryOutcome

log = logging.getLogger("tribalmemory.episodes")

SUMMARY_INSTANCE = "tribalmemory"


class EpisodeEngine:
    """Everything the episode feature does; the plugin wires it to the host's hooks."""

    def __init__(
        self,
        config: Config,
        store: EpisodeStore,
        summariser: Summariser,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.settings = config.episodes
        self.store = store
        self.summariser = summariser
        self.clock = clock
        self.matcher = Matcher(config.episodes)
        self.host: PluginHost = None  # type: ignore[assignment]  # set by load()
        self._detect_lock = asyncio.Lock()
        self._episode_locks: dict[str, asyncio.Lock] = {}
        self._active: dict[str, Any] = {}  # episode id -> episode features
        self._seeds: dict[str, MemoryFeatures] = {}  # unassigned memory id -> features
        self.wake: Callable[..., None] = lambda due=None: None  # set by the worker

    # -- set-up ---------------------------------------------------------------------------

    async def load(self, host: PluginHost) -> None:
        """Rebuild the in-memory features of active episodes and seeds from stored vectors."""
        self.host = host
        self.matcher.load_state(self.store.get_meta("detector_context"))
        self._active.clear()
        self._seeds.clear()
        for row in self.store.active_episodes():
            await self._rebuild_features(row.id)
        horizon = self.clock() - self.settings.active_window_days * lifecycle.DAY
        newest = self.store.db.execute("SELECT MAX(memory_time) FROM detections").fetchone()[0]
        if newest is not None:
            horizon = min(horizon, newest - self.settings.active_window_days * lifecycle.DAY)
        seeds = self.store.seeds_since(horizon)
        memories = await host.get_memories([s["memory_id"] for s in seeds])
        vectors = await host.get_vectors([m.id for m in memories])
        for memory in memories:
            if memory.id in vectors:
                self._seeds[memory.id] = self.matcher.memory(memory, vectors[memory.id])

    async def _rebuild_features(self, episode_id: str) -> None:
        ids = self.store.member_ids(episode_id)
        memories = await self.host.get_memories(ids)
        vectors = await self.host.get_vectors(ids)
        members = [self.matcher.memory(m, vectors[m.id]) for m in memories if m.id in vectors]
        if members:
            self._active[episode_id] = self.matcher.episode(episode_id, members)
        else:
            self._active.pop(episode_id, None)

    def lock(self, episode_id: str) -> asyncio.Lock:
        return self._episode_locks.setdefault(episode_id, asyncio.Lock())

    # -- write-time detection -------------------------------------------------------------

    def register_pending(self, memory: Memory) -> None:
        """Before the memory is stored: record a durable detect job for it."""
        now = self.clock()
        with self.store.transaction() as db:
            self.store.set_detection(db, memory.id, "pending", to_epoch(memory.created_at))
            self.store.enqueue(db, "detect", memory.id, now)

    async def detect(self, memory: Memory, vector: np.ndarray) -> dict[str, Any]:
        """Decide the memory's episode now when the embedding path can; else queue the LLM."""
        async with self._detect_lock:
            detection = self.store.detection(memory.id)
            if detection is None:
                return {}
            if detection["state"] != "pending":
                return self._status_of(memory.id)
            features = self.matcher.memory(memory, vector)
            await self._close_idle(reference=to_epoch(memory.created_at))
            decision = self.matcher.decide(
                features,
                list(self._active.values()),
                self._seed_pool(features),
                ambiguous_allowed=self._llm_detection_wanted(),
                learn=True,
            )
            await self._apply(memory, features, decision, from_llm=False)
            self.save_state()
            return self._status_of(memory.id)

    def save_state(self, force: bool = False) -> None:
        """Persist the detector's running statistics every 25 memories (and at stop)."""
        if force or self.matcher.updates % 25 == 0:
            with self.store.transaction() as db:
                self.store.set_meta(db, "detector_context", self.matcher.state())

    def _llm_detection_wanted(self) -> bool:
        strategy = self.settings.detector_strategy
        return strategy != "embedding" and self.summariser.ready()

    def _seed_pool(self, features: MemoryFeatures) -> list[MemoryFeatures]:
        horizon = when(features) - self.settings.active_window_days * lifecycle.DAY
        for memory_id in [k for k, s in self._seeds.items() if when(s) < horizon]:
            self._seeds.pop(memory_id)
        return [s for k, s in self._seeds.items() if k != features.id]

    def _status_of(self, memory_id: str) -> dict[str, Any]:
        episode_id = self.store.episode_of(memory_id)
        detection = self.store.detection(memory_id)
        state = detection["state"] if detection else "none"
        status = {"assigned": "assigned", "pending": "pending"}.get(state, "unassigned")
        return {"episode_id": episode_id, "episode_status": status}

    async def _apply(
        self,
        memory: Memory,
        features: MemoryFeatures,
        decision: Decision,
        *,
        from_llm: bool,
        title_hint: str | None = None,
    ) -> None:
        """Carry out a detection decision (caller holds the detect lock)."""
        now = self.clock()
        kind = decision.kind
        if kind == "join" and decision.target in self._active:
            episode_id = decision.target
            with self.store.transaction() as db:
                self.store.add_member(
                    db,
                    episode_id,
                    memory.id,
                    when(features),
                    now,
                    decision.score,
                    lifecycle.surprise(decision.similarity),
                )
                self._finish_detection(db, memory.id)
                self._queue_summary(db, episode_id, now, trigger=memory.id)
            self._active[episode_id] = self.matcher.add(self._active[episode_id], features)
            self._seeds.pop(memory.id, None)
        elif kind == "seed" and decision.target in self._seeds:
            seed = self._seeds[decision.target]
            await self._start_from_seed(memory, features, seed, decision, title_hint)
        elif kind == "ambiguous":
            with self.store.transaction() as db:
                db.execute("DELETE FROM jobs WHERE kind = 'detect' AND key = ?", (memory.id,))
                self.store.enqueue(
                    db, "classify", memory.id, now, payload={"candidates": decision.candidate_ids()}
                )
            self._seeds[memory.id] = features
            self.wake()
        else:
            state = "standalone" if kind == "none" else "seed"
            with self.store.transaction() as db:
                self.store.set_detection(db, memory.id, state, when(features), title_hint)
                self._finish_detection(db, memory.id)
            if state == "seed":
                self._seeds[memory.id] = features
            else:
                self._seeds.pop(memory.id, None)

    def _finish_detection(self, db: Any, memory_id: str) -> None:
        db.execute(
            "DELETE FROM jobs WHERE kind IN ('detect', 'classify') AND key = ?", (memory_id,)
        )

    def _queue_summary(
        self,
        db: Any,
        episode_id: str,
        now: float,
        *,
        trigger: str | None,
        delay: float | None = None,
    ) -> None:
        self.store.update_episode(db, episode_id, summary_status="pending")
        wait = self.settings.summary_debounce_seconds if delay is None else delay
        self.store.enqueue(db, "summary", episode_id, now, wait, {"trigger": trigger})
        self.wake(now + wait)

    async def _start_from_seed(
        self,
        memory: Memory,
        features: MemoryFeatures,
        seed: MemoryFeatures,
        decision: Decision,
        title_hint: str | None,
    ) -> None:
        seed_memory = await self.host.get_memories([seed.id])
        if not seed_memory:  # the seed was forgotten meanwhile
            self._seeds.pop(seed.id, None)
            await self._apply(memory, features, Decision.new_seed(), from_llm=False)
            return
        seed_row = self.store.detection(seed.id)
        hint = title_hint or (seed_row["hint"] if seed_row else None)
        members = sorted(
            [(seed_memory[0], seed), (memory, features)], key=lambda pair: when(pair[1])
        )
        await self._create(
            [m for m, _ in members],
            [f for _, f in members],
            title=hint,
            title_source="llm" if hint else "keyword",
            scores={memory.id: (decision.score, decision.similarity)},
            finish_detection_of=[memory.id, seed.id],
        )

    # -- creating episodes ----------------------------------------------------------------

    async def _create(
        self,
        memories: list[Memory],
        features: list[MemoryFeatures],
        *,
        title: str | None,
        title_source: str,
        scores: dict[str, tuple[float, float]] | None = None,
        finish_detection_of: list[str] | None = None,
        parent_episode_id: str | None = None,
        summary_now: bool = False,
    ) -> EpisodeRow:
        """Create an active episode with an extractive summary (LLM refinement is queued).

        Its summary memory is written by the summary job queued here, after the request that
        created the episode (a crash in between leaves the durable job). With ``summary_now``
        (an episode created on request) it is written before the episode exists instead, so
        that no summary job runs at the same time; a crash in between leaves an orphan that
        reconcile() removes.
        """
        now = self.clock()
        vectors = np.stack([f.vector for f in features])
        episode_id = new_episode_id()
        last = max(when(f) for f in features)
        row = EpisodeRow(
            id=episode_id,
            title=title or extractive.keyword_title(memories, vectors),
            title_source=title_source,
            summary=extractive.extractive_summary(memories, vectors),
            summary_kind="extractive",
            summary_status="pending",
            summary_memory_id=new_memory_id(),
            llm_summary="",
            llm_summary_mark=None,
            needs_full=False,
            since_regen=0,
            status="active",
            created_at=now,
            updated_at=now,
            closed_at=None,
            last_activity=last,
            parent_episode_id=parent_episode_id,
            metadata={},
        )
        row.first_activity = min(when(f) for f in features)
        await self._make_room(adding=1)
        if summary_now:
            await self._write_summary_memory(row, memories, row.title, row.summary, "extractive")
        moved_from: set[str] = set()
        with self.store.transaction() as db:
            self.store.insert_episode(db, row)
            for memory, feature in zip(memories, features, strict=True):
                score, similarity = (scores or {}).get(memory.id, (None, None))
                previous = self.store.add_member(
                    db,
                    episode_id,
                    memory.id,
                    when(feature),
                    now,
                    score,
                    None if similarity is None else lifecycle.surprise(similarity),
                )
                if previous:
                    moved_from.add(previous)
            self.store.update_episode(db, episode_id, since_regen=len(memories))
            for memory_id in finish_detection_of or []:
                self._finish_detection(db, memory_id)
            self._queue_summary(db, episode_id, now, trigger=memories[-1].id, delay=0.0)
            for previous in moved_from:
                self._queue_summary(db, previous, now, trigger=None, delay=0.0)
            if parent_episode_id is None:  # looked for by a job, off the request path
                self.store.enqueue(db, "link", episode_id, now)
        for memory in memories:
            self._seeds.pop(memory.id, None)
        self._active[episode_id] = self.matcher.episode(episode_id, features)
        for previous in moved_from:
            async with self.lock(previous):
                await self._refresh_extractive(previous)
        created = self.store.episode(episode_id)
        assert created is not None
        log.info(
            "episode %s created with %d memories: %s", episode_id, len(memories), created.title
        )
        return created

    async def _make_room(self, adding: int) -> None:
        active = [
            lifecycle.Activity(episode_id, "active", last)
            for episode_id, last in self.store.active_activity()
        ]
        for episode_id in lifecycle.over_cap(active, self.settings.max_active_episodes, adding):
            log.info(
                "closing %s: more than max_active_episodes=%d active episodes",
                episode_id,
                self.settings.max_active_episodes,
            )
            await self._close(episode_id, reason="active cap")

    async def _close_idle(self, reference: float) -> None:
        """Close active episodes idle for ``active_window_days`` before ``reference``."""
        active = [
            lifecycle.Activity(episode_id, "active", last)
            for episode_id, last in self.store.active_activity()
        ]
        for episode_id in lifecycle.idle(active, reference, self.settings.active_window_days):
            await self._close(episode_id, reason="idle")

    async def _close(self, episode_id: str, reason: str) -> None:
        now = self.clock()
        with self.store.transaction() as db:
            row = db.execute("SELECT status FROM episodes WHERE id = ?", (episode_id,)).fetchone()
            if row is None or row[0] != "active":
                return
            self.store.update_episode(
                db, episode_id, status="closed", closed_at=now, updated_at=now
            )
            self._queue_summary(db, episode_id, now, trigger=None, delay=0.0)
        self._active.pop(episode_id, None)
        log.info("episode %s closed (%s)", episode_id, reason)

    # -- summaries ------------------------------------------------------------------------

    async def _write_summary_memory(
        self, row: EpisodeRow, memories: list[Memory], title: str, summary: str, kind: str
    ) -> None:
        """Insert or replace the episode's EPISODE_SUMMARY memory (same id every time)."""
        if row.summary_memory_id is None:
            return
        episode_id = row.id
        tags = sorted({t for m in memories for t in m.tags} | {f"episode:{episode_id}"})
        now = from_epoch(self.clock())
        memory = Memory(
            id=row.summary_memory_id,
            content=f"Episode: {title}\n{summary}",
            source_type=SourceType.EPISODE_SUMMARY,
            source_instance=SUMMARY_INSTANCE,
            tags=tags,
            context=None,
            created_at=from_epoch(row.first_activity or row.created_at),
            updated_at=now,
            metadata={"episode_id": episode_id, "summary_kind": kind},
        )
        await self.host.write_owned(memory)

    async def _members(self, episode_id: str) -> tuple[list[Memory], np.ndarray]:
        ids = self.store.member_ids(episode_id)
        memories = await self.host.get_memories(ids)
        vectors = await self.host.get_vectors([m.id for m in memories])
        kept = [m for m in memories if m.id in vectors]
        if not kept:
            return [], np.zeros((0, 1), dtype=np.float32)
        return kept, np.stack([vectors[m.id] for m in kept])

    async def _live_members(
        self, episode_id: str
    ) -> tuple[EpisodeRow, list[Memory], np.ndarray] | None:
        """The episode and its members; None when it is gone or empty (then its summary
        memory is removed, since there is nothing left to summarise)."""
        row = self.store.episode(episode_id)
        if row is None:
            return None
        memories, vectors = await self._members(episode_id)
        if not memories:
            await self._drop_summary_memory(episode_id)
            return None
        return row, memories, vectors

    async def _refresh_extractive(self, episode_id: str) -> None:
        """Rewrite the summary from the current members at once (after a removal)."""
        live = await self._live_members(episode_id)
        if live is None:
            return
        row, memories, vectors = live
        summary = extractive.extractive_summary(memories, vectors)
        title = row.title
        if row.title_source == "keyword":  # the title may quote the removed memory
            title = extractive.keyword_title(memories, vectors)
        with self.store.transaction() as db:
            self.store.update_episode(
                db,
                episode_id,
                summary=summary,
                title=title,
                summary_kind="extractive",
                updated_at=self.clock(),
            )
        await self._write_summary_memory(row, memories, title, summary, "extractive")

    async def _drop_summary_memory(self, episode_id: str) -> None:
        row = self.store.episode(episode_id)
        if row is None or row.summary_memory_id is None:
            return
        with self.store.transaction() as db:
            self.store.update_episode(
                db,
                episode_id,
                summary="",
                summary_memory_id=None,
                summary_status="current",
                updated_at=self.clock(),
            )
        await self.host.delete_owned([row.summary_memory_id])

    async def run_summary(self, episode_id: str, trigger: str | None = None) -> None:
        """The summary job: LLM summary of the planned kind, or the extractive fallback."""
        async with self.lock(episode_id):
            live = await self._live_members(episode_id)
            if live is None:
                return
            row, memories, vectors = live
            if row.summary_memory_id is None:  # it was emptied, and has members again
                row.summary_memory_id = new_memory_id()
                with self.store.transaction() as db:
                    self.store.update_episode(
                        db, episode_id, summary_memory_id=row.summary_memory_id
                    )
            # Memberships are numbered in insertion order (rowid): "new since the last LLM
            # summary" is every membership numbered above the mark it recorded.
            marker = self.store.db.execute(
                "SELECT MAX(rowid) FROM memberships WHERE episode_id = ?", (episode_id,)
            ).fetchone()[0]
            fresh = {
                r[0]
                for r in self.store.db.execute(
                    "SELECT memory_id FROM memberships WHERE episode_id = ? AND rowid > ?",
                    (episode_id, row.llm_summary_mark or 0),
                )
            }
            new_memories = [m for m in memories if m.id in fresh]
            plan = lifecycle.plan_summary(
                status=row.status,
                since_regen=row.since_regen,
                interval=self.settings.full_regen_interval,
                needs_full=row.needs_full,
                has_llm_summary=bool(row.llm_summary),
                new_memories=len(new_memories),
                update_every=self.settings.llm_update_every,
            )
            interim = plan == "interim" and bool(row.llm_summary) and self.summariser.ready()
            result = (
                None
                if plan == "interim"
                else await self.summariser.summarise(plan, row, memories, new_memories, trigger)
            )
            # What follows uses the CPU (extractive summary, embedding): requests go first.
            await self.host.background_turn()
            values: dict[str, Any] = {"updated_at": self.clock()}
            if interim:
                values.update(
                    summary=extractive.interim_summary(row.llm_summary, new_memories),
                    summary_kind="llm",
                )
            else:
                values.update(self._summary_values(plan, row, memories, vectors, result, marker))
            title = values.get("title", row.title)
            if self.store.episode(episode_id) is None:
                return
            await self._write_summary_memory(
                row, memories, title, values["summary"], values["summary_kind"]
            )
            with self.store.transaction() as db:
                self.store.update_episode(db, episode_id, **values)

    @staticmethod
    def _summary_values(
        plan: str,
        row: EpisodeRow,
        memories: list[Memory],
        vectors: np.ndarray,
        result: SummaryOutcome | None,
        marker: int | None,
    ) -> dict[str, Any]:
        """Episode columns after an LLM summary, or after the extractive fallback."""
        if result is None:
            values: dict[str, Any] = {
                "summary": extractive.extractive_summary(memories, vectors),
                "summary_kind": "extractive",
            }
            if plan == "final" or not row.metadata:
                values["metadata"] = extractive.fallback_metadata(memories, row.status)
            return values
        values = {
            "summary": result.summary,
            "summary_kind": "llm",
            "llm_summary": result.summary,
            "llm_summary_mark": marker,
            "needs_full": False,
        }
        if plan in ("regenerate", "final"):
            values["since_regen"] = 0
        if result.title and row.title_source != "user":
            values.update(title=result.title, title_source="llm")
        if result.metadata is not None:
            values["metadata"] = result.metadata
        return values

    def mark_summary_settled(self, episode_id: str) -> None:
        with self.store.transaction() as db:
            pending = db.execute(
                "SELECT 1 FROM jobs WHERE kind = 'summary' AND key = ?", (episode_id,)
            ).fetchone()
            if not pending:
                self.store.update_episode(db, episode_id, summary_status="current")

    # -- classification job ---------------------------------------------------------------

    async def run_classify(self, memory_id: str, candidate_ids: list[str]) -> None:
        """The LLM decides an ambiguous memory; invalid or missing answers fall back."""
        memories = await self.host.get_memories([memory_id])
        vectors = await self.host.get_vectors([memory_id])
        if not memories or memory_id not in vectors:
            with self.store.transaction() as db:
                self.store.forget_detection(db, memory_id)
            self._seeds.pop(memory_id, None)
            return
        memory = memories[0]
        features = self.matcher.memory(memory, vectors[memory_id])
        async with self._detect_lock:
            decision = self.matcher.decide(
                features,
                list(self._active.values()),
                self._seed_pool(features),
                ambiguous_allowed=True,
            )
        if decision.kind != "ambiguous":
            async with self._detect_lock:
                if self._still_pending(memory_id):
                    await self._apply(memory, features, decision, from_llm=False)
            return
        candidates = await self._describe_candidates(decision)
        answer = await self.summariser.classify(memory, candidates)
        await self.host.background_turn()  # applying it uses the CPU
        async with self._detect_lock:
            if not self._still_pending(memory_id):
                return
            if answer is None:  # LLM unavailable: the embedding decision stands
                fallback = self.matcher.decide(
                    features,
                    list(self._active.values()),
                    self._seed_pool(features),
                    ambiguous_allowed=False,
                )
                await self._apply(memory, features, fallback, from_llm=False)
                return
            action, target, title = answer
            if action == "join" and target is not None:
                chosen = decision.pick(target)
                if chosen is not None and (
                    chosen.target in self._active or chosen.target in self._seeds
                ):
                    await self._apply(memory, features, chosen, from_llm=True, title_hint=title)
                    return
            kind = "none" if action == "none" else "new_seed"
            await self._apply(
                memory, features, Decision(kind=kind), from_llm=True, title_hint=title
            )

    def _still_pending(self, memory_id: str) -> bool:
        row = self.store.detection(memory_id)
        return row is not None and row["state"] == "pending"

    async def _describe_candidates(self, decision: Decision) -> list[dict[str, Any]]:
        described = []
        for option in decision.candidates:
            if option.kind == "join":
                row = self.store.episode(option.target or "")
                if row is None or row.status != "active":
                    continue
                recent = await self.host.get_memories(self.store.member_ids(row.id)[-3:])
                described.append(
                    {
                        "id": option.target,
                        "title": row.title,
                        "summary": row.llm_summary or row.summary,
                        "recent": [(m.id, m.content) for m in recent],
                    }
                )
            else:
                seed = await self.host.get_memories([option.target or ""])
                if seed:
                    described.append(
                        {
                            "id": option.candidate_id,
                            "title": "(new thread)",
                            "summary": "",
                            "recent": [(seed[0].id, seed[0].content)],
                        }
                    )
        return described

    # -- host events ----------------------------------------------------------------------

    async def memory_forgotten(self, memory: Memory) -> None:
        """Take a forgotten memory out of its episode; the summary forgets it at once."""
        self._seeds.pop(memory.id, None)
        episode_id = self.store.episode_of(memory.id)
        with self.store.transaction() as db:
            self.store.forget_detection(db, memory.id)
        if episode_id is not None:
            await self._remove(episode_id, memory.id)

    def check_forget(self, memory: Memory) -> None:
        if memory.source_type is SourceType.EPISODE_SUMMARY:
            episode_id = memory.metadata.get("episode_id", "?")
            raise InvalidInput(
                f"memory {memory.id} is the summary of episode {episode_id}; delete the "
                f"episode (DELETE /v1/episodes/{episode_id}) or regenerate its summary instead"
            )

    async def memory_corrected(self, old: Memory, new: Memory) -> None:
        episode_id = self.store.episode_of(old.id)
        if episode_id is not None:
            with self.store.transaction() as db:
                self.store.update_episode(db, episode_id, needs_full=True)
                self._queue_summary(db, episode_id, self.clock(), trigger=new.id)

    async def _remove(self, episode_id: str, memory_id: str) -> None:
        async with self.lock(episode_id):
            with self.store.transaction() as db:
                removed = self.store.remove_member(db, episode_id, memory_id, self.clock())
                if removed:
                    self.store.set_detection(db, memory_id, "standalone", 0.0)
                    self._queue_summary(db, episode_id, self.clock(), trigger=None, delay=0.0)
            if not removed:
                return
            await self._refresh_extractive(episode_id)
        if episode_id in self._active:
            await self._rebuild_features(episode_id)

    # -- operations (the API) -------------------------------------------------------------

    def _row(self, episode_id: str) -> EpisodeRow:
        row = self.store.episode(episode_id)
        if row is None:
            raise NotFound(f"no episode with id {episode_id}; list episodes to find its id")
        return row

    def _cost(self, episode_id: str) -> float:
        return self.summariser.episode_cost(episode_id)

    async def list_episodes(
        self, status: str | None, limit: int, offset: int, filters: dict[str, str]
    ) -> list[dict[str, Any]]:
        rows = self.store.episodes(status, limit, offset, filters)
        return [episode_summary_json(r, self._cost(r.id)) for r in rows]

    async def get_episode(self, episode_id: str, include_timeline: bool) -> dict[str, Any]:
        row = self._row(episode_id)
        members = self.store.members(episode_id)
        result: dict[str, Any] = {
            "episode": episode_json(row, self._cost(episode_id)),
            "memory_ids": [m["memory_id"] for m in members],
        }
        if include_timeline:
            memories = {m.id: m for m in await self.host.get_memories(result["memory_ids"])}
            timeline = []
            for member in members:
                memory = memories.get(member["memory_id"])
                if memory is None:
                    continue
                surprise = member["surprise"]
                timeline.append(
                    {
                        "memory_id": memory.id,
                        "created_at": to_iso(memory.created_at),
                        "content": memory.content,
                        "tags": memory.tags,
                        "source_instance": memory.source_instance,
                        "surprise": surprise,
                        "key_moment": surprise is not None and surprise >= lifecycle.KEY_MOMENT,
                    }
                )
            result["timeline"] = timeline
        return result

    async def create_episode(
        self, title: str, memory_ids: list[str], parent_episode_id: str | None
    ) -> dict[str, Any]:
        memories = await self.host.get_memories(memory_ids)
        found = {m.id for m in memories}
        missing = [m for m in memory_ids if m not in found]
        if missing:
            raise NotFound(f"unknown memory id(s): {', '.join(missing)}; nothing was created")
        summaries = [m.id for m in memories if m.source_type is SourceType.EPISODE_SUMMARY]
        if summaries:
            raise InvalidInput(f"episode summaries cannot be members: {', '.join(summaries)}")
        if parent_episode_id is not None:
            self._row(parent_episode_id)
        vectors = await self.host.get_vectors(memory_ids)
        memories.sort(key=lambda m: m.created_at)
        features = [self.matcher.memory(m, vectors[m.id]) for m in memories]
        async with self._detect_lock:
            row = await self._create(
                memories,
                features,
                title=title,
                title_source="user",
                finish_detection_of=memory_ids,
                summary_now=True,
                parent_episode_id=parent_episode_id,
            )
        return {"id": row.id, "memory_count": row.memory_count}

    async def add_memory(self, episode_id: str, memory_id: str) -> None:
        row = self._row(episode_id)
        found = await self.host.get_memories([memory_id])
        if not found:
            raise NotFound(f"no memory with id {memory_id}")
        memory = found[0]
        if memory.source_type is SourceType.EPISODE_SUMMARY:
            raise InvalidInput("an episode summary cannot be a member of an episode")
        if self.store.episode_of(memory_id) == episode_id:
            return
        vectors = await self.host.get_vectors([memory_id])
        async with self._detect_lock, self.lock(episode_id):
            with self.store.transaction() as db:
                previous = self.store.add_member(
                    db, episode_id, memory_id, to_epoch(memory.created_at), self.clock()
                )
                self._finish_detection(db, memory_id)
                self._queue_summary(db, episode_id, self.clock(), trigger=memory_id)
                if previous:
                    self._queue_summary(db, previous, self.clock(), trigger=None, delay=0.0)
            self._seeds.pop(memory_id, None)
            if row.status == "active" and episode_id in self._active:
                self._active[episode_id] = self.matcher.add(
                    self._active[episode_id], self.matcher.memory(memory, vectors[memory_id])
                )
        if previous:
            async with self.lock(previous):
                await self._refresh_extractive(previous)
            if previous in self._active:
                await self._rebuild_features(previous)

    async def remove_memory(self, episode_id: str, memory_id: str) -> None:
        self._row(episode_id)
        if self.store.episode_of(memory_id) != episode_id:
            raise NotFound(f"memory {memory_id} is not in episode {episode_id}")
        await self._remove(episode_id, memory_id)

    async def close_episode(self, episode_id: str) -> None:
        row = self._row(episode_id)
        if row.status != "active":
            return
        async with self._detect_lock:
            await self._close(episode_id, reason="requested")

    async def regenerate_episode(self, episode_id: str) -> None:
        self._row(episode_id)
        with self.store.transaction() as db:
            self.store.update_episode(db, episode_id, needs_full=True)
            self._queue_summary(db, episode_id, self.clock(), trigger=None, delay=0.0)

    async def delete_episode(self, episode_id: str) -> None:
        self._row(episode_id)
        async with self._detect_lock, self.lock(episode_id):
            row = self.store.episode(episode_id)
            if row is None:
                return
            with self.store.transaction() as db:
                self.store.delete_episode(db, episode_id)
            self._active.pop(episode_id, None)
            if row.summary_memory_id:
                await self.host.delete_owned([row.summary_memory_id])
        self._episode_locks.pop(episode_id, None)

    def costs(self) -> dict[str, Any]:
        return self.summariser.costs()

    # -- scheduler and recovery -----------------------------------------------------------

    async def tick(self) -> None:
        """Close idle episodes and archive old closed ones (wall-clock time)."""
        now = self.clock()
        async with self._detect_lock:
            await self._close_idle(reference=now)
        closed = [
            lifecycle.Activity(r.id, r.status, r.last_activity, r.closed_at)
            for r in self.store.episodes("closed", limit=100000)
        ]
        ids = lifecycle.archivable(closed, now, self.settings.archive_after_days)
        if ids:
            with self.store.transaction() as db:
                for episode_id in ids:
                    self.store.update_episode(db, episode_id, status="archived", updated_at=now)
            log.info(
                "archived %d episodes closed over %s days ago",
                len(ids),
                self.settings.archive_after_days,
            )

    async def reconcile(self) -> None:
        """After a crash: re-queue missing summaries, delete orphaned summary memories."""
        rows = {r: self.store.episode(r) for r in self.store.all_episode_ids()}
        expected = {
            row.summary_memory_id: eid
            for eid, row in rows.items()
            if row is not None and row.summary_memory_id
        }
        present = {m.id for m in await self.host.get_memories(list(expected))}
        now = self.clock()
        with self.store.transaction() as db:
            for memory_id, episode_id in expected.items():
                if memory_id not in present:
                    self._queue_summary(db, episode_id, now, trigger=None, delay=0.0)
        stored = await self.host.memories_of_type(SourceType.EPISODE_SUMMARY)
        orphans = [m.id for m in stored if m.id not in expected]
        if orphans:
            log.warning("deleting %d orphaned episode summary memories", len(orphans))
            await self.host.delete_owned(orphans)

    def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        ids = [m.id for m in memories]
        episodes = self.store.episodes_of(ids)
        states = self.store.detection_states(ids)
        out: dict[str, dict[str, Any]] = {}
        for memory in memories:
            if memory.source_type is SourceType.EPISODE_SUMMARY:
                out[memory.id] = {
                    "episode_id": memory.metadata.get("episode_id"),
                    "episode_status": "summary",
                }
                continue
            state = states.get(memory.id)
            status = {"assigned": "assigned", "pending": "pending"}.get(state or "", "unassigned")
            out[memory.id] = {"episode_id": episodes.get(memory.id), "episode_status": status}
        return out

    def health(self) -> dict[str, Any]:
        stats = self.store.queue_stats(self.clock())
        stats["active_episodes"] = len(self._active)
        stats["detector_strategy"] = self.settings.detector_strategy
        return stats

    # -- composing episodes: chains, replay, search ----------------------------------------

    async def find_parent(self, episode_id: str) -> tuple[str, float] | None:
        """A recently closed episode on the same topic that the new episode continues.

        Candidates: episodes closed (or archived) within ``chain_window_hours`` of now whose
        last memory precedes the new episode's first one; the best :func:`chain_score` at or
        above ``chain_similarity_threshold`` wins.
        """
        new = self._active.get(episode_id)
        row = self.store.episode(episode_id)
        if (
            new is None
            or row is None
            or row.first_activity is None
            or row.parent_episode_id is not None
        ):
            return None
        horizon = self.clock() - self.settings.chain_window_hours * 3600.0
        candidates = self.store.recently_closed(horizon, row.first_activity)
        if not candidates:
            return None
        await self.host.background_turn()  # reading and scoring them uses the CPU
        best: tuple[str, float] | None = None
        for candidate in candidates:
            ids = self.store.member_ids(candidate.id)[-32:]
            memories = await self.host.get_memories(ids)
            vectors = await self.host.get_vectors(ids)
            members = [self.matcher.memory(m, vectors[m.id]) for m in memories if m.id in vectors]
            if not members:
                continue
            score = self.matcher.chain_score(new, self.matcher.episode(candidate.id, members))
            if score >= self.settings.chain_similarity_threshold and (
                best is None or score > best[1]
            ):
                best = (candidate.id, score)
        return best

    async def link_parent(self, episode_id: str) -> None:
        """The link job of a new episode: record the parent that :meth:`find_parent` finds."""
        found = await self.find_parent(episode_id)
        if found is None:
            return
        parent, score = found
        with self.store.transaction() as db:
            self.store.update_episode(db, episode_id, parent_episode_id=parent)
        log.info("episode %s continues %s (chain score %.2f)", episode_id, parent, score)

    async def chain(self, episode_id: str) -> dict[str, Any]:
        """The whole chain the episode belongs to, root first (cycle-safe, at most 50)."""
        row = self._row(episode_id)
        seen = {row.id}
        ancestors: list[EpisodeRow] = []
        current = row
        while current.parent_episode_id and len(seen) < CHAIN_LIMIT:
            parent = self.store.episode(current.parent_episode_id)
            if parent is None or parent.id in seen:
                break
            seen.add(parent.id)
            ancestors.append(parent)
            current = parent
        chain = list(reversed(ancestors)) + [row]
        frontier = [row.id]
        while frontier and len(chain) < CHAIN_LIMIT:
            children = [r for r in self.store.children(frontier.pop(0)) if r.id not in seen]
            for child in sorted(children, key=lambda r: r.first_activity or 0.0):
                if len(chain) >= CHAIN_LIMIT:
                    break
                seen.add(child.id)
                chain.append(child)
                frontier.append(child.id)
        items = [episode_summary_json(r, self._cost(r.id)) for r in chain]
        return {
            "episode_id": episode_id,
            "root_id": chain[0].id,
            "chain": items,
            "count": len(items),
        }

    async def _relevant(
        self, query: str, fetch: int, floor: float
    ) -> list[tuple[EpisodeRow, float]]:
        """Episodes whose summary memory matches ``query`` (hybrid search), best first."""
        hits = await self.host.search(
            query, [SourceType.EPISODE_SUMMARY], limit=min(50, fetch), min_relevance=floor
        )
        found: list[tuple[EpisodeRow, float]] = []
        for hit in hits:
            row = self.store.episode(str(hit.memory.metadata.get("episode_id", "")))
            if row is not None and all(row.id != r.id for r, _ in found):
                found.append((row, hit.similarity_score))
        return found

    async def replay(self, topic: str, limit: int) -> dict[str, Any]:
        """The episodes relevant to ``topic`` in chronological order, as JSON and as text."""
        found = (await self._relevant(topic, limit * 3, REPLAY_MIN_RELEVANCE))[:limit]
        found.sort(key=lambda pair: pair[0].first_activity or pair[0].created_at)
        items = []
        lines = (
            [f"Episodes about {topic!r}, oldest first:"]
            if found
            else [f"No episode matches {topic!r}."]
        )
        for index, (row, relevance) in enumerate(found, 1):
            parent = self.store.episode(row.parent_episode_id) if row.parent_episode_id else None
            start = to_iso(from_epoch(row.first_activity or row.created_at))[:10]
            end = to_iso(from_epoch(row.last_activity))[:10]
            short = extractive.clip(row.summary, 300)
            outcome = row.metadata.get("outcome", "unknown")
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
                    "outcome": outcome,
                    "relevance": round(relevance, 4),
                }
            )
            marker = f" (continues: {parent.title})" if parent else ""
            lines.append(f"{index}. {start} to {end}: {row.title}{marker} [{outcome}]\n   {short}")
        return {"topic": topic, "episodes": items, "count": len(items), "text": "\n".join(lines)}

    async def search(
        self,
        query: str,
        time_start: float | None,
        time_end: float | None,
        status: str | None,
        limit: int,
    ) -> dict[str, Any]:
        """Hybrid search over episode summaries and titles with time and status filters.

        An episode matches the time range when its memories' span overlaps it. Ranking:
        ``relevance × (0.8 + 0.2 × 2^(−days since last activity / 14))`` — a recency boost
        of at most 25 % that halves every two weeks.
        """
        now = self.clock()
        results = []
        for row, relevance in await self._relevant(query, 50, 0.0):
            start = row.first_activity or row.created_at
            if status is not None and row.status != status:
                continue
            if time_start is not None and row.last_activity < time_start:
                continue
            if time_end is not None and start > time_end:
                continue
            age_days = max(0.0, (now - row.last_activity) / 86400.0)
            boosted = relevance * (0.8 + 0.2 * 2 ** (-age_days / 14.0))
            item = episode_summary_json(row, self._cost(row.id))
            item["summary"] = extractive.clip(row.summary, SEARCH_SUMMARY_CHARS)
            item["relevance"] = round(relevance, 4)
            item["score"] = round(boosted, 4)
            results.append(item)
        results.sort(key=lambda item: -item["score"])
        return {"query": query, "episodes": results[:limit], "count": len(results[:limit])}


CHAIN_LIMIT = 50
REPLAY_MIN_RELEVANCE = 0.2
SEARCH_SUMMARY_CHARS = 500
