"""The entities of each memory, found in the background right after its decision.

``remember()`` (an import, a batch, a conversation turn) only records that the memory waits for
its entities (``entity_waiting``, in the transaction of its durable detect job, before it is
stored); the decision wakes this worker, which finds them off the request path in arrival order
(each memory's known names are those of the memories before it, as when they were found inside
the decision). Requests go first: it works after a turn of the host's ``background_turn``,
one memory at a time (:data:`STEP`), until a request comes (a turn given in a quiet moment; it
yields to the event loop after each memory) or for :data:`SLICE` seconds in one stretch (a turn
given under sustained load: one a second, shared with the episode jobs), then waits for its next
turn. So a stream of requests meets its work once a second, for a few milliseconds, instead of
a page of it spread over the requests of that moment. A memory leaves ``entity_waiting`` in the
transaction that writes its mentions (a memory naming nothing too): killed at any point, the
next start finds what still waits. No detect lock: the entity tables are written only here and
by forget, each memory's write is one synchronous transaction, and a memory forgotten while its
page was read is no longer waiting, so it is skipped.

Entity reads wait for the memories acknowledged before them (:meth:`EntityWork.settle`), so a
client that remembers and then lists entities sees its memory."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

from ..entities import judged_mentions
from ..entities.acronyms import kind_words
from ..models import Memory
from ..timeutil import to_epoch
from .state import EngineState
from .store import EpisodeStore

log = logging.getLogger("tribalmemory.episodes")

QUEUED = "entities_queued"
"""Meta value: the memories of an earlier version's database wait for their entities."""
BACKFILLED = "entities_backfilled"
"""Meta value of the version that found entities inside the decision: every decided memory
has its entities."""
PAGE = 200
STEP = 1
"""Memories the background pass takes at a time, between its looks at the requests (a reader
catching up takes :data:`PAGE`; memories not in hand are read from the store a page at once).
One: a request arriving during a quiet moment's pass waits for one memory's extraction (about
1.5 ms), not four."""
SLICE = 0.003
"""Seconds the background pass works, without yielding, after a turn given while requests
run: about the longest a request arriving then waits for it (a stretch ends with the first
memory done after it, so it does one memory at least)."""
READ_WAIT = 10.0
"""How long an entity read waits for the entities of the memories acknowledged before it."""
RETRY_SECONDS = 30.0
"""After a failed pass, the next one starts at the next decision or after this long."""
HELD = 4096
"""Decided memories kept in hand for the worker, so that a page reads the memory store only
for the rest (those decided before a restart, or beyond this many)."""


def record_memory_entities(store: EpisodeStore, memory: Memory) -> bool:
    """Find and store the memory's entities if it still waits for them, in one transaction
    that also ends its wait; False when it no longer waited (forgotten meanwhile). A text the
    extraction fails on would fail again at every retry and hold up the memories behind it: it
    is stored naming nothing, with a WARNING (a failed write is retried instead)."""
    entities = store.entities
    known = entities.known(memory.project)
    try:
        found, unsure = judged_mentions(memory.content, known)
        kinds = kind_words(memory.content)
    except Exception as exc:  # a defect of the extraction on this text, not a passing state
        log.warning(
            "finding the entities of memory %s failed (%s: %s); it is kept without entities",
            memory.id,
            type(exc).__name__,
            exc,
        )
        found, kinds, unsure = {}, set(), set()
    with store.transaction() as db:
        if not entities.take(db, memory.id):
            return False
        entities.record_memory(
            db, memory.project, memory.id, to_epoch(memory.created_at), found, kinds, unsure
        )
    return True


class EntityWork:
    """The background worker of the module: :meth:`run` is its task, :meth:`wake` starts a
    pass, :meth:`settle` catches up for a reader."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self.store = state.store
        self.turn: Callable[[], Awaitable[None]] | None = None
        """Awaited before each stretch of work (the plugin sets the host's
        ``background_turn``: requests first). A test may hold the worker here."""
        self.busy: Callable[[], bool] = lambda: False
        """Whether a request runs (the host's ``busy``): a stretch ends when one comes."""
        self.error: str | None = None
        """Why the last pass stopped (None: it did not)."""
        self.idle = asyncio.Event()
        """Set when a pass found nothing more waiting; cleared by :meth:`wake`."""
        self._wake = asyncio.Event()
        self._pages = asyncio.Lock()
        self._held: dict[str, Memory] = {}  # decided memories not read yet, in arrival order
        self._ahead: dict[str, Memory] = {}  # the rest of the last page read from the store
        self._late = False  # a read answered before the entities it waited for were found

    def health(self) -> dict[str, Any]:
        return {"entities_waiting": self.store.entities.waiting(), "entities_error": self.error}

    def start(self) -> None:
        """At start: a database from an earlier version gets its memories queued (once), and
        a pass looks for what waits."""
        store = self.store
        if not store.get_meta(QUEUED):
            older = not store.get_meta(BACKFILLED)
            with store.transaction() as db:
                queued = store.entities.wait_untracked(db, decided_too=older)
                store.set_meta(db, QUEUED, True)
            if queued:
                log.info("entities to find for %d memories of an earlier version", queued)
        self.wake()

    def wake(self, memory: Memory | None = None) -> None:
        """A memory was decided (kept in hand, so its page needs no read of the memory store):
        look for waiting memories. Called on the request path."""
        if memory is not None:
            if len(self._held) >= HELD:  # the oldest is read from the store when its turn comes
                del self._held[next(iter(self._held))]
            self._held[memory.id] = memory
        self.idle.clear()
        self._wake.set()

    async def run(self) -> None:
        """The worker's task: a pass at each wake-up, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                while await self.run_slice():
                    pass
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # retried at the next decision, or after a while
                self._failed(exc)
                with suppress(TimeoutError):
                    async with asyncio.timeout(RETRY_SECONDS):
                        await self._wake.wait()
                self._wake.set()
                continue
            self.error = None
            if not self._wake.is_set():
                self.idle.set()

    async def run_slice(self) -> bool:
        """After a turn, find the entities of waiting memories :data:`STEP` at a time until a
        request comes, or, on a turn given while requests ran, for :data:`SLICE` seconds;
        False once none waits."""
        if self.turn is not None:
            await self.turn()
        forced = self.busy()
        deadline = time.monotonic() + SLICE
        while await self.page(limit=STEP, pause=False):
            if self.busy() and (not forced or time.monotonic() >= deadline):
                return True
            if not forced:
                await asyncio.sleep(0)  # a request arriving now ends the stretch
        return False

    def _failed(self, exc: Exception) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        if reason != self.error:
            log.warning(
                "finding the entities of %d waiting memories stopped (%s); tried again at the "
                "next decision or in %.0f s",
                self.store.entities.waiting(),
                reason,
                RETRY_SECONDS,
            )
        self.error = reason

    async def page(self, up_to: int | None = None, limit: int = PAGE, pause: bool = True) -> int:
        """Find the entities of the first ``limit`` waiting decided memories (``up_to``: of
        those that arrived at or before that place), yielding to the event loop after each
        memory (``pause``); returns how many memories it read."""
        async with self._pages:
            ids = self.store.entities.waiting_page(limit, up_to)
            if not ids:
                return 0
            found = {
                i: m
                for i in ids
                if (m := self._held.pop(i, None) or self._ahead.pop(i, None)) is not None
            }
            missing = [i for i in ids if i not in found]
            if missing:  # one store read for the next PAGE waiting, the rest kept for later
                upcoming = self.store.entities.waiting_page(PAGE, up_to)
                later = [i for i in upcoming if i not in self._held and i not in found]
                wanted = dict.fromkeys(missing + later)
                read = {m.id: m for m in await self.state.host.get_memories(list(wanted))}
                found |= {i: read.pop(i) for i in missing if i in read}
                self._ahead = read
            for memory_id in ids:
                memory = found.get(memory_id)
                if memory is None:  # decided, then gone from the memory store: nothing to read
                    with self.store.transaction() as db:
                        self.store.entities.take(db, memory_id)
                    continue
                record_memory_entities(self.store, memory)
                if pause:
                    await asyncio.sleep(0)  # requests waiting for the event loop go first
            return len(ids)

    async def settle(self, timeout: float = READ_WAIT) -> bool:
        """For a reader: find now the entities of the decided memories waiting when it was
        called (without waiting for a turn), for at most ``timeout`` seconds. False (with a
        WARNING, once until it catches up again) when the read answers without some of them."""
        up_to = self.store.entities.last_waiting()
        if not up_to:
            return True
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if not await self.page(up_to):
                    self._late = False
                    return True
        except Exception as exc:
            self._failed(exc)
        if not self._late:
            log.warning(
                "an entity read answered while %d memories still wait for their entities "
                "(%s); see episodes.entities_waiting in /v1/health",
                self.store.entities.waiting(),
                self.error or f"more than {timeout:.0f} s of work",
            )
        self._late = True
        return False
