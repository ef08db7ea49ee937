"""Assemble a running Tribal Memory from a config: embedder, store, service, plugins, API."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .api import TribalAPI
from .config import Config
from .datafolder import make_private
from .embeddings import load_embedder
from .embeddings.background import BackgroundEmbedder
from .embeddings.placement import RequestThreads
from .logs import REPORTED
from .service import MemoryService, ServiceHost
from .service.access import ACCESS_FILE, AccessStats
from .service.activity import RequestActivity
from .service.maintenance import StoreMaintenance
from .storage import integrity
from .storage.base import StorageError
from .storage.space import MB, DiskSpace, check_room_to_start

log = logging.getLogger("tribalmemory")


@dataclass
class Runtime:
    config: Config
    service: MemoryService
    api: TribalAPI
    stopped: bool = False
    maintenance: StoreMaintenance | None = None
    stop_requested: Callable[[], bool] = field(default=lambda: False)
    """Whether the daemon was asked to stop (SIGTERM): long requests (an import) end at their
    next page with 503 instead of being cancelled. The daemon sets it (``serve``)."""

    @property
    def episodes(self) -> Any:
        """The episode plugin, or None when episodes are disabled."""
        return self.service.hooks.get("episodes")

    async def stop(self) -> None:
        """Stop plugins (pending work stays queued on disk) and close the store; idempotent."""
        if self.stopped:
            return
        self.stopped = True
        if self.maintenance is not None:
            await self.maintenance.stop()
        await self.service.hooks.stop()
        if self.service.access is not None:
            self.service.access.close()
        if self.service.background is not None:
            self.service.background.close()
        self.service.request_threads.close()
        self.service.store.close()


def disk_space(config: Config) -> DiskSpace:
    """The free-space guard of the data folder and, for the embedded store, the store folder."""
    paths = [config.data_path]
    if not config.storage.qdrant_url:
        paths.append(config.store_path)
    return DiskSpace(paths, config.storage.min_free_mb * MB)


async def start_runtime(
    config: Config, *, plugins: Sequence[object] = (), **plugin_options: Any
) -> Runtime:
    """Check the data files, open the store, register plugins and start them.

    ``plugins`` are registered (and refused if they do not fit service/hookspecs.py) before
    the episode plugin opens anything; pluggy calls them after it.
    ``plugin_options`` go to the episode plugin (tests pass a clock or LLM client options).
    Raises StorageError (DamagedDataError for a damaged or missing data file: nothing is
    deleted then; DiskFullError when less than storage.min_free_mb is free), EmbeddingModelError
    or PluginError with a message for the user; a StorageError is logged too.
    """
    try:
        return await _start(config, plugins, plugin_options)
    except StorageError as exc:  # the CLI says it too: its stderr does not repeat the record
        log.error("cannot start: %s", exc, extra={REPORTED: True})
        raise


async def _start(
    config: Config, plugins: Sequence[object], plugin_options: dict[str, Any]
) -> Runtime:
    from .storage import open_store

    data = make_private(config.data_path)  # 0700; tightens what an older version left readable
    space = disk_space(config)
    embedded = not config.storage.qdrant_url
    # the store maps its files: on a full disk it would be killed (SIGBUS) with no message
    check_room_to_start(space, config.store_path if embedded else None)
    manifest = integrity.read_manifest(data)
    if embedded:
        integrity.check_store_present(manifest, data, config.store_path)
    if config.episodes.enabled:
        integrity.check_sqlite_files(data, manifest)
    embedder = load_embedder(config.embedding.model, config.embedding.cache_dir)
    store = open_store(config, embedder.model_name, embedder.dim)
    # Plugins' texts (episode summaries) are embedded at low priority (loaded on first use),
    # or at normal priority by the request embedder when other processes keep the CPU busy.
    activity = RequestActivity()
    threads = RequestThreads()  # for requests' embeddings and store calls (see placement)
    background = BackgroundEmbedder(
        embedder.model_name,
        config.embedding.cache_dir,
        fallback=lambda texts: threads.run(embedder.embed, texts),
        busy=activity.busy,
    )
    access = AccessStats(data / ACCESS_FILE)
    service = MemoryService(config, store, embedder, background, space, access, activity, threads)
    episodes = None
    try:
        for extra in plugins:
            service.hooks.register(extra)
        if config.episodes.enabled:
            from .episodes.plugin import EpisodePlugin

            plugin = EpisodePlugin(config, **plugin_options)
            service.hooks.register(plugin)
            episodes = plugin.engine
        await service.hooks.start(ServiceHost(service))
        await service.finish_corrections()
    except BaseException:
        background.close()
        threads.close()
        access.close()
        store.close()
        raise
    try:  # from now on a missing or emptied file is damage, not a first start
        integrity.record_manifest(
            data, integrity.present_files(data, config.store_path if embedded else None)
        )
    except OSError as exc:
        log.warning("could not update %s: %s", integrity.MANIFEST, exc)
    maintenance = None
    if StoreMaintenance.supported(store):  # the embedded store: seal new memories when idle
        maintenance = StoreMaintenance(store, space=service.space)
        maintenance.start()
    return Runtime(
        config=config, service=service, api=TribalAPI(service, episodes), maintenance=maintenance
    )
