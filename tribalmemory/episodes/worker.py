"""Runs the durable episode jobs (detect, classify, summary, link) and the lifecycle scheduler.

Jobs live in SQLite, so work pending at a crash resumes on restart. A job is deleted only after
its effect is committed; a job re-armed while it ran (a new memory joined during a summary)
runs again. Jobs with the same key never run at once. Requests go first: a claimed job waits
for its turn (``turn``, the host's ``background_turn``: a quiet moment, or under sustained load
one turn a second) before it starts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress

from .store import EpisodeStore, Job

log = logging.getLogger("tribalmemory.episodes")

MAX_BACKOFF = 300.0
DRAIN_POLL = 0.05


class Worker:
    """A few asyncio tasks draining the job table, plus the periodic lifecycle tick."""

    def __init__(
        self,
        store: EpisodeStore,
        clock: Callable[[], float],
        handlers: Mapping[str, Callable[[Job], Awaitable[None]]],
        tick: Callable[[], Awaitable[None]],
        concurrency: int = 3,
        flushable: tuple[str, ...] = ("classify",),
    ) -> None:
        self.store = store
        self.clock = clock
        self.handlers = handlers  # job kind -> what runs it
        self.tick = tick  # the lifecycle scheduler's periodic turn
        self.concurrency = concurrency
        self.flushable = flushable  # job kinds that wait for company: drain runs them at once
        self.inflight: set[str] = set()
        self.turn: Callable[[], Awaitable[None]] | None = None  # set by the plugin at start
        self._event = asyncio.Event()
        self._idle = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._failures: dict[int, str] = {}
        self._looks: dict[int, float] = {}  # sleeping loop -> when it looks again (engine clock)
        self._stopping = False

    def wake(self, due: float | None = None) -> None:
        """Make sleeping loops look for work now. With ``due`` (when a new job falls due), a
        loop that will look by then anyway is left asleep: no wake-up per debounced job."""
        if due is not None and self._looks and due >= min(self._looks.values()):
            return
        self._event.set()

    def start(self, scheduler_interval: float | None) -> None:
        for index in range(self.concurrency):
            self._tasks.append(asyncio.create_task(self._loop(), name=f"episode-worker-{index}"))
        if scheduler_interval:
            self._tasks.append(
                asyncio.create_task(self._schedule(scheduler_interval), name="episode-scheduler")
            )

    async def stop(self) -> None:
        """Stop every loop. On Python 3.11 ``asyncio.wait_for`` drops a cancel that lands as its
        inner call completes (a job's LLM call, say), so a loop also ends by itself once it sees
        the flag, and the cancel is sent again each second until every task is done."""
        self._stopping = True
        self._event.set()
        pending = set(self._tasks)
        while pending:
            for task in pending:
                task.cancel()
            done, pending = await asyncio.wait(pending, timeout=1.0)
            for task in done:
                with suppress(asyncio.CancelledError, Exception):
                    task.result()
        self._tasks.clear()

    def _claim(self) -> Job | None:
        jobs = self.store.jobs.due(self.clock(), self.inflight, limit=1)
        if not jobs:
            return None
        self.inflight.add(jobs[0].key)
        return jobs[0]

    async def _loop(self) -> None:
        while not self._stopping:
            job = self._claim()
            if job is None:
                self._idle.set()
                self._event.clear()
                await self._wait_for_work()
                continue
            self._idle.clear()
            try:
                if self.turn is not None:
                    await self.turn()  # requests first
                await self._run(job)
            finally:
                self.inflight.discard(job.key)
                self._event.set()

    async def _wait_for_work(self) -> None:
        """Sleep until woken (new job, job finished) or the next job falls due (≤ 5 s). Jobs of
        keys in flight are left out: each request's detect job, due at once but decided by the
        request, used to keep the loops' wake-up 5 s away, so that every debounced summary job
        queued after it woke them all for nothing."""
        due = self.store.jobs.next_due(self.inflight)
        wait = 5.0
        if due is not None and due > self.clock():  # else: due but busy; wait for wake
            wait = min(wait, due - self.clock())
        wait = max(wait, 0.01)
        key = id(asyncio.current_task())
        self._looks[key] = self.clock() + wait
        try:
            with suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._event.wait()
        finally:
            del self._looks[key]

    async def _run(self, job: Job) -> None:
        try:
            handler = self.handlers.get(job.kind)
            if handler is None:
                log.warning("episode job %s %s of unknown kind: dropped", job.kind, job.key)
            else:
                await handler(job)
            with self.store.transaction() as db:
                self.store.finish_job(db, job)
            self._failures.pop(job.id, None)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            delay = min(MAX_BACKOFF, 2.0 ** min(job.attempts + 1, 9))
            reason = f"{type(exc).__name__}: {exc}"
            if self._failures.get(job.id) != reason:
                log.warning(
                    "episode job %s %s failed (%s); retrying in %.0f s",
                    job.kind,
                    job.key,
                    reason,
                    delay,
                    exc_info=True,
                )
                self._failures[job.id] = reason
            self.store.jobs.retry(job, self.clock() + delay)

    async def _schedule(self, interval: float) -> None:
        while not self._stopping:
            await asyncio.sleep(interval)
            try:
                await self.tick()
            except Exception as exc:
                log.warning("episode lifecycle tick failed: %s", exc, exc_info=True)

    def flush(self) -> None:
        """Jobs that wait only to be batched (``flushable``) fall due now (and the loops are
        woken if any did)."""
        with self.store.transaction() as db:
            made = sum(self.store.jobs.make_due(db, kind, self.clock()) for kind in self.flushable)
        if made:
            self.wake()

    async def drain(self, timeout: float = 60.0, due_only: bool = False) -> bool:
        """Wait until no job is queued or running (for tests and benchmarks). Jobs that wait
        only to be batched (``flushable``) are made due at once, those queued meanwhile too (a
        confirmation). ``due_only``: wait only for the jobs due now by the engine's clock,
        flush nothing (a replay in the stream's own time lets the work of the time between
        two memories happen). Jobs due later (debounced) are waited for by polling every
        :data:`DRAIN_POLL` seconds, until ``timeout``."""
        horizon = 0.0 if due_only else 3600 * 24 * 365
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not due_only:
                self.flush()
            if (
                not self.store.jobs.due(self.clock() + horizon, set(), limit=1)
                and not self.inflight
            ):
                return True
            takeable = self.store.jobs.due(self.clock(), self.inflight, limit=1)
            if not self.inflight and not takeable:
                await asyncio.sleep(DRAIN_POLL)  # only jobs due later: nothing to wake for
                continue
            if takeable:
                self._event.set()  # work a loop can take now
            # else every due job waits for a running one with its key: the loop that runs it
            # wakes the others when it is done (poking them meanwhile was a busy loop that
            # starved the low-priority embedder a summary job waits for)
            self._idle.clear()
            with suppress(TimeoutError):
                async with asyncio.timeout(max(0.01, min(1.0, deadline - time.monotonic()))):
                    await self._idle.wait()
        return False
