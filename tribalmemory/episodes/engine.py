"""The episode engine assembled from its parts, one job each:

- :mod:`.state`: features of active episodes and seeds, the locks, loading at start;
- :mod:`.events`: the hub where the parts announce what they did, for those that react;
- :mod:`.detection`: the write-time decision (:mod:`.detector`: its pure functions);
- :mod:`.entity_work`: each decided memory's entities, found in the background;
- :mod:`.review`: the LLM's review of doubtful decisions (the classify job);
- :mod:`.budget`: the detector's budget of LLM calls;
- :mod:`.consolidation`: the merge check of two episodes that are one thread;
- :mod:`.splitting`: the split check of an episode that mixes two threads (:mod:`.checks`:
  what the two kinds of check share);
- :mod:`.membership`: creating episodes, adding, moving and removing members;
- :mod:`.summaries`: the summary job and the summary memory;
- :mod:`.upgrades`: summaries written during an LLM outage, upgraded when it returns;
- :mod:`.upkeep`: auto-close, the active cap, archiving, reconcile after a crash;
- :mod:`.operations`: what clients call (list, get, create, ... delete) and annotations;
- :mod:`.resumption`: without an LLM, a quiet episode merged into the older thread it resumes;
- :mod:`.sessions`: episodes an agent declares for its session, joined by its next memories;
- :mod:`.compose`: chains, replay and search;
- :mod:`.records`: structured records as clients read and edit them (decisions, PATCH);
- :mod:`.context`: the session-start context within a token budget;
- :mod:`.patterns`: patterns and anti-patterns across closed episodes.

State lives in :class:`~.store.EpisodeStore` (SQLite, the only package with SQL); memories live
in the host's memory store, reached only through the plugin host. LLM work runs as durable jobs
off the request path (:mod:`.worker`, fed by :meth:`EpisodeEngine.job_handlers`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..config import Config
from .budget import Budget
from .compose import Compose
from .consolidation import Consolidation
from .context import Context
from .detection import Detection
from .entity_reads import EntityReads
from .entity_work import EntityWork
from .events import Events
from .membership import Membership
from .operations import Operations
from .patterns import Patterns
from .records import Records
from .restore import Restore
from .resumption import Resumption
from .review import Review
from .sessions import Sessions
from .sittings import Sittings
from .splitting import Splitting
from .state import EngineState
from .store import EpisodeStore, Job
from .summaries import Summaries
from .summariser import Summariser
from .upgrades import Upgrades
from .upkeep import Upkeep

JobHandler = Callable[[Job], Awaitable[None]]


class EpisodeEngine:
    """The parts wired together; the episode operations of the API (``api.EpisodeOperations``)."""

    def __init__(
        self,
        config: Config,
        store: EpisodeStore,
        summariser: Summariser,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = EngineState(config.episodes, store, clock)
        self.events = Events()
        self.summaries = Summaries(self.state, summariser, self.events)
        self.upgrades = Upgrades(
            self.state, summariser, lambda episode_id: self.summaries.run(episode_id, upgrade=True)
        )
        self.upkeep = Upkeep(self.state)
        self.membership = Membership(self.state, self.summaries, self.upkeep)
        self.budget = Budget(self.state, summariser)
        self.sessions = Sessions(self.state, self.upkeep, summariser)
        self.consolidation = Consolidation(self.state, summariser, self.membership, self.budget)
        self.splitting = Splitting(self.state, summariser, self.membership, self.budget)
        self.sittings = Sittings(self.state)
        self.resumption = Resumption(self.state, self.membership, self.sittings)
        self.detection = Detection(
            self.state,
            self.membership,
            self.upkeep,
            budget=self.budget,
            sessions=self.sessions,
            sittings=self.sittings,
            events=self.events,
        )
        self.review = Review(self.detection, self.consolidation, summariser)
        self.entity_work = EntityWork(self.state)
        self._subscribe()
        self.operations = Operations(self.state, summariser, self.membership, self.upkeep)
        self.compose = Compose(self.state, summariser)
        self.records = Records(self.state, self.summaries)
        self.restorer = Restore(self.state, self.summaries, self.upkeep)
        self.pattern_finder = Patterns(self.state)
        self.context_builder = Context(self.state, summariser, self.pattern_finder)
        self.entity_reads = EntityReads(self.state, self.entity_work)
        self.causal = self.summaries.causal

    def _subscribe(self) -> None:
        """Who reacts to what the parts announce (:mod:`.events`), in the order they react."""
        events = self.events
        events.arriving.subscribe(self.resumption.arriving)
        events.grown.subscribe(self.consolidation.grown)
        events.grown.subscribe(self.splitting.grown)
        events.doubtful.subscribe(self.review.queue)
        events.decided.subscribe(lambda event: self.entity_work.wake(event.memory))
        events.summary_waits.subscribe(lambda _: self.upgrades.wake())

    async def tick(self) -> None:
        """The scheduler's turn: lifecycle upkeep, then dangling memberships removed."""
        await self.upkeep.tick()
        await self.membership.prune_dangling()

    def job_handlers(self) -> dict[str, JobHandler]:
        """What runs each kind of durable job (see :mod:`.worker`)."""
        return {
            "detect": lambda job: self.detection.run_job(job.key),
            "classify": lambda job: self.review.classify(job.key),
            "merge": lambda job: self.consolidation.run(job.key),
            "split": lambda job: self.splitting.run(job.key),
            "summary": self._summary_job,
            "link": lambda job: self.compose.link_parent(job.key, job.payload),
        }

    async def _summary_job(self, job: Job) -> None:
        await self.summaries.run(job.key, job.payload.get("trigger"))

    def health(self) -> dict[str, Any]:
        """The episode part of ``/v1/health``: the queue and the classification budget."""
        return {
            **self.operations.health(),
            **self.detection.health(),
            **self.consolidation.health(),
            **self.splitting.health(),
            **self.entity_work.health(),
        }

    # -- the API's episode operations -------------------------------------------------------

    async def list_episodes(
        self, status: str | None, limit: int, offset: int, filters: dict[str, Any]
    ) -> list[dict[str, Any]]:
        return await self.operations.list_episodes(status, limit, offset, filters)

    async def get_episode(self, episode_id: str, include_timeline: bool) -> dict[str, Any]:
        found = await self.operations.get_episode(episode_id, include_timeline)
        episode = found["episode"]
        if episode.get("structured"):  # a copy: the row's record is left as stored
            episode["structured"] = dict(episode["structured"])
        self.causal.decorate(episode["project"], episode.get("structured"))
        return found

    async def create_episode(
        self, title: str, memory_ids: list[str], parent_episode_id: str | None
    ) -> dict[str, Any]:
        return await self.operations.create_episode(title, memory_ids, parent_episode_id)

    async def add_memory(self, episode_id: str, memory_id: str) -> tuple[bool, str | None]:
        return await self.operations.add_memory(episode_id, memory_id)

    async def remove_memory(self, episode_id: str, memory_id: str) -> None:
        await self.operations.remove_memory(episode_id, memory_id)

    async def close_episode(self, episode_id: str) -> None:
        await self.operations.close_episode(episode_id)

    async def regenerate_episode(self, episode_id: str) -> None:
        await self.operations.regenerate_episode(episode_id)

    async def delete_episode(self, episode_id: str) -> None:
        await self.operations.delete_episode(episode_id)

    async def update_episode(
        self,
        episode_id: str,
        title: str | None,
        status: str | None,
        metadata: dict[str, Any] | None,
    ) -> None:
        await self.operations.update_episode(episode_id, title, status, metadata)

    def existing_episodes(self, episode_ids: list[str]) -> set[str]:
        return self.restorer.existing(episode_ids)

    async def restore_episode(self, record: dict[str, Any], chain_ids: set[str]) -> dict[str, Any]:
        restored = await self.restorer.restore(record, chain_ids)
        if restored.created:  # its members' entities wait for the entity work
            self.entity_work.wake()
        return restored.to_json()

    def user_causes(self, project: str | None) -> list[dict[str, Any]]:
        return self.causal.user_links(project)

    async def restore_causes(self, links: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.causal.restore(links)

    async def merge_episodes(self, episode_id: str, other_id: str) -> dict[str, Any]:
        return await self.operations.merge_episodes(episode_id, other_id)

    async def split_episode(
        self, episode_id: str, memory_ids: list[str], title: str | None
    ) -> dict[str, Any]:
        return await self.operations.split_episode(episode_id, memory_ids, title)

    def member_ids(self, episode_id: str) -> list[str]:
        return self.operations.member_ids(episode_id)

    async def entities(
        self,
        project: str,
        query: str | None,
        kind: str | None,
        limit: int,
        include_doubted: bool = False,
    ) -> list[dict[str, Any]]:
        return await self.entity_reads.entities(project, query, kind, limit, include_doubted)

    async def entity(self, project: str, name: str, limit: int) -> dict[str, Any]:
        return await self.entity_reads.entity(project, name, limit)

    async def entity_memory_ids(self, project: str | None, name: str) -> list[str]:
        return await self.entity_reads.memory_ids(project, name)

    async def episode_entities(self, episode_id: str) -> list[dict[str, Any]]:
        return await self.entity_reads.of_episode(episode_id)

    async def episodes_entities(self, episode_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        return await self.entity_reads.of_episodes(episode_ids)

    def titles(self, episode_ids: list[str]) -> dict[str, str | None]:
        return self.operations.titles(episode_ids)

    def outlines(self, episode_ids: list[str]) -> dict[str, dict[str, Any]]:
        return self.operations.outlines(episode_ids)

    async def start_episode(self, topic: str, session: str, project: str) -> dict[str, Any]:
        return await self.sessions.start(topic, session, project)

    async def current_episode(self, session: str) -> dict[str, Any]:
        return self.sessions.current(session)

    async def update_structured(self, episode_id: str, patch: dict[str, Any]) -> None:
        await self.records.update(episode_id, patch)

    async def decisions(self, episode_id: str) -> dict[str, Any]:
        return self.records.decisions(episode_id)

    async def causes(self, project: str, node: str) -> dict[str, Any]:
        return await self.causal.of_node(project, node)

    async def cause_add(
        self, project: str, cause: str, effect: str, note: str | None
    ) -> dict[str, Any]:
        return await self.causal.add(project, cause, effect, note)

    async def cause_remove(self, project: str, link_id: str) -> None:
        self.causal.remove(project, link_id)

    async def causal_path(self, project: str, start: str, goal: str) -> dict[str, Any]:
        return await self.causal.path(project, start, goal)

    async def context(self, query: str | None, budget: int, project: str | None) -> dict[str, Any]:
        return await self.context_builder.build(query, budget, project)

    async def patterns(
        self, kind: str | None, query: str | None, limit: int, project: str | None
    ) -> dict[str, Any]:
        return await self.pattern_finder.query(kind, query, limit, project)

    def project_stats(self) -> dict[str, tuple[int, float | None]]:
        return self.state.store.episodes.project_stats()

    def costs(self) -> dict[str, Any]:
        return self.operations.costs()

    async def chain(self, episode_id: str) -> dict[str, Any]:
        return await self.compose.chain(episode_id)

    async def replay(
        self, topic: str, limit: int, project: str | None, members: list[str] | None = None
    ) -> dict[str, Any]:
        return await self.compose.replay(topic, limit, project, members)

    async def search(
        self,
        query: str,
        time_start: float | None,
        time_end: float | None,
        status: str | None,
        limit: int,
        project: str | None,
        members: list[str] | None = None,
    ) -> dict[str, Any]:
        return await self.compose.search(
            query, time_start, time_end, status, limit, project, members
        )
