"""Causal links between episodes and memories: the node names, the rules that find links
without an LLM, the links a structured record states, and the shortest causal path. Pure
functions only (the engine's :mod:`.causal` does the I/O).

A node is ``episode:<id>`` or ``memory:<id>``; an event or decision of a structured record is
named by the memory it rests on (its first memory_id). A link says ``cause`` led to ``effect``,
with a confidence (0..1) and a source:

- ``llm`` (:data:`LLM_CONFIDENCE`): an event's ``caused_by`` / ``leads_to`` in the LLM's record;
  ``user`` (:data:`USER_CONFIDENCE`) when a user set the record's events, or added the link by
  hand;
- ``reference`` (:data:`REFERENCE_CONFIDENCE`): a memory with an explicit causal phrase
  (:data:`CAUSAL_PHRASE`) names an entity first named in an earlier episode of the project:
  that episode -> the memory;
- ``order`` (:data:`ORDER_CONFIDENCE`): a fix event after an error or blocker event of the same
  episode, sharing an entity: the latest such error -> the fix.

``reference`` and ``order`` are heuristics: they say so in their confidence and note.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..entities import mentions_of
from .readings import by_text

LLM_CONFIDENCE = 0.8
USER_CONFIDENCE = 1.0
REFERENCE_CONFIDENCE = 0.6
ORDER_CONFIDENCE = 0.3

CAUSAL_PHRASE = re.compile(
    r"\b(?:because of|caused by|due to|led to|leads to|as a result of|result(?:ed|s)? from"
    r"|after the\b[^.!?\n]{1,80}?\bof|fix(?:es|ed)?\s+#\d+|revert(?:s|ed|ing)?)\b",
    re.I,
)
"""The explicit causal phrases the ``reference`` rule needs in a memory."""

FAILURES = ("error", "blocker")

EPISODE = "episode"
MEMORY = "memory"


# ---------------------------------------------------------------- nodes


def node(kind: str, key: str) -> str:
    return f"{kind}:{key}"


def split_node(name: str) -> tuple[str, str]:
    """``episode:<id>`` / ``memory:<id>`` as (kind, id), or ValueError."""
    kind, _, key = name.partition(":")
    if kind not in (EPISODE, MEMORY) or not key:
        raise ValueError(f"{name!r} is not a node")
    return kind, key


# ---------------------------------------------------------------- links


@dataclass(frozen=True)
class Link:
    cause: str
    effect: str
    confidence: float
    source: str
    note: str


def has_causal_phrase(text: str) -> str | None:
    """The first explicit causal phrase in ``text``, or None."""
    found = CAUSAL_PHRASE.search(text)
    return " ".join(found.group(0).split()) if found else None


def names(text: str) -> list[str]:
    """The entities ``text`` names (canonical names, in the order found)."""
    return list(_names(text))


@by_text()
def _names(text: str) -> tuple[str, ...]:
    """:func:`names`, kept (:mod:`.readings`): finding a memory's entities takes about 0.2 ms
    of Python, and each summary job reads the causes of all its episode's members again."""
    return tuple(mentions_of(text))


def reference_links(memory_id: str, text: str, earlier: Mapping[str, str]) -> list[Link]:
    """``earlier``: of the entities this memory names, those first named in an earlier episode
    (name -> that episode). With an explicit causal phrase, each such episode -> the memory."""
    phrase = has_causal_phrase(text)
    if phrase is None:
        return []
    by_episode: dict[str, list[str]] = {}
    for name in names(text):
        if name in earlier:
            by_episode.setdefault(earlier[name], []).append(name)
    return [
        Link(
            node(EPISODE, episode_id),
            node(MEMORY, memory_id),
            REFERENCE_CONFIDENCE,
            "reference",
            f"heuristic: {phrase!r} and names {', '.join(named[:3])}, first named in that episode",
        )
        for episode_id, named in by_episode.items()
    ]


def order_links(events: Sequence[Mapping[str, Any]], named: Mapping[str, set[str]]) -> list[Link]:
    """Each fix event -> the latest earlier error/blocker event of the episode that shares an
    entity with it (``named``: memory id -> the entities it names). Events in time order."""
    links: list[Link] = []
    failures: list[tuple[str, set[str]]] = []
    for event in events:
        ids = event.get("memory_ids") or []
        if not ids:
            continue
        words = set().union(*(named.get(i, set()) for i in ids))
        if event.get("type") in FAILURES:
            failures.append((ids[0], words))
        elif event.get("type") == "fix":
            for failed, failed_words in reversed(failures):
                shared = sorted(words & failed_words)
                if shared and failed != ids[0]:
                    links.append(
                        Link(
                            node(MEMORY, failed),
                            node(MEMORY, ids[0]),
                            ORDER_CONFIDENCE,
                            "order",
                            f"heuristic: a fix after this error, both naming {shared[0]}",
                        )
                    )
                    break
    return links


def record_links(record: Mapping[str, Any]) -> list[Link]:
    """The links a structured record's events state (``caused_by`` / ``leads_to``): ``user``
    when a user set the events, else ``llm``."""
    by_user = "events" in (record.get("edited") or [])
    source, confidence = ("user", USER_CONFIDENCE) if by_user else ("llm", LLM_CONFIDENCE)
    note = "the episode's structured record" + (" (set by a user)" if by_user else "")
    links: list[Link] = []
    for event in record.get("events") or []:
        ids = event.get("memory_ids") or []
        if not ids:
            continue
        here = node(MEMORY, ids[0])
        for other in event.get("caused_by") or []:
            links.append(Link(node(MEMORY, other), here, confidence, source, note))
        for other in event.get("leads_to") or []:
            links.append(Link(here, node(MEMORY, other), confidence, source, note))
    return links


def unique(links: Iterable[Link]) -> list[Link]:
    """Without self-links, one link per (cause, effect, source): the first."""
    seen: dict[tuple[str, str, str], Link] = {}
    for link in links:
        if link.cause != link.effect:
            seen.setdefault((link.cause, link.effect, link.source), link)
    return list(seen.values())


# ---------------------------------------------------------------- paths


@dataclass(frozen=True)
class Step:
    cause: str
    effect: str
    relation: str  # causes | part_of | contains
    confidence: float
    source: str
    link_id: str | None = None
    note: str = ""


def shortest_path(
    start: str, goal: str, steps_from: Callable[[str], Iterable[Step]], max_links: int
) -> list[Step] | None:
    """The chain from ``start`` to ``goal`` with the fewest causal links (at least one, at most
    ``max_links``; membership steps are free), then the highest product of confidences, then
    the fewest steps; no node twice. None when there is none. Dijkstra over (node, a link taken
    yet), each chain kept simple (a memory and its episode stand for each other, so a chain
    could otherwise come back to where it was)."""
    if start == goal:
        return []
    State = tuple[str, bool]
    first: State = (start, False)
    best: dict[State, tuple[int, float, int]] = {first: (0, 0.0, 0)}
    back: dict[State, tuple[State, Step]] = {}
    queue: list[tuple[int, float, int, str, bool]] = [(0, 0.0, 0, start, False)]
    while queue:
        links, cost, count, here, linked = heapq.heappop(queue)
        state = (here, linked)
        if best[state] < (links, cost, count):
            continue
        if state == (goal, True):
            chain: list[Step] = []
            while state != first:
                state, step = back[state]
                chain.append(step)
            return chain[::-1]
        visited = _nodes_to(state, first, back)
        for step in steps_from(here):
            causal = step.relation == "causes"
            if links + causal > max_links or step.effect in visited:
                continue
            price = (links + causal, cost - math.log(max(step.confidence, 1e-9)), count + 1)
            there = (step.effect, linked or causal)
            if there not in best or price < best[there]:
                best[there] = price
                back[there] = (state, step)
                heapq.heappush(queue, (*price, *there))
    return None


def _nodes_to(
    state: tuple[str, bool],
    first: tuple[str, bool],
    back: Mapping[tuple[str, bool], tuple[tuple[str, bool], Step]],
) -> set[str]:
    """The nodes of the best chain found so far from ``first`` to ``state``."""
    nodes = {state[0]}
    while state != first:
        state = back[state][0]
        nodes.add(state[0])
    return nodes


def path_confidence(chain: Sequence[Step]) -> float:
    return round(math.prod(step.confidence for step in chain), 6)
