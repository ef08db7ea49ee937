"""The memory service (the host), its plugin hooks and the host interface plugins receive."""

from .hooks import HookRegistry, PluginError
from .hookspecs import hookimpl
from .host import PluginHost
from .memory_service import MemoryService
from .remembering import RememberResult
from .service_host import ServiceHost

__all__ = [
    "HookRegistry",
    "MemoryService",
    "PluginError",
    "PluginHost",
    "RememberResult",
    "ServiceHost",
    "hookimpl",
]
