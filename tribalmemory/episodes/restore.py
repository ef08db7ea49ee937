"""Recreate an exported episode as it was (import): same id, members, title, status, summary,
structured record, chain link and history, with no detection and no LLM call. The entities and
tools an LLM-written summary's metadata names become mentions of the members that write them,
as when the summary was written (:func:`.summaries.llm_named`).

The episode row, its memberships and its history are written in one transaction; the summary
memory (``EPISODE_SUMMARY``, the exported summary text) and the lesson and decision memories
are written after it, as the summary job writes them. A crash in between leaves the episode
with its summary memory missing: start-up's reconcile queues its summary job, which writes an
extractive (or LLM) summary afresh.

The causal links the record states, and those the fix-after-error rule finds, are derived
again in the same transaction (:meth:`.causal.Causal.derive`). What is not recreated
(documented in docs/portability.md): detector scores and surprise of the memberships (no key
moments are marked), the user's pins, the LLM cost ledger (``cost_usd`` starts at 0) and
sessions. A user's own causal links are the export's ``cause`` lines, restored after the
episodes (:meth:`.causal.Causal.restore`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..models import ENGINE_WRITTEN, Memory
from ..projects import DEFAULT_PROJECT
from ..timeutil import to_epoch
from .state import EngineState
from .store import EpisodeRow
from .summaries import Summaries, llm_named
from .upkeep import Upkeep

IMPORT_ACTION = "imported"


@dataclass
class Restored:
    """What restoring one episode did."""

    created: bool
    members: int = 0
    missing: int = 0  # member ids not stored (an export --since, or forgotten)
    elsewhere: int = 0  # members already in another episode here: left where they are

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def episode_row(record: dict[str, Any], members: list[Memory], parent: str | None) -> EpisodeRow:
    """The episode's row as exported, over the members found here (pure); its project is its
    members' (an episode never spans two)."""
    times = [to_epoch(m.created_at) for m in members]
    llm = record["summary_kind"] == "llm"
    row = EpisodeRow.new(
        record["title"],
        record["title_source"],
        record["created_at"],
        id=record["id"],
        summary=record["summary"],
        summary_kind=record["summary_kind"],
        summary_memory_id=record["summary_memory_id"],
        llm_summary=record["summary"] if llm else "",
        status=record["status"],
        updated_at=record["updated_at"],
        closed_at=record["closed_at"] if record["status"] != "active" else None,
        last_activity=max([*times, *([record["last_activity"]] if record["last_activity"] else [])])
        if times
        else record["last_activity"] or record["created_at"],
        parent_episode_id=parent,
        metadata=record["metadata"],
        structured=record["structured"],
        project=members[0].project if members else record.get("project") or DEFAULT_PROJECT,
    )
    row.first_activity = min(times) if times else None
    return row


class Restore:
    """Episodes recreated from an export."""

    def __init__(self, state: EngineState, summaries: Summaries, upkeep: Upkeep) -> None:
        self.state = state
        self.store = state.store
        self.summaries = summaries
        self.upkeep = upkeep

    def existing(self, episode_ids: list[str]) -> set[str]:
        return self.store.episodes.existing_ids(episode_ids)

    async def restore(self, record: dict[str, Any], chain_ids: set[str]) -> Restored:
        """Recreate the episode unless one with its id exists (then nothing changes).

        ``chain_ids``: the episodes of the same file, so a parent recreated after its child
        keeps the link; a parent neither there nor here is dropped (the chain starts here)."""
        state = self.state
        episode_id = record["id"]
        async with state.detect_lock, state.lock(episode_id):
            if self.store.episodes.get(episode_id) is not None:
                return Restored(created=False)
            ids = record["memory_ids"]
            found = {m.id: m for m in await state.host.get_memories(ids)}
            placed = self.store.memberships.episodes_of(list(found))
            members = [
                found[i]
                for i in ids
                if i in found and i not in placed and found[i].source_type not in ENGINE_WRITTEN
            ]
            result = Restored(
                created=bool(members),
                members=len(members),
                missing=len(ids) - len(found),
                elsewhere=len(found) - len(members),
            )
            if not members:
                return result
            parent = record["parent_episode_id"]
            if parent is not None and parent not in chain_ids and not self.existing([parent]):
                parent = None
            row = episode_row(record, members, parent)
            if row.status == "active":
                await self.upkeep.make_room(adding=1, project=row.project)
            now = state.clock()
            memories = sorted(members, key=lambda m: m.created_at)
            links = self.summaries.causal.derive(row, row.structured or {}, memories)
            named = llm_named(memories, row.metadata) if row.summary_kind == "llm" else {}
            with self.store.transaction() as db:
                self.store.episodes.insert(db, row)
                for memory in members:
                    memory_time = to_epoch(memory.created_at)
                    self.store.add_member(db, episode_id, memory.id, memory_time, now)
                    self.store.finish_detection(db, memory.id)
                    self.store.entities.wait(db, memory.id)  # found by the entity work
                    if memory.id in named:  # the names of its LLM record, as its summary wrote
                        self.store.entities.add_named(
                            db, memory.project, memory.id, memory_time, named[memory.id]
                        )
                for entry in record["history"]:
                    self.store.history.add(
                        db,
                        episode_id,
                        entry["actor"],
                        entry["action"],
                        entry["details"],
                        entry["at"],
                    )
                state.record(db, episode_id, "user", IMPORT_ACTION, result.to_json())
                self.store.episodes.update(
                    db,
                    episode_id,
                    since_regen=0,
                    updated_at=row.updated_at,
                    last_activity=row.last_activity,
                    llm_summary_mark=self.store.memberships.mark(episode_id)
                    if row.summary_kind == "llm"
                    else None,
                )
                if not row.summary:  # exported before its first summary: write one now
                    state.queue_summary(db, episode_id, now, trigger=None, delay=0.0)
                self.summaries.causal.write_derived(db, row, links, now)  # from its record
            await self.summaries.write_memory(
                row, memories, row.title, row.summary, row.summary_kind
            )
            await self.summaries.write_derived(
                _without_record(row), row.structured, memories, row.title
            )
            if row.status == "active":
                await state.rebuild(episode_id)
        return result


def _without_record(row: EpisodeRow) -> EpisodeRow:
    """The row as the derived memories' writer sees a fresh episode: no previous record, so
    nothing is stale."""
    fresh = EpisodeRow(**{**row.__dict__, "structured": {}})
    return fresh
