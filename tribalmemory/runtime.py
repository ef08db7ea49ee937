"""Assemble a running Tribal Memory from a config: embedder, store, service, plugins, API."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .api import TribalAPI
from .config import Config
from .embeddings import load_embedder
from .service import MemoryService

log = logging.getLogger("tribalmemory")


@dataclass
class Runtime:
    config: Config
    service: MemoryService
    api: TribalAPI

    async def stop(self) -> None:
        await self.service.hooks.stop()
        self.service.store.close()


async def start_runtime(config: Config) -> Runtime:
    """Open the store, register plugins and start them.

    Raises StorageError or EmbeddingModelError with a message for the user.
    """
    from .storage import open_store

    config.data_path.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder(config.embedding.model, config.embedding.cache_dir)
    store = open_store(config, embedder.model_name, embedder.dim)
    service = MemoryService(config, store, embedder)
    episodes = None
    if config.episodes.enabled:
        from .episodes.plugin import EpisodePlugin

        plugin = EpisodePlugin(config)
        service.hooks.register(plugin)
        episodes = plugin.engine
    try:
        await service.hooks.start(service)
    except BaseException:
        store.close()
        raise
    return Runtime(config=config, service=service, api=TribalAPI(service, episodes))
