"""Storage: memories with dense + BM25 vectors in Qdrant (embedded Edge or a server)."""

from __future__ import annotations

from typing import Any

from .base import (
    FolderStore,
    MaintainedStore,
    MemoryFilter,
    MemoryStore,
    ModelMismatchError,
    SearchHit,
    StorageError,
    StoreInfo,
    StoreLockedError,
)
from .edge import EdgeStore
from .factory import open_store
from .reembed import reembed

__all__ = [
    "EdgeStore",
    "FolderStore",
    "MaintainedStore",
    "MemoryFilter",
    "MemoryStore",
    "ModelMismatchError",
    "SearchHit",
    "ServerStore",
    "StorageError",
    "StoreInfo",
    "StoreLockedError",
    "open_store",
    "reembed",
]


def __getattr__(name: str) -> Any:
    """ServerStore loads on first use (qdrant-client alone takes ~1 s to import)."""
    if name == "ServerStore":
        from .server import ServerStore

        return ServerStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
