"""The Python client: :class:`AsyncClient` and :class:`Client` (the same, blocking).

Both talk to the daemon of a data folder over HTTP, after it proved it serves that folder (see
:mod:`tribalmemory.client`). Every operation of the HTTP API is a method of the same name as
the route table's (``remember``, ``recall``, ``episodes_list``, ``episode_get``, ...), taking
the same arguments and answering the response model of :mod:`tribalmemory.shapes` (pydantic,
so ``result.memory_id`` and ``result.model_dump()``). Errors are the CLI's:
:class:`~tribalmemory.errors.TribalError` and its subclasses (``NotFound``, ``InvalidInput``,
``Unavailable``, ``WrongDaemon``, ...). docs/python.md shows it at work.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel

from .client import DaemonClient, ensure_daemon, find_daemon
from .config import Config, load_config
from .errors import Unavailable
from .interfaces.openapi import OPERATIONS

__all__ = ["AsyncClient", "Client", "OPERATIONS"]


def _connect(config: Config | str | Path | None, token: str | None, start: bool) -> DaemonClient:
    path = None if isinstance(config, Config) else config
    settings = config if isinstance(config, Config) else load_config(config)
    daemon: DaemonClient | None
    if start:
        daemon = ensure_daemon(settings, config_path=path)
    else:
        daemon = find_daemon(settings, config_path=path)
        if daemon is None:
            raise Unavailable(
                f"no daemon answers for {settings.data_path} at port {settings.server.port}",
                "start it with `tribalmemory serve` (or pass start=True)",
            )
    if token is not None:
        daemon.token = token
    return daemon


class AsyncClient:
    """Typed asyncio client of the daemon. ``config``: a :class:`~tribalmemory.config.Config`,
    a path to a ``config.yaml``, or None for the default (``TRIBAL_MEMORY_CONFIG``, else
    ``~/.tribal-memory/config.yaml``); ``token``: the API token (default
    ``TRIBAL_MEMORY_TOKEN``); ``start``: start the daemon when none is running; ``project``:
    the project of every call that takes one and is given none (default: the API's,
    ``default``)."""

    def __init__(
        self,
        config: Config | str | Path | None = None,
        *,
        token: str | None = None,
        start: bool = False,
        project: str | None = None,
    ) -> None:
        self._daemon = _connect(config, token, start)
        self.project = project

    @property
    def base_url(self) -> str:
        return self._daemon.base_url

    def __getattr__(self, name: str) -> Callable[..., Awaitable[BaseModel]]:
        if name.startswith("_"):
            raise AttributeError(name)
        op = OPERATIONS.get(name)
        method = getattr(self._daemon, name, None)
        if op is None or method is None:
            raise AttributeError(f"{type(self).__name__} has no operation {name!r}")

        scoped = self.project is not None and "project" in inspect.signature(method).parameters

        async def call(*args: Any, **kwargs: Any) -> BaseModel:
            if scoped and kwargs.get("project") is None:
                kwargs["project"] = self.project
            result = method(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return op.response.model_validate(result)

        call.__name__ = name
        call.__doc__ = op.summary
        return call

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(OPERATIONS))

    async def aclose(self) -> None:
        await self._daemon.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class Client:
    """The blocking client: the methods of :class:`AsyncClient`, each run to completion on
    a private event loop. One client per thread."""

    def __init__(
        self,
        config: Config | str | Path | None = None,
        *,
        token: str | None = None,
        start: bool = False,
        project: str | None = None,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._async = AsyncClient(config, token=token, start=start, project=project)

    @property
    def base_url(self) -> str:
        return self._async.base_url

    def __getattr__(self, name: str) -> Callable[..., BaseModel]:
        if name.startswith("_"):
            raise AttributeError(name)
        call = getattr(self._async, name)

        def run(*args: Any, **kwargs: Any) -> BaseModel:
            return self._loop.run_until_complete(call(*args, **kwargs))

        run.__name__ = name
        run.__doc__ = call.__doc__
        return run

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(OPERATIONS))

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._async.aclose())
            self._loop.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
