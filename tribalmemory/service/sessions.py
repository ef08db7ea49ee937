"""Scopes on the read path: the memories of an agent, a session or a run (for the episode
reads, which filter by their members), and the list of a project's client sessions.

A session is the ``metadata.session`` its memories carry; nothing else records it. The list
reads the store newest first (its ``created_ts`` order, only memories that have a session)
until it has seen ``limit`` sessions: the first memory seen of a session is its newest, so the
sessions come in the order of their last activity. Every memory read on the way belongs to
one of the sessions listed, and each listed session is then read whole (its count, first
memory, agents, runs and episodes). A call's cost therefore grows with the memories of the
sessions it lists, never with the rest of the store.
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


def newest_sessions(store: MemoryStore, scope: str | None, limit: int) -> list[SessionFound]:
    """Up to ``limit`` sessions of ``scope``, newest activity first: the store read newest
    first (only memories that have a session) until ``limit`` sessions were seen."""
    where = project_filter(scope)
    where.metadata_present = ["session"]
    seen: dict[tuple[str, str], SessionFound] = {}
    cursor: listing.Key | None = None
    while len(seen) < limit:
        page, following = listing.page(store, where, SCAN_PAGE, cursor)
        for memory in page:
            key = (memory.project, str(memory.metadata["session"]))
            if key not in seen:
                seen[key] = SessionFound(key[1], key[0], memory.created_at)
                if len(seen) == limit:
                    break
        if following is None:
            break
        cursor = listing.decode_cursor(following)
    return list(seen.values())


def members(store: MemoryStore, found: SessionFound) -> Iterator[list[Memory]]:
    """The memories of one session, a page at a time."""
    where = project_filter(found.project)
    where.metadata_equals["session"] = found.session
    pages = store.scroll(where, batch_size=SCAN_PAGE)
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

    async def sessions(self, request: SessionsQuery) -> list[SessionFound]:
        """The client sessions of ``request.project``, newest activity first (see the
        module's docstring for what a call reads)."""
        size = check.integer("limit", request.limit, SESSIONS_LIMIT)
        scope = check.scope(request.project)
        with self.activity.request():
            return await asyncio.to_thread(self._sessions, scope, size)

    def _sessions(self, scope: str | None, limit: int) -> list[SessionFound]:
        found = newest_sessions(self.store, scope, limit)
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
        return [s for s in found if s.count]  # one forgotten meanwhile is gone
