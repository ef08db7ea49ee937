"""The entity tools: the things memories name (services, files, tickets, people), and what
is known about one of them.

Each function is one tool; its name, annotations and request model are in :data:`.table.TOOLS`.
"""

from collections.abc import Callable
from typing import Annotated, Any

from ... import shapes
from .env import ToolEnv
from .params import PROJECT_DOC, RAW, arg


def entity_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    """The tools of this family, bound to ``env`` (the server's API call and defaults)."""
    call = env.call
    scope = env.scope
    one = shapes.EntityGetQuery

    async def entities_list(
        project: Annotated[str, RAW, arg(shapes.EntitiesListQuery, "project", PROJECT_DOC)] = "",
        **passed: Any,
    ) -> shapes.EntityList:
        """The entities the project's memories name (services, files, tickets, versions,
        people), most mentioned first, each with its aliases and first/last mention. Filter by
        query (any alias) or kind. Open one with tribal_entity."""
        return await call("entities_list", project=scope(project), **passed)

    async def entity_get(
        name: Annotated[str, RAW, arg(shapes.EntityRef, "name")],
        limit: Annotated[int | None, RAW, arg(one, "limit")] = None,
        project: Annotated[str, RAW, arg(one, "project", PROJECT_DOC)] = "",
    ) -> shapes.EntityDetail:
        """What is known about one thing (by any alias: 'orders-svc' finds 'orders-service'):
        the episodes that touched it (newest first), its latest memories and the entities
        named with it; a name no entity is stored under, the memories that write it word for
        word (kind 'written'). Answers "which episodes touched X" better than a keyword
        recall."""
        return await call("entity_get", name=name, limit=limit, project=scope(project))

    return [entities_list, entity_get]
