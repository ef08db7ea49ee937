"""The MCP server: Tribal Memory's tools for agents (Claude Code, Codex, Claude Desktop).

One server definition serves two transports:

- Streamable HTTP inside the daemon, which mounts ``build_mcp_server(lambda: api)`` at ``/mcp``
  and calls the in-process :class:`~tribalmemory.api.TribalAPI`;
- stdio (``tribalmemory mcp``, :mod:`tribalmemory.mcp_stdio`), a separate process that
  forwards every tool call to the running daemon through
  :class:`~tribalmemory.client.DaemonClient`, because the daemon alone owns the embedded store.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from .. import __version__
from .mcp_tools import ApiCaller, ApiProvider, ToolServer, register_tools

INSTRUCTIONS = (
    "Tribal Memory is a long-term memory shared by every agent that works with this user or "
    "team. Call tribal_recall when you start a task, before a decision and when you hit an "
    "error, to reuse what the team already knows. Call tribal_remember when you learn "
    "something durable (a decision and why, a fix, a convention, a gotcha); one "
    "self-contained fact per call, never secrets. Related memories are grouped into "
    "episodes (threads of work) with summaries: tribal_episodes_list, tribal_episode_get."
)


def build_mcp_server(
    api_provider: ApiProvider,
    *,
    on_unavailable: Callable[[], None] | None = None,
    one_session: bool = True,
    project: str | None = None,
    source_instance: str | None = None,
    read_project: str | None = None,
) -> ToolServer:
    """The MCP server with every tool; each call runs one method of ``api_provider()``.

    ``api_provider`` returns a TribalAPI or a DaemonClient (or an awaitable of one).
    ``on_unavailable`` (optional, no arguments) is called when a call fails as unavailable.
    ``one_session``: the server serves one agent (stdio), whose session (for
    ``tribal_episode_start``) is named once here; the daemon's HTTP server serves many and
    passes False (its clients' sessions are their Streamable HTTP session ids).
    ``project``: the project of calls that name none (stdio: the working directory's; the
    daemon's /mcp passes None, which the API takes as ``default``); ``read_project``, when
    given, the project of reads that name none (``*``: every project).
    ``source_instance``: who stores the memories of this server's agent (stdio: ``tribalmemory
    mcp --source-instance``, which ``init`` writes per client); None: each client's own name
    (the clientInfo of its MCP initialize request), else memory.default_source_instance.
    """
    server = ToolServer(
        name="tribal-memory", title="Tribal Memory", instructions=INSTRUCTIONS, version=__version__
    )
    session = f"mcp-{uuid.uuid4().hex}" if one_session else None
    caller = ApiCaller(api_provider, on_unavailable)
    register_tools(server, caller, session, project, source_instance, read_project)
    return server
