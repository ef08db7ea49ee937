"""Scopes on the read path: the memories of an agent, a session or a run (for the episode
reads, which filter by their members), and the list of a project's client sessions.

A session is the ``metadata.session`` its memories carry; nothing else records it. The list
reads the store newest first (its ``created_ts`` order, only memories that have a session)
until it has seen ``limit`` sessions: the first memory seen of a session is its newest, so the
sessions come in the order of their last activity (on a tie, of their newest memories' ids:
the memory listing's key). Each listed session is then read whole (its count, first memory,
agents, runs and episodes).

The list pages like the memory listing (:mod:`.listing`): a page's cursor is the key of its
last session's newest memory, and the next page reads the store from below that key. A
session met there that has a memory above the key was listed on an earlier page (one read of
its newest memory tells). A session that gains a memory while a client pages moves above the
cursor: it is not shown again on a later page (nor, if not shown yet, at all: a new listing
shows it first). A call's cost therefore grows with the memories of the sessions it lists and
of the earlier pages' sessions it meets, never with the rest of the store.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from .. import validation as check
from ..models import ENGINE_WRITTEN, Memory
from ..shapes import SESSIONS_LIMIT, SessionsQuery
from ..storage.base import MemoryFilter, MemoryStore, scoped
from . import listing
from .state import ServiceState

SCAN_PAGE = 256  # memories read at once while looking for sessions


@dataclass
class SessionFound:
    """One session as the list shows it (:class:`~tribalmemory.shapes.SessionInfo`)."""

    session: str
    project: str
    last: datetime
    newest_id: str = ""
    first: datetime | None = None
    count: int = 0
    agents: set[str] = field(default_factory=set)
    runs: set[str] = field(default_factory=set)
    episode_ids: list[str] = field(default_factory=list)


def project_filter(scope: str | None) -> MemoryFilter:
    """The memories a scoped read of ``scope`` (None: every project) looks at: its own
    (another project's shared memories are that project's), episode summaries and the other
    engine-written memories left out."""
    return MemoryFilter(
        project=scope, include_shared=False, exclude_source_types=list(ENGINE_WRITTEN)
    )


def session_filter(project: str, session: str) -> MemoryFilter:
    """The memories of one session of ``project``."""
    where = project_filter(project)
    where.metadata_equals["session"] = session
    return where


def listed_before(store: MemoryStore, key: tuple[str, str], after: listing.Key) -> bool:
    """Whether the session ``key`` (project, session) has a memory at or above ``after``: an
    earlier page listed it (the one at ``after`` is the previous page's last)."""
    newest, _ = listing.page(store, session_filter(*key), 1, None)
    return not newest or listing.key(newest[0]) >= after


def newest_sessions(
    store: MemoryStore, scope: str | None, limit: int, after: listing.Key | None = None
) -> tuple[list[SessionFound], str | None]:
    """Up to ``limit`` sessions of ``scope``, newest activity first, those whose newest memory
    is below ``after`` (a page's cursor; None: from the newest), and the cursor of the next
    page (None: this is the last). The store is read newest first (only memories that have a
    session) until a session more than ``limit`` is seen."""
    where = project_filter(scope)
    where.metadata_present = ["session"]
    seen: set[tuple[str, str]] = set()
    found: list[SessionFound] = []
    cursor = after
    while True:
        page, following = listing.page(store, where, SCAN_PAGE, cursor)
        for memory in page:
            key = (memory.project, str(memory.metadata["session"]))
            if key in seen:
                continue
            seen.add(key)
            if after is not None and listed_before(store, key, after):
                continue
            if len(found) == limit:  # one more exists: the next page starts below this one
                last = found[-1]
                return found, listing.encode_key((last.last, last.newest_id), "sessions")
            found.append(SessionFound(key[1], key[0], memory.created_at, memory.id))
        if following is None:
            return found, None
        cursor = listing.decode_cursor(following)


def members(store: MemoryStore, found: SessionFound) -> Iterator[list[Memory]]:
    """The memories of one session, a page at a time."""
    pages = store.scroll(session_filter(found.project, found.session), batch_size=SCAN_PAGE)
    while page := list(itertools.islice(pages, SCAN_PAGE)):
        yield page


class SessionOperations(ServiceState):
    """sessions, and the memory ids an episode read's scope filters select."""

    async def scoped_ids(self, scope: str | None, scopes: dict[str, str]) -> list[str] | None:
        """The ids of ``scope``'s memories (None: every project's) that the scope filters
        select; None when none is given (no filter). The store's filter finds them (its
        keyword indexes): the cost grows with the memories selected."""
        if not scopes:
            return None
        where = scoped(project_filter(scope), scopes)

        def read() -> list[str]:
            return [m.id for m in self.store.scroll(where, batch_size=SCAN_PAGE)]

        with self.activity.request():
            return await asyncio.to_thread(read)

    async def sessions(self, request: SessionsQuery) -> tuple[list[SessionFound], str | None]:
        """A page of the client sessions of ``request.project``, newest activity first, and
        the cursor of the next page (see the module's docstring for what a call reads)."""
        size = check.integer("limit", request.limit, SESSIONS_LIMIT)
        scope = check.scope(request.project)
        after = (
            None if request.cursor is None else listing.decode_cursor(request.cursor, "sessions")
        )
        with self.activity.request():
            return await asyncio.to_thread(self._sessions, scope, size, after)

    def _sessions(
        self, scope: str | None, limit: int, after: listing.Key | None
    ) -> tuple[list[SessionFound], str | None]:
        found, following = newest_sessions(self.store, scope, limit, after)
        for session in found:
            episodes: dict[str, datetime] = {}
            for page in members(self.store, session):
                session.count += len(page)
                first = min(m.created_at for m in page)
                session.first = first if session.first is None else min(session.first, first)
                session.agents.update(m.source_instance for m in page)
                session.runs.update(str(m.metadata["run"]) for m in page if m.metadata.get("run"))
                placed = self.annotate(page)
                for memory in page:
                    episode_id = placed.get(memory.id, {}).get("episode_id")
                    newest = episodes.get(episode_id) if episode_id else None
                    if episode_id and (newest is None or memory.created_at > newest):
                        episodes[episode_id] = memory.created_at
            ordered = sorted(episodes.items(), key=lambda item: (item[1], item[0]), reverse=True)
            session.episode_ids = [episode_id for episode_id, _ in ordered]
        return [s for s in found if s.count], following  # one forgotten meanwhile is gone
