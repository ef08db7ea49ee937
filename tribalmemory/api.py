"""The documented operations: what each HTTP route, MCP tool and CLI command does.

Each method takes raw client values, validates them (:mod:`tribalmemory.validation`, with the
limits of :mod:`tribalmemory.shapes`), calls one service or engine method and returns the JSON
of the response model in :mod:`tribalmemory.shapes` (building it checks the shape). The memory
operations take the fields of their request model (:func:`~tribalmemory.arguments.takes`) and
hand the request to the service operation, which checks each field where it uses it. Interfaces
stay thin: they parse the transport, call a method here and serialise the dict (errors are
:class:`~tribalmemory.errors.TribalError` subclasses, mapped to status codes by each interface).
"""

from __future__ import annotations

from typing import Any, Protocol

from . import shapes
from . import validation as check
from .arguments import takes
from .errors import FeatureDisabled, InvalidInput
from .models import Memory
from .retrievability import ACCESS
from .service import MemoryService
from .shapes import EPISODE_STATUSES
from .timeutil import from_epoch, parse_iso, to_iso

__all__ = ["EPISODES_DISABLED", "EPISODE_STATUSES", "EpisodeOperations", "TribalAPI"]

EPISODES_DISABLED = "Episode feature not enabled"


class EpisodeOperations(Protocol):
    """What the episode engine offers to the API (implemented in tribalmemory.episodes). A
    read's ``project`` of None spans every project (a client's ``*``)."""

    async def list_episodes(
        self, status: str | None, limit: int, offset: int, filters: dict[str, Any]
    ) -> list[dict[str, Any]]: ...
    async def get_episode(self, episode_id: str, include_timeline: bool) -> dict[str, Any]: ...
    async def create_episode(
        self, title: str, memory_ids: list[str], parent_episode_id: str | None
    ) -> dict[str, Any]: ...
    async def add_memory(self, episode_id: str, memory_id: str) -> tuple[bool, str | None]: ...
    async def remove_memory(self, episode_id: str, memory_id: str) -> None: ...
    async def close_episode(self, episode_id: str) -> None: ...
    async def regenerate_episode(self, episode_id: str) -> None: ...
    async def delete_episode(self, episode_id: str) -> None: ...
    async def update_episode(
        self,
        episode_id: str,
        title: str | None,
        status: str | None,
        metadata: dict[str, Any] | None,
    ) -> None: ...
    async def merge_episodes(self, episode_id: str, other_id: str) -> dict[str, Any]: ...
    async def split_episode(
        self, episode_id: str, memory_ids: list[str], title: str | None
    ) -> dict[str, Any]: ...
    def member_ids(self, episode_id: str) -> list[str]: ...
    async def entities(
        self,
        project: str,
        query: str | None,
        kind: str | None,
        limit: int,
        include_doubted: bool = False,
    ) -> list[dict[str, Any]]: ...
    async def entity(self, project: str, name: str, limit: int) -> dict[str, Any]: ...
    async def entity_memory_ids(self, project: str | None, name: str) -> list[str]: ...
    async def episode_entities(self, episode_id: str) -> list[dict[str, Any]]: ...
    async def episodes_entities(
        self, episode_ids: list[str]
    ) -> dict[str, list[dict[str, Any]]]: ...
    def titles(self, episode_ids: list[str]) -> dict[str, str | None]: ...
    def outlines(self, episode_ids: list[str]) -> dict[str, dict[str, Any]]: ...
    def existing_episodes(self, episode_ids: list[str]) -> set[str]: ...
    async def restore_episode(
        self, record: dict[str, Any], chain_ids: set[str]
    ) -> dict[str, Any]: ...
    def user_causes(self, project: str | None) -> list[dict[str, Any]]: ...
    async def restore_causes(self, links: list[dict[str, Any]]) -> dict[str, Any]: ...
    async def start_episode(self, topic: str, session: str, project: str) -> dict[str, Any]: ...
    async def current_episode(self, session: str) -> dict[str, Any]: ...
    async def update_structured(self, episode_id: str, patch: dict[str, Any]) -> None: ...
    async def decisions(self, episode_id: str) -> dict[str, Any]: ...
    async def causes(self, project: str, node: str) -> dict[str, Any]: ...
    async def cause_add(
        self, project: str, cause: str, effect: str, note: str | None
    ) -> dict[str, Any]: ...
    async def cause_remove(self, project: str, link_id: str) -> None: ...
    async def causal_path(self, project: str, start: str, goal: str) -> dict[str, Any]: ...
    async def context(
        self, query: str | None, budget: int, project: str | None
    ) -> dict[str, Any]: ...
    async def patterns(
        self, kind: str | None, query: str | None, limit: int, project: str | None
    ) -> dict[str, Any]: ...
    def project_stats(self) -> dict[str, tuple[int, float | None]]: ...
    def costs(self) -> dict[str, Any]: ...
    async def chain(self, episode_id: str) -> dict[str, Any]: ...
    async def replay(
        self, topic: str, limit: int, project: str | None, members: list[str] | None = None
    ) -> dict[str, Any]: ...
    async def search(
        self,
        query: str,
        time_start: float | None,
        time_end: float | None,
        status: str | None,
        limit: int,
        project: str | None,
        members: list[str] | None = None,
    ) -> dict[str, Any]: ...


class TribalAPI:
    """Documented request → response operations over the service and the episode engine."""

    def __init__(self, service: MemoryService, episodes: EpisodeOperations | None) -> None:
        self.service = service
        self.episodes = episodes

    # -- memories ---------------------------------------------------------------------------

    def memory_json(
        self, memory: Memory, extra: dict[str, dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        return self._memory(memory, extra).to_json()

    def _memory(
        self, memory: Memory, extra: dict[str, dict[str, Any]] | None = None
    ) -> shapes.Memory:
        annotations = extra if extra is not None else self._annotate([memory])
        return shapes.Memory.model_validate(memory.to_json() | annotations.get(memory.id, {}))

    def _annotate(
        self,
        memories: list[Memory],
        extra: dict[str, dict[str, Any]] | None = None,
        known: dict[str, Any] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Plugins' fields (``extra`` when already read) and the access statistics of each
        memory (``known``: those just written), by id."""
        extra = self.service.annotate(memories) if extra is None else extra
        access = self.service.access_fields([(m.id, m.created_at) for m in memories], known)
        for memory_id, fields in access.items():
            extra.setdefault(memory_id, {}).update(fields)
        return extra

    def _with_access(self, episodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Episode JSON objects with their access statistics."""
        access = self.service.access_fields(
            [(e["id"], parse_iso(e["created_at"])) for e in episodes]
        )
        return [e | access[e["id"]] for e in episodes]

    @takes(shapes.RememberRequest)
    async def remember(self, request: shapes.RememberRequest) -> dict[str, Any]:
        result = await self.service.remember(request)
        return shapes.RememberResult.model_validate(result.to_json()).to_json()

    @takes(shapes.RememberBatchRequest)
    async def remember_batch(self, request: shapes.RememberBatchRequest) -> dict[str, Any]:
        results = await self.service.remember_batch(request.memories)
        return shapes.RememberBatchResult(
            results=[shapes.RememberResult.model_validate(r.to_json()) for r in results],
            count=len(results),
            stored=sum(1 for r in results if r.success),
        ).to_json()

    @takes(shapes.IngestConversationRequest)
    async def ingest_conversation(
        self, request: shapes.IngestConversationRequest
    ) -> dict[str, Any]:
        done = await self.service.ingest_conversation(request)
        return shapes.IngestConversationResult(**vars(done)).to_json()

    @takes(shapes.RecallRequest)
    async def recall(self, request: shapes.RecallRequest) -> dict[str, Any]:
        grouped = check.boolean("group_by_episode", request.group_by_episode)
        threads = check.integer("episode_context", request.episode_context, shapes.EPISODE_CONTEXT)
        ids = self._members(request.episode_id)
        ids = await self._naming(request.entity, request.project, ids)
        found = await self.service.recall_dated(request, ids)
        hits = found.hits
        memories = [h.memory for h in hits]
        plugins = self.service.annotate(memories)
        episode_of = {m: fields.get("episode_id") for m, fields in plugins.items()}
        written = self.service.record_access(memories, episode_of, ACCESS)  # a light review
        extra = self._annotate(memories, plugins, written)
        results = [
            shapes.RecallHit(
                memory_id=hit.memory.id,
                similarity_score=round(hit.similarity_score, 6),
                memory=self._memory(hit.memory, extra),
            )
            for hit in hits
        ]
        groups = self._groups(results) if grouped else None
        period = None
        if found.period is not None:
            after, before = found.period.window()
            period = shapes.RecallPeriod(
                text=found.period.text, after=to_iso(after), before=to_iso(before)
            )
        return shapes.RecallResult(
            results=results,
            query=request.query,
            count=len(results),
            context=self._context(results, threads),
            episodes=groups,
            period=period,
        ).to_json()

    def _context(self, results: list[shapes.RecallHit], count: int) -> list[shapes.RecallContext]:
        """The first ``count`` threads of ``results``, in the order of their best result: each
        episode in a line, unless its summary is among the results or it holds one memory."""
        if self.episodes is None or count == 0:
            return []
        order = list(dict.fromkeys(h.memory.episode_id for h in results if h.memory.episode_id))
        shown = {h.memory_id for h in results}
        outlines = self.episodes.outlines(order)
        context = []
        for episode_id in order:
            line = outlines.get(episode_id)
            if line is None or line["memory_count"] < 2 or line["summary_memory_id"] in shown:
                continue
            context.append(
                shapes.RecallContext(
                    episode_id=episode_id,
                    title=line["title"],
                    gist=line["gist"],
                    memory_count=line["memory_count"],
                )
            )
            if len(context) == count:
                break
        return context

    def _groups(self, results: list[shapes.RecallHit]) -> list[shapes.RecallGroup]:
        """The episodes of ``results`` in the order of their best result (a summary counts
        for the episode it sums up), each with its title and its results."""
        members: dict[str, list[shapes.RecallHit]] = {}
        for hit in results:
            if hit.memory.episode_id is not None:
                members.setdefault(hit.memory.episode_id, []).append(hit)
        titles = self.episodes.titles(list(members)) if self.episodes is not None else {}
        return [
            shapes.RecallGroup(
                episode_id=episode_id,
                title=titles.get(episode_id),
                similarity_score=hits[0].similarity_score,
                memory_ids=[h.memory_id for h in hits],
            )
            for episode_id, hits in members.items()
        ]

    def _members(self, episode_id: Any) -> list[str] | None:
        """The member ids of an episode filter (None: no filter)."""
        if episode_id is None:
            return None
        return self._engine().member_ids(check.episode_id(episode_id))

    async def _naming(self, entity: Any, project: Any, ids: list[str] | None) -> list[str] | None:
        """An entity filter: the memories of ``project`` naming it (within ``ids``)."""
        if entity is None:
            return ids
        name = check.entity_name(entity, "entity")
        naming = await self._engine().entity_memory_ids(check.scope(project), name)
        return naming if ids is None else [i for i in ids if i in set(naming)]

    @takes(shapes.MemoriesListQuery)
    async def memories_list(self, request: shapes.MemoriesListQuery) -> dict[str, Any]:
        ids = self._members(request.episode_id)
        found, next_cursor = await self.service.list_memories(request, ids)
        extra = self._annotate(found)
        memories = [self._memory(m, extra) for m in found]
        return shapes.MemoryList(
            memories=memories, count=len(memories), next_cursor=next_cursor
        ).to_json()

    async def get_memory(self, memory_id: Any) -> dict[str, Any]:
        return self.memory_json(await self.service.get(memory_id))

    async def memory_used(self, memory_id: Any) -> dict[str, Any]:
        """Record that a memory was used (after a recall returned it): its retrievability
        grows more than from the recall alone, and its episode's with it."""
        used = await self.service.mark_used(memory_id)
        return shapes.UsedResult(success=True, **used).to_json()

    async def forget(self, memory_id: Any) -> dict[str, Any]:
        mid = check.memory_id(memory_id)
        await self.service.forget(mid)
        return shapes.ForgetResult(success=True, memory_id=mid).to_json()

    @takes(shapes.CorrectRequest)
    async def correct(self, request: shapes.CorrectRequest) -> dict[str, Any]:
        result = await self.service.correct(request)
        return shapes.RememberResult.model_validate(result.to_json()).to_json()

    async def stats(self) -> dict[str, Any]:
        return shapes.Stats.model_validate(await self.service.stats()).to_json()

    def health(self) -> dict[str, Any]:
        return shapes.Health.model_validate(self.service.health()).to_json()

    async def projects(self) -> dict[str, Any]:
        """Every project with its memory and episode counts, most recently active first."""
        found = {p["name"]: p for p in await self.service.projects()}
        episodes = self.episodes.project_stats() if self.episodes is not None else {}
        items = []
        for name in sorted(set(found) | set(episodes)):
            memories = found.get(name, {})
            count, episode_activity = episodes.get(name, (0, None))
            newest = [t.timestamp() for t in [memories.get("last_activity")] if t is not None]
            newest += [episode_activity] if episode_activity is not None else []
            items.append(
                shapes.ProjectInfo(
                    name=name,
                    memories=memories.get("memories", 0),
                    shared_memories=memories.get("shared_memories", 0),
                    episodes=count,
                    last_activity_at=to_iso(from_epoch(max(newest))) if newest else None,
                )
            )
        items.sort(key=lambda p: (p.last_activity_at or "", p.name), reverse=True)
        return shapes.ProjectList(projects=items, count=len(items)).to_json()

    # -- entities ---------------------------------------------------------------------------

    @takes(shapes.EntitiesListQuery)
    async def entities_list(self, request: shapes.EntitiesListQuery) -> dict[str, Any]:
        engine = self._engine()
        project = check.project(request.project)
        query = check.text("query", request.query, shapes.MAX_FILTER_CHARS, required=False)
        kind = check.choice("kind", request.kind, shapes.ENTITY_KINDS)
        size = check.integer("limit", request.limit, shapes.ENTITIES_LIMIT)
        doubted = check.boolean("include_doubted", request.include_doubted)
        found = await engine.entities(project, query, kind, size, doubted)
        entities = [shapes.Entity.model_validate(e) for e in found]
        return shapes.EntityList(entities=entities, count=len(entities), project=project).to_json()

    async def entity_get(self, name: Any, limit: Any = None, project: Any = None) -> dict[str, Any]:
        engine = self._engine()
        wanted = check.entity_name(name)
        size = check.integer("limit", limit, shapes.ENTITY_MEMORIES_LIMIT)
        found = await engine.entity(check.project(project), wanted, size)
        return shapes.EntityDetail.model_validate(found).to_json()

    @takes(shapes.SessionsQuery)
    async def sessions(self, request: shapes.SessionsQuery) -> dict[str, Any]:
        """The client sessions of a project, newest activity first, a page at a time."""
        found, next_cursor = await self.service.sessions(request)
        items = [
            shapes.SessionInfo(
                session=s.session,
                project=s.project,
                source_instances=sorted(s.agents),
                runs=sorted(s.runs),
                first_memory_at=to_iso(s.first or s.last),
                last_memory_at=to_iso(s.last),
                memory_count=s.count,
                episode_ids=s.episode_ids,
            )
            for s in found
        ]
        return shapes.SessionList(
            sessions=items, count=len(items), next_cursor=next_cursor
        ).to_json()

    # -- episodes ---------------------------------------------------------------------------

    def _engine(self) -> EpisodeOperations:
        if self.episodes is None:
            raise FeatureDisabled(
                EPISODES_DISABLED,
                "set episodes.enabled: true in the configuration and restart the daemon",
            )
        return self.episodes

    async def _scoped_members(self, scope: str | None, request: Any) -> list[str] | None:
        """The memory ids an episode read's scope filters select (None: none given)."""
        return await self.service.scoped_ids(scope, check.scopes(request))

    async def _with_entities(self, episodes: list[dict[str, Any]], wanted: bool) -> None:
        """Give each of a page of episodes its entities when ``wanted`` (include_entities):
        one read for the page."""
        if not wanted:
            return
        named = await self._engine().episodes_entities([e["id"] for e in episodes])
        for episode in episodes:
            episode["entities"] = named[episode["id"]]

    @takes(shapes.EpisodesListQuery)
    async def episodes_list(self, request: shapes.EpisodesListQuery) -> dict[str, Any]:
        engine = self._engine()
        state = check.episode_status(request.status)
        size = check.integer("limit", request.limit, shapes.EPISODES_LIMIT)
        start = check.integer("offset", request.offset, shapes.EPISODES_OFFSET)
        with_entities = check.boolean("include_entities", request.include_entities)
        filters: dict[str, Any] = {"project": check.scope(request.project)}
        given = {"tag": request.tag, "participant": request.participant, "task": request.task}
        given["tool"] = request.tool
        for name, value in given.items():
            if value is not None:
                filters[name] = check.text(name, value, shapes.MAX_FILTER_CHARS) or ""
        if request.entity is not None:  # episodes with a member naming it, by any alias
            filters["naming"] = await self._naming(request.entity, request.project, None)
        if request.outcome is not None:
            filters["outcome"] = check.choice("outcome", request.outcome, shapes.OUTCOMES)
        after = check.timestamp("since", request.since)
        before = check.timestamp("until", request.until)
        members = await self._scoped_members(filters["project"], request)
        if members is not None:
            filters["members"] = members
        check.time_range("since", after, "until", before)
        if after:
            filters["since"] = after.timestamp()
        if before:
            filters["until"] = before.timestamp()
        rows = self._with_access(await engine.list_episodes(state, size, start, filters))
        await self._with_entities(rows, with_entities)
        episodes = [shapes.ListedEpisode.model_validate(row) for row in rows]
        return shapes.EpisodeList(episodes=episodes, count=len(episodes), status=state).to_json()

    async def episode_get(
        self, episode_id: Any, include_timeline: Any = None, include_entities: Any = None
    ) -> dict[str, Any]:
        engine = self._engine()
        eid = check.episode_id(episode_id)
        timeline = check.boolean("include_timeline", include_timeline)
        with_entities = check.boolean("include_entities", include_entities)
        found = await engine.get_episode(eid, timeline)
        found["episode"] = self._with_access([found["episode"]])[0]
        if with_entities:
            found["entities"] = await engine.episode_entities(eid)
        return shapes.EpisodeGetResult.model_validate(found).to_json()

    async def episode_create(
        self, title: Any, memory_ids: Any, parent_episode_id: Any = None
    ) -> dict[str, Any]:
        engine = self._engine()
        name = check.text("title", title, shapes.MAX_TITLE_CHARS)
        assert name is not None
        ids = check.memory_ids(memory_ids)
        parent = (
            None
            if parent_episode_id is None
            else check.episode_id(parent_episode_id, "parent_episode_id")
        )
        created = await engine.create_episode(name.strip(), ids, parent)
        return shapes.EpisodeCreateResult(
            success=True, episode_id=created["id"], memory_count=created["memory_count"]
        ).to_json()

    async def episode_add(self, episode_id: Any, memory_id: Any) -> dict[str, Any]:
        engine = self._engine()
        added, moved_from = await engine.add_memory(
            check.episode_id(episode_id), check.memory_id(memory_id)
        )
        return shapes.EpisodeAddResult(success=True, added=added, moved_from=moved_from).to_json()

    async def episode_remove(self, episode_id: Any, memory_id: Any) -> dict[str, Any]:
        engine = self._engine()
        await engine.remove_memory(check.episode_id(episode_id), check.memory_id(memory_id))
        return success()

    async def episode_close(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        await engine.close_episode(check.episode_id(episode_id))
        return success()

    async def episode_regenerate(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        await engine.regenerate_episode(check.episode_id(episode_id))
        return success()

    async def episode_delete(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        eid = check.episode_id(episode_id)
        await engine.delete_episode(eid)
        self.service.forget_access([eid])
        return success()

    async def episode_update(
        self,
        episode_id: Any,
        title: Any = None,
        status: Any = None,
        metadata: Any = None,
        structured: Any = None,
    ) -> dict[str, Any]:
        """Edit an episode; answers the episode as ``episode_get`` does."""
        engine = self._engine()
        eid = check.episode_id(episode_id)
        name = check.given_text("title", title, shapes.MAX_TITLE_CHARS)
        state = check.choice("status", status, shapes.EDITABLE_STATUSES)
        fields = check.metadata_patch(metadata)
        if structured is not None and not isinstance(structured, dict):
            raise InvalidInput("structured must be an object (task, outcome, decisions, ...)")
        if name is None and state is None and not fields and not structured:
            raise InvalidInput("nothing to change: send title, status, metadata or structured")
        if name is not None or state is not None or fields:
            await engine.update_episode(eid, name.strip() if name else None, state, fields)
        if structured:
            await engine.update_structured(eid, structured)
        return await self.episode_get(eid)

    async def episode_merge(self, episode_id: Any, other_id: Any) -> dict[str, Any]:
        engine = self._engine()
        eid = check.episode_id(episode_id)
        other = check.episode_id(other_id, "other_id")
        merged = await engine.merge_episodes(eid, other)  # forgets the absorbed one's access
        return shapes.EpisodeMergeResult(success=True, **merged).to_json()

    async def episode_split(
        self, episode_id: Any, memory_ids: Any, title: Any = None
    ) -> dict[str, Any]:
        engine = self._engine()
        eid = check.episode_id(episode_id)
        ids = check.memory_ids(memory_ids)
        name = check.given_text("title", title, shapes.MAX_TITLE_CHARS)
        split = await engine.split_episode(eid, ids, name.strip() if name else None)
        return shapes.EpisodeSplitResult(success=True, **split).to_json()

    async def episode_start(self, topic: Any, session: Any, project: Any = None) -> dict[str, Any]:
        engine = self._engine()
        text = check.text("topic", topic, shapes.MAX_TITLE_CHARS)
        key = check.text("session", session, shapes.MAX_SESSION_CHARS)
        scope = check.project(project)
        assert text is not None and key is not None
        started = await engine.start_episode(text.strip(), key.strip(), scope)
        return shapes.EpisodeStartResult(success=True, **started).to_json()

    async def episode_current(self, session: Any = None) -> dict[str, Any]:
        engine = self._engine()
        key = check.text("session", session, shapes.MAX_SESSION_CHARS)
        assert key is not None
        found = await engine.current_episode(key.strip())
        if found.get("episode") is not None:
            found["episode"] = self._with_access([found["episode"]])[0]
        return shapes.EpisodeCurrent.model_validate(found).to_json()

    async def episode_decisions(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        found = await engine.decisions(check.episode_id(episode_id))
        return shapes.EpisodeDecisions.model_validate(found).to_json()

    # -- causes -----------------------------------------------------------------------------

    @takes(shapes.CausesQuery, query=True)
    async def causes_list(self, request: shapes.CausesQuery) -> dict[str, Any]:
        """The node's links."""
        engine = self._engine()
        wanted = check.node(request.node, "node")
        found = await engine.causes(check.project(request.project), wanted)
        return shapes.CauseList.model_validate(found).to_json()

    @takes(shapes.CauseAddRequest)
    async def cause_add(self, request: shapes.CauseAddRequest) -> dict[str, Any]:
        engine = self._engine()
        project = check.project(request.project)
        cause, effect = check.node(request.cause, "cause"), check.node(request.effect, "effect")
        note = check.text("note", request.note, shapes.MAX_CAUSE_NOTE_CHARS, required=False)
        added = await engine.cause_add(project, cause, effect, note)
        return shapes.CauseAddResult.model_validate(added).to_json()

    async def cause_remove(self, link_id: Any, project: Any = None) -> dict[str, Any]:
        engine = self._engine()
        await engine.cause_remove(check.project(project), check.link_id(link_id))
        return success()

    @takes(shapes.CausalPathQuery, query=True)
    async def causal_path(self, request: shapes.CausalPathQuery) -> dict[str, Any]:
        """The chain between two nodes."""
        engine = self._engine()
        start = check.node(request.from_node, "from_node")
        goal = check.node(request.to_node, "to_node")
        found = await engine.causal_path(check.project(request.project), start, goal)
        return shapes.CausalPath.model_validate(found).to_json()

    async def context(
        self, query: Any = None, budget_tokens: Any = None, project: Any = None
    ) -> dict[str, Any]:
        engine = self._engine()
        text = check.text("query", query, shapes.MAX_EPISODE_QUERY_CHARS, required=False)
        budget = check.integer("budget_tokens", budget_tokens, shapes.CONTEXT_BUDGET)
        scope = check.scope(project)
        return shapes.Context.model_validate(await engine.context(text, budget, scope)).to_json()

    async def patterns(
        self, kind: Any = None, query: Any = None, limit: Any = None, project: Any = None
    ) -> dict[str, Any]:
        engine = self._engine()
        which = check.choice("kind", kind, shapes.PATTERN_KINDS)
        text = check.text("query", query, shapes.MAX_EPISODE_QUERY_CHARS, required=False)
        size = check.integer("limit", limit, shapes.PATTERNS_LIMIT)
        found = await engine.patterns(which, text, size, check.scope(project))
        return shapes.Patterns.model_validate(found).to_json()

    async def episode_costs(self) -> dict[str, Any]:
        return shapes.Costs.model_validate(self._engine().costs()).to_json()

    async def episode_chain(self, episode_id: Any) -> dict[str, Any]:
        engine = self._engine()
        found = await engine.chain(check.episode_id(episode_id))
        found["chain"] = self._with_access(found["chain"])
        return shapes.EpisodeChain.model_validate(found).to_json()

    @takes(shapes.EpisodesReplayRequest)
    async def episodes_replay(self, request: shapes.EpisodesReplayRequest) -> dict[str, Any]:
        engine = self._engine()
        text = check.text("topic", request.topic, shapes.MAX_TOPIC_CHARS)
        assert text is not None
        size = check.integer("limit", request.limit, shapes.REPLAY_LIMIT)
        scope = check.scope(request.project)
        found = await engine.replay(text, size, scope, await self._scoped_members(scope, request))
        return shapes.Replay.model_validate(found).to_json()

    @takes(shapes.EpisodesSearchRequest)
    async def episodes_search(self, request: shapes.EpisodesSearchRequest) -> dict[str, Any]:
        engine = self._engine()
        text = check.text("query", request.query, shapes.MAX_EPISODE_QUERY_CHARS)
        assert text is not None
        state = check.episode_status(request.status)
        start = check.timestamp("time_start", request.time_start)
        end = check.timestamp("time_end", request.time_end)
        check.time_range("time_start", start, "time_end", end)
        size = check.integer("limit", request.limit, shapes.SEARCH_LIMIT)
        scope = check.scope(request.project)
        with_entities = check.boolean("include_entities", request.include_entities)
        found = await engine.search(
            text,
            start.timestamp() if start else None,
            end.timestamp() if end else None,
            state,
            size,
            scope,
            await self._scoped_members(scope, request),
        )
        found["episodes"] = self._with_access(found["episodes"])
        await self._with_entities(found["episodes"], with_entities)
        return shapes.EpisodeSearch.model_validate(found).to_json()


def success() -> dict[str, Any]:
    """The answer of an operation that has nothing else to say."""
    return shapes.Success(success=True).to_json()
