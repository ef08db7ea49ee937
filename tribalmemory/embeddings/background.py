"""Embeddings for background work, on one low-priority thread and one core.

Requests embed with every core (onnxruntime's default). Background work (episode summaries)
embeds long texts; sharing the cores with a request's embedding, it can double that request's
latency. So background texts go to a second, single-threaded copy of the model that runs on
one thread of its own, which Linux runs only when the CPU is otherwise idle (``SCHED_IDLE``,
for that thread only): the operating system runs requests' embeddings first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .embedder import Embedder, load_embedder

log = logging.getLogger("tribalmemory.embeddings")


def lower_thread_priority() -> bool:
    """Run the calling thread only when the CPU is otherwise idle (Linux ``SCHED_IDLE``;
    nice +19 if that is refused). Linux schedules threads one by one, so this changes the
    calling thread only; other systems keep normal priority."""
    if not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        return True
    except (OSError, AttributeError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, tid, 19)
    except OSError as exc:
        log.info("background embeddings keep normal priority: %s", exc)
        return False
    return True


class BackgroundEmbedder:
    """Single-threaded copy of ``model_name``, loaded on first use, on its own thread."""

    def __init__(self, model_name: str, cache_dir: str | None = None) -> None:
        self.model_name = model_name
        self.cache_dir = cache_dir
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="tm-background", initializer=lower_thread_priority
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        model: Embedder = load_embedder(self.model_name, self.cache_dir, threads=1)
        return model.embed(texts)

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._embed, texts)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
