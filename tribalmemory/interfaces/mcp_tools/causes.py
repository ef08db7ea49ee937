"""The cause tools: what led to what between episodes and memories, and the chain from one to
another.

Each function is one tool; its name, annotations and request model are in :data:`.table.TOOLS`.
"""

from collections.abc import Callable
from typing import Annotated, Any

from ... import shapes
from .env import ToolEnv
from .params import PROJECT_DOC, RAW, arg


def cause_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    """The tools of this family, bound to ``env`` (the server's API call and defaults)."""
    call = env.call
    scope = env.scope
    add = shapes.CauseAddRequest
    path = shapes.CausalPathQuery

    async def causes_list(
        node: Annotated[str, RAW, arg(shapes.CausesQuery, "node")],
        project: Annotated[str, RAW, arg(shapes.CausesQuery, "project", PROJECT_DOC)] = "",
    ) -> shapes.CauseList:
        """The causal links of an episode or a memory (as cause or as effect), strongest
        first, each with its confidence and source (llm, reference, order, user)."""
        return await call("causes_list", node=node, project=scope(project))

    async def causal_path(
        from_node: Annotated[str, RAW, arg(path, "from_node")],
        to_node: Annotated[str, RAW, arg(path, "to_node")],
        project: Annotated[str, RAW, arg(path, "project", PROJECT_DOC)] = "",
    ) -> shapes.CausalPath:
        """What led from one episode or memory to another: the shortest chain of causal links
        (a memory also stands for its episode), each step with its confidence and source, and
        the chain's confidence; path is null, with the reason, when none is known."""
        return await call(
            "causal_path", from_node=from_node, to_node=to_node, project=scope(project)
        )

    async def cause_add(
        cause: Annotated[str, RAW, arg(add, "cause")],
        effect: Annotated[str, RAW, arg(add, "effect")],
        note: Annotated[str | None, RAW, arg(add, "note")] = None,
        project: Annotated[str, RAW, arg(add, "project", PROJECT_DOC)] = "",
    ) -> shapes.CauseAddResult:
        """Record that one episode or memory led to another (confidence 1, source user; kept
        when the episodes are regenerated)."""
        return await call(
            "cause_add", cause=cause, effect=effect, note=note, project=scope(project)
        )

    async def cause_remove(
        link_id: Annotated[str, RAW, arg(shapes.CauseRef, "link_id")],
        project: Annotated[str, RAW, arg(shapes.CauseRemoveQuery, "project", PROJECT_DOC)] = "",
    ) -> shapes.Success:
        """Remove a causal link (any source) by its id, as tribal_causes lists it."""
        return await call("cause_remove", link_id=link_id, project=scope(project))

    return [causes_list, causal_path, cause_add, cause_remove]
