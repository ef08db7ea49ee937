"""MCP at ``/mcp``: the MCP server's streamable HTTP app, built on the first request.

Building it imports the mcp SDK and builds every tool's argument model and schema: about
1.3 s of CPU, which a daemon whose agents use ``tribalmemory mcp`` (stdio, through the REST
API) never needs. So the daemon starts without it; the first request to ``/mcp`` builds it
(on a thread: the daemon keeps answering) and waits, and it serves until the app's lifespan
ends.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.to_thread
from starlette.types import Receive, Scope, Send

from ..config import Config
from .guard import HostPolicy
from .transport import error_response

log = logging.getLogger("tribalmemory.http")

STOPPED = "the daemon is starting or stopping"
FAILED = (
    "the daemon could not start its MCP endpoint; its log says why (`tribalmemory service logs`)"
)


class McpEndpoint:
    """ASGI app at ``/mcp``. :meth:`running` is the app's lifespan part: while it runs, the
    first request builds the MCP server (once per endpoint) and starts its session manager
    (once per lifespan: the SDK runs a manager once)."""

    def __init__(self, config: Config, api_provider: Callable[[], Any]) -> None:
        self.config = config
        self.api_provider = api_provider
        self.server: Any = None
        self.app: Any = None
        self.failed = False
        self._wanted: anyio.Event | None = None  # set by the first request; None: not running
        self._ready: anyio.Event | None = None  # the build is done (or did not happen)

    def security(self) -> Any:
        """The SDK's own Host/Origin checks, with the names :class:`.guard.RequestGuard` allows
        (which checks every request first; a wildcard bind is checked there only)."""
        from mcp.server.transport_security import TransportSecuritySettings

        policy = HostPolicy.for_bind(self.config.server.host, self.config.server.port)
        if policy.any_address:
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        names = sorted(policy.names)
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{n}:{policy.port}" for n in names],
            allowed_origins=[f"http://{n}:{policy.port}" for n in names],
        )

    def _build(self) -> Any:
        from .mcp_server import build_mcp_server

        if self.server is None:
            self.server = build_mcp_server(self.api_provider, one_session=False)
        return self.server.streamable_http_app(
            streamable_http_path="/mcp",
            transport_security=self.security(),
            max_request_body_size=self.config.server.max_body_bytes,
        )

    async def _serve(self, wanted: anyio.Event, ready: anyio.Event, stop: anyio.Event) -> None:
        """Wait for the first request (or the end), build, serve until the end."""
        try:
            await wanted.wait()
            if stop.is_set():
                return
            try:
                app = await anyio.to_thread.run_sync(self._build)
            except Exception:
                self.failed = True
                log.exception("the MCP endpoint could not be built; /mcp answers 503")
                return
            if stop.is_set():  # the app stopped during the build: serve nothing
                return
            async with self.server.session_manager.run():
                self.app = app
                ready.set()
                await stop.wait()
        finally:
            self.app = None
            ready.set()  # wakes the requests that waited for a build that did not happen

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        wanted, ready, stop = anyio.Event(), anyio.Event(), anyio.Event()
        self.failed = False  # a lifespan builds again what the last one could not
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._serve, wanted, ready, stop)
            self._wanted, self._ready = wanted, ready
            try:
                yield
            finally:
                self._wanted = self._ready = None
                stop.set()
                wanted.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        wanted, ready = self._wanted, self._ready
        if wanted is not None and ready is not None and self.app is None:
            wanted.set()
            await ready.wait()
        app = self.app
        if app is None:
            response = error_response(503, FAILED if self.failed else STOPPED)
            await response(scope, receive, send)
            return
        await app(scope, receive, send)
