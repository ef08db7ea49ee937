"""The episode worker stops even when a job swallows the cancel sent to it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tribalmemory.episodes.store import EpisodeStore, Job
from tribalmemory.episodes.worker import Worker


async def test_stop_ends_a_loop_whose_job_swallowed_the_cancel(tmp_path: Path) -> None:
    # Python 3.11's asyncio.wait_for loses a cancel that lands as its inner call completes;
    # this handler does the same on purpose, then returns as if nothing happened.
    store = EpisodeStore(tmp_path / "episodes.db")
    started = asyncio.Event()
    swallowed: list[str] = []

    async def swallow(job: Job) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            swallowed.append(job.key)

    async def tick() -> None:
        return None

    worker = Worker(store, time.time, {"detect": swallow}, tick, concurrency=1)
    with store.transaction() as db:
        store.jobs.enqueue(db, "detect", "m1", time.time())
    worker.start(scheduler_interval=None)
    tasks = list(worker._tasks)
    await started.wait()
    # Without the stop flag the loop goes on looking for jobs and stop() waits forever; the
    # bound only turns that hang into a failure (asyncio.wait does not cancel what it waits on).
    stopping = asyncio.create_task(worker.stop())
    await asyncio.wait({stopping}, timeout=30)
    try:
        assert stopping.done()
        assert swallowed == ["m1"]
        assert all(task.done() for task in tasks)
    finally:
        for task in [stopping, *tasks]:
            task.cancel()
