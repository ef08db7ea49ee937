"""The memory service (the host), its plugin hooks and the host interface plugins receive."""

from .hooks import HookRegistry, PluginError
from .hookspecs import hookimpl
from .host import PluginHost, ServiceHost
from .memory_service import MemoryService, RememberResult

__all__ = [
    "HookRegistry",
    "MemoryService",
    "PluginError",
    "PluginHost",
    "RememberResult",
    "ServiceHost",
    "hookimpl",
]
