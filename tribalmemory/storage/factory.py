"""Open the configured store: embedded Qdrant Edge by default, a Qdrant server if configured."""

from __future__ import annotations

import os

from ..config import Config
from .base import MemoryStore


def open_store(
    config: Config, model_name: str, dim: int, *, check_model: bool = True
) -> MemoryStore:
    """The store for ``config``: a Qdrant server when ``storage.qdrant_url`` is set, else the
    embedded store at ``config.store_path``.

    Raises StoreLockedError (embedded store held by another process), ModelMismatchError
    (written by another embedding model; skipped when ``check_model`` is False) or
    StorageError.
    """
    storage = config.storage
    if storage.qdrant_url:
        from .server import ServerStore  # qdrant-client takes ~1 s to import

        api_key = storage.qdrant_api_key or os.environ.get("QDRANT_API_KEY")
        return ServerStore.connect(
            storage.qdrant_url,
            api_key,
            storage.collection,
            model_name,
            dim,
            check_model=check_model,
        )
    from .edge import EdgeStore

    return EdgeStore.open(config.store_path, model_name, dim, check_model=check_model)
