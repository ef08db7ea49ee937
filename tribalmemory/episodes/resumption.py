"""Resumption: an episode that takes up an older thread after a pause is merged into it.

Without an LLM, a thread that pauses for days and resumes comes back as a new episode: its
first memories after the pause are far in time from the old one and, in conversation, about
something new (measured on the shared streams: conversations cut at their sittings, recall
0.41). What ties the two parts together is whom and what they name. So, with the embedding
strategy (or when the LLM is not available), once an episode has gone quiet for
:data:`IDLE_PACES` of the stream's pace with at least :data:`MIN_MEMBERS` members, it is
compared with the older active episodes of its project by the proper names its members use
(:func:`.detector.proper_names`, weighted by how rare each is in the stream); when the most
alike shares at least :data:`MIN_COSINE` of its weight, the two are merged (the larger keeps
its id, as for any merge). Waiting until the episode is quiet keeps the merge out of the
thread's own later decisions; an episode that names nobody is never merged by it.

Episodes the user edited are never merged by it (see :mod:`.edits`). With an LLM, merges
need its answers instead (:mod:`.consolidation`) and this rule is off.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from datetime import datetime

from .detector import DetectorContext, EpisodeFeatures
from .events import Arriving
from .membership import Membership
from .sittings import Sittings
from .state import EngineState

log = logging.getLogger("tribalmemory.episodes")

IDLE_PACES = 100.0
"""Quiet this long (in units of the stream's pace) before the check: a hundred times the
stream's usual gap between memories is a pause, not the thread's own rhythm."""
MIN_MEMBERS = 4
"""As for merge checks: by 4 members an episode says what it is about."""
MIN_COSINE = 0.5
"""Half the name weight shared. At any value from 0.3 to 0.7 only the conversations stream
merges anything (the team and IRC streams nothing, on the full streams and on 20 copies of
each), so leave-one-stream-out cannot choose it; every one of those values lifts the
conversations (docs/detection.md, *Resumption*)."""


def name_weights(episode: EpisodeFeatures, context: DetectorContext) -> dict[str, float]:
    """The episode's proper names, each weighted by how many members use it times its IDF."""
    return {n: c * context.idf(n) for n, c in episode.name_counts.items()}


def name_cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Cosine of two weighted name bags (0 when either is empty)."""
    dot = sum(w * b.get(n, 0.0) for n, w in a.items())
    norms = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    return dot / norms if norms > 0 else 0.0


def quiet(episode: EpisodeFeatures, now: datetime, context: DetectorContext) -> bool:
    """Has ``episode`` been quiet for :data:`IDLE_PACES` at memory time ``now``, with at least
    :data:`MIN_MEMBERS` members?"""
    enough = episode.memory_count >= MIN_MEMBERS
    return enough and context.paces(episode.last_activity, now) >= IDLE_PACES


def due(
    episodes: Iterable[EpisodeFeatures],
    checked: Mapping[str, int],
    now: datetime,
    context: DetectorContext,
) -> list[str]:
    """The ids of ``episodes`` quiet at ``now`` and not checked yet at their size
    (``checked``: episode -> its member count when it was checked)."""
    return [
        e.id for e in episodes if checked.get(e.id) != e.memory_count and quiet(e, now, context)
    ]


def resumed(
    episode: EpisodeFeatures, others: Iterable[EpisodeFeatures], context: DetectorContext
) -> str | None:
    """The older episode (started before ``episode``) whose names are most like its own, if
    they share at least :data:`MIN_COSINE`; else None. Pure."""
    mine = name_weights(episode, context)
    if not mine:
        return None
    best, best_cosine = None, MIN_COSINE
    for other in others:
        if other.id == episode.id or other.first_activity >= episode.first_activity:
            continue
        cosine = name_cosine(mine, name_weights(other, context))
        if cosine >= best_cosine:
            best, best_cosine = other.id, cosine
    return best


class Resumption:
    """Checks each active episode once it has gone quiet (at its member count then), from the
    detection of a later memory; merges it into the older episode it resumes."""

    def __init__(self, state: EngineState, membership: Membership, sittings: Sittings) -> None:
        self.state = state
        self.membership = membership
        self.sittings = sittings
        """A conversation's sittings are its episodes: never merged here."""
        self._checked: dict[str, int] = {}  # episode -> members when it was checked

    async def arriving(self, event: Arriving) -> None:
        """A memory is about to be decided (:attr:`.events.Events.arriving`): check its
        project at its memory time, unless an LLM takes the merges."""
        if not event.llm_merges:
            await self.check(event.created_at, event.project)

    async def check(self, now: datetime, project: str) -> None:
        """Check the active episodes of ``project`` quiet at memory time ``now`` (the caller
        holds the detect lock, and calls only when no LLM takes merges)."""
        state = self.state
        context = state.matcher.context(project)
        mine = [e for k, e in state.active.items() if state.project_of_episode(k) == project]
        for episode_id in due(mine, self._checked, now, context):
            episode = state.active.get(episode_id)  # a merge before may have taken it
            if episode is None or self.sittings.is_sitting(episode_id):
                continue
            self._remember_checked(episode_id, episode.memory_count)
            target = resumed(episode, self.membership.merge_partners(episode_id), context)
            if target is not None:
                await self._merge(episode_id, target)

    def _remember_checked(self, episode_id: str, members: int) -> None:
        if len(self._checked) > 4 * len(self.state.active) + 256:  # closed ones: forget them
            self._checked = {k: v for k, v in self._checked.items() if k in self.state.active}
        self._checked[episode_id] = members

    async def _merge(self, episode_id: str, older_id: str) -> None:
        merged = await self.membership.merge_found(older_id, episode_id)
        if merged is not None:
            survivor, absorbed = merged
            self._checked.pop(absorbed, None)
            log.info(
                "episode %s takes up the thread of %s (the same names): merged into %s",
                episode_id,
                older_id,
                survivor,
            )
