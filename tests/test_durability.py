"""Durability and concurrency with real processes: kill -9 mid-LLM-call, concurrent writers.

The daemon runs as a subprocess (``tribalmemory serve``); the LLM is the fake OpenAI-compatible
server, also a subprocess, answering slowly so that calls are in flight when the daemon dies
(or while clients write); then it answers at once, for the rest only has to be drained.
Waiting is done by polling observable state with deadlines, never by sleeping to win a race.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers_http import LOCAL, Daemon, start_daemon

TESTS = Path(__file__).resolve().parent

THREADS = {
    "auth": (
        "Refresh token rotation bug: {a} when two browser tabs refresh at once; we checked {b}.",
        [
            "the token family gets revoked",
            "users are logged out",
            "Sentry shows 401 revoked",
            "the grace window is too short",
            "the old token is rejected",
        ],
        [
            "auth/tokens.py",
            "the refresh endpoint",
            "the session cookie",
            "rotate_refresh",
            "the reuse detector",
        ],
    ),
    "db": (
        "Postgres migration from MySQL: {a}; pgloader run on {b}.",
        [
            "zero dates break the import",
            "GROUP_CONCAT needs string_agg",
            "collation differs for emails",
            "sequences must be reset after copy",
            "the cutover window is Saturday night",
        ],
        [
            "the invoices table",
            "the staging replica",
            "the orders schema",
            "the users table",
            "a full production snapshot",
        ],
    ),
    "queue": (
        "Celery worker backlog on the digest queue: {a}, seen in {b}.",
        [
            "Redis broker memory is near the limit",
            "prefetch multiplier is too high",
            "the nightly digest emails arrive hours late",
            "result backend keys are never expired",
            "a dedicated queue for digests helps",
        ],
        [
            "Flower",
            "the Grafana queue panel",
            "the worker logs",
            "redis-cli info",
            "the on-call alert",
        ],
    ),
}


def thread_text(topic: str, i: int, rng: random.Random) -> str:
    template, first, second = THREADS[topic]
    return template.format(a=rng.choice(first), b=rng.choice(second)) + f" (#{i})"


def stream(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` memories from three interleaved threads, one every 20 minutes."""
    rng = random.Random(seed)
    topics = list(THREADS)
    out = []
    for i in range(count):
        topic = topics[rng.randrange(len(topics))]
        minute = 20 * i
        out.append(
            {
                "content": thread_text(topic, i, rng),
                "tags": [topic],
                "created_at": f"2025-03-{3 + minute // 1440:02d}T"
                f"{(minute % 1440) // 60:02d}:{minute % 60:02d}:00Z",
                "skip_dedup": True,
            }
        )
    return out


def fake_process(*options: str) -> Iterator[str]:
    """The fake LLM as a separate process answering after 1.5 s; yields its base URL."""
    process = subprocess.Popen(
        [sys.executable, str(TESTS / "fakellm.py"), "--delay", "1.5", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("READY "), line
    yield line.split()[1]
    process.kill()
    process.wait(10)


@pytest.fixture
def fake_llm_process() -> Iterator[str]:
    yield from fake_process()


@pytest.fixture
def agreeing_llm_process() -> Iterator[str]:
    """A fake LLM that finds every checked episode the same thread as its first candidate
    (and every split check's parts two threads): consolidation changes episodes."""
    yield from fake_process("--agree")


def fake_requests(base_url: str) -> int:
    root = base_url.rsplit("/v1", 1)[0]
    return int(LOCAL.get(f"{root}/stats", timeout=5).json()["requests"])


def answer_at_once(base_url: str) -> None:
    """The fake LLM answers from now on without its delay (calls in flight keep theirs)."""
    root = base_url.rsplit("/v1", 1)[0]
    LOCAL.post(f"{root}/delay", json={"seconds": 0}, timeout=5).raise_for_status()


def fake_purposes(base_url: str) -> dict[str, int]:
    """Requests the fake LLM received, by prompt purpose."""
    root = base_url.rsplit("/v1", 1)[0]
    return dict(LOCAL.get(f"{root}/stats", timeout=5).json()["by_purpose"])


REAPED_WITHIN = 60.0
"""Seconds for a SIGKILLed daemon to be gone: no shutdown code runs, but the kernel still
unmaps its memory and closes its files; on 2 busy CPUs (load average 7) that
once took over 10 s. How long it takes is not what these tests check."""


def wait_for(predicate: Any, deadline: float, what: str) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def health(daemon: Daemon) -> dict[str, Any]:
    return LOCAL.get(f"{daemon.url}/v1/health", timeout=10).json()


def settled(daemon: Daemon) -> bool:
    return health(daemon)["episodes"]["queue_depth"] == 0


def all_episodes(daemon: Daemon) -> list[dict[str, Any]]:
    found, offset = [], 0
    while True:
        page = LOCAL.get(
            f"{daemon.url}/v1/episodes", params={"limit": 100, "offset": offset}, timeout=10
        ).json()
        found += page["episodes"]
        if page["count"] < 100:
            return found
        offset += 100


def check_invariants(daemon: Daemon, memory_ids: list[str]) -> list[dict[str, Any]]:
    """Every acknowledged memory exists, is settled and sits in at most one episode whose
    count is exact; every episode's summary memory exists; no summary memory is orphaned."""
    client = httpx.Client(base_url=daemon.url, timeout=10)
    members: dict[str, str] = {}
    episodes = all_episodes(daemon)
    for episode in episodes:
        detail = client.get(f"/v1/episodes/{episode['id']}").json()
        ids = detail["memory_ids"]
        assert detail["episode"]["memory_count"] == len(ids) == len(set(ids))
        for mid in ids:
            assert mid not in members, f"{mid} is in two episodes"
            members[mid] = episode["id"]
        summary_id = detail["episode"]["summary_memory_id"]
        if ids:
            assert summary_id is not None
            summary = client.get(f"/v1/memory/{summary_id}")
            assert summary.status_code == 200, f"episode {episode['id']} lost its summary"
            assert summary.json()["source_type"] == "EPISODE_SUMMARY"
    for mid in memory_ids:
        memory = client.get(f"/v1/memory/{mid}")
        assert memory.status_code == 200, f"acknowledged memory {mid} is missing"
        body = memory.json()
        assert body["episode_status"] != "pending"
        assert body["episode_id"] == members.get(mid)
    stats = client.get("/v1/stats").json()
    with_summary = sum(1 for e in episodes if e["memory_count"] > 0)
    assert stats["by_source_type"]["EPISODE_SUMMARY"] == with_summary, "orphaned summaries"
    return episodes


def consolidating(api_base: str) -> dict[str, Any]:
    """Episode settings under which the detector's only LLM calls are merge and split checks,
    each asked at once (none waits a day for a review call: all can be cut)."""
    return {
        "detector_strategy": "hybrid",
        "api_base": api_base,
        "summary_debounce_seconds": 0,
        "request_timeout_seconds": 20,
        "llm_doubt_share": 0.0,
        "classify_batch_wait_seconds": 0,
    }


def remember_all(daemon: Daemon, items: list[dict[str, Any]], clients: int = 1) -> list[str]:
    """``items`` remembered by ``clients`` concurrent clients, client ``k`` sending
    ``items[k::clients]`` in order, each answered 200; the memory ids, client by client."""

    def client_run(chunk: list[dict[str, Any]]) -> list[str]:
        with httpx.Client(base_url=daemon.url, timeout=60) as client:
            out = []
            for item in chunk:
                response = client.post("/v1/remember", json=item)
                assert response.status_code == 200, response.text
                out.append(response.json()["memory_id"])
            return out

    chunks = [items[k::clients] for k in range(clients)]
    with ThreadPoolExecutor(clients) as pool:
        return [mid for ids in pool.map(client_run, chunks) for mid in ids]


def actions(daemon: Daemon, episodes: list[dict[str, Any]]) -> list[str]:
    """Every action in the histories of ``episodes``."""
    with httpx.Client(base_url=daemon.url, timeout=10) as client:
        return [
            entry["action"]
            for episode in episodes
            for entry in client.get(f"/v1/episodes/{episode['id']}").json()["history"]
        ]


def composition(daemon: Daemon, memory_ids: list[str], items: list[dict[str, Any]]) -> list:
    """Per non-empty episode, how many of its memories come from each thread (sorted);
    ``memory_ids[k]`` is the id of ``items[k]``."""
    topic = {mid: item["tags"][0] for mid, item in zip(memory_ids, items, strict=True)}
    out = []
    for episode in all_episodes(daemon):
        ids = LOCAL.get(f"{daemon.url}/v1/episodes/{episode['id']}", timeout=10).json()
        counts = Counter(topic[mid] for mid in ids["memory_ids"])
        if counts:
            out.append(sorted(counts.items()))
    return sorted(out)


def test_kill_9_during_llm_calls_loses_nothing(tmp_path, fake_llm_process, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    episodes = {
        "detector_strategy": "hybrid",
        "api_base": fake_llm_process,
        "summary_debounce_seconds": 0,
        "request_timeout_seconds": 20,
        # reviews and merge checks at once: none waits a day for company, all can be cut
        "classify_batch_wait_seconds": 0,
    }
    daemon = start_daemon(tmp_path, episodes=episodes)
    acked = remember_all(daemon, stream(24))
    wait_for(lambda: fake_requests(fake_llm_process) >= 2, 60, "LLM calls in flight")
    daemon.process.kill()  # SIGKILL: no shutdown code runs
    daemon.process.wait(REAPED_WITHIN)
    answer_at_once(fake_llm_process)
    restarted = start_daemon(tmp_path, episodes=episodes)
    try:
        wait_for(lambda: settled(restarted), 180, "the episode queue to drain")
        episodes_found = check_invariants(restarted, acked)
        assert episodes_found, "no episode was formed"
        costs = LOCAL.get(f"{restarted.url}/v1/episodes/costs", timeout=10).json()
        recorded = costs["calls"] + costs["open_reservations"]
        assert recorded == fake_requests(fake_llm_process)
    finally:
        restarted.stop()


def test_kill_9_during_consolidation_loses_nothing(tmp_path, agreeing_llm_process, monkeypatch):
    """Merge checks whose answers merge episodes are under way when the daemon is killed:
    after the restart every invariant holds (no duplicate, lost or orphaned episode, membership
    or summary) and consolidation went on (episodes were merged)."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    episodes = consolidating(agreeing_llm_process)
    daemon = start_daemon(tmp_path, episodes=episodes)
    acked = remember_all(daemon, stream(24))

    def confirming() -> bool:  # the second merge call confirms the first: it may merge
        return fake_purposes(agreeing_llm_process).get("merge", 0) >= 2

    wait_for(confirming, 60, "a merge check and its confirmation asked")
    daemon.process.kill()  # SIGKILL: no shutdown code runs
    daemon.process.wait(REAPED_WITHIN)
    answer_at_once(agreeing_llm_process)
    restarted = start_daemon(tmp_path, episodes=episodes)
    try:
        wait_for(lambda: settled(restarted), 180, "the episode queue to drain")
        found = check_invariants(restarted, acked)
        assert "merge" in actions(restarted, found), "no merge was carried out"
    finally:
        restarted.stop()


def test_concurrent_writers_during_consolidation_keep_every_invariant(
    tmp_path, agreeing_llm_process, monkeypatch
):
    """Eight clients write while merge checks (answered "same" by the fake LLM) merge the
    episodes they write to: every acknowledged memory ends in exactly one episode with an
    exact count and one summary memory, and the merges were carried out."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    episodes = consolidating(agreeing_llm_process)
    items = stream(96)
    daemon = start_daemon(tmp_path, episodes=episodes)
    try:
        ids = remember_all(daemon, items, clients=8)
        assert len(ids) == len(set(ids)) == len(items)
        answer_at_once(agreeing_llm_process)  # the writes are done: what is left is drained
        wait_for(lambda: settled(daemon), 180, "the episode queue to drain")
        found = check_invariants(daemon, ids)
        assert "merge" in actions(daemon, found), "no merge was carried out"
    finally:
        daemon.stop()


GROUPED = 300
"""Memories of the grouping test, about 100 per thread: 8 clients each send 37 or 38 of them
interleaved with the others' (the first 300 of the 800 it sent before: the stream is the same,
cut shorter; the grouping rules are the same at 300 as at 800, at a third of the time)."""


def test_concurrent_writers_keep_invariants_and_match_sequential(tmp_path):
    items = stream(GROUPED)
    episodes = {"detector_strategy": "embedding", "summary_debounce_seconds": 1}
    sequential = start_daemon(tmp_path / "seq", episodes=episodes)
    try:
        with httpx.Client(base_url=sequential.url, timeout=60) as client:
            seq_ids = [client.post("/v1/remember", json=i).json()["memory_id"] for i in items]
        wait_for(lambda: settled(sequential), 120, "sequential run to settle")
        check_invariants(sequential, seq_ids)
        seq_groups = composition(sequential, seq_ids, items)
    finally:
        sequential.stop()

    concurrent = start_daemon(tmp_path / "conc", episodes=episodes)
    try:
        conc_ids = remember_all(concurrent, items, clients=8)
        order = [k for c in range(8) for k in range(c, len(items), 8)]  # item index per id
        assert len(conc_ids) == len(set(conc_ids)) == GROUPED
        wait_for(lambda: settled(concurrent), 120, "concurrent run to settle")
        check_invariants(concurrent, conc_ids)
        conc_groups = composition(concurrent, conc_ids, [items[k] for k in order])
    finally:
        concurrent.stop()
    # Sequentially each thread forms exactly one episode holding all of its memories. With 8
    # concurrent clients every episode must still be one thread's, but a thread can split in
    # two, as decisions see another arrival order (measured with the earlier detector: 2 of 5
    # runs split one thread, e.g. 74 + 187 memories; with the stream-calibrated one, 5 of 5
    # runs matched the sequential grouping exactly; never a mixed episode).
    by_topic = sorted([(topic, sum(i["tags"] == [topic] for i in items))] for topic in THREADS)
    assert seq_groups == by_topic
    assert all(len(group) == 1 for group in conc_groups), f"mixed threads: {conc_groups}"
    per_topic = Counter(group[0][0] for group in conc_groups)
    assert set(per_topic) == set(THREADS) and max(per_topic.values()) <= 2, conc_groups
    placed = Counter()
    for group in conc_groups:
        placed[group[0][0]] += group[0][1]
    assert sorted([(t, n)] for t, n in placed.items()) == by_topic  # every memory is placed
