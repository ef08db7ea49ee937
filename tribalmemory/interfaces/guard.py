"""Requests a web page could forge are refused before they reach a route (REST and ``/mcp``).

A page the user visits can send requests to ``127.0.0.1``: a cross-origin ``fetch`` with a
``text/plain`` body, or, after DNS rebinding, same-origin requests to a name of its own that
resolves to loopback. :class:`RequestGuard` refuses, in this order:

- a ``Host`` other than this daemon's own names with its port (421, DNS rebinding);
- an ``Origin`` header other than the daemon's own origin (403, any method);
- a state-changing request (POST, PUT, PATCH, DELETE) whose body is not declared
  ``application/json`` (or ``application/x-ndjson``, the import's body; neither is a type a
  web page can send cross-origin without a preflight) (415): another ``Content-Type`` or none.

Command-line clients, agents and curl send no ``Origin`` and their own ``Host``: unaffected.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

WILDCARDS = frozenset({"0.0.0.0", "::", ""})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def host_name(address: str) -> str:
    """``address`` as it appears in a Host header (IPv6 in brackets), lower case."""
    address = address.strip().lower()
    if ":" in address and not address.startswith("["):
        return f"[{address}]"
    return address


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, int] | None:
    """``("name", port)`` of a Host header value (port 80 when absent), or None if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        name += "]"
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    else:
        name, _, port_text = value.partition(":")
    if not name or port_text is None or (port_text and not port_text.isdigit()):
        return None
    return name, int(port_text) if port_text else 80


@dataclass(frozen=True)
class HostPolicy:
    """The ``Host`` names this daemon answers to, all with its port.

    Loopback names always; the bound address too. A wildcard bind (``0.0.0.0``, ``::``) also
    accepts any IP address and this machine's host names: a rebinding attack always arrives
    with the attacker's domain name, never with an IP address.
    """

    names: frozenset[str]
    port: int
    any_address: bool = False

    @classmethod
    def for_bind(cls, host: str, port: int) -> HostPolicy:
        names = set(LOOPBACK_NAMES)
        wildcard = host.strip() in WILDCARDS
        if wildcard:
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        else:
            names.add(host_name(host))
        return cls(frozenset(names), port, any_address=wildcard)

    def allows(self, host: str | None) -> bool:
        parts = split_host(host) if host else None
        if parts is None or parts[1] != self.port:
            return False
        name = parts[0]
        return name in self.names or (self.any_address and _is_ip_literal(name))

    def allows_origin(self, origin: str) -> bool:
        """The daemon's own origin: ``http://`` + one of its Host values."""
        scheme, _, rest = origin.strip().partition("://")
        return scheme.lower() == "http" and "/" not in rest and self.allows(rest)

    def examples(self) -> str:
        return ", ".join(f"{name}:{self.port}" for name in LOOPBACK_NAMES)


def _refuse(status: int, message: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail}, status_code=status)


def _shown(value: str) -> str:
    return repr(value[:100])


def check(policy: HostPolicy, method: str, headers: Headers) -> JSONResponse | None:
    """The refusal for a request (see the module docstring), or None when it may proceed."""
    host = headers.get("host")
    if not policy.allows(host):
        return _refuse(
            421,
            f"refused Host {_shown(host or '')}: this daemon answers only to its own address "
            f"({policy.examples()})",
            "a Host naming another site is how DNS rebinding reaches a local daemon; "
            "connect to the daemon's address and port",
        )
    origin = headers.get("origin")
    if origin is not None and not policy.allows_origin(origin):
        return _refuse(
            403,
            f"refused a request from the web origin {_shown(origin)}",
            "web pages may not call this daemon; command-line clients, agents and curl "
            "send no Origin header",
        )
    if method in STATE_CHANGING:
        declared = headers.get("content-type")
        has_body = headers.get("transfer-encoding") is not None or headers.get(
            "content-length", "0"
        ).strip() not in ("", "0")
        media = (declared or "").split(";", 1)[0].strip().lower()
        if (declared is not None or has_body) and media not in BODY_TYPES:
            got = _shown(declared) if declared is not None else "none"
            return _refuse(
                415,
                f"Content-Type must be application/json, got {got}",
                "send the body as JSON with 'Content-Type: application/json' "
                "(other types are refused so that web forms cannot post here)",
            )
    return None


BODY_TYPES = ("application/json", "application/x-ndjson")


class RequestGuard:
    """ASGI middleware applying :func:`check` to every HTTP request."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = check(self.policy, scope["method"], Headers(scope=scope))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)
