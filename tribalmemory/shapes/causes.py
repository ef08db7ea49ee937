"""Causal links between episodes and memories: the requests and answers of ``/v1/causes`` and
``/v1/causal-path`` (docs/causes.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Request, Response
from .fields import PROJECT_DOC, ProjectName, Timestamp
from .limits import MAX_CAUSE_NOTE_CHARS, MAX_NODE_CHARS, CauseSource

NODE_DOC = (
    "An episode or a memory: 'episode:<id>' or 'memory:<id>', or a bare id (a UUID is a "
    "memory, anything else an episode id). An event or decision is named by the memory it "
    "rests on (its first memory_id)."
)
Node = str

# -- requests ----------------------------------------------------------------------------------


class CausesQuery(Request):
    node: str = Field(min_length=1, max_length=MAX_NODE_CHARS, description=NODE_DOC)
    project: ProjectName | None = Field(None, description=PROJECT_DOC)


class CauseAddRequest(Request):
    cause: str = Field(min_length=1, max_length=MAX_NODE_CHARS, description=NODE_DOC)
    effect: str = Field(min_length=1, max_length=MAX_NODE_CHARS, description=NODE_DOC)
    note: str | None = Field(
        None, max_length=MAX_CAUSE_NOTE_CHARS, description="Why the one led to the other."
    )
    project: ProjectName | None = Field(None, description=PROJECT_DOC)


class CauseRef(Request):
    link_id: str = Field(
        min_length=1,
        max_length=40,
        pattern=r"^cl-[0-9a-f]{12}$",
        description="A causal link's id, as listed ('cl-' and 12 hex digits).",
    )


class CauseRemoveQuery(Request):
    project: ProjectName | None = Field(None, description=PROJECT_DOC)


class CausalPathQuery(Request):
    from_node: str = Field(
        min_length=1, max_length=MAX_NODE_CHARS, description="Where the chain starts: " + NODE_DOC
    )
    to_node: str = Field(
        min_length=1, max_length=MAX_NODE_CHARS, description="Where the chain ends: " + NODE_DOC
    )
    project: ProjectName | None = Field(None, description=PROJECT_DOC)


# -- responses ---------------------------------------------------------------------------------


class CausalLink(Response):
    """One link: ``cause`` led to ``effect``."""

    id: str
    cause: Node = Field(description="'episode:<id>' or 'memory:<id>'.")
    effect: Node
    relation: Literal["causes"] = "causes"
    confidence: float = Field(ge=0, le=1)
    source: CauseSource = Field(
        description="llm: the LLM's structured record; reference: an explicit causal phrase "
        "naming what an earlier episode named; order: a fix after an error sharing an "
        "identifier; user: added by hand (kept when the episode is regenerated)."
    )
    note: str
    created_at: Timestamp


class CauseList(Response):
    node: Node
    project: str
    links: list[CausalLink] = Field(description="Links with the node as cause or effect.")
    count: int


class CauseAddResult(Response):
    success: bool
    link: CausalLink


class CausalStep(Response):
    """One step of a path: a causal link, or a memory standing for its episode."""

    cause: Node
    effect: Node
    relation: Literal["causes", "part_of", "contains"] = Field(
        description="causes: a causal link; part_of: a memory stands for its episode; "
        "contains: an episode stands for one of its memories."
    )
    confidence: float
    source: CauseSource | Literal["membership"]
    link_id: str | None
    note: str


class CausalPath(Response):
    from_node: Node
    to_node: Node
    project: str
    path: list[CausalStep] | None = Field(
        description="The shortest chain (fewest causal links, then the most confident); null "
        "when none is known."
    )
    confidence: float | None = Field(description="The product of the steps' confidences.")
    reason: str | None = Field(description="Why there is no path (null when there is one).")
