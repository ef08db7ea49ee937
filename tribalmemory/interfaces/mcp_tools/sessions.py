"""The agent's session and name, from the call, the transport or the client's clientInfo."""

from collections.abc import Mapping
from typing import Any

from mcp.server.mcpserver.context import Context
from mcp_types import CLIENT_INFO_META_KEY

SESSION_HEADER = "mcp-session-id"
#: Longest client name and version kept in a client's session name (a session name has at most
#: shapes.MAX_SESSION_CHARS characters).
CLIENT_PART_CHARS = 64


def session_key(ctx: Context[Any, Any] | None, given: str, fallback: str | None) -> str | None:
    """The name of the agent's session: the one the call gives, else the Streamable HTTP
    session id, else ``fallback`` (one name per server: a ``tribalmemory mcp`` process serves
    one agent), else the client's own name (:func:`client_session`). None only outside a
    request."""
    if given:
        return given
    try:
        headers = ctx.headers if ctx is not None else None
    except (LookupError, ValueError, AttributeError):
        headers = None
    header = headers.get(SESSION_HEADER) if headers else None
    if header:
        return f"mcp-{header}"
    return fallback or client_session(ctx)


def client_session(ctx: Context[Any, Any] | None) -> str | None:
    """The session of a client whose transport has none: ``mcp-client:<name>/<version>@<host>``
    from the clientInfo it sends and its address. Over HTTP, protocol 2026-07-28 has no session
    id (every request stands alone), nor has a client that keeps no session: their calls are one
    session per client program and machine. None outside a request."""
    found = client_info(ctx)
    if found is None:
        return None
    name, version, host = found
    return f"mcp-client:{name or 'unnamed'}/{version}@{host}"


def client_name(ctx: Context[Any, Any] | None) -> str | None:
    """The name the MCP client gives itself (its clientInfo ``name``, e.g. ``claude-code``),
    printable, at most :data:`CLIENT_PART_CHARS` characters: who stores a memory when the
    server was given no name. None when it sends none, or outside a request."""
    found = client_info(ctx)
    return (found[0] or None) if found is not None else None


def client_info(ctx: Context[Any, Any] | None) -> tuple[str, str, str] | None:
    """The client's name and version (its clientInfo: in each request's ``_meta`` under
    protocol 2026-07-28, else from the initialize handshake) and its host (``local`` over
    stdio), printable and cut to :data:`CLIENT_PART_CHARS`; "" for what it does not send.
    None outside a request."""
    try:
        request = ctx.request_context if ctx is not None else None
    except (LookupError, ValueError, AttributeError):
        request = None
    if request is None:
        return None
    meta = request.meta if isinstance(request.meta, Mapping) else {}
    info: Any = meta.get(CLIENT_INFO_META_KEY)
    if not isinstance(info, Mapping):  # the handshake's clientInfo
        found = getattr(getattr(request.session, "client_params", None), "client_info", None)
        info = {"name": getattr(found, "name", None), "version": getattr(found, "version", None)}
    peer = getattr(getattr(request.request, "client", None), "host", None)
    parts = [info.get("name") or "", info.get("version") or "", peer or "local"]
    name, version, host = (_printable(str(part))[:CLIENT_PART_CHARS] for part in parts)
    return name, version, host


def _printable(text: str) -> str:
    return "".join(c for c in text if c.isprintable()).strip()
