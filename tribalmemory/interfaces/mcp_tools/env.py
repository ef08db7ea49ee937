"""What every tool of one server shares: the API call and the defaults of its calls."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver.context import Context

from .sessions import client_name

Caller = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class ToolEnv:
    """``call(method, **args)`` runs the API; ``session`` names the agent's session when the
    transport has no session id; ``project`` is the project of calls that give none (stdio:
    the agent's working directory; None: the API's default); ``source_instance`` names who
    stores the memories (``tribalmemory mcp --source-instance``; None: the client's clientInfo
    name, else the API's default); ``read_project``, when given, the project of reads that give
    none (``*``: every project)."""

    call: Caller
    session: str | None = None
    project: str | None = None
    source_instance: str | None = None
    read_project: str | None = None

    def scope(self, given: str) -> str | None:
        """The call's project, else the server's."""
        return given if given else self.project

    def read_scope(self, given: str) -> str | None:
        """A read's project: the call's, else the server's for reads."""
        return given if given else (self.read_project or self.project)

    def author(self, ctx: Context[Any, Any] | None) -> str | None:
        """Who stores a memory: the server's name for its agent, else the client's own
        name (clientInfo), else None (the API's memory.default_source_instance)."""
        return self.source_instance or client_name(ctx)
