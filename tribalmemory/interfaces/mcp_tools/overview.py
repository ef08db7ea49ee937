"""The overview tools: stats, the context to read first, patterns, projects, sessions.

Each function is one tool; its name, annotations and request model are in :data:`.table.TOOLS`.
"""

from collections.abc import Callable
from typing import Annotated, Any

from ... import shapes
from .env import ToolEnv
from .params import (
    PROJECT_READ_DOC,
    RAW,
    arg,
)


def overview_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    """The tools of this family, bound to ``env`` (the server's API call and defaults)."""
    call = env.call
    read_scope = env.read_scope

    async def stats() -> shapes.Stats:
        """Counts of stored memories (total and by source_type) and the embedding model used."""
        return await call("stats")

    async def context(
        query: Annotated[str, RAW, arg(shapes.ContextQuery, "query")] = "",
        budget_tokens: Annotated[int | None, RAW, arg(shapes.ContextQuery, "budget_tokens")] = None,
        project: Annotated[str, RAW, arg(shapes.ContextQuery, "project", PROJECT_READ_DOC)] = "",
    ) -> shapes.Context:
        """Read this at the start of a session: the team's active threads of work (with their
        last decision), recently failed episodes with their lessons, and the lessons most
        relevant to what you are about to do (query), within budget_tokens. `text` is the
        readable form; the lists hold the same items."""
        return await call(
            "context", query=query or None, budget_tokens=budget_tokens, project=read_scope(project)
        )

    async def patterns(
        kind: Annotated[str | None, RAW, arg(shapes.PatternsQuery, "kind")] = None,
        query: Annotated[str, RAW, arg(shapes.PatternsQuery, "query")] = "",
        limit: Annotated[int | None, RAW, arg(shapes.PatternsQuery, "limit")] = None,
        project: Annotated[str, RAW, arg(shapes.PatternsQuery, "project", PROJECT_READ_DOC)] = "",
    ) -> shapes.Patterns:
        """What the team's closed episodes teach: recurring lessons and decisions grouped into
        patterns (what mostly worked) and anti-patterns (what mostly failed), each with its
        trigger, action, success rate and the episodes it rests on. Check it before choosing
        an approach."""
        return await call(
            "patterns", kind=kind, query=query or None, limit=limit, project=read_scope(project)
        )

    async def projects() -> shapes.ProjectList:
        """The projects memories are kept in (one per repository or folder the agents work
        in), with their memory and episode counts and last activity, most recent first."""
        return await call("projects")

    async def sessions(
        project: Annotated[str, RAW, arg(shapes.SessionsQuery, "project", PROJECT_READ_DOC)] = "",
        **passed: Any,
    ) -> shapes.SessionList:
        """The client sessions of the project (yours and other agents'), newest activity
        first: each with its agents, runs, first and last memory time, memory count and
        episode_ids. To read a session's recent memories, call tribal_recall with its
        session."""
        return await call("sessions", project=read_scope(project), **passed)

    return [stats, context, patterns, projects, sessions]
