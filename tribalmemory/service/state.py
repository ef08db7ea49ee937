"""What every operation of the memory service shares: its parts (store, embedders, hooks,
the write lock) and the primitives over them (embedding, the guarded store write, reads by id,
the writes of plugin-owned memories)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from typing import Any

import numpy as np

from .. import validation as check
from ..config import Config
from ..embeddings import Embedder
from ..embeddings.background import BackgroundEmbedder
from ..embeddings.placement import RequestThreads
from ..errors import InsufficientStorage, NotFound
from ..models import Memory
from ..storage.base import MemoryStore
from ..storage.space import DiskSpace, is_disk_full
from .access import AccessStats
from .activity import RequestActivity
from .hooks import HookRegistry

log = logging.getLogger("tribalmemory.service")

BULK_PARTS = 4
"""At most this many parts of an import's page are embedded at once (one per CPU)."""
BULK_PART_TEXTS = 64
"""A part has at least this many texts: fewer are not worth a thread."""


def cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def write_estimate(text: str) -> int:
    """Disk a stored memory may take before the store compacts it (WAL entry, payload, vectors
    and indexes of the plain segment), generously: 4 bytes per character plus 16 KB."""
    return 4 * len(text) + 16384


class ServiceState:
    """The memory service's parts and the primitives its operations build on."""

    def __init__(
        self,
        config: Config,
        store: MemoryStore,
        embedder: Embedder,
        background: BackgroundEmbedder | None = None,
        space: DiskSpace | None = None,
        access: AccessStats | None = None,
        activity: RequestActivity | None = None,
        request_threads: RequestThreads | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        # requests' embeddings and store calls: kept off onnxruntime's CPUs (see placement)
        self.request_threads = request_threads or RequestThreads()
        self.background = background  # embeds plugins' texts at low priority, if given
        self.space = space  # refuses writes when the disk is nearly full, if given
        self.access = access  # access statistics (retrievability), if given
        self.hooks = HookRegistry()
        # requests first: plugins' background work (and ``background``) waits for them
        self.activity = activity or RequestActivity()
        self.started_at = time.monotonic()
        self._write_lock = asyncio.Lock()
        self.batches_in_flight = 0
        self.warm_up: dict[str, Any] | None = None  # what the daemon warmed up (see runtime)

    # -- writes -----------------------------------------------------------------------------

    def check_space(self, texts: list[str]) -> None:
        """Raise InsufficientStorage (507) unless storing ``texts`` leaves the disk reserve."""
        if self.space is not None:
            self.space.check(sum(write_estimate(t) for t in texts))

    async def _upsert(self, memories: list[Memory], vectors: np.ndarray) -> None:
        """The store's upsert; a full disk becomes InsufficientStorage (507)."""
        try:
            await self.request_threads.run(self.store.upsert, memories, vectors)
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            log.warning("store write failed, the disk is full: %s", exc)
            raise InsufficientStorage(
                f"the disk holding the store is full ({exc}); nothing was stored. Free disk "
                "space and retry"
            ) from None

    def write_lock(self) -> asyncio.Lock:
        """Held while a memory is written: holding it pauses every write (e.g. for a backup)."""
        return self._write_lock

    # -- embeddings -------------------------------------------------------------------------

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await self.request_threads.run(self.embedder.embed, texts)

    async def embed_bulk(self, texts: list[str]) -> np.ndarray:
        """Embed many texts (an import's page) with the single-threaded copy of the model
        (the background embedder's), at normal priority, in one part per CPU (at most
        :data:`BULK_PARTS`, each of at least :data:`BULK_PART_TEXTS` texts) embedded at once on
        threads of their own; without a background embedder, as :meth:`embed`.

        Not the request model: it splits each run between two threads that spin between its
        steps, and on a busy 2-CPU machine it embedded a page at half the speed for twice the
        CPU, leaving none to the episode engine placing the page before. Not the request
        threads either: they are kept off the CPU of onnxruntime's pinned thread
        (:mod:`..embeddings.placement`), so on two CPUs they share one, and an import's pages
        were embedded on one CPU while the other stayed mostly idle (docs/benchmarks.md)."""
        if self.background is None:
            return await self.embed(texts)
        model = self.background.model
        parts = min(BULK_PARTS, cpu_count(), len(texts) // BULK_PART_TEXTS)
        if parts <= 1:
            return await self.request_threads.run(lambda: model().embed(texts))
        bounds = [len(texts) * k // parts for k in range(parts + 1)]
        chunks = [texts[a:b] for a, b in itertools.pairwise(bounds)]
        done = await asyncio.gather(*(asyncio.to_thread(model().embed, c) for c in chunks))
        return np.concatenate(done)

    async def embed_background(self, texts: list[str]) -> np.ndarray:
        """Embed for background work: on the low-priority embedder when there is one."""
        if self.background is None:
            return await self.embed(texts)
        return await self.background.embed(texts)

    # -- internal writes for plugins (no hooks, no dedup) -----------------------------------

    async def put_internal(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        """Insert or replace memories written by a plugin (episode summaries, lessons), in one
        store write, with their ``vectors`` if the plugin embedded them already."""
        if not memories:
            return
        texts = [m.content for m in memories]
        self.check_space(texts)
        if vectors is None:
            vectors = await self.embed_background(texts)
        async with self._write_lock:
            self.check_space(texts)
            await self._upsert(memories, vectors)

    async def delete_internal(self, memory_ids: list[str]) -> None:
        async with self._write_lock:
            await asyncio.to_thread(self.store.delete, memory_ids)
        if self.access is not None:
            self.access.delete(memory_ids)

    # -- reads by id ------------------------------------------------------------------------

    async def get(self, memory_id: Any) -> Memory:
        mid = check.memory_id(memory_id)
        found = await asyncio.to_thread(self.store.get, [mid])
        if not found:
            raise NotFound(f"no memory with id {mid}")
        return found[0]

    async def get_many(self, memory_ids: list[str]) -> list[Memory]:
        return await asyncio.to_thread(self.store.get, memory_ids)

    async def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        return await asyncio.to_thread(self.store.get_vectors, memory_ids)

    def annotate(self, memories: list[Memory]) -> dict[str, dict[str, Any]]:
        """Extra per-memory fields from plugins (e.g. ``episode_id``) for JSON output."""
        return self.hooks.annotate(memories)
