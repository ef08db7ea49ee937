"""What the service reports about itself: its counts (stats), its projects and its health."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..models import SourceType
from ..storage.base import MemoryFilter
from .remembering import MAX_CONCURRENT_BATCHES
from .state import ServiceState


class StatusOperations(ServiceState):
    """stats, projects and health."""

    async def projects(self) -> list[dict[str, Any]]:
        """Every project that holds memories: how many, how many of them are shared, and
        its newest memory's ``created_at`` (episode counts come from the episode engine)."""

        def read() -> list[dict[str, Any]]:
            out = []
            for name, count in self.store.project_counts().items():
                own = MemoryFilter(project=name, include_shared=False)
                newest = self.store.newest(own, 1)
                shared = MemoryFilter(project=name, include_shared=False, shared_only=True)
                out.append(
                    {
                        "name": name,
                        "memories": count,
                        "shared_memories": self.store.count(shared),
                        "last_activity": newest[0].created_at if newest else None,
                    }
                )
            return out

        return await asyncio.to_thread(read)

    async def stats(self) -> dict[str, Any]:
        def count_all() -> dict[str, Any]:
            by_type = {
                st.json_name: self.store.count(MemoryFilter(source_types=[st])) for st in SourceType
            }
            return {"total_memories": sum(by_type.values()), "by_source_type": by_type}

        data = await asyncio.to_thread(count_all)
        data["embedding_model"] = self.embedder.model_name
        data.update(self.hooks.stats())
        return data

    def health(self) -> dict[str, Any]:
        from .. import __version__

        info = self.store.info
        data: dict[str, Any] = {
            "status": "ok",
            "version": __version__,
            "uptime_seconds": round(time.monotonic() - self.started_at, 1),
            "store": {"backend": info.backend, "location": info.location},
            "embedding": {
                "model": info.model_name,
                "dim": info.dim,
                "request_cpus": self.request_threads.status(),
            },
            "batches": {"in_flight": self.batches_in_flight, "max": MAX_CONCURRENT_BATCHES},
        }
        if self.space is not None:
            data["disk"] = self.space.status()
        if self.background is not None:
            data["background_embeddings"] = self.background.status()
        if self.warm_up is not None:
            data["warm_up"] = self.warm_up
        if self.access is not None:
            data["access"] = self.access.health()
        data.update(self.hooks.health())
        return data
