"""``tribalmemory mcp``: the MCP tools over stdio, in a process of its own, backed by the daemon.

Agent clients (Claude Code, Codex, Claude Desktop) start this process; every tool call is
forwarded to the running daemon through :class:`~tribalmemory.client.DaemonClient` (the daemon
is started when none runs), because the daemon alone owns the embedded store. The tools are
the daemon's own (:func:`~tribalmemory.interfaces.mcp_server.build_mcp_server`).

``python -m tribalmemory.mcp_stdio [CONFIG]`` runs it without the CLI.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from . import client as daemon_client
from . import projects
from .config import Config
from .errors import TribalError, Unavailable
from .interfaces.mcp_server import build_mcp_server

log = logging.getLogger("tribalmemory.mcp")


class DaemonConnection:
    """The stdio server's link to the daemon: started on first use, re-checked after a failure."""

    def __init__(self, config: Config, config_path: str | Path | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.client: Any = None
        self.stale = False
        self._lock = anyio.Lock()

    async def get(self) -> Any:
        """The DaemonClient, after making sure a daemon runs (starting one if needed)."""
        if self.client is not None and not self.stale:
            return self.client
        async with self._lock:
            if self.client is None or self.stale:
                client = await anyio.to_thread.run_sync(self._connect)
                if client is not self.client:
                    await self.aclose()
                self.client, self.stale = client, False
        return self.client

    def reset(self) -> None:
        """Check (and if needed restart) the daemon before the next call."""
        self.stale = True

    def _connect(self) -> Any:
        try:
            return daemon_client.ensure_daemon(self.config, self.config_path)
        except TribalError:
            raise
        except Exception as exc:
            log.exception("could not reach or start the Tribal Memory daemon")
            raise Unavailable(
                f"could not reach or start the Tribal Memory daemon: {exc}",
                "tell the user the Tribal Memory daemon could not be started, with this message",
            ) from exc

    async def aclose(self) -> None:
        client, self.client = self.client, None
        if client is None:
            return
        for name in ("aclose", "close"):
            closer = getattr(client, name, None)
            if closer is not None:
                result = closer()
                if hasattr(result, "__await__"):
                    await result
                return


def _log_to_stderr(level: str) -> None:
    """stdout carries the protocol: log lines go to stderr only."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "stream", None) is sys.stdout:
            root.removeHandler(handler)
    if not any(getattr(h, "stream", None) is sys.stderr for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(level.upper())
    if level != "debug":  # one line per HTTP request to the daemon is noise in the client's log
        logging.getLogger("httpx").setLevel(logging.WARNING)


def run_stdio(
    config: Config,
    config_path: str | Path | None = None,
    project: str | None = None,
    source_instance: str | None = None,
    all_projects: bool = False,
) -> None:
    """``tribalmemory mcp``: serve the tools over stdin/stdout, backed by the daemon.
    ``project``: the project of calls that name none (default: the working directory's,
    see :func:`tribalmemory.projects.choose`); ``all_projects``: reads that name none span
    every project instead. ``source_instance``: who stores the memories (default: the
    client's clientInfo name, see :func:`~.interfaces.mcp_tools.client_name`)."""
    _log_to_stderr(config.server.log_level)
    if project is None:
        project = projects.choose(None, os.environ, Path.cwd())
    reads = projects.ALL_PROJECTS if all_projects else project
    log.info(
        "MCP calls that name no project use project %s (reads: %s)",
        project,
        "all projects" if all_projects else project,
    )
    if source_instance:
        log.info("memories stored through this server are from %s", source_instance)
    connection = DaemonConnection(config, config_path)
    server = build_mcp_server(
        connection.get,
        on_unavailable=connection.reset,
        project=project,
        source_instance=source_instance or None,
        read_project=reads,
    )

    async def serve() -> None:
        try:
            await server.run_stdio_async()
        finally:
            with anyio.CancelScope(shield=True):
                await connection.aclose()

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":  # python -m tribalmemory.mcp_stdio [config.yaml]
    from .config import load_config, load_env

    load_env()
    path = sys.argv[1] if len(sys.argv) > 1 else None
    run_stdio(load_config(path), path)
