"""The plugins registered on one memory service, and the calls of their hooks.

pluggy declares the hooks (:mod:`.hookspecs`), checks each plugin against them at registration
and orders the implementations. The registry calls the implementations one by one itself,
rather than through pluggy's call loop, so that it can apply each hook's error policy
(``hookspecs.ON_ERROR``) to each plugin separately and await the async ones.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pluggy

from ..errors import TribalError, Unavailable
from . import hookspecs
from .hookspecs import ON_ERROR, OnError

if TYPE_CHECKING:
    import numpy as np

    from ..models import Memory
    from .host import PluginHost

log = logging.getLogger("tribalmemory.hooks")


class PluginError(Exception):
    """A plugin does not fit the hook specifications; start-up stops with this message."""


def _async_specs() -> dict[str, bool]:
    return {
        name: inspect.iscoroutinefunction(getattr(hookspecs, name)) for name in hookspecs.ON_ERROR
    }


ASYNC = _async_specs()


class HookRegistry:
    """The plugins registered on one memory service."""

    def __init__(self) -> None:
        self._manager = pluggy.PluginManager(hookspecs.PROJECT)
        self._manager.add_hookspecs(hookspecs)
        self._started: list[str] = []
        self._failing: dict[tuple[str, str], str] = {}  # (plugin, hook) -> last reason logged

    # -- registration -------------------------------------------------------------------------

    def register(self, plugin: object) -> None:
        """Add ``plugin``; raises :class:`PluginError` naming what does not fit the specs."""
        name = str(getattr(plugin, "name", "") or type(plugin).__name__)
        if self._manager.has_plugin(name):
            raise PluginError(f"a plugin named {name!r} is already registered")
        for hook, function, opts in self._marked(plugin):
            self._check(name, hook, function, opts)
        try:
            self._manager.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(
                f"plugin {name!r} does not fit the hook specifications: {exc}"
            ) from None

    def _marked(self, plugin: object) -> Iterator[tuple[str, Any, pluggy.HookimplOpts]]:
        """The plugin's methods marked ``@hookimpl``: (hook name, function, options)."""
        for attr in dir(plugin):
            opts = self._manager.parse_hookimpl_opts(plugin, attr)
            if opts is not None:
                yield opts.get("specname") or attr, getattr(plugin, attr), opts

    @staticmethod
    def _check(name: str, hook: str, function: Any, opts: pluggy.HookimplOpts) -> None:
        if hook not in ON_ERROR:
            known = ", ".join(sorted(ON_ERROR))
            raise PluginError(
                f"plugin {name!r} implements unknown hook {hook!r} (misspelled?); "
                f"the hooks are: {known}"
            )
        if opts.get("wrapper") or opts.get("hookwrapper"):
            raise PluginError(f"plugin {name!r}: hook {hook!r} cannot be a wrapper")
        if inspect.iscoroutinefunction(function) != ASYNC[hook]:
            kind = "an async" if ASYNC[hook] else "a plain (sync)"
            raise PluginError(f"plugin {name!r}: hook {hook!r} must be {kind} function")

    @property
    def plugins(self) -> list[Any]:
        return [plugin for _, plugin in self._manager.list_name_plugin()]

    def get(self, name: str) -> Any:
        """The plugin registered as ``name``, or None."""
        return self._manager.get_plugin(name)

    # -- calling ------------------------------------------------------------------------------

    def _impls(self, hook: str) -> list[pluggy.HookImpl]:
        """The implementations of ``hook`` in pluggy's call order."""
        caller: pluggy.HookCaller = getattr(self._manager.hook, hook)
        return list(reversed(caller.get_hookimpls()))

    @staticmethod
    def _invoke(impl: pluggy.HookImpl, values: dict[str, Any]) -> Any:
        """Call one implementation with the arguments it takes (a subset of the spec's)."""
        function: Callable[..., Any] = impl.function
        return function(*[values[arg] for arg in impl.argnames])

    def _failed(self, hook: str, plugin: str, exc: Exception) -> dict[str, Any]:
        """Apply ``hook``'s error policy to ``exc``; returns what REPORT hooks contribute."""
        policy = ON_ERROR[hook]
        if policy is OnError.FAIL and isinstance(exc, TribalError):
            raise exc
        reason = f"{type(exc).__name__}: {exc}"
        if self._failing.get((plugin, hook)) != reason:  # once per reason: health is polled
            log.warning("plugin %s failed in %s: %s", plugin, hook, reason, exc_info=exc)
            self._failing[(plugin, hook)] = reason
        else:
            log.debug("plugin %s failed in %s again: %s", plugin, hook, reason)
        if policy is OnError.FAIL:
            raise Unavailable(
                f"plugin {plugin!r} failed in {hook} ({type(exc).__name__}); nothing was "
                "changed. The daemon's log has the reason; try again",
                "retry later; if it keeps failing, read `tribalmemory service logs`",
            ) from exc
        if policy is OnError.REPORT:
            return {plugin: {"error": reason}}
        return {}

    def _succeeded(self, hook: str, plugin: str) -> None:
        if self._failing and self._failing.pop((plugin, hook), None) is not None:
            log.info("plugin %s works again in %s", plugin, hook)

    async def _call(self, hook: str, **values: Any) -> list[Any]:
        """Await ``hook`` on every plugin; the results of the ones that did not fail."""
        results = []
        for impl in self._impls(hook):
            try:
                results.append(await self._invoke(impl, values))
            except Exception as exc:
                self._failed(hook, impl.plugin_name, exc)
            else:
                self._succeeded(hook, impl.plugin_name)
        return results

    def _call_sync(self, hook: str, **values: Any) -> list[Any]:
        results = []
        for impl in self._impls(hook):
            try:
                results.append(self._invoke(impl, values))
            except Exception as exc:
                results.append(self._failed(hook, impl.plugin_name, exc))
            else:
                self._succeeded(hook, impl.plugin_name)
        return results

    # -- the hooks, as the service calls them -------------------------------------------------

    async def start(self, host: PluginHost) -> None:
        """Start every plugin; if one fails, stop the ones started and raise its error."""
        for impl in self._impls("start"):
            try:
                await self._invoke(impl, {"host": host})
            except BaseException:
                await self.stop()
                raise
            self._started.append(impl.plugin_name)
        names = [name for name, _ in self._manager.list_name_plugin()]
        self._started += [name for name in names if name not in self._started]  # no start hook

    async def stop(self) -> None:
        """Stop the started plugins, in the reverse order; failures are logged."""
        impls = {impl.plugin_name: impl for impl in self._impls("stop")}
        while self._started:
            name = self._started.pop()
            if name in impls:
                try:
                    await self._invoke(impls[name], {})
                except Exception as exc:
                    self._failed("stop", name, exc)

    async def before_remember(self, memory: Memory) -> None:
        await self._call("before_remember", memory=memory)

    async def before_remember_batch(self, memories: list[Memory]) -> None:
        """``before_remember`` for each memory on the plugins without a batch hook, then
        ``before_remember_batch`` on the plugins that implement it."""
        batched = {impl.plugin_name for impl in self._impls("before_remember_batch")}
        for impl in self._impls("before_remember"):
            if impl.plugin_name in batched:
                continue
            for memory in memories:
                try:
                    await self._invoke(impl, {"memory": memory})
                except Exception as exc:
                    self._failed("before_remember", impl.plugin_name, exc)
                else:
                    self._succeeded("before_remember", impl.plugin_name)
        if batched and memories:
            await self._call("before_remember_batch", memories=memories)

    async def store_failed(self, memory: Memory) -> None:
        await self._call("store_failed", memory=memory)

    async def after_remember(self, memory: Memory, vector: np.ndarray) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for result in await self._call("after_remember", memory=memory, vector=vector):
            merged.update(result or {})
        return merged

    def check_forget(self, memory: Memory) -> None:
        self._call_sync("check_forget", memory=memory)

    def check_correct(self, memory: Memory) -> None:
        self._call_sync("check_correct", memory=memory)

    async def after_forget(self, memory: Memory) -> None:
        await self._call("after_forget", memory=memory)

    async def after_correct(self, old: Memory, new: Memory) -> None:
        await self._call("after_correct", old=old, new=new)

    def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        extra: dict[str, dict[str, Any]] = {}
        for result in self._call_sync("annotate", memories=memories):
            for memory_id, fields in (result or {}).items():
                extra.setdefault(memory_id, {}).update(fields)
        return extra

    def key_moments(self, memories: list[Memory]) -> set[str]:
        found: set[str] = set()
        for result in self._call_sync("key_moments", memories=memories):
            if isinstance(result, list):
                found.update(result)
        return found

    def health(self) -> dict[str, Any]:
        return self._merge(self._call_sync("health"))

    def stats(self) -> dict[str, Any]:
        return self._merge(self._call_sync("stats"))

    @staticmethod
    def _merge(results: list[Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for result in results:
            merged.update(result or {})
        return merged
