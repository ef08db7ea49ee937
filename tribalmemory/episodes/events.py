"""What the engine's parts announce, for the parts that react to it.

The detector does not know who reacts to what it does: it announces it on the hub the engine
gives every part at construction (:class:`Events`), and :mod:`.engine` subscribes the reactions
in the order they run:

- :attr:`Events.arriving`: a memory is about to be decided (under the detect lock), at its
  memory time; resumption merges the episodes that have gone quiet by then;
- :attr:`Events.grown`: the detector joined a memory to an active episode, after the join's
  transaction; merge checks, then split checks, queue a check at their sizes;
- :attr:`Events.doubtful`: a decision the detector doubts was carried out; the review queues
  it for the LLM;
- :attr:`Events.decided`: the detector decided a memory (its detect job is done); the entity
  work wakes to find its entities;
- :attr:`Events.summary_waits`: a summary written during an LLM outage waits for its upgrade;
  the upgrade task wakes.

Handlers run in the order they subscribed, one after the other, in the announcer's task: an
announcement returns once every reaction has run (an error in one is the announcer's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from ..models import Memory

E = TypeVar("E")


@dataclass(frozen=True)
class Arriving:
    """A memory of ``project`` written at memory time ``created_at`` is about to be decided
    (the announcer holds the detect lock). ``llm_merges``: an LLM takes the merges now (the
    strategy asks for one and it is ready)."""

    created_at: datetime
    project: str
    llm_merges: bool


@dataclass(frozen=True)
class Grown:
    """The detector grew the active episode ``episode_id`` from ``old_count`` to
    ``new_count`` members at ``now`` (engine clock)."""

    episode_id: str
    old_count: int
    new_count: int
    now: float


@dataclass(frozen=True)
class Doubtful:
    """The detector carried out a decision it doubts on ``memory_id`` of ``project`` at ``now``
    (engine clock): the LLM is to review it."""

    memory_id: str
    project: str
    now: float


@dataclass(frozen=True)
class Decided:
    """The detector decided ``memory`` (its decision is committed)."""

    memory: Memory


@dataclass(frozen=True)
class SummaryWaits:
    """The extractive summary of ``episode_id`` was written during an LLM outage and waits
    for an LLM summary (:mod:`.upgrades`)."""

    episode_id: str


class Topic(Generic[E]):
    """One kind of event: its handlers, called in the order they subscribed."""

    def __init__(self) -> None:
        self._handlers: list[Callable[[E], None]] = []

    def subscribe(self, handler: Callable[[E], None]) -> None:
        self._handlers.append(handler)

    def announce(self, event: E) -> None:
        for handler in self._handlers:
            handler(event)


class AsyncTopic(Generic[E]):
    """One kind of event whose handlers are awaited, one after the other."""

    def __init__(self) -> None:
        self._handlers: list[Callable[[E], Awaitable[None]]] = []

    def subscribe(self, handler: Callable[[E], Awaitable[None]]) -> None:
        self._handlers.append(handler)

    async def announce(self, event: E) -> None:
        for handler in self._handlers:
            await handler(event)


class Events:
    """The engine's event hub (see the module docstring)."""

    def __init__(self) -> None:
        self.arriving: AsyncTopic[Arriving] = AsyncTopic()
        self.grown: Topic[Grown] = Topic()
        self.doubtful: Topic[Doubtful] = Topic()
        self.decided: Topic[Decided] = Topic()
        self.summary_waits: Topic[SummaryWaits] = Topic()
