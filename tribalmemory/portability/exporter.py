"""Export: the header, every memory (in the store's order), every episode, then the causal
links a user added by hand between them; of every project, or of one (its own memories,
shared ones included, its episodes and its links).

Lines are produced one page at a time, so an export of any size streams in bounded memory.
Summary memories of episodes are left out (they are the episodes' ``summary``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from datetime import datetime
from typing import Any

from ..api import TribalAPI
from ..models import ENGINE_WRITTEN
from ..storage.base import MemoryFilter, scoped
from ..timeutil import to_iso, utc_now
from . import records

PAGE = 256
EPISODE_PAGE = 100


async def export_lines(
    api: TribalAPI,
    since: datetime | None = None,
    vectors: bool = False,
    progress: Callable[[int], None] | None = None,
    project: str | None = None,
    scopes: dict[str, str] | None = None,
) -> AsyncGenerator[str, None]:
    """The export as JSON lines (of ``project`` only, when given); ``progress(n)`` after
    every ``n`` memories written. ``scopes`` (``validation.scopes``: source_instance,
    session, run) keeps only the memories they select and the episodes with one of them."""
    scopes = scopes or {}
    service = api.service
    yield records.dumps(
        records.header(
            service.embedder.model_name,
            service.embedder.dim,
            to_iso(utc_now()),
            to_iso(since) if since else None,
            vectors,
            project,
        )
    )
    memories = episodes = 0
    # A user's link is written when both its nodes are in the file: its nodes are tracked as
    # the file is written (bounded by the links, few: each was added by hand).
    links = api.episodes.user_causes(project) if api.episodes is not None else []
    wanted = {node for link in links for node in (link["cause"], link["effect"])}
    written: set[str] = set()
    where = MemoryFilter(
        after=since,
        exclude_source_types=list(ENGINE_WRITTEN),
        project=project,
        include_shared=False,  # another project's shared memories are that project's
    )
    scoped(where, scopes)
    pages = service.store.scroll(where, batch_size=PAGE)
    while True:
        page = await asyncio.to_thread(lambda: list(itertools.islice(pages, PAGE)))
        if not page:
            break
        extra = service.annotate(page)
        stored = await service.vectors([m.id for m in page]) if vectors else {}
        for memory in page:
            vector = stored.get(memory.id)
            episode_id = extra.get(memory.id, {}).get("episode_id")
            if f"memory:{memory.id}" in wanted:
                written.add(f"memory:{memory.id}")
            yield records.dumps(
                records.memory_record(
                    memory, episode_id, vector.tolist() if vector is not None else None
                )
            )
        memories += len(page)
        if progress is not None:
            progress(len(page))
    if api.episodes is not None:
        async for detail in _episodes(api, since, project, scopes):
            episodes += 1
            line = records.episode_record(detail)
            written |= records.episode_nodes(line) & wanted
            yield records.dumps(line)
    kept = [link for link in links if {link["cause"], link["effect"]} <= written]
    for link in kept:
        yield records.dumps(records.cause_record(link))
    yield records.dumps(records.end(memories, episodes, len(kept)))


async def _episodes(
    api: TribalAPI, since: datetime | None, project: str | None, scopes: dict[str, str]
) -> AsyncIterator[dict[str, Any]]:
    """The episodes of ``project``, or of every project that has any (with ``scopes``: those
    with a memory they select)."""
    if project is not None:
        names = [project]
    else:
        names = [p["name"] for p in (await api.projects())["projects"] if p["episodes"]]
    for name in sorted(names):
        offset = 0
        while True:
            listed = await api.episodes_list(
                limit=EPISODE_PAGE, offset=offset, project=name, **scopes
            )
            page = listed["episodes"]
            for episode in page:
                last = episode.get("last_activity_at")
                if since is not None and last is not None and last < to_iso(since):
                    continue
                yield await api.episode_get(episode["id"])
            if len(page) < EPISODE_PAGE:
                break
            offset += EPISODE_PAGE
