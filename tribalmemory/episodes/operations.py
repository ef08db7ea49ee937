"""The episode operations clients call (list, get, create, add, remove, close, regenerate,
update, merge, split, delete, costs), and what the engine adds to memories' JSON and to
``/v1/health``.

Every manual change takes ``detect_lock`` first (so edits and detection decisions run one at
a time), then the locks of the episodes it writes, in id order; it is recorded in the
episode's history and pinned (see :mod:`.edits`) in the transaction that makes it.

Values arrive validated by :class:`~tribalmemory.api.TribalAPI`; unknown ids raise
:class:`~tribalmemory.errors.NotFound` with a message for the client.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import Conflict, InvalidInput, NotFound
from ..models import ENGINE_WRITTEN, Memory, SourceType
from ..timeutil import from_epoch, to_iso
from . import derived, edits, lifecycle
from .detection import episode_status
from .gist import gist
from .membership import Membership
from .shapes import episode_json, episode_summary_json
from .state import EngineState
from .summariser import Summariser
from .upkeep import Upkeep

ENGINE_STATUS = {
    SourceType.EPISODE_SUMMARY: "summary",
    SourceType.LESSON: "lesson",
    SourceType.DECISION: "decision",
    SourceType.FACT: "fact",
}


class Operations:
    """Reads and manual changes of episodes."""

    def __init__(
        self, state: EngineState, summariser: Summariser, membership: Membership, upkeep: Upkeep
    ) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser
        self.membership = membership
        self.upkeep = upkeep

    # -- reads ------------------------------------------------------------------------------

    async def list_episodes(
        self, status: str | None, limit: int, offset: int, filters: dict[str, Any]
    ) -> list[dict[str, Any]]:
        rows = self.store.episodes.find(status, limit, offset, filters)
        return [episode_summary_json(r, self.summariser.episode_cost(r.id)) for r in rows]

    async def get_episode(self, episode_id: str, include_timeline: bool) -> dict[str, Any]:
        row = self.state.episode(episode_id)
        members = self.store.memberships.members(episode_id)
        result: dict[str, Any] = {
            "episode": episode_json(row, self.summariser.episode_cost(episode_id)),
            "memory_ids": [m["memory_id"] for m in members],
            "history": self.history(episode_id),
        }
        if include_timeline:
            found = await self.state.host.get_memories(result["memory_ids"])
            memories = {m.id: m for m in found}
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

    def history(self, episode_id: str) -> list[dict[str, Any]]:
        return [
            {
                "at": to_iso(from_epoch(r["at"])),
                "actor": r["actor"],
                "action": r["action"],
                "details": json.loads(r["details"]),
            }
            for r in self.store.history.of(episode_id)
        ]

    def member_ids(self, episode_id: str) -> list[str]:
        self.state.episode(episode_id)
        return self.store.memberships.member_ids(episode_id)

    def titles(self, episode_ids: list[str]) -> dict[str, str | None]:
        """The title of each episode of ``episode_ids`` that exists (None: not written yet)."""
        titles = self.store.episodes.titles(episode_ids)
        return {i: title or None for i, title in titles.items()}

    def outlines(self, episode_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Each existing episode of ``episode_ids`` in a line: its title, its gist (what it is
        about, :func:`.gist.gist`), its summary memory's id and its number of members."""
        return {
            episode_id: {
                "title": title or None,
                "gist": gist(title, summary),
                "summary_memory_id": summary_memory_id,
                "memory_count": count,
            }
            for episode_id, (title, summary, summary_memory_id, count) in (
                self.store.episodes.outlines(episode_ids).items()
            )
        }

    def costs(self) -> dict[str, Any]:
        return self.summariser.costs()

    # -- manual changes ---------------------------------------------------------------------

    async def create_episode(
        self, title: str, memory_ids: list[str], parent_episode_id: str | None
    ) -> dict[str, Any]:
        state = self.state
        # Checked under the detect lock, which forget and episode deletion hold too: what is
        # forgotten or deleted meanwhile is NotFound, never a membership of nothing.
        async with state.detect_lock:
            found = await state.in_time_order(memory_ids)
            memories = [m for m, _ in found]
            present = {m.id for m in memories}
            missing = [i for i in memory_ids if i not in present]
            if missing:
                raise NotFound(f"unknown memory id(s): {', '.join(missing)}; nothing was created")
            summaries = [m.id for m in memories if m.source_type in ENGINE_WRITTEN]
            if summaries:
                raise InvalidInput(
                    "episode summaries, lessons and decisions cannot be members: "
                    + ", ".join(summaries)
                )
            projects = sorted({m.project for m in memories})
            if len(projects) > 1:
                raise Conflict(
                    f"the memories belong to several projects ({', '.join(projects)}); an "
                    "episode belongs to one project: create one episode per project"
                )
            if parent_episode_id is not None:
                state.episode(parent_episode_id)
            row = await self.membership.create(
                memories,
                [f for _, f in found],
                title=title,
                title_source="user",
                finish_detection_of=memory_ids,
                summary_now=True,
                parent_episode_id=parent_episode_id,
                actor="user",
            )
        return {"id": row.id, "memory_count": row.memory_count}

    async def add_memory(self, episode_id: str, memory_id: str) -> tuple[bool, str | None]:
        """Whether the memory was added (False: a member already) and the episode it left."""
        return await self.membership.add(episode_id, memory_id)

    async def remove_memory(self, episode_id: str, memory_id: str) -> None:
        self.state.episode(episode_id)
        if self.store.memberships.episode_of(memory_id) != episode_id:
            raise NotFound(f"memory {memory_id} is not in episode {episode_id}")
        await self.membership.remove(episode_id, memory_id)

    async def close_episode(self, episode_id: str) -> None:
        if self.state.episode(episode_id).status != "active":
            return
        async with self.state.detect_lock:
            await self.upkeep.close(episode_id, reason="requested", actor="user")

    async def regenerate_episode(self, episode_id: str) -> None:
        self.state.episode(episode_id)
        self.summariser.retry_now()  # asked for: a failing LLM is tried now, not at its re-probe
        with self.store.transaction() as db:
            self.store.episodes.update(db, episode_id, needs_full=True)
            self.state.record(db, episode_id, "user", "regenerate")
            self.state.queue_summary(db, episode_id, self.state.clock(), trigger=None, delay=0.0)

    async def delete_episode(self, episode_id: str) -> None:
        """Delete the episode and its summary memory; its memories stay, unassigned."""
        state = self.state
        state.episode(episode_id)
        async with state.detect_lock, state.lock(episode_id):
            row = self.store.episodes.get(episode_id)
            if row is None:
                return
            with self.store.transaction() as db:
                members = self.store.delete_episode(db, episode_id)
                state.record(db, episode_id, "user", "deleted", {"memory_ids": members})
            state.active.pop(episode_id, None)
            if owned := derived.owned_ids(row):
                await state.host.delete_owned(owned)
        state.drop_lock(episode_id)

    async def update_episode(
        self,
        episode_id: str,
        title: str | None,
        status: str | None,
        metadata: dict[str, Any] | None,
    ) -> None:
        """Rename, close or reopen an episode, set or remove metadata fields (null removes).

        A user title is kept by later summaries; user metadata fields are kept over the ones
        summaries write. The summary memory follows through the summary job.
        """
        state = self.state
        async with state.detect_lock:
            row = state.episode(episode_id)
            if status == "active" and row.status != "active":
                await self.upkeep.make_room(adding=1, project=row.project)
            async with state.lock(episode_id):
                now = state.clock()
                with self.store.transaction() as db:
                    changes: dict[str, Any] = {}
                    if title is not None and title != row.title:
                        self.store.episodes.update(
                            db, episode_id, title=title, title_source="user", updated_at=now
                        )
                        changes["title"] = title  # not the old one: it may quote a member
                    if metadata:
                        self.store.episodes.patch_metadata(db, episode_id, metadata, now)
                        changes["metadata"] = metadata
                    if status == "active" and self.store.episodes.reopen(db, episode_id, now):
                        state.record(db, episode_id, "user", "reopen", {"from": row.status})
                    if status == "closed" and row.status == "archived":
                        self.store.episodes.update(db, episode_id, status="closed", updated_at=now)
                        state.record(db, episode_id, "user", "unarchive")
                    if changes:
                        state.record(db, episode_id, "user", "update", changes)
                        state.queue_summary(db, episode_id, now, trigger=None, delay=0.0)
            if status == "closed" and row.status == "active":
                await self.upkeep.close(episode_id, reason="requested", actor="user")
            if status == "active" and row.status != "active":
                await state.rebuild(episode_id)

    async def merge_episodes(self, episode_id: str, other_id: str) -> dict[str, Any]:
        """Merge two episodes: the one with more memories keeps its id (on a tie, the
        path's); the other one's memories move to it and it is gone, its history ending with
        ``merged_into``. Works on any status; the survivor keeps its own."""
        if episode_id == other_id:
            raise InvalidInput("other_id names the episode itself; name another episode")
        state = self.state
        async with state.detect_lock:
            first, second = state.episode(episode_id), state.episode(other_id)
            if first.project != second.project:
                raise Conflict(
                    f"episode {first.id} belongs to project {first.project} and {second.id} to "
                    f"{second.project}; an episode never spans two projects"
                )
            survivor, absorbed = edits.merge_roles(
                first.id, first.memory_count, second.id, second.memory_count
            )
            await self.membership.merge(survivor, absorbed, actor="user")
        merged = state.episode(survivor)
        return {
            "episode_id": survivor,
            "absorbed_id": absorbed,
            "memory_count": merged.memory_count,
        }

    async def split_episode(
        self, episode_id: str, memory_ids: list[str], title: str | None
    ) -> dict[str, Any]:
        """A new episode from some members of this one (recorded as ``split_from``); it is
        closed when the episode it came from is not active."""
        state = self.state
        async with state.detect_lock:
            row = state.episode(episode_id)
            problem = edits.split_problem(self.store.memberships.member_ids(episode_id), memory_ids)
            if problem:
                raise Conflict(f"cannot split episode {episode_id}: {problem}")
            found = await state.in_time_order(memory_ids)
            if len(found) != len(memory_ids):
                raise Conflict(
                    "some of memory_ids were forgotten meanwhile; list the episode again"
                )
            new = await self.membership.create(
                [m for m, _ in found],
                [f for _, f in found],
                title=title,
                title_source="user" if title else "keyword",
                summary_now=True,
                actor="user",
                split_from=episode_id,
            )
            if row.status != "active":
                await self.upkeep.close(new.id, reason="split from a closed episode", actor="user")
            elif episode_id in state.active:
                await state.rebuild(episode_id)
        return {"episode_id": new.id, "split_from": episode_id, "memory_count": new.memory_count}

    # -- what the engine adds to other answers ----------------------------------------------

    def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        """``episode_id`` and ``episode_status`` of each memory, for its JSON form."""
        ids = [m.id for m in memories]
        episodes = self.store.memberships.episodes_of(ids)
        states = self.store.detections.states(ids)
        states.update((m, "pending") for m in ids if self.store.intents.is_fresh(m))
        out: dict[str, dict[str, Any]] = {}
        for memory in memories:
            if memory.source_type in ENGINE_WRITTEN:
                out[memory.id] = {
                    "episode_id": memory.metadata.get("episode_id"),
                    "episode_status": ENGINE_STATUS[memory.source_type],
                }
                continue
            out[memory.id] = {
                "episode_id": episodes.get(memory.id),
                "episode_status": episode_status(states.get(memory.id)),
            }
        return out

    def health(self) -> dict[str, Any]:
        stats = self.store.jobs.stats(self.state.clock())
        stats["active_episodes"] = len(self.state.active)
        stats["detector_strategy"] = self.state.settings.detector_strategy
        return stats
