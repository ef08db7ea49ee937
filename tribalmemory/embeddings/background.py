"""Embeddings for background work: on a low-priority thread, at normal priority if starved.

Requests embed with every core (onnxruntime's default). Background work (episode summaries)
embeds long texts; sharing the cores with a request's embedding, it can double that request's
latency. So background texts go first to a second, single-threaded copy of the model that runs
on one thread of its own, which Linux runs only when the CPU is otherwise idle (``SCHED_IDLE``,
for that thread only): the operating system runs requests' embeddings first.

On a machine kept busy by other processes that thread may get no CPU for minutes (measured:
6 short embeddings took 29 s at ``SCHED_IDLE`` and 19 s at nice 19 with two busy processes on
the two cores and other load; 0.3 s at normal priority). An unprivileged thread cannot raise
its priority again, so instead a text that waited :data:`DEADLINE_SECONDS` is embedded by the
``fallback`` (the request embedder, at normal priority) and the low-priority attempt is dropped
(cancelled if it had not started, ignored if it had).

The wait that counts toward the deadline is the time the daemon's own requests left the CPU
free (``busy``, the service's request activity): when our requests keep the cores busy,
requests go first and the text waits for them, up to :data:`MAX_WAIT_SECONDS` in all. Only
other processes' load makes a text run at normal priority after the deadline. Background work
therefore always progresses: each embedding waits at most ``max_wait`` before it runs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .embedder import Embedder, load_embedder

log = logging.getLogger("tribalmemory.embeddings")

DEADLINE_SECONDS = 2.0  # of CPU left free by our requests, before the fallback runs it
MAX_WAIT_SECONDS = 30.0  # in all, however busy our requests keep the CPU
LOOK_SECONDS = 0.05  # how often a waiting text looks whether our requests are running
Fallback = Callable[[list[str]], Awaitable[np.ndarray]]


def lower_thread_priority() -> str:
    """Run the calling thread only when the CPU is otherwise idle (Linux ``SCHED_IDLE``;
    nice +19 if that is refused). Linux schedules threads one by one, so this changes the
    calling thread only; other systems keep normal priority. Returns the priority set."""
    if not sys.platform.startswith("linux"):
        return "normal"
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        return "idle"
    except (OSError, AttributeError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, tid, 19)
    except OSError as exc:
        log.info("background embeddings keep normal priority: %s", exc)
        return "normal"
    return "nice 19"


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve a dropped attempt's outcome so that asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()


class BackgroundEmbedder:
    """Single-threaded copy of ``model_name``, loaded on first use, on its own thread; texts
    that wait longer than ``deadline`` while ``busy()`` is false (our requests are not
    running), or ``max_wait`` in all, go to ``fallback`` instead (when one is given)."""

    def __init__(
        self,
        model_name: str,
        cache_dir: str | None = None,
        fallback: Fallback | None = None,
        deadline: float = DEADLINE_SECONDS,
        busy: Callable[[], bool] | None = None,
        max_wait: float = MAX_WAIT_SECONDS,
    ) -> None:
        self.model_name = model_name
        self.cache_dir = cache_dir
        self.fallback = fallback
        self.deadline = deadline
        self.busy = busy or (lambda: False)  # without it, all waiting counts
        self.max_wait = max_wait
        self.priority = "not started"
        self.loaded = False  # the model was loaded (at the daemon's warm-up, or first use)
        self.calls = 0
        self.fallbacks = 0  # calls that ran at normal priority after the deadline
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="tm-background", initializer=self._lower
        )

    def _lower(self) -> None:
        self.priority = lower_thread_priority()

    def model(self) -> Embedder:
        """The single-threaded copy of the model, loaded on first use (once per process). It
        also embeds an import's pages (:meth:`MemoryService.embed_bulk`), at normal priority
        on a request thread: one session run at a time is thread-safe in onnxruntime."""
        model = load_embedder(self.model_name, self.cache_dir, threads=1)
        self.loaded = True
        return model

    def warm_up(self) -> None:
        """Load the model and run it once, on the calling thread at normal priority (the
        daemon does it before it answers requests): loaded on the low-priority thread, the
        first summaries' wait for it stalled the requests beside it (docs/benchmarks.md)."""
        self.model().embed(["warm-up"])

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.model().embed(texts)

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        future = self._executor.submit(self._embed, texts)
        attempt = asyncio.wrap_future(future)
        started = asyncio.get_running_loop().time()
        if self.fallback is None or await self._finished_in_time(attempt, started):
            return await attempt
        future.cancel()  # not started: dropped; already running: finishes, result ignored
        attempt.add_done_callback(_consume)
        self.fallbacks += 1
        if self.fallbacks == 1 or self.fallbacks % 100 == 0:
            log.info(
                "background embedding found no idle core in %.1f s (the machine is busy): "
                "running it at normal priority (%d times so far)",
                asyncio.get_running_loop().time() - started,
                self.fallbacks,
            )
        return await self.fallback(texts)

    async def _finished_in_time(self, attempt: asyncio.Future[np.ndarray], started: float) -> bool:
        """Wait for ``attempt`` until the deadline passes. Only the looks during which
        ``busy()`` is false count toward it, each at most ``LOOK_SECONDS`` (so that a daemon
        stopped and resumed does not count its stop); ``max_wait`` bounds the whole wait, counted
        from ``started``."""
        loop = asyncio.get_running_loop()
        free = 0.0
        while True:
            look = min(LOOK_SECONDS, self.deadline - free)
            done, _ = await asyncio.wait({attempt}, timeout=look)
            if done:
                return True
            if not self.busy():
                free += look
            if free >= self.deadline or loop.time() - started >= self.max_wait:
                return False

    def status(self) -> dict[str, Any]:
        """For /v1/health: the thread's priority and how often the deadline passed."""
        return {
            "priority": self.priority,
            "model": "loaded" if self.loaded else "not loaded",
            "deadline_seconds": self.deadline,
            "max_wait_seconds": self.max_wait,
            "calls": self.calls,
            "ran_at_normal_priority": self.fallbacks,
        }

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
