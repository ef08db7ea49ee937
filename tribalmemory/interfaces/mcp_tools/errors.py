"""What an agent reads when a call fails, and the caller that turns every failure into it."""

import inspect
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from ...errors import TribalError

log = logging.getLogger("tribalmemory.mcp")

ApiProvider = Callable[[], Any]
"""Returns the object whose methods the tools call (TribalAPI or DaemonClient); may be async."""

# -- error text -----------------------------------------------------------------------------

HINTS = {
    "invalid_input": "Correct that argument and call the tool again.",
    "bad_query": "Correct that argument and call the tool again.",
    "bad_name": "Correct that argument and call the tool again.",
    "not_found": "Check the id: tribal_recall returns memory ids, tribal_episodes_list "
    "returns episode ids.",
    "conflict": "Get the episode again (tribal_episode_get) and retry with what it lists now.",
    "payload_too_large": "Shorten the text.",
    "feature_disabled": "This feature is turned off in the Tribal Memory configuration; "
    "tell the user.",
    "unavailable": "The memory server is busy or not reachable: wait a moment and retry; "
    "if it keeps failing, tell the user the Tribal Memory daemon is not running.",
    "unauthorized": "The Tribal Memory daemon wants an API token: tell the user to set "
    "TRIBAL_MEMORY_TOKEN for this MCP server (tribalmemory token generate).",
    "internal": "The memory daemon failed on this request (details are in its log). Retry "
    "once; if it fails again, tell the user.",
}
DEFAULT_HINT = "Check the arguments and call the tool again."
INTERNAL_ERROR = (
    "Tribal Memory hit an internal error (details are in the server log). "
    "Retry once; if it fails again, tell the user."
)


def error_text(exc: TribalError) -> str:
    """What the agent reads: the API's message plus what to do about it."""
    hint = exc.detail if isinstance(exc.detail, str) and exc.detail.strip() else None
    hint = hint or HINTS.get(exc.code, DEFAULT_HINT)
    return f"{exc.message}\nWhat to do: {hint}"


class ApiCaller:
    """Calls one API method; turns every failure into a :class:`ToolError` (``is_error``)."""

    def __init__(
        self, provider: ApiProvider, on_unavailable: Callable[[], None] | None = None
    ) -> None:
        self.provider = provider
        self.on_unavailable = on_unavailable

    async def __call__(self, method: str, **arguments: Any) -> dict[str, Any]:
        try:
            api = await _resolve(self.provider())
            result = await _resolve(getattr(api, method)(**arguments))
        except TribalError as exc:
            if exc.code == "unavailable" and self.on_unavailable is not None:
                self.on_unavailable()
            raise ToolError(error_text(exc)) from None
        except Exception as exc:
            log.exception("MCP tool call %s failed", method)
            raise ToolError(INTERNAL_ERROR) from exc
        if not isinstance(result, dict):
            log.error("API method %s returned %s, not a dict", method, type(result).__name__)
            raise ToolError(INTERNAL_ERROR)
        return result


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
