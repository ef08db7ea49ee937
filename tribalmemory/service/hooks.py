"""Write-time hooks: how plugins (the episode engine) extend the host without it knowing them.

A plugin is any object; the host calls the methods it has, by name, in registration order
(the idea of Datasette's plugin hooks, without the machinery):

- ``async before_remember(memory)``: before a new memory is stored (record durable intent);
  ``async store_failed(memory)`` if storing it then failed.
- ``async after_remember(memory, vector) -> dict | None``: after a memory is durably stored.
  The returned mapping is merged into the ``remember()`` result (e.g. ``episode_id``).
- ``check_forget(memory) -> None``: may raise a :class:`~tribalmemory.errors.TribalError` to
  refuse a ``forget()`` before anything changes.
- ``async after_forget(memory)``, ``async after_correct(old, new)``.
- ``annotate(memories) -> dict[id, dict]``: extra fields for the JSON form of memories.
- ``health() -> dict`` and ``stats() -> dict``: merged into ``/v1/health`` and ``/v1/stats``.
- ``async start(service)`` / ``async stop()``: lifecycle.

A failing ``after_*`` hook never loses the memory: the error is logged with its reason and the
call still succeeds.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import TribalError

log = logging.getLogger("tribalmemory.hooks")


class HookRegistry:
    """The plugins registered on one memory service."""

    def __init__(self) -> None:
        self._plugins: list[Any] = []

    def register(self, plugin: Any) -> None:
        self._plugins.append(plugin)

    @property
    def plugins(self) -> list[Any]:
        return list(self._plugins)

    def _with(self, hook: str) -> list[tuple[str, Any]]:
        found = []
        for plugin in self._plugins:
            method = getattr(plugin, hook, None)
            if method is not None:
                found.append((getattr(plugin, "name", type(plugin).__name__), method))
        return found

    async def notify(self, hook: str, *args: Any) -> dict[str, Any]:
        """Run an ``after_*`` hook on every plugin; merge dict results; log failures."""
        merged: dict[str, Any] = {}
        for name, method in self._with(hook):
            try:
                result = await method(*args)
            except TribalError:
                raise
            except Exception as exc:  # a plugin bug must not lose the memory
                log.warning(
                    "plugin %s failed in %s: %s: %s",
                    name,
                    hook,
                    type(exc).__name__,
                    exc,
                    exc_info=True,
                )
                continue
            if isinstance(result, dict):
                merged.update(result)
        return merged

    def check(self, hook: str, *args: Any) -> None:
        """Run a ``check_*`` hook; a plugin raises TribalError to refuse."""
        for _, method in self._with(hook):
            method(*args)

    def collect(self, hook: str, *args: Any) -> dict[str, Any]:
        """Merge the dicts that a synchronous hook returns (health, stats)."""
        merged: dict[str, Any] = {}
        for name, method in self._with(hook):
            try:
                result = method(*args)
            except Exception as exc:
                log.warning("plugin %s failed in %s: %s", name, hook, exc)
                result = {name: {"error": str(exc)}}
            if isinstance(result, dict):
                merged.update(result)
        return merged

    def annotate(self, memories: list[Any]) -> dict[str, dict[str, Any]]:
        extra: dict[str, dict[str, Any]] = {}
        for _, method in self._with("annotate"):
            for memory_id, fields in method(memories).items():
                extra.setdefault(memory_id, {}).update(fields)
        return extra

    async def start(self, service: Any) -> None:
        for _, method in self._with("start"):
            await method(service)

    async def stop(self) -> None:
        for name, method in reversed(self._with("stop")):
            try:
                await method()
            except Exception as exc:
                log.warning("plugin %s failed to stop cleanly: %s", name, exc)
