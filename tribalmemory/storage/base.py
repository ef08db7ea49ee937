"""The storage contract every backend (embedded Qdrant Edge, Qdrant server) fulfils."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import numpy as np

from ..models import Memory, SourceType


class StorageError(RuntimeError):
    """The store cannot be opened or used; the message says what to do."""


class StoreLockedError(StorageError):
    """Another process holds the embedded store."""


class ModelMismatchError(StorageError):
    """The store was written by another embedding model or dimension."""


@dataclass
class MemoryFilter:
    """Conditions combined with AND; an empty filter matches every memory."""

    ids: list[str] | None = None
    tags_any: list[str] | None = None
    source_types: list[SourceType] | None = None
    exclude_source_types: list[SourceType] | None = None
    after: datetime | None = None        # created_at >= after
    before: datetime | None = None       # created_at < before
    metadata_equals: dict[str, str] = field(default_factory=dict)  # e.g. {"episode_id": "ep-1"}


@dataclass
class SearchHit:
    """A search result: fused rank score plus the dense cosine to the query (−1..1)."""

    memory: Memory
    score: float
    cosine: float


@dataclass
class StoreInfo:
    model_name: str
    dim: int
    backend: str
    location: str


class MemoryStore(Protocol):
    """Memories with a dense vector (cosine) and a BM25 sparse vector (IDF modifier)."""

    info: StoreInfo

    def upsert(self, memories: list[Memory], vectors: np.ndarray) -> None:
        """Insert or replace memories (by id) with their dense vectors; durable on return."""

    def get(self, ids: list[str]) -> list[Memory]:
        """The memories with these ids, in the given order; unknown ids are left out."""

    def get_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """Dense vectors by id; unknown ids are left out."""

    def delete(self, ids: list[str]) -> None:
        """Remove memories; unknown ids are ignored."""

    def search(self, text: str, vector: np.ndarray, limit: int,
               where: MemoryFilter | None = None) -> list[SearchHit]:
        """Hybrid search: dense + BM25 fused with reciprocal rank fusion, best first."""

    def dense_search(self, vector: np.ndarray, limit: int,
                     where: MemoryFilter | None = None) -> list[SearchHit]:
        """Nearest neighbours by cosine only (score == cosine), best first."""

    def count(self, where: MemoryFilter | None = None) -> int: ...

    def scroll(self, where: MemoryFilter | None = None, batch_size: int = 256
               ) -> Iterator[Memory]:
        """Every matching memory, in no particular order."""

    def close(self) -> None: ...
