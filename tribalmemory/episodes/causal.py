"""Causal links as clients read and edit them, and the links each summary job derives: the I/O
around the pure rules of :mod:`.causes` (docs/causes.md)."""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

from ..errors import InvalidInput, NotFound
from ..models import Memory
from ..plural import counted
from ..shapes import CAUSAL_PATH_MAX_DEPTH, MAX_NODE_LINKS
from ..timeutil import from_epoch, to_epoch, to_iso
from . import causes
from .causes import EPISODE, MEMORY, Link, Step
from .doors import doors
from .state import EngineState
from .store.rows import EpisodeRow

log = logging.getLogger("tribalmemory.episodes")


def link_json(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "cause": row["cause"],
        "effect": row["effect"],
        "relation": "causes",
        "confidence": row["confidence"],
        "source": row["source"],
        "note": row["note"],
        "created_at": to_iso(from_epoch(row["created_at"])),
    }


class Causal:
    """The ``causal_links`` of the episode database, as the API answers them."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self.store = state.store

    # -- derived by a summary job -----------------------------------------------------------

    def derive(self, row: EpisodeRow, record: dict[str, Any], memories: list[Memory]) -> list[Link]:
        """The links the episode's record states and the rules find in its memories."""
        events = record.get("events") or []
        ordered = {
            i
            for e in events
            if e.get("type") in (*causes.FAILURES, "fix")
            for i in e.get("memory_ids") or []
        }
        phrased = {m.id for m in memories if causes.has_causal_phrase(m.content) is not None}
        read = ordered | phrased  # only the memories a rule reads: extraction is not free
        named = {m.id: set(causes.names(m.content)) for m in memories if m.id in read}
        found = causes.record_links(record)
        found += causes.order_links(events, named)
        for memory in memories:
            if memory.id not in phrased:
                continue
            earlier: dict[str, str] = {}
            for name in named[memory.id]:
                first = self.store.causes.first_episode_naming(
                    row.project, name, to_epoch(memory.created_at)
                )
                if first is not None and first != row.id:
                    earlier[name] = first
            found += causes.reference_links(memory.id, memory.content, earlier)
        return causes.unique(found)

    def write_derived(
        self, db: sqlite3.Connection, row: EpisodeRow, links: list[Link], now: float
    ) -> None:
        self.store.causes.replace_derived(db, row.project, row.id, links, now)

    # -- nodes --------------------------------------------------------------------------------

    async def exists(self, project: str, name: str, field: str) -> None:
        """NotFound unless ``name`` (a node as :func:`tribalmemory.validation.node` gives it)
        is in the project (another project's node is not found either)."""
        kind, key = causes.split_node(name)
        if kind == MEMORY:
            found = await self.state.host.get_memories([key])
            if not found or found[0].project != project:
                raise NotFound(f"{field}: no memory {key} in project {project}")
        else:
            row = self.store.episodes.get(key)
            if row is None or row.project != project:
                raise NotFound(f"{field}: no episode {key} in project {project}")

    # -- reads and edits ----------------------------------------------------------------------

    async def of_node(self, project: str, node: str) -> dict[str, Any]:
        await self.exists(project, node, "node")
        rows = self.store.causes.of_nodes(project, [node], MAX_NODE_LINKS)
        links = [link_json(r) for r in rows]
        return {"node": node, "project": project, "links": links, "count": len(links)}

    async def add(self, project: str, cause: str, effect: str, note: str | None) -> dict[str, Any]:
        await self.exists(project, cause, "cause")
        await self.exists(project, effect, "effect")
        if cause == effect:
            raise InvalidInput("cause and effect are the same node")
        link = Link(cause, effect, causes.USER_CONFIDENCE, "user", note or "")
        with self.store.transaction() as db:
            row = self.store.causes.add(db, project, link, None, self.state.clock())
        return {"success": True, "link": link_json(row)}

    def remove(self, project: str, link_id: str) -> None:
        row = self.store.causes.get(link_id)
        if row is None or row["project"] != project:
            raise NotFound(
                f"no causal link {link_id} in project {project}",
                doors("list the causal links"),
            )
        with self.store.transaction() as db:
            self.store.causes.delete(db, link_id)

    # -- export and import -------------------------------------------------------------------

    def user_links(self, project: str | None) -> list[dict[str, Any]]:
        """The links a user added by hand, of ``project`` (None: every project), with it."""
        return [
            {**link_json(r), "project": r["project"]} for r in self.store.causes.user_links(project)
        ]

    async def restore(self, links: list[dict[str, Any]]) -> dict[str, Any]:
        """Store exported user links (checked: ``project``, canonical ``cause`` / ``effect``,
        ``id``, ``note``, ``created_at`` in epoch seconds) whose nodes are both in their
        project here; the others are skipped, counted and named in a WARNING."""
        nodes = {link[end] for link in links for end in ("cause", "effect")}
        ends = [causes.split_node(name) for name in sorted(nodes)]
        found = await self.state.host.get_memories([key for kind, key in ends if kind == MEMORY])
        project_of = {causes.node(MEMORY, m.id): m.project for m in found}
        for kind, key in ends:
            row = self.store.episodes.get(key) if kind == EPISODE else None
            if row is not None:
                project_of[causes.node(EPISODE, key)] = row.project
        kept: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        for link in links:
            here = project_of.get(link["cause"]), project_of.get(link["effect"])
            (kept if here == (link["project"],) * 2 else skipped).append(link)
        created = 0
        with self.store.transaction() as db:
            for link in kept:
                made = Link(
                    link["cause"], link["effect"], causes.USER_CONFIDENCE, "user", link["note"]
                )
                created += self.store.causes.restore(
                    db, link["project"], made, link["id"], link["created_at"]
                )
        if skipped:
            log.warning(
                "import: %s skipped, a node of each is in neither the file nor this data "
                "folder (in the link's project): %s",
                counted(len(skipped), "causal link"),
                ", ".join(link["id"] for link in skipped[:20]),
            )
        return {"created": created, "existing": len(kept) - created, "skipped": len(skipped)}

    def decorate(self, project: str, record: dict[str, Any] | None) -> None:
        """Give each decision and event of ``record`` the links of the memory it rests on."""
        if not record:
            return
        for key in ("decisions", "events"):  # copies: the row's record is left as stored
            record[key] = [dict(i) for i in record.get(key) or []]
        items = [i for key in ("decisions", "events") for i in record[key]]
        nodes = {causes.node(MEMORY, i["memory_ids"][0]) for i in items if i.get("memory_ids")}
        rows = self.store.causes.of_nodes(project, sorted(nodes), MAX_NODE_LINKS * 4)
        for item in items:
            ids = item.get("memory_ids") or []
            here = causes.node(MEMORY, ids[0]) if ids else None
            item["links"] = [link_json(r) for r in rows if here in (r["cause"], r["effect"])]

    # -- paths --------------------------------------------------------------------------------

    def _steps(self, project: str, here: str) -> list[Step]:
        kind, key = causes.split_node(here)
        steps = [
            Step(
                r["cause"], r["effect"], "causes", r["confidence"], r["source"], r["id"], r["note"]
            )
            for r in self.store.causes.from_node(project, here)
        ]
        if kind == MEMORY:
            episode_id = self.store.memberships.episode_of(key)
            if episode_id is not None:
                there = causes.node(EPISODE, episode_id)
                steps.append(Step(here, there, "part_of", 1.0, "membership"))
        else:
            for cause in self.store.causes.causes_in_episode(project, key):
                steps.append(Step(here, cause, "contains", 1.0, "membership"))
        return steps

    async def path(self, project: str, first: str, last: str) -> dict[str, Any]:
        await self.exists(project, first, "from_node")
        await self.exists(project, last, "to_node")
        kind, key = causes.split_node(last)
        owner = self.store.memberships.episode_of(key) if kind == MEMORY else None
        holder = causes.node(EPISODE, owner) if owner else None

        def steps_from(here: str) -> list[Step]:
            steps = self._steps(project, here)
            if here == holder:  # an episode leads to the goal memory it contains
                steps.append(Step(here, last, "contains", 1.0, "membership"))
            return steps

        chain = causes.shortest_path(first, last, steps_from, CAUSAL_PATH_MAX_DEPTH)
        answer: dict[str, Any] = {"from_node": first, "to_node": last, "project": project}
        if chain is None:
            reason = (
                f"no chain of at most {CAUSAL_PATH_MAX_DEPTH} causal links is known from "
                f"{first} to {last}"
            )
            return answer | {"path": None, "confidence": None, "reason": reason}
        path = [
            {
                "cause": s.cause,
                "effect": s.effect,
                "relation": s.relation,
                "confidence": s.confidence,
                "source": s.source,
                "link_id": s.link_id,
                "note": s.note,
            }
            for s in chain
        ]
        confidence = causes.path_confidence(chain)
        return answer | {"path": path, "confidence": confidence, "reason": None}
