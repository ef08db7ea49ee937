"""The hooks a plugin may implement: the whole contract between the memory service and a plugin.

Each hook is declared here once (a pluggy hook specification, as in Datasette and pytest). A
plugin is an object with a ``name`` and methods of the same names marked ``@hookimpl``; it may
take a subset of a hook's arguments. :class:`~.hooks.HookRegistry` refuses a plugin at
registration (start-up fails, naming the hook) when a marked method is not a hook declared here,
takes an argument the hook does not have, or is sync where the hook is async (or the reverse).

``ON_ERROR`` is each hook's error policy, applied by the registry per plugin:

- ``FAIL``: the hook guards a change, so its failure stops it. ``before_remember`` records
  durable intent: if it fails, the memory is not stored and ``remember()`` fails (a
  :class:`~tribalmemory.errors.TribalError` from the plugin reaches the client as is; any other
  error is logged and becomes ``Unavailable``, 503). ``check_forget`` and ``check_correct``
  refuse a ``forget()`` or a ``correct()`` the same way. A failing ``start`` fails start-up.
- ``LOG``: the change already happened, so a failure is logged with its reason and the call
  succeeds without this plugin's part: the memory is never lost by an ``after_*`` hook, and a
  failing ``annotate`` leaves the memories without its fields (never a 500 on recall); a
  failing ``key_moments`` counts none as a key moment.
- ``REPORT``: ``health`` / ``stats`` failures are logged and shown as
  ``{"<plugin name>": {"error": "<reason>"}}`` in ``/v1/health`` / ``/v1/stats``.

Plugins run in pluggy's order (the last registered first, unless ``tryfirst``/``trylast``);
``stop`` runs in the reverse order. docs/plugins.md describes the contract for plugin authors.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import numpy as np

    from ..models import Memory
    from .host import PluginHost

PROJECT = "tribalmemory"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class OnError(Enum):
    FAIL = "fail"  # the error reaches the caller; nothing is changed
    LOG = "log"  # logged with the reason; the call succeeds without this plugin's part
    REPORT = "report"  # logged; this plugin's part is {"<plugin name>": {"error": reason}}


@hookspec
async def start(host: PluginHost) -> None:
    """The service is ready: keep ``host``, the only way to reach memories (see host.py)."""


@hookspec
async def stop() -> None:
    """The daemon stops: stop background work and close what the plugin opened."""


@hookspec
async def before_remember(memory: Memory) -> None:
    """A new memory is about to be stored: record durable intent (e.g. a queued job)."""


@hookspec
async def before_remember_batch(memories: list[Memory]) -> None:
    """A page of new memories (an import) is about to be stored at once: record durable intent
    for all of them together, as ``before_remember`` does for one. Optional: a plugin without
    it gets ``before_remember`` for each memory. ``after_remember`` follows for each memory,
    in the order given."""


@hookspec
async def store_failed(memory: Memory) -> None:
    """``memory`` was not stored after ``before_remember`` ran: drop the intent recorded."""


@hookspec
async def after_remember(memory: Memory, vector: np.ndarray) -> dict[str, Any] | None:
    """``memory`` is durably stored; the mapping returned is merged into ``remember()``'s
    result (e.g. ``episode_id``)."""


@hookspec
def check_forget(memory: Memory) -> None:
    """Raise a :class:`~tribalmemory.errors.TribalError` to refuse forgetting ``memory``."""


@hookspec
def check_correct(memory: Memory) -> None:
    """Raise a :class:`~tribalmemory.errors.TribalError` to refuse correcting ``memory``."""


@hookspec
async def after_forget(memory: Memory) -> None:
    """``memory`` was deleted: take it out of anything built from it."""


@hookspec
async def after_correct(old: Memory, new: Memory) -> None:
    """``new`` (a CORRECTION memory, already stored) supersedes ``old`` (already marked
    ``superseded_by``). Runs before ``after_remember`` of ``new``."""


@hookspec
def annotate(memories: list[Memory]) -> dict[str, dict[str, Any]] | None:
    """Extra fields for the JSON form of ``memories``, by memory id."""


@hookspec
def key_moments(memories: list[Memory]) -> list[str] | None:
    """The ids among ``memories`` that are key moments (surprising when they joined their
    episode): their stability grows faster when they are recalled and used."""


@hookspec
def health() -> dict[str, Any] | None:
    """Sections merged into ``/v1/health`` (and ``tribalmemory status``)."""


@hookspec
def stats() -> dict[str, Any] | None:
    """Sections merged into ``/v1/stats``."""


ON_ERROR: dict[str, OnError] = {
    "start": OnError.FAIL,
    "stop": OnError.LOG,
    "before_remember": OnError.FAIL,
    "before_remember_batch": OnError.FAIL,
    "store_failed": OnError.LOG,
    "after_remember": OnError.LOG,
    "check_forget": OnError.FAIL,
    "check_correct": OnError.FAIL,
    "after_forget": OnError.LOG,
    "after_correct": OnError.LOG,
    "annotate": OnError.LOG,
    "key_moments": OnError.LOG,
    "health": OnError.REPORT,
    "stats": OnError.REPORT,
}
