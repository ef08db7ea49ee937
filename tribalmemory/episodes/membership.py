"""Who belongs where: creating episodes from memories, adding, moving and removing members.

A memory is in at most one episode: adding it to another one moves it, and the episode it left
gets its summary, title and metadata rewritten at once (extractive) and an LLM regeneration
queued, so that text that left an episode does not live on in it. The same happens when a
memory is forgotten. An episode left with no members is deleted, with its summary memory.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack

import numpy as np

from ..errors import Conflict, InvalidInput, NotFound
from ..models import ENGINE_WRITTEN, Memory, new_memory_id
from ..plural import counted
from ..timeutil import to_epoch
from . import derived, extractive, lifecycle
from .distinctive import Background
from .edits import Pin, may_merge, merge_roles
from .matching import EpisodeFeatures, MemoryFeatures, when
from .state import EngineState
from .store import EpisodeRow
from .summaries import Summaries
from .upkeep import Upkeep

log = logging.getLogger("tribalmemory.episodes")


REMOVALS = {"user": "remove_memory", "forget": "memory_forgotten", "detector": "review_move"}
"""History action of a member's removal, by who removed it."""


class Membership:
    """Creates episodes and changes their members."""

    def __init__(self, state: EngineState, summaries: Summaries, upkeep: Upkeep) -> None:
        self.state = state
        self.store = state.store
        self.summaries = summaries
        self.upkeep = upkeep

    async def create(
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
        actor: str = "detector",
        split_from: str | None = None,
    ) -> EpisodeRow:
        """Create an active episode with an extractive summary (LLM refinement is queued).

        The caller holds the detect lock. Its summary memory is written by the summary job
        queued here, after the request that created the episode (a crash in between leaves
        the durable job). With ``summary_now`` (an episode created on request) it is written
        before the episode exists instead, so that no summary job runs at the same time; a
        crash in between leaves an orphan that reconcile() removes.

        ``actor`` goes into the history; a ``user`` creation pins its members (see
        :mod:`.edits`). ``split_from`` names the episode a split took the memories from.
        """
        state = self.state
        now = state.clock()
        background = Background.of(state.matcher.context(memories[0].project), memories)
        row = _new_row(memories, features, title, title_source, parent_episode_id, now, background)
        episode_id = row.id
        await self.upkeep.make_room(adding=1, project=row.project)
        if summary_now:
            await self.summaries.write_memory(row, memories, row.title, row.summary, "extractive")
        moved_from: set[str] = set()
        moved_ids: dict[str, list[str]] = {}
        with self.store.transaction() as db:
            self.store.episodes.insert(db, row)
            for memory, feature in zip(memories, features, strict=True):
                score, similarity = (scores or {}).get(memory.id, (None, None))
                surprise = None if similarity is None else lifecycle.surprise(similarity)
                previous = self.store.add_member(
                    db, episode_id, memory.id, when(feature), now, score, surprise
                )
                if previous:
                    moved_from.add(previous)
                    moved_ids.setdefault(previous, []).append(memory.id)
            self.store.episodes.update(db, episode_id, since_regen=len(memories))
            ids = [m.id for m in memories]
            if split_from is None:
                details = {"memory_ids": ids, "moved_from": sorted(moved_from)}
                state.record(db, episode_id, actor, "create", details)
            else:
                state.record(db, episode_id, actor, "split_from", {"episode_id": split_from})
            for previous in moved_from:
                left = [m for m in ids if m in moved_ids.get(previous, ())]
                state.record(
                    db,
                    previous,
                    actor,
                    "split" if split_from else "lose_memories",
                    {"episode_id": episode_id, "memory_ids": left},
                )
            if actor == "user":
                for memory_id in ids:
                    self.store.pins.record(db, memory_id, episode_id, "in", now)
                for previous, moved in moved_ids.items():
                    for memory_id in moved:
                        self.store.pins.record(db, memory_id, previous, "out", now)
            for memory_id in finish_detection_of or []:
                self.store.finish_detection(db, memory_id)
            state.queue_summary(db, episode_id, now, trigger=memories[-1].id, delay=0.0)
            for previous in moved_from:
                state.queue_summary(db, previous, now, trigger=None, delay=0.0)
            if parent_episode_id is None:  # looked for by a job, off the request path
                start = self._start(features, row.project)
                self.store.jobs.enqueue(db, "link", episode_id, now, payload=start)
        for memory in memories:
            state.seeds.pop(memory.id, None)
        state.active[episode_id] = state.matcher.episode(episode_id, features)
        for previous in moved_from:
            await self.left(previous)
        created = self.store.episodes.get(episode_id)
        assert created is not None
        log.info("episode %s created with %s", episode_id, counted(len(memories), "memory"))
        return created

    def _start(self, features: list[MemoryFeatures], project: str) -> dict[str, list[str]]:
        """A new episode as it starts, for its link job: its first memories, and the episodes
        it may continue as they stand now (memory time; see :func:`.lifecycle.chain_horizon`).
        Taken now so that a link job that runs late (a fast import) neither sees the episode
        grown nor episodes that closed after it started."""
        ordered = sorted(features, key=when)
        first = when(ordered[0])
        settings = self.state.settings
        horizon = lifecycle.chain_horizon(
            first, settings.active_window_days, settings.chain_window_hours
        )
        return {
            "members": [f.id for f in ordered[: lifecycle.CHAIN_MEMBERS]],
            "candidates": self.store.episodes.chain_candidates(horizon, first, project=project),
        }

    async def add(self, episode_id: str, memory_id: str) -> tuple[bool, str | None]:
        """Add a memory to an episode on request (moving it from another one): whether it was
        added (False: it was a member already, nothing changed) and the episode it left.

        Checked under the detect lock and the episode's lock, which forget and episode
        deletion hold too: a memory forgotten or an episode deleted meanwhile is NotFound."""
        state = self.state
        state.episode(episode_id)
        async with state.detect_lock, state.lock(episode_id):
            row = state.episode(episode_id)  # deleted while we waited: 404
            found = await state.host.get_memories([memory_id])
            vectors = await state.host.get_vectors([memory_id])
            if not found or memory_id not in vectors:
                raise NotFound(f"no memory with id {memory_id} (forgotten?)")
            memory = found[0]
            if memory.source_type in ENGINE_WRITTEN:
                raise InvalidInput(
                    f"{memory.source_type.json_name} memories are written by the episode engine "
                    "and cannot be members of an episode"
                )
            if memory.project != row.project:
                raise Conflict(
                    f"memory {memory_id} belongs to project {memory.project}, episode "
                    f"{episode_id} to {row.project}; an episode never spans two projects"
                )
            if self.store.memberships.episode_of(memory_id) == episode_id:
                return False, None
            now = state.clock()
            with self.store.transaction() as db:
                previous = self.store.add_member(
                    db, episode_id, memory_id, to_epoch(memory.created_at), now
                )
                self.store.finish_detection(db, memory_id)
                self.store.pins.record(db, memory_id, episode_id, "in", now)
                state.record(
                    db,
                    episode_id,
                    "user",
                    "add_memory",
                    {"memory_id": memory_id, "moved_from": previous},
                )
                if previous:
                    self.store.pins.record(db, memory_id, previous, "out", now)
                    state.record(
                        db,
                        previous,
                        "user",
                        "remove_memory",
                        {"memory_id": memory_id, "moved_to": episode_id},
                    )
                state.queue_summary(db, episode_id, now, trigger=memory_id)
                if previous:
                    state.queue_summary(db, previous, now, trigger=None, delay=0.0)
            state.seeds.pop(memory_id, None)
            if row.status == "active" and episode_id in state.active:
                state.active[episode_id] = state.matcher.add(
                    state.active[episode_id], state.memory_features(memory, vectors[memory_id])
                )
        if previous:
            await self.left(previous)
        return True, previous

    async def remove(
        self, episode_id: str, memory_id: str, actor: str = "user", rewrite: bool = True
    ) -> None:
        """Take a memory out of its episode; the summary forgets it at once. ``actor``: user,
        forget or detector (its review moved the memory). The user's removal is pinned: no
        automatic pass puts the memory back (see :mod:`.edits`). ``rewrite=False``: the caller
        holds the detect lock and calls :meth:`rewrite_left` once it has let go of it."""
        async with self.state.lock(episode_id):
            with self.store.transaction() as db:
                now = self.state.clock()
                removed = self.store.remove_member(db, episode_id, memory_id, now)
                if removed:
                    self.store.detections.record(db, memory_id, "standalone", 0.0)
                    action = REMOVALS[actor]
                    who = "detector" if actor == "detector" else "user"
                    self.state.record(db, episode_id, who, action, {"memory_id": memory_id})
                    if actor == "user":
                        self.store.pins.record(db, memory_id, episode_id, "out", now)
                    self.state.queue_summary(
                        db, episode_id, self.state.clock(), trigger=None, delay=0.0
                    )
        if removed:
            await self.left(episode_id, rewrite=rewrite)

    async def merge(self, survivor: str, absorbed: str, actor: str) -> None:
        """Move every member of ``absorbed`` into ``survivor`` and drop ``absorbed`` (its
        history ends with ``merged_into``; its summary, lesson, decision and fact memories are
        deleted); the survivor's summary (and record) is rewritten. A user's merge pins the
        moved memories (see :mod:`.edits`); the detector's does not. The caller holds the
        detect lock."""
        state = self.state
        gone = state.episode(absorbed)
        async with AsyncExitStack() as stack:
            for key in sorted((survivor, absorbed)):
                await stack.enter_async_context(state.lock(key))
            now = state.clock()
            with self.store.transaction() as db:
                moved = self.store.absorb_episode(db, survivor, absorbed, now)
                if actor == "user":
                    for memory_id in moved:
                        self.store.pins.record(db, memory_id, survivor, "in", now)
                details = {"absorbed": absorbed, "memory_ids": moved}
                state.record(db, survivor, actor, "merge", details)
                state.record(db, absorbed, actor, "merged_into", {"episode_id": survivor})
                state.queue_summary(db, survivor, now, trigger=None, delay=0.0)
            state.active.pop(absorbed, None)
            if owned := derived.owned_ids(gone):
                await state.host.delete_owned(owned)
            state.host.episodes_gone([absorbed])
        state.drop_lock(absorbed)
        if survivor in state.active or state.episode(survivor).status == "active":
            await state.rebuild(survivor)

    def merge_partners(self, episode_id: str) -> list[EpisodeFeatures]:
        """The other active episodes of ``episode_id``'s project that an automatic merge may
        join it with: none when the user edited it, and none the user edited (see
        :mod:`.edits`). The caller holds the detect lock."""
        state = self.state
        project = state.project_of_episode(episode_id)
        others = [
            e
            for k, e in state.active.items()
            if k != episode_id and state.project_of_episode(k) == project
        ]
        pins = [Pin.from_row(r) for r in self.store.pins.on([episode_id, *(e.id for e in others)])]
        return [e for e in others if may_merge(pins, episode_id, e.id)]

    async def merge_found(self, first: str, second: str) -> tuple[str, str] | None:
        """An automatic merge (merge checks, resumption): if both are still active, in one
        project and unedited, the one with more members absorbs the other (actor
        ``detector``). Returns (survivor, absorbed), or None when it was not made. The caller
        holds the detect lock."""
        state = self.state
        if first not in state.active or second not in state.active:
            return None  # closed or merged meanwhile
        if state.project_of_episode(first) != state.project_of_episode(second):
            return None
        pins = [Pin.from_row(r) for r in self.store.pins.on([first, second])]
        if not may_merge(pins, first, second):
            return None
        survivor, absorbed = merge_roles(
            first, state.active[first].memory_count, second, state.active[second].memory_count
        )
        await self.merge(survivor, absorbed, actor="detector")
        return survivor, absorbed

    async def left(self, episode_id: str, rewrite: bool = True) -> None:
        """Members left ``episode_id`` (its summary job is queued): delete it when it has none
        left, else rewrite what may quote them at once (unless ``rewrite`` is False) and update
        its features."""
        state = self.state
        async with state.lock(episode_id):
            if await self.delete_if_empty(episode_id):
                return
            if rewrite:
                await self.summaries.refresh_extractive(episode_id)
        if episode_id in state.active:
            await state.rebuild(episode_id)

    async def rewrite_left(self, episode_id: str) -> None:
        """After a review moved members out of ``episode_id`` under the detect lock: rewrite
        what may quote them now, outside that lock (every ``remember`` waits for it, and this
        reads and embeds the whole episode). Nothing when the summary job the removal queued
        has since rewritten it in full (it clears ``needs_full``, which the removal set)."""
        async with self.state.lock(episode_id):
            row = self.store.episodes.get(episode_id)
            if row is None or not row.needs_full or await self.delete_if_empty(episode_id):
                return
            await self.summaries.refresh_extractive(episode_id)

    async def delete_if_empty(self, episode_id: str) -> bool:
        """Delete the episode, and its summary, lesson and decision memories, when it has no
        members; the caller holds its lock. True when it was deleted (or is gone)."""
        row = self.store.episodes.get(episode_id)
        if row is None:
            return True
        if row.memory_count:
            return False
        with self.store.transaction() as db:
            self.store.delete_episode(db, episode_id)
        self.state.active.pop(episode_id, None)
        if owned := derived.owned_ids(row):
            await self.state.host.delete_owned(owned)
        self.state.host.episodes_gone([episode_id])
        log.info("episode %s deleted: no members left", episode_id)
        return True

    async def forgotten(self, memory: Memory) -> None:
        """A memory was forgotten (already deleted from the store): it leaves its episode (or
        the seeds) for good, and its text every title, summary and metadata built from it.

        Under the detect lock, which every write of a membership holds: one that checked the
        memory before it was deleted has committed, and any later one finds it gone."""
        async with self.state.detect_lock:
            state = self.state
            state.seeds.pop(memory.id, None)
            detection = self.store.detections.get(memory.id)
            if detection is not None and detection["state"] != "pending":  # it was learned
                state.matcher.unlearn(memory)  # its words leave the detector's statistics
            episode_id = self.store.memberships.episode_of(memory.id)
            if episode_id is not None:
                await self.remove(episode_id, memory.id, actor="forget")
            with self.store.transaction() as db:
                self.store.forget_detection(db, memory.id)
            state.save_detector()
        self.store.wipe_freed()

    async def prune_dangling(self) -> int:
        """Take out of their episodes the members whose memory no longer exists (a crash
        between a forget and its hook, or a race), so that every count is the real
        membership. At start and on the scheduler's tick. Returns how many were removed."""
        gone = await self.state.host.missing(self.store.memberships.all_member_ids())
        removed = 0
        for memory_id in gone:
            async with self.state.detect_lock:
                self.state.seeds.pop(memory_id, None)
                episode_id = self.store.memberships.episode_of(memory_id)
                if episode_id is not None:
                    await self.remove(episode_id, memory_id, actor="forget")
                    removed += 1
                with self.store.transaction() as db:
                    self.store.forget_detection(db, memory_id)
        if removed:
            log.warning(
                "removed %d memberships of memories that no longer exist (forgotten during a "
                "crash or a race); their episodes' summaries are rebuilt",
                removed,
            )
            self.store.wipe_freed()
        return removed

    async def corrected(self, old: Memory, new: Memory) -> None:
        """A member was corrected: its episode's summary leaves it out at once (extractive)
        and is regenerated in full (queued)."""
        episode_id = self.store.memberships.episode_of(old.id)
        if episode_id is None:
            return
        async with self.state.lock(episode_id):
            with self.store.transaction() as db:
                if self.store.episodes.get(episode_id) is None:
                    return
                self.store.episodes.update(db, episode_id, needs_full=True)
                self.state.queue_summary(db, episode_id, self.state.clock(), trigger=new.id)
            await self.summaries.refresh_extractive(episode_id)


def _new_row(
    memories: list[Memory],
    features: list[MemoryFeatures],
    title: str | None,
    title_source: str,
    parent_episode_id: str | None,
    now: float,
    background: Background,
) -> EpisodeRow:
    """A new active episode of ``memories`` with an extractive summary and title."""
    vectors = np.stack([f.vector for f in features])
    keyword_title, summary = extractive.title_and_summary(memories, vectors, background)
    row = EpisodeRow.new(
        title or keyword_title,
        title_source,
        now,
        summary=summary,
        summary_status="pending",
        summary_memory_id=new_memory_id(),
        last_activity=max(when(f) for f in features),
        parent_episode_id=parent_episode_id,
        project=memories[0].project,  # the callers give memories of one project
    )
    row.first_activity = min(when(f) for f in features)
    return row
