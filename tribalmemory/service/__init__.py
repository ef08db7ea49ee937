"""The memory service (the host) and its write-time hooks."""

from .hooks import HookRegistry
from .memory_service import MemoryService, RememberResult

__all__ = ["HookRegistry", "MemoryService", "RememberResult"]
