"""Rebuild every vector of a store with another embedding model, keeping every payload.

The new vectors go into a new shard (embedded) or collection (server) beside the live one;
the switch is one atomic step at the end (store.json rename / alias swap), so an interrupted
run leaves the store as it was. Dense vectors embed each memory's ``content``; BM25 vectors
are recomputed too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Protocol

import numpy as np

from ..config import Config
from ..models import Memory
from .base import MemoryStore
from .factory import open_store

Progress = Callable[[int, int], None]
BATCH = 256


class TextEmbedder(Protocol):
    model_name: str
    dim: int

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray: ...


def reembed(config: Config, embedder: TextEmbedder, progress: Progress | None = None) -> int:
    """Re-embed the configured store with ``embedder``; returns how many memories it holds.

    ``progress(done, total)`` is called after each batch. The store must not be open
    elsewhere (stop the daemon first: StoreLockedError otherwise).
    """
    store = open_store(config, embedder.model_name, embedder.dim, check_model=False)
    return reembed_store(store, embedder, progress)


def reembed_store(
    store: MemoryStore, embedder: TextEmbedder, progress: Progress | None = None
) -> int:
    """Re-embed an open store (opened without the model check); closes it."""
    try:
        total = store.count()
        target = store.begin_rebuild(embedder.model_name, embedder.dim)
    except BaseException:
        store.close()
        raise
    done = 0
    try:
        for batch in _batches(store.scroll(batch_size=BATCH), BATCH):
            target.upsert(batch, embedder.embed([m.content for m in batch]))
            done += len(batch)
            if progress is not None:
                progress(done, max(total, done))
    except BaseException:
        try:
            store.abort_rebuild(target)
        finally:
            store.close()
        raise
    store.finish_rebuild(target)
    return done


def _batches(items: Iterable[Memory], size: int) -> Iterator[list[Memory]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
