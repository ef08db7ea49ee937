"""``Worker.drain`` waits for running jobs without keeping the event loop busy."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tribalmemory.episodes.store import EpisodeStore, Job
from tribalmemory.episodes.worker import Worker


async def no_tick() -> None:
    return None


def count_claims(worker: Worker) -> list[Job | None]:
    """Each look the worker's loops take at the job table (what it found)."""
    looked: list[Job | None] = []
    claim = worker._claim

    def counted() -> Job | None:
        looked.append(claim())
        return looked[-1]

    worker._claim = counted  # type: ignore[method-assign]
    return looked


async def test_drain_does_not_spin_while_a_due_job_waits_for_a_running_one(
    tmp_path: Path,
) -> None:
    """A due job cannot be taken while a job with its key runs. drain used to wake the idle
    loops meanwhile; each found nothing, said it was idle and was woken again: a busy loop for
    as long as the running job took (it starved the low-priority embedder a summary job waits
    for, and a detection benchmark ran many times slower)."""
    store = EpisodeStore(tmp_path / "episodes.db")
    started, release = asyncio.Event(), asyncio.Event()
    ran: list[str] = []

    async def run(job: Job) -> None:
        ran.append(job.kind)
        if job.kind == "summary":
            started.set()
            await release.wait()

    worker = Worker(store, time.time, {"summary": run, "split": run}, no_tick, concurrency=2)
    looked = count_claims(worker)
    with store.transaction() as db:
        store.jobs.enqueue(db, "summary", "ep-1", time.time())
    worker.start(scheduler_interval=None)
    try:
        await asyncio.wait_for(started.wait(), 30)  # the bound turns a hang into a failure
        with store.transaction() as db:  # due now, but its episode's summary is running
            store.jobs.enqueue(db, "split", "ep-1", time.time())
        before = len(looked)
        draining = asyncio.create_task(worker.drain(30))
        for _ in range(200):  # turns of the event loop, not time
            await asyncio.sleep(0)
        # the spinning drain made the idle loop look about once every two turns
        assert len(looked) - before <= 2
        release.set()
        assert await draining
        assert ran == ["summary", "split"]
    finally:
        release.set()
        await worker.stop()


async def test_a_job_waits_for_its_turn_before_it_runs(tmp_path: Path) -> None:
    """Requests go first: a claimed job starts only once the host gives background work a
    turn (in the daemon, a quiet moment or one turn a second under load)."""
    store = EpisodeStore(tmp_path / "episodes.db")
    asked, turn = asyncio.Event(), asyncio.Event()
    ran: list[str] = []

    async def run(job: Job) -> None:
        ran.append(job.key)

    async def background_turn() -> None:
        asked.set()
        await turn.wait()

    worker = Worker(store, time.time, {"summary": run}, no_tick, concurrency=1)
    worker.turn = background_turn
    with store.transaction() as db:
        store.jobs.enqueue(db, "summary", "ep-1", time.time())
    worker.start(scheduler_interval=None)
    try:
        await asyncio.wait_for(asked.wait(), 30)  # the bound turns a hang into a failure
        for _ in range(50):  # turns of the event loop, not time
            await asyncio.sleep(0)
        assert ran == []  # claimed, waiting for its turn
        turn.set()
        assert await worker.drain(30)
        assert ran == ["ep-1"]
    finally:
        turn.set()
        await worker.stop()
        store.close()


async def test_a_request_in_flight_does_not_make_each_debounced_job_wake_the_loops(
    tmp_path: Path,
) -> None:
    """Each remember leaves a detect job (due at once, decided by the request, its key in
    flight) and re-arms a debounced summary job. A loop used to sleep 5 s past the detect job
    and so was woken by every re-armed summary due sooner than that: a look at the job table
    on the event loop during every request."""
    store = EpisodeStore(tmp_path / "episodes.db")
    # Shorter than the 5 s a loop used to sleep past the detect job (so that each re-armed
    # summary woke it), long enough that no real wait ends during the test.
    debounce = 4.0

    async def run(job: Job) -> None:
        return None

    worker = Worker(store, time.time, {"summary": run, "detect": run}, no_tick, concurrency=1)
    looked = count_claims(worker)
    worker.inflight.add("m-1")  # a request is deciding memory m-1
    with store.transaction() as db:
        store.jobs.enqueue(db, "detect", "m-1", time.time())
        store.jobs.enqueue(db, "summary", "ep-1", time.time(), debounce)
    worker.start(scheduler_interval=None)
    try:
        for _ in range(1000):  # turns of the event loop until the loop sleeps
            if worker._looks:
                break
            await asyncio.sleep(0)
        assert worker._looks, "the loop never went to sleep"
        before = len(looked)
        for _ in range(5):  # five more memories join ep-1: its summary is re-armed each time
            with store.transaction() as db:
                store.jobs.enqueue(db, "summary", "ep-1", time.time(), debounce)
            worker.wake(time.time() + debounce)
            for _ in range(20):  # turns of the event loop, not time
                await asyncio.sleep(0)
        assert len(looked) == before
    finally:
        await worker.stop()
        store.close()
