"""Assemble a running Tribal Memory from a config: embedder, store, service, plugins, API."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

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
    stopped: bool = False

    @property
    def episodes(self) -> Any:
        """The episode plugin, or None when episodes are disabled."""
        for plugin in self.service.hooks.plugins:
            if getattr(plugin, "name", "") == "episodes":
                return plugin
        return None

    async def stop(self) -> None:
        """Stop plugins (pending work stays queued on disk) and close the store; idempotent."""
        if self.stopped:
            return
        self.stopped = True
        await self.service.hooks.stop()
        self.service.store.close()


async def start_runtime(config: Config, **plugin_options: Any) -> Runtime:
    """Open the store, register plugins and start them.

    Raises StorageError or EmbeddingModelError with a message for the user.
    ``plugin_options`` go to the episode plugin (tests pass a clock or an LLM client).
    """
    from .storage import open_store

    config.data_path.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder(config.embedding.model, config.embedding.cache_dir)
    store = open_store(config, embedder.model_name, embedder.dim)
    service = MemoryService(config, store, embedder)
    episodes = None
    if config.episodes.enabled:
        from .episodes.plugin import EpisodePlugin

        plugin = EpisodePlugin(config, **plugin_options)
        service.hooks.register(plugin)
        episodes = plugin.engine
    try:
        await service.hooks.start(service)
    except BaseException:
        store.close()
        raise
    return Runtime(config=config, service=service, api=TribalAPI(service, episodes))
