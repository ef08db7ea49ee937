"""Episode summaries: the summary job, the extractive refresh and the summary memory.

Each episode's summary is also stored as one ``EPISODE_SUMMARY`` memory (same id every time),
and its lessons, decisions and facts as ``LESSON`` / ``DECISION`` / ``FACT`` memories
(:mod:`.derived`), written through the plugin host, so that plain ``recall()`` finds them. The
structured record (task, outcome, decisions, events, lessons, facts, metrics:
:mod:`.structured`) is rewritten with the summary. The entities an LLM's metadata names become
mentions (source ``llm``) of the members that write them, in the transaction that stores the
metadata: no call of their own.
Everything here that writes an episode's summary holds that episode's lock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..entities import canonical
from ..entities.named import named_mentions
from ..llm.prompts.limits import LIST_MAX_ITEMS
from ..llm.prompts.render import select_memories
from ..models import ENGINE_WRITTEN, Memory, SourceType, new_memory_id
from ..timeutil import from_epoch, to_epoch
from . import derived, extractive, lifecycle, structured, upgrades
from .causal import Causal
from .distinctive import Background
from .events import Events, SummaryWaits
from .state import EngineState
from .store import EpisodeRow
from .summariser import Summariser, SummaryOutcome

SUMMARY_INSTANCE = "tribalmemory"
EMPTY_TITLE = "Untitled episode"  # what an episode is called while nothing in it is current

log = logging.getLogger("tribalmemory.episodes")


@dataclass
class DerivedWrites:
    """The lesson and decision memories a new record changes, and those it no longer has."""

    memories: list[Memory]
    stale: list[str]


class Summaries:
    """Writes episode summaries and their summary memories."""

    def __init__(self, state: EngineState, summariser: Summariser, events: Events) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser
        self.events = events
        """Where a summary left waiting for its LLM upgrade is announced."""
        self.causal = Causal(state)
        """The causal links each summary job derives from the record and the memories."""

    async def run(self, episode_id: str, trigger: str | None = None, upgrade: bool = False) -> bool:
        """The summary job: LLM summary of the planned kind, or the extractive fallback.
        True when an LLM summary was written.

        A fallback while an LLM is configured (an outage) leaves the episode waiting for an
        upgrade (:mod:`.upgrades`); ``upgrade`` is that upgrade: a full LLM summary, and
        nothing written when the LLM cannot give one.

        The episode's lock is held to read the members and to write, not in between: the LLM
        call, the background turn and the embeddings can take seconds, and moves, merges and
        splits wait for the lock holding the detect lock, which every ``remember`` waits for.
        What was computed is written only if nobody took the lock meanwhile (a member left,
        a user edit); else the job is queued again."""
        settings = self.state.settings
        lock = self.state.lock(episode_id)
        async with lock:
            live = await self._live_members(episode_id)
            if live is None:
                return False
            row, memories, vectors = live
            if row.summary_memory_id is None:  # it was emptied, and has members again
                row.summary_memory_id = new_memory_id()
                with self.store.transaction() as db:
                    self.store.episodes.update(
                        db, episode_id, summary_memory_id=row.summary_memory_id
                    )
            # "New since the last LLM summary": memberships numbered above the mark it recorded.
            marker = self.store.memberships.mark(episode_id)
            fresh = self.store.memberships.members_after(episode_id, row.llm_summary_mark)
            new_memories = [m for m in memories if m.id in fresh]
            plan = lifecycle.plan_summary(
                status=row.status,
                since_regen=row.since_regen,
                interval=settings.full_regen_interval,
                needs_full=row.needs_full or upgrade,
                has_llm_summary=bool(row.llm_summary),
                new_memories=len(new_memories),
                update_every=settings.llm_update_every,
            )
            interim = plan == "interim" and bool(row.llm_summary) and self.summariser.ready()
            background = self.background(row, memories)
            taken = lock.taken
        result = (
            None
            if plan == "interim"
            else await self.summariser.summarise(plan, row, memories, new_memories, trigger)
        )
        if upgrade and result is None:
            return False
        # An LLM summary was wanted and not had while an LLM is configured: upgrade it later.
        outage = plan != "interim" and result is None and self.summariser.configured()
        # What follows uses the CPU (extractive summary, embedding): requests go first.
        await self.state.host.background_turn()
        made = await asyncio.to_thread(
            compose,
            plan,
            interim,
            row,
            memories,
            new_memories,
            vectors,
            result,
            marker,
            self.state.clock(),
            background,
        )
        values = made.values
        links = self.causal.derive(row, values["structured"], memories)
        writes = await self._derived_writes(row, values["structured"], made.derived)
        embedded_summary, *embedded_derived = await self._embedded(
            [made.summary, *writes.memories], background=True
        )
        async with lock:
            if self.store.episodes.get(episode_id) is None:
                return False
            if lock.taken != taken + 1:
                log.info("episode %s changed during its summary job: the job runs again", row.id)
                with self.store.transaction() as db:
                    self.state.queue_summary(
                        db, episode_id, self.state.clock(), trigger=trigger, delay=0.0
                    )
                return False
            await self._put([embedded_summary])
            with self.store.transaction() as db:
                self.store.episodes.update(db, episode_id, **values)
                self.causal.write_derived(db, row, links, self.state.clock())
                # what the record read first: the names it adds are judged once, as written
                self.store.entities.review(db, made.reviewed)
                for memory in memories:  # the entities the LLM's record names, as written
                    if memory.id in made.named:
                        self.store.entities.add_named(
                            db,
                            memory.project,
                            memory.id,
                            to_epoch(memory.created_at),
                            made.named[memory.id],
                        )
                marked = plan != "interim" and upgrades.mark(self.store, db, episode_id, outage)
            await self._put(embedded_derived)
            await self._delete_stale(writes)
        if marked and outage:
            self.events.summary_waits.announce(SummaryWaits(episode_id))
        return result is not None

    async def refresh_extractive(self, episode_id: str) -> None:
        """After a member left (removed, moved, forgotten or superseded): rewrite everything
        that may quote it from the remaining members at once. The summary and metadata become
        extractive, a generated title a keyword title, the last LLM summary (the base of
        cheap updates) is dropped so the queued LLM job regenerates in full. A user's title
        is kept. The caller holds the episode's lock and has queued the summary job."""
        live = await self._live_members(episode_id)
        if live is None:
            return
        row, memories, vectors = live
        # the whole episode read again (15-30 ms for a large one): off the event loop, where
        # the requests arriving meanwhile would wait for it
        background = self.background(row, memories)
        values = await asyncio.to_thread(refreshed_values, row, memories, vectors, background)
        values["updated_at"] = self.state.clock()
        with self.store.transaction() as db:
            self.store.episodes.update(db, episode_id, **values)
        await self.write_memory(row, memories, values["title"], values["summary"], "extractive")
        await self.write_derived(row, values["structured"], memories, values["title"])

    def background(self, row: EpisodeRow, memories: list[Memory]) -> Background:
        """The project's word counts for these memories' words: what makes a term of theirs
        distinctive in titles and extractive summaries."""
        return Background.of(self.state.matcher.context(row.project), memories)

    async def write_derived(
        self, row: EpisodeRow, record: dict[str, Any], memories: list[Memory], title: str
    ) -> None:
        """Insert or replace the episode's LESSON / DECISION / FACT memories and delete the ones
        its shorter lists no longer have (the record is stored first: see :mod:`.derived`). The
        caller holds locks that requests may wait for: embedded at request priority."""
        now = from_epoch(self.state.clock())
        wanted = derived.memories(row, record, memories, title, now)
        writes = await self._derived_writes(row, record, wanted)
        await self._put(await self._embedded(writes.memories, background=False))
        await self._delete_stale(writes)

    async def write_memory(
        self, row: EpisodeRow, memories: list[Memory], title: str, summary: str, kind: str
    ) -> None:
        """Insert or replace the episode's EPISODE_SUMMARY memory (same id every time). The
        caller holds locks that requests may wait for: embedded at request priority."""
        now = from_epoch(self.state.clock())
        memory = summary_memory(row, memories, title, summary, kind, now)
        await self._put(await self._embedded([memory], background=False))

    async def _derived_writes(
        self, row: EpisodeRow, record: dict[str, Any], wanted: list[Memory]
    ) -> DerivedWrites:
        """Of the lesson and decision memories of ``record`` (``wanted``, from
        :func:`derived.memories`), those to write, and the stale ones."""
        existing = {m.id: m for m in await self.state.host.get_memories([m.id for m in wanted])}
        changed = [
            m
            for m in wanted
            if (old := existing.get(m.id)) is None or not derived.unchanged(old, m)
        ]
        return DerivedWrites(changed, derived.stale_ids(row.id, row.structured, record))

    async def _embedded(
        self, memories: Sequence[Memory | None], background: bool
    ) -> list[tuple[Memory, np.ndarray] | None]:
        """Each memory with its vector (None stays None): ``background`` at low priority,
        else at request priority (for a caller holding what requests wait for)."""
        texts = [m.content for m in memories if m is not None]
        if not texts:
            return [None for _ in memories]
        host = self.state.host
        vectors = iter(await (host.embed_background(texts) if background else host.embed(texts)))
        return [None if m is None else (m, next(vectors)) for m in memories]

    async def _put(self, embedded: list[tuple[Memory, np.ndarray] | None]) -> None:
        """One store write for all of them (a summary job writes up to ~20 lessons and
        decisions: written one by one, each took the write lock a request waits for)."""
        items = [item for item in embedded if item is not None]
        if items:
            await self.state.host.write_owned(
                [m for m, _ in items], np.stack([v for _, v in items])
            )

    async def _delete_stale(self, writes: DerivedWrites) -> None:
        if writes.stale:
            await self.state.host.delete_owned(writes.stale)

    async def _live_members(
        self, episode_id: str
    ) -> tuple[EpisodeRow, list[Memory], np.ndarray] | None:
        """The episode and the members its summary covers: not those a correction superseded.
        None when it is gone or has none (then its summary memory is removed, since there is
        nothing left to summarise)."""
        row = self.store.episodes.get(episode_id)
        if row is None:
            return None
        found = await self.state.host.get_memories(self.store.memberships.member_ids(episode_id))
        memories = [m for m in found if m.superseded_by is None]
        vectors = await self.state.host.get_vectors([m.id for m in memories])
        kept = [m for m in memories if m.id in vectors]
        if not kept:
            await self._drop_memory(episode_id)
            return None
        return row, kept, np.stack([vectors[m.id] for m in kept])

    async def _drop_memory(self, episode_id: str) -> None:
        """No member left: the summary memory and the lesson / decision memories go, and the
        record keeps no item (each cited a memory that left)."""
        row = self.store.episodes.get(episode_id)
        if row is None:
            return
        owned = derived.expected_ids(episode_id, row.structured)
        if row.summary_memory_id is None and not owned:
            return
        record = refreshed_record(row, [])
        with self.store.transaction() as db:
            self.store.episodes.update(
                db,
                episode_id,
                summary="",
                summary_memory_id=None,
                summary_status="current",
                llm_summary="",
                llm_summary_mark=None,
                needs_full=True,
                metadata={},
                structured=record,
                updated_at=self.state.clock(),
                **({} if row.title_source == "user" else {"title": EMPTY_TITLE}),
            )
        if row.summary_memory_id is not None:
            owned.append(row.summary_memory_id)
        await self.state.host.delete_owned(owned)


@dataclass
class Composed:
    """What a summary job writes: the episode's new values and its memories."""

    values: dict[str, Any]
    summary: Memory | None  # the EPISODE_SUMMARY memory (see summary_memory)
    derived: list[Memory]  # the lesson and decision memories of the new record
    named: dict[str, dict[str, tuple[str, list[str]]]]  # memory id -> the LLM's names it writes
    reviewed: dict[str, list[str]]  # memory id -> the names the record reading it gave


def compose(
    plan: str,
    interim: bool,
    row: EpisodeRow,
    memories: list[Memory],
    new_memories: list[Memory],
    vectors: np.ndarray,
    result: SummaryOutcome | None,
    marker: int | None,
    now: float,
    background: Background | None = None,
) -> Composed:
    """What a summary job writes, from the members it read and the LLM's answer. Pure, and
    run on a thread: for an episode of some hundred members it takes 10-20 ms, which on the
    event loop every request arriving meanwhile waited for."""
    values: dict[str, Any] = {"updated_at": now}
    if interim:
        values.update(
            summary=extractive.interim_summary(row.llm_summary, new_memories),
            summary_kind="llm",
        )
    else:
        values.update(summary_values(plan, row, memories, vectors, result, marker, background))
    values["metadata"] = with_participants(values.get("metadata", row.metadata), memories, result)
    values["structured"] = structured_record(row, memories, result)
    title = values.get("title", row.title)
    when = from_epoch(now)
    summary = summary_memory(row, memories, title, values["summary"], values["summary_kind"], when)
    wanted = derived.memories(row, values["structured"], memories, title, when)
    named = llm_named(memories, result.metadata if result is not None else None)
    return Composed(values, summary, wanted, named, reviewed(memories, result, named))


NAMING = ("entities", "tools_used")
"""The lists of an LLM's metadata whose names become mentions of the members writing them."""


def record_names(metadata: dict[str, Any] | None, keys: Sequence[str] = NAMING) -> list[str]:
    """The names an LLM's metadata lists under ``keys``, as many as an answer may hold (an
    export's metadata is not the model's)."""
    if metadata is None:
        return []
    lists = [metadata.get(key) for key in keys]
    return [
        n
        for given in lists
        if isinstance(given, list)
        for n in given[:LIST_MAX_ITEMS]
        if isinstance(n, str)
    ]


def llm_named(
    memories: list[Memory], metadata: dict[str, Any] | None
) -> dict[str, dict[str, tuple[str, list[str]]]]:
    """The entities and tools an LLM's metadata names (``entities``, ``tools_used``) that each
    member writes (see :func:`named_mentions`), by memory id; none without an LLM answer with
    metadata (or an exported episode's, see :mod:`.restore`), and none for a memory the engine
    wrote."""
    names = record_names(metadata)
    if not names:
        return {}
    found = {
        m.id: named_mentions(m.content, names)
        for m in memories
        if m.source_type not in ENGINE_WRITTEN
    }
    return {memory_id: named for memory_id, named in found.items() if named}


def reviewed(
    memories: list[Memory],
    result: SummaryOutcome | None,
    named: dict[str, dict[str, tuple[str, list[str]]]],
) -> dict[str, list[str]]:
    """The members an LLM's record read, each with the names the record gave (canonical): the
    ones it lists (its entities, tools and participants) and those they name in any member
    (``named``, :func:`llm_named`); the members its prompt showed (see
    :func:`~tribalmemory.llm.prompts.render.select_memories`), none the engine wrote; none
    without an LLM answer with metadata (the final summary's). A name the rules found in a
    member and the record left out is doubted (see :mod:`.store.entities`)."""
    if result is None or result.metadata is None:
        return {}
    listed = record_names(result.metadata, (*NAMING, "participants"))
    given = {canonical(n) for n in listed} - {""}
    names = sorted(given.union(*named.values()))
    shown, _ = select_memories(memories)
    return {m.id: names for m in shown if m.source_type not in ENGINE_WRITTEN}


def summary_memory(
    row: EpisodeRow, memories: list[Memory], title: str, summary: str, kind: str, now: datetime
) -> Memory | None:
    """The EPISODE_SUMMARY memory of an episode, tagged with its members' tags; None when the
    episode has none (no member left)."""
    if row.summary_memory_id is None:
        return None
    tags = sorted({t for m in memories for t in m.tags} | {f"episode:{row.id}"})
    return Memory(
        id=row.summary_memory_id,
        content=f"Episode: {title}\n{summary}",
        source_type=SourceType.EPISODE_SUMMARY,
        source_instance=SUMMARY_INSTANCE,
        tags=tags,
        context=None,
        created_at=from_epoch(row.first_activity or row.created_at),
        updated_at=now,
        metadata={"episode_id": row.id, "summary_kind": kind},
        project=row.project,
    )


def scrubbed_values(
    row: EpisodeRow,
    memories: list[Memory],
    vectors: np.ndarray,
    background: Background | None = None,
) -> dict[str, Any]:
    """Episode columns rebuilt from ``memories`` alone, with nothing generated from others."""
    user_title = row.title_source == "user"
    keyword_title, summary = extractive.title_and_summary(memories, vectors, background)
    return {
        "summary": summary,
        "summary_kind": "extractive",
        "title": row.title if user_title else keyword_title,
        "title_source": "user" if user_title else "keyword",
        "metadata": extractive.fallback_metadata(memories, row.status),
        "llm_summary": "",
        "llm_summary_mark": None,
        "needs_full": True,
    }


def with_participants(
    metadata: dict[str, Any], memories: list[Memory], result: SummaryOutcome | None
) -> dict[str, Any]:
    """Metadata whose participants always include the members' own source instances: the LLM
    may add participants, never remove them."""
    named = set(metadata.get("participants") or [])
    if result is None and metadata.get("source") != "llm":
        named = set()  # extractive: exactly the members' instances
    out = dict(metadata)
    out["participants"] = sorted(named | {m.source_instance for m in memories})
    return out


def structured_record(
    row: EpisodeRow, memories: list[Memory], result: SummaryOutcome | None
) -> dict[str, Any]:
    """The episode's structured record after a summary job.

    From the LLM's answer when it has one (each invalid part dropped with a WARNING; a part it
    lacks is kept from before, or read off the memories when there was no record); else by the
    deterministic rules of :mod:`.structured` while the record is not an LLM one; else the LLM
    record is kept. A closed episode whose outcome would stay ``ongoing`` gets the rules'
    outcome. User-edited fields are always kept; metrics are always recomputed.
    """
    previous = row.structured or {}
    members = [m.id for m in memories]
    fresh: dict[str, Any] = {}
    if result is not None and result.structured is not None:
        parts, dropped = structured.from_llm(result.structured, members)
        for reason in dropped:
            log.warning("episode %s: LLM structured answer: %s", row.id, reason)
        fresh = parts if previous else structured.fallback(memories, row.status) | parts
        source = "llm"
    elif previous.get("source") != "llm":
        fresh, source = structured.fallback(memories, row.status), "extractive"
    else:
        source = "llm"
    if row.status != "active" and fresh.get("outcome", previous.get("outcome")) == "ongoing":
        rules = structured.fallback(memories, row.status)
        fresh |= {"outcome": rules["outcome"], "outcome_reason": rules["outcome_reason"]}
    return structured.finish(fresh, previous, memories, source)


def refreshed_values(
    row: EpisodeRow, memories: list[Memory], vectors: np.ndarray, background: Background
) -> dict[str, Any]:
    """The columns :meth:`Summaries.refresh_extractive` writes: :func:`scrubbed_values`, with
    the record read afresh (:func:`refreshed_record`)."""
    return scrubbed_values(row, memories, vectors, background) | {
        "structured": refreshed_record(row, memories)
    }


def refreshed_record(row: EpisodeRow, memories: list[Memory]) -> dict[str, Any]:
    """After a member left: the record is read afresh from the remaining memories by the rules
    (an LLM record may quote the memory that left; the queued LLM job rewrites it), except the
    user-edited fields, whose items citing the memory that left are dropped."""
    previous = row.structured or {}
    pinned = list(previous.get("edited") or [])
    kept = {key: previous[key] for key in pinned if key in previous} | {"edited": pinned}
    return structured.finish(
        structured.fallback(memories, row.status), kept, memories, "extractive"
    )


def summary_values(
    plan: str,
    row: EpisodeRow,
    memories: list[Memory],
    vectors: np.ndarray,
    result: SummaryOutcome | None,
    marker: int | None,
    background: Background | None = None,
) -> dict[str, Any]:
    """Episode columns after an LLM summary, or after the extractive fallback (which also
    renews a keyword title: the one written when the episode had two members says little)."""
    if result is None:
        title, summary = extractive.title_and_summary(memories, vectors, background)
        values: dict[str, Any] = {"summary": summary, "summary_kind": "extractive"}
        if row.title_source == "keyword":
            values["title"] = title
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
