"""What a plugin may do with the memory service: the narrow interface it receives at ``start``.

A plugin reads memories and their vectors, searches (and looks up a word), lists memories of a
source type, writes and deletes the memories it owns, and waits for a quiet moment before
CPU-heavy background work. It never reaches the store, the embedders or the request counter of
the service.

Plugin-owned memories are those of a source type clients cannot write (``EPISODE_SUMMARY``,
``LESSON``, ``DECISION``, ``FACT``); they are stored without the write-time hooks or
deduplication, and their text is embedded by the low-priority background embedder.
:mod:`.service_host` implements this interface over the memory service.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..models import Memory, RecallHit, SourceType


class PluginHost(Protocol):
    """The service as a plugin sees it."""

    async def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        """The memories that exist among ``memory_ids`` (missing ones are left out)."""
        ...

    async def get_vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors by memory id (missing ones are left out)."""
        ...

    async def memories_of_type(self, source_type: SourceType) -> list[Memory]:
        """Every memory of ``source_type``: a full read, for recovery, not for requests."""
        ...

    async def missing(self, memory_ids: list[str]) -> list[str]:
        """The ids among ``memory_ids`` that no stored memory has (cheap when none is)."""
        ...

    async def search(
        self,
        query: str,
        source_types: list[SourceType],
        limit: int,
        min_relevance: float,
        project: str | None,
        ids: list[str] | None = None,
    ) -> list[RecallHit]:
        """Hybrid search (as ``recall``) restricted to ``source_types`` and to what
        ``project`` sees (None: every project), and to ``ids`` when given, best first."""
        ...

    async def term_search(self, text: str, project: str | None, limit: int) -> list[Memory]:
        """Up to ``limit`` memories users or agents wrote in ``project`` (None: every
        project) that share a search term with ``text`` (a word, stemmed), best first: every
        one when fewer do. A lookup of words, checked word for word by the caller."""
        ...

    async def write_owned(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        """Insert or replace plugin-owned memories in one write: with ``vectors`` (one row
        each, from :meth:`embed` or :meth:`embed_background`) as given, else embedded in the
        background. If any of them is not plugin-owned, none is written."""
        ...

    async def delete_owned(self, memory_ids: list[str]) -> None:
        """Delete plugin-owned memories; other memories are refused."""
        ...

    async def background_turn(self) -> None:
        """Wait until background work may use the CPU (requests go first)."""
        ...

    def busy(self) -> bool:
        """A request is running, or one ended a moment ago: background work given a turn in a
        quiet moment stops at its next step."""
        ...

    def episodes_gone(self, episode_ids: list[str]) -> None:
        """These episodes no longer exist (merged away, emptied): drop what the host keeps
        about them (their access statistics)."""
        ...

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` with the store's model (on the request path: keep it short)."""
        ...

    async def embed_background(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts`` for background work: at low priority, so it may wait while
        requests run (never call it holding what a request waits for)."""
        ...
