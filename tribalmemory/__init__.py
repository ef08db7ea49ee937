"""Tribal Memory: a shared memory server for AI agents, with episodes."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tribalmemory")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"


def __getattr__(name: str) -> object:
    """``tribalmemory.Client`` and ``tribalmemory.AsyncClient``, imported on first use."""
    if name in ("Client", "AsyncClient"):
        from . import sdk

        return getattr(sdk, name)
    raise AttributeError(f"module 'tribalmemory' has no attribute {name!r}")
