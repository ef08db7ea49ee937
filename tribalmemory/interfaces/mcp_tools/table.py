"""The tool table: every tool's name, annotations and request model, in the order they are
listed, and :func:`register_tools`, which adds them to a server."""

import inspect
from dataclasses import dataclass
from typing import Any

from mcp_types import ToolAnnotations

from ... import shapes
from .causes import cause_tools
from .entities import entity_tools
from .env import Caller, ToolEnv
from .episodes import episode_tools
from .memories import memory_tools
from .overview import overview_tools
from .params import SERVER_FILLED, with_fields
from .server import ToolServer

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DELETE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


@dataclass(frozen=True)
class Tool:
    """One MCP tool. A tool given its request model whose function ends in ``**passed`` takes
    every other field of the model as well (:func:`~.params.with_fields`)."""

    name: str
    annotations: ToolAnnotations
    request: type[shapes.Request] | None = None


TOOLS: dict[str, Tool] = {
    "remember": Tool("tribal_remember", WRITE, shapes.RememberRequest),
    "recall": Tool("tribal_recall", READ, shapes.RecallRequest),
    "forget": Tool("tribal_forget", DELETE),
    "used": Tool("tribal_used", WRITE),
    "correct": Tool("tribal_correct", WRITE, shapes.CorrectRequest),
    "ingest_conversation": Tool(
        "tribal_ingest_conversation", WRITE, shapes.IngestConversationRequest
    ),
    "stats": Tool("tribal_stats", READ),
    "episodes_list": Tool("tribal_episodes_list", READ, shapes.EpisodesListQuery),
    "episode_get": Tool("tribal_episode_get", READ),
    "context": Tool("tribal_context", READ),
    "patterns": Tool("tribal_patterns", READ),
    "episode_decisions": Tool("tribal_episode_decisions", READ),
    "episode_create": Tool("tribal_episode_create", WRITE, shapes.EpisodeCreateRequest),
    "episode_add": Tool("tribal_episode_add", WRITE),
    "episode_remove": Tool("tribal_episode_remove", WRITE),
    "episode_close": Tool("tribal_episode_close", WRITE),
    "episode_regenerate": Tool("tribal_episode_regenerate", WRITE),
    "episode_start": Tool("tribal_episode_start", WRITE),
    "episode_current": Tool("tribal_episode_current", READ),
    "episode_update": Tool("tribal_episode_update", WRITE, shapes.EpisodeUpdateRequest),
    "episode_merge": Tool("tribal_episode_merge", WRITE),
    "episode_split": Tool("tribal_episode_split", WRITE),
    "episode_delete": Tool("tribal_episode_delete", DELETE),
    "episode_chain": Tool("tribal_episode_chain", READ),
    "episode_replay": Tool("tribal_episode_replay", READ, shapes.EpisodesReplayRequest),
    "episodes_search": Tool("tribal_episodes_search", READ, shapes.EpisodesSearchRequest),
    "projects": Tool("tribal_projects", READ),
    "entities_list": Tool("tribal_entities", READ, shapes.EntitiesListQuery),
    "entity_get": Tool("tribal_entity", READ),
    "sessions": Tool("tribal_sessions", READ, shapes.SessionsQuery),
    "causes_list": Tool("tribal_causes", READ),
    "causal_path": Tool("tribal_causal_path", READ),
    "cause_add": Tool("tribal_cause_add", WRITE),
    "cause_remove": Tool("tribal_cause_remove", DELETE),
}
"""The tools by the name of their function (in :mod:`.memories`, :mod:`.episodes`,
:mod:`.overview`, :mod:`.entities`, :mod:`.causes`), in the order they are listed."""

FAMILIES = (memory_tools, episode_tools, overview_tools, entity_tools, cause_tools)


def register_tools(
    server: ToolServer,
    call: Caller,
    session: str | None = None,
    project: str | None = None,
    source_instance: str | None = None,
    read_project: str | None = None,
) -> None:
    """Add every Tribal Memory tool to ``server``; ``call(method, **args)`` runs the API.
    The other arguments are the defaults of the server's calls (:class:`~.env.ToolEnv`)."""
    env = ToolEnv(call, session, project, source_instance, read_project)
    functions: dict[str, Any] = {fn.__name__: fn for family in FAMILIES for fn in family(env)}
    if set(functions) != set(TOOLS):
        raise RuntimeError(f"tool functions and TOOLS differ: {set(functions) ^ set(TOOLS)}")
    for key, tool in TOOLS.items():
        fn = functions[key]
        if tool.request is not None:
            reads = bool(tool.annotations.read_only_hint)  # a read filters by source_instance
            fn.__signature__ = with_fields(fn, tool.request, filled=() if reads else SERVER_FILLED)
        server.add_checked_tool(
            fn,
            tool.name,
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=tool.annotations,
            structured_output=True,
        )
