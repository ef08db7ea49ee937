"""The MCP server whose tools refuse arguments they do not declare."""

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.context_injection import find_context_parameter
from mcp_types import CallToolResult, InputRequiredResult

from ... import validation as check
from ...errors import InvalidInput
from .errors import error_text


class ToolServer(MCPServer):
    """An MCPServer whose tools refuse arguments they do not declare, and missing ones.

    The SDK would drop an unknown argument silently (a misspelled ``limt`` would fall back to
    the default limit); here it is a tool error naming the allowed arguments.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.tool_arguments: dict[str, tuple[list[str], list[str]]] = {}

    def add_checked_tool(self, fn: Callable[..., Any], name: str, **options: Any) -> None:
        """Add ``fn`` as tool ``name``, remembering its declared and required arguments."""
        context = find_context_parameter(fn)
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != context]
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        self.tool_arguments[name] = ([p.name for p in params], required)
        self.add_tool(fn, name=name, **options)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        declared = self.tool_arguments.get(name)
        if declared is not None:
            try:
                check.names(arguments, declared[0], declared[1], noun="argument")
            except InvalidInput as exc:
                raise ToolError(error_text(exc)) from None
        return await super().call_tool(name, arguments, context)
