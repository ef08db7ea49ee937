"""The episode database: membership invariants, counts, the durable job queue, filters."""

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

import pytest

from tribalmemory.episodes.store import EpisodeRow, EpisodeStore, new_episode_id

T = TypeVar("T")


def row(episode_id: str, last: float = 0.0, status: str = "active", **kw) -> EpisodeRow:
    data = dict(
        id=episode_id,
        title="t",
        title_source="keyword",
        summary="",
        summary_kind="extractive",
        summary_status="current",
        summary_memory_id=None,
        llm_summary="",
        llm_summary_mark=None,
        needs_full=False,
        since_regen=0,
        status=status,
        created_at=0.0,
        updated_at=0.0,
        closed_at=None,
        last_activity=last,
        parent_episode_id=None,
        metadata={},
    )
    data.update(kw)
    return EpisodeRow(**data)


@pytest.fixture
def store(tmp_path):
    s = EpisodeStore(tmp_path / "episodes.sqlite3")
    yield s
    s.close()


def test_episode_ids_are_distinct_and_shaped():
    ids = {new_episode_id() for _ in range(100)}
    assert len(ids) == 100 and all(i.startswith("ep-") and len(i) == 19 for i in ids)


def test_a_memory_is_in_at_most_one_episode_and_moves(store):
    with store.transaction() as db:
        store.episodes.insert(db, row("ep-a"))
        store.episodes.insert(db, row("ep-b"))
        assert store.add_member(db, "ep-a", "m1", 10.0, 1.0) is None
        assert store.add_member(db, "ep-a", "m1", 10.0, 1.0) is None  # twice: no-op
        assert store.add_member(db, "ep-b", "m1", 10.0, 2.0) == "ep-a"  # moved
    assert store.memberships.episode_of("m1") == "ep-b"
    assert store.episodes.get("ep-a").memory_count == 0
    assert store.episodes.get("ep-b").memory_count == 1
    assert store.episodes.get("ep-a").needs_full is True


def test_memory_count_follows_membership_and_order_is_chronological(store):
    with store.transaction() as db:
        store.episodes.insert(db, row("ep-a"))
        for mid, t in (("m3", 30.0), ("m1", 10.0), ("m2", 20.0)):
            store.add_member(db, "ep-a", mid, t, 1.0)
    episode = store.episodes.get("ep-a")
    assert episode.memory_count == 3
    assert episode.since_regen == 3
    assert episode.last_activity == 30.0 and episode.first_activity == 10.0
    assert store.memberships.member_ids("ep-a") == ["m1", "m2", "m3"]
    with store.transaction() as db:
        assert store.remove_member(db, "ep-a", "m2", 2.0)
        assert not store.remove_member(db, "ep-a", "m2", 2.0)
    assert store.episodes.get("ep-a").memory_count == 2


def test_failed_transaction_leaves_nothing(store):
    with pytest.raises(RuntimeError), store.transaction() as db:
        store.episodes.insert(db, row("ep-a"))
        store.add_member(db, "ep-a", "m1", 1.0, 1.0)
        raise RuntimeError("crash")
    assert store.episodes.get("ep-a") is None
    assert store.memberships.episode_of("m1") is None


def test_jobs_coalesce_and_rearm(store):
    with store.transaction() as db:
        store.jobs.enqueue(db, "summary", "ep-a", now=100.0, delay=5.0)
        store.jobs.enqueue(db, "summary", "ep-a", now=101.0, delay=5.0)
    assert store.jobs.due(104.0, set()) == []
    (job,) = store.jobs.due(105.0, set())
    assert job.gen == 1  # the second enqueue was absorbed
    with store.transaction() as db:  # a memory joins while the job runs: re-armed
        store.jobs.enqueue(db, "summary", "ep-a", now=106.0)
    with store.transaction() as db:
        store.finish_job(db, job)
    assert len(store.jobs.due(200.0, set())) == 1  # still there: it must run again
    (again,) = store.jobs.due(200.0, set())
    with store.transaction() as db:
        store.finish_job(db, again)
    assert store.jobs.due(200.0, set()) == []


def test_due_jobs_skip_busy_keys_and_report_queue_stats(store):
    with store.transaction() as db:
        store.jobs.enqueue(db, "summary", "ep-a", now=10.0)
        store.jobs.enqueue(db, "classify", "m1", now=12.0)
    assert [j.key for j in store.jobs.due(20.0, {"ep-a"})] == ["m1"]
    stats = store.jobs.stats(20.0)
    assert stats == {"queue_depth": 2, "oldest_pending_age_seconds": 10.0}


def test_a_due_job_behind_several_of_a_busy_key_is_taken(store):
    """A running episode may have a job of each kind queued behind it (merge, split, link):
    the due job after them is still found. Reading one row more than the keys left out
    missed it, and the worker's idle loops slept while it waited."""
    with store.transaction() as db:
        for kind in ("summary", "merge", "split", "link"):
            store.jobs.enqueue(db, kind, "ep-a", now=10.0)
        store.jobs.enqueue(db, "classify", "m1", now=11.0)
        store.jobs.enqueue(db, "classify", "m2", now=12.0)
    assert [j.key for j in store.jobs.due(20.0, {"ep-a"}, limit=1)] == ["m1"]
    assert [j.key for j in store.jobs.due(20.0, {"ep-a"})] == ["m1", "m2"]
    assert store.jobs.next_due({"ep-a"}) == 11.0


def test_jobs_survive_reopen(tmp_path):
    first = EpisodeStore(tmp_path / "e.sqlite3")
    with first.transaction() as db:
        first.jobs.enqueue(db, "detect", "m1", now=1.0)
    first.close()
    second = EpisodeStore(tmp_path / "e.sqlite3")
    assert [j.key for j in second.jobs.due(2.0, set())] == ["m1"]
    second.close()


def test_list_filters_on_metadata(store):
    with store.transaction() as db:
        store.episodes.insert(
            db,
            row(
                "ep-a",
                1.0,
                metadata={"outcome": "success", "tags": ["auth"], "participants": ["codex"]},
            ),
        )
        store.episodes.insert(
            db, row("ep-b", 2.0, status="closed", metadata={"outcome": "failure", "tags": ["db"]})
        )
    assert [r.id for r in store.episodes.find()] == ["ep-b", "ep-a"]
    assert [r.id for r in store.episodes.find("closed")] == ["ep-b"]
    assert [r.id for r in store.episodes.find(filters={"outcome": "success"})] == ["ep-a"]
    assert [r.id for r in store.episodes.find(filters={"tag": "db"})] == ["ep-b"]
    assert [r.id for r in store.episodes.find(filters={"participant": "codex"})] == ["ep-a"]
    assert [r.id for r in store.episodes.find(limit=1, offset=1)] == ["ep-a"]


def test_delete_episode_unassigns_members_and_unlinks_children(store):
    with store.transaction() as db:
        store.episodes.insert(db, row("ep-a"))
        store.episodes.insert(db, row("ep-b", parent_episode_id="ep-a"))
        store.add_member(db, "ep-a", "m1", 1.0, 1.0)
        store.jobs.enqueue(db, "summary", "ep-a", now=1.0)
        store.jobs.enqueue(db, "link", "ep-a", now=1.0)
        assert store.delete_episode(db, "ep-a") == ["m1"]
    assert store.episodes.get("ep-a") is None
    assert store.memberships.episode_of("m1") is None
    assert store.detections.get("m1")["state"] == "standalone"
    assert store.episodes.get("ep-b").parent_episode_id is None
    assert store.jobs.due(10.0, set()) == []


def test_chain_candidates_are_closed_episodes_by_last_memory_time(store):
    with store.transaction() as db:
        store.episodes.insert(db, row("ep-old", last=5.0, status="closed", closed_at=1000.0))
        store.episodes.insert(db, row("ep-a", last=50.0, status="closed", closed_at=10.0))
        store.episodes.insert(db, row("ep-b", last=70.0, status="archived", closed_at=80.0))
        store.episodes.insert(db, row("ep-late", last=95.0, status="closed", closed_at=96.0))
        store.episodes.insert(db, row("ep-open", last=60.0))
    # last memory from 50 to 90 (memory time); when they were closed (wall clock) is no matter
    assert store.episodes.chain_candidates(50.0, 90.0) == ["ep-b", "ep-a"]
    assert store.episodes.chain_candidates(50.0, 90.0, limit=1) == ["ep-b"]


def test_active_last_added_is_the_newest_join_of_each_active_episode(store):
    with store.transaction() as db:
        store.episodes.insert(db, row("ep-a", last=5.0, created_at=100.0))
        store.episodes.insert(db, row("ep-empty", last=5.0, created_at=150.0))
        store.episodes.insert(db, row("ep-shut", last=5.0, status="closed", closed_at=9.0))
        store.add_member(db, "ep-a", "m1", 1.0, now=200.0)
        store.add_member(db, "ep-a", "m2", 2.0, now=300.0)
        store.add_member(db, "ep-shut", "m3", 3.0, now=400.0)
    assert store.episodes.active_last_added() == {"ep-a": 300.0, "ep-empty": 150.0}


def vm_steps(store: EpisodeStore, call: Callable[[], T]) -> tuple[T, int]:
    """What ``call()`` returns, and how many SQLite VM instructions it ran."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    store.db.set_progress_handler(tick, 1)  # one call per SQLite VM instruction
    try:
        found = call()
    finally:
        store.db.set_progress_handler(None, 1)
    return found, count[0]


def counted_rows(store: EpisodeStore) -> dict[str, int]:
    rows = store.db.execute("SELECT kind, COUNT(*) FROM jobs GROUP BY kind")
    return {kind: n for kind, n in rows}


def test_job_counts_follow_every_write_of_the_queue(store):
    """``jobs.count`` reads ``job_counts``, kept by triggers: it must equal the rows after
    new jobs, coalesced ones, deletions of every kind and a rolled-back transaction."""
    with store.transaction() as db:
        for i in range(5):
            store.jobs.enqueue(db, "classify", f"m{i}", now=1.0, delay=5.0)
        store.jobs.enqueue(db, "classify", "m1", now=2.0)  # coalesced: no new row
        store.jobs.enqueue(db, "summary", "ep-a", now=1.0)
        store.jobs.enqueue(db, "link", "ep-a", now=1.0)
    assert (store.jobs.count("classify"), store.jobs.count("summary")) == (5, 1)
    with store.transaction() as db:
        store.jobs.delete(db, "classify", "m0")
        store.jobs.drop(db, ("summary", "link"), "ep-a")
        (job,) = [j for j in store.jobs.due(10.0, set()) if j.key == "m1"]
        store.jobs.delete_run(db, job)
    with pytest.raises(RuntimeError), store.transaction() as db:
        store.jobs.enqueue(db, "classify", "m9", now=1.0)
        raise RuntimeError("rolled back")
    assert counted_rows(store) == {"classify": 3}
    assert [store.jobs.count(k) for k in ("classify", "summary", "link", "never")] == [3, 0, 0, 0]


def test_a_kinds_count_and_make_due_do_not_read_its_backlog(store):
    """Each doubtful memory counts the waiting reviews and, a batch full, makes them due:
    under sustained load hundreds wait, and both read the same few rows however many."""

    def steps(call: Callable[[sqlite3.Connection], T]) -> tuple[T, int]:
        with store.transaction() as db:
            return vm_steps(store, lambda: call(db))

    def queue(first: int, last: int) -> None:
        with store.transaction() as db:
            for i in range(first, last):  # due long ago, but for the last one
                store.jobs.enqueue(db, "classify", f"m{i}", now=1.0, delay=0.0)

    queue(0, 3)
    few_count = steps(lambda db: store.jobs.count("classify"))
    few_due = steps(lambda db: store.jobs.make_due(db, "classify", 50.0))
    queue(3, 2000)
    many_count = steps(lambda db: store.jobs.count("classify"))
    many_due = steps(lambda db: store.jobs.make_due(db, "classify", 50.0))
    assert (few_count[0], many_count[0], few_due[0], many_due[0]) == (3, 2000, 0, 0)
    # counting the rows, or testing each one's not_before: over 10,000 steps
    assert many_count[1] <= few_count[1] + 20 and many_due[1] <= few_due[1] + 20


def test_job_counts_are_counted_again_at_open(tmp_path):
    """A database from before ``job_counts`` (no table, no triggers) holds jobs: opened, its
    counts are right."""
    path = tmp_path / "e.sqlite3"
    first = EpisodeStore(path)
    first.db.executescript(
        "DROP TRIGGER job_counts_insert; DROP TRIGGER job_counts_delete; DROP TABLE job_counts;"
    )
    with first.transaction() as db:
        for i in range(3):
            first.jobs.enqueue(db, "classify", f"m{i}", now=1.0)
    first.close()
    second = EpisodeStore(path)
    assert second.jobs.count("classify") == 3
    second.close()


def test_active_activity_reads_the_active_episodes_only(store):
    """Every remember asks for its project's active episodes (closing the idle ones): the
    query reads the few active ones, not every episode the project ever had."""

    def steps() -> tuple[list[tuple[str, float]], int]:
        return vm_steps(store, lambda: store.episodes.active_activity("p"))

    with store.transaction() as db:
        store.episodes.insert(db, row("ep-a", last=2.0, project="p"))
        store.episodes.insert(db, row("ep-b", last=1.0, project="p"))
        store.episodes.insert(db, row("ep-other", last=3.0, project="q"))
    found, few = steps()
    assert found == [("ep-b", 1.0), ("ep-a", 2.0)]
    with store.transaction() as db:
        for i in range(2000):
            store.episodes.insert(db, row(f"ep-{i}", last=float(i), status="closed", project="p"))
    found, many = steps()
    assert found == [("ep-b", 1.0), ("ep-a", 2.0)]
    assert many <= few + 20  # the closed ones are not read (reading them: ~10,000 steps)


def test_active_activity_before_reads_the_idle_ones_only(store):
    """Closing idle episodes at write time asks only for those last active before the idle
    cutoff: the read stays a few steps however many active episodes are still in use."""

    def steps() -> tuple[list[tuple[str, float]], int]:
        return vm_steps(store, lambda: store.episodes.active_activity("p", before=10.0))

    with store.transaction() as db:
        store.episodes.insert(db, row("ep-old", last=5.0, project="p"))
        store.episodes.insert(db, row("ep-old-q", last=5.0, project="q"))
        store.episodes.insert(db, row("ep-edge", last=10.0, project="p"))  # not before: kept
    found, few = steps()
    assert found == [("ep-old", 5.0)]
    with store.transaction() as db:
        for i in range(2000):
            store.episodes.insert(db, row(f"ep-{i}", last=100.0 + i, project="p"))
    found, many = steps()
    assert found == [("ep-old", 5.0)]
    assert many <= few + 20  # the recent ones are not read (reading them: ~10,000 steps)


def test_waiting_jobs_first_then_the_oldest_not_skipped(store):
    """A batch of checks: the job asked for first, wherever it is in the queue (here behind
    99 older ones), then the oldest whose keys are not skipped (claimed by a call in flight);
    another kind's jobs never."""
    with store.transaction() as db:
        for i in range(100):
            store.jobs.enqueue(db, "merge", f"e{i:03}", now=float(i))
        store.jobs.enqueue(db, "split", "s", now=-1.0)

    def keys(limit: int, first: str | None = None, skip: tuple[str, ...] = ()) -> list[str]:
        return [job.key for job in store.jobs.waiting("merge", limit, first, skip)]

    assert keys(4, first="e099", skip=("e000", "e002")) == ["e099", "e001", "e003", "e004"]
    assert keys(3) == ["e000", "e001", "e002"]
    assert keys(2, first="gone") == ["e000", "e001"]  # done meanwhile: the oldest
    assert keys(2, first="e000", skip=("e000",)) == ["e001", "e002"]
    assert keys(1, first="e050") == ["e050"]
    assert keys(0, first="e050") == []
    assert keys(3, skip=tuple(f"e{i:03}" for i in range(98))) == ["e098", "e099"]


def write_episodes(store: EpisodeStore, count: int, prefix: str = "ep") -> None:
    for i in range(count):  # one transaction each, as detection commits
        with store.transaction() as db:
            store.episodes.insert(db, row(f"{prefix}-{i}", last=float(i), summary="x" * 500))


def test_commits_leave_the_wal_to_the_checkpoint(store):
    """A commit on the event loop does not copy the WAL into the database (SQLite's default
    does it every 1,000 pages, fsyncs included): checkpoint() does, on its own connection."""
    write_episodes(store, 1500)  # well over 1,000 pages of WAL
    pages, copied = store.checkpoint()
    assert pages > 1000  # no commit checkpointed (it would have restarted the WAL)
    assert copied == pages
    assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 20_000  # backstop


def test_a_checkpoint_on_a_thread_runs_beside_the_writes(store):
    done = threading.Event()
    errors: list[BaseException] = []

    def checkpoints():
        while not done.is_set():
            try:
                store.checkpoint()
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)
                return

    thread = threading.Thread(target=checkpoints)
    thread.start()
    try:
        write_episodes(store, 400)
    finally:
        done.set()
        thread.join(30)
    assert errors == []
    assert len(store.episodes.active()) == 400
    pages, copied = store.checkpoint()
    assert copied == pages


async def test_the_running_engine_checkpoints_its_database_on_a_thread(tmp_path, monkeypatch):
    from tribalmemory.config import config_from_dict
    from tribalmemory.episodes import plugin
    from tribalmemory.runtime import start_runtime
    from tribalmemory.shapes import RememberRequest

    checkpointed = threading.Event()
    threads: list[threading.Thread] = []
    original = EpisodeStore.checkpoint

    def checkpoint(self):
        threads.append(threading.current_thread())
        result = original(self)
        checkpointed.set()
        return result

    monkeypatch.setattr(EpisodeStore, "checkpoint", checkpoint)
    monkeypatch.setattr(plugin, "CHECKPOINT_SECONDS", 0.01)
    config = config_from_dict({"data_dir": str(tmp_path / "data")})
    runtime = await start_runtime(config, run_scheduler=False)
    try:
        await runtime.service.remember(
            RememberRequest(content="the checkpoint thread copies the WAL")
        )
        assert await asyncio.to_thread(checkpointed.wait, 30)  # bounded: a hang fails
        assert threads[0] is not threading.main_thread()
    finally:
        await runtime.stop()


def test_next_due_leaves_out_the_jobs_of_keys_in_flight(store):
    """A sleeping worker loop wakes when the next job it could take falls due: a detect job
    decided by its request meanwhile (its key in flight) does not count."""
    with store.transaction() as db:
        store.jobs.enqueue(db, "detect", "m-1", 100.0)
        store.jobs.enqueue(db, "summary", "ep-1", 100.0, 30.0)
        store.jobs.enqueue(db, "summary", "ep-2", 100.0, 60.0)
    assert store.jobs.next_due() == 100.0
    assert store.jobs.next_due({"m-1"}) == 130.0
    assert store.jobs.next_due({"m-1", "ep-1"}) == 160.0
    assert store.jobs.next_due({"m-1", "ep-1", "ep-2"}) is None
