"""Requests' embeddings and store calls run on threads kept off the CPUs of onnxruntime's
pinned threads (see ``tribalmemory.embeddings.placement``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tribalmemory.embeddings.placement import free_cpus, parse_cpu_list


def test_cpu_lists_are_read_as_the_kernel_writes_them() -> None:
    assert parse_cpu_list("0-1\n") == {0, 1}
    assert parse_cpu_list("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert parse_cpu_list("3") == {3}


def test_the_free_cpus_are_those_no_pinned_thread_uses() -> None:
    process = frozenset({0, 1, 2, 3})
    # onnxruntime pins one thread to each of CPUs 1-3; the rest run anywhere
    threads = [process, frozenset({1}), frozenset({2}), frozenset({3}), process]
    assert free_cpus(process, threads) == {0}
    assert free_cpus(process, [process, process]) is None  # nothing pinned: run anywhere
    # pinned threads cover every CPU: there is no better place, run anywhere
    assert free_cpus(process, [frozenset({0, 1}), frozenset({2, 3})]) is None


PROBE = """
import asyncio, json, os, sys, threading
from pathlib import Path
from tribalmemory.config import config_from_dict
from tribalmemory.embeddings.placement import RequestThreads, caller_cpus, parse_cpu_list
from tribalmemory.runtime import start_runtime
from tribalmemory.shapes import RecallRequest, RememberRequest

def affinity(tid):
    for line in Path(f"/proc/self/task/{tid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return sorted(parse_cpu_list(line.partition(":")[2]))

async def main():
    config = config_from_dict({"data_dir": sys.argv[1], "episodes": {"enabled": False}})
    runtime = await start_runtime(config)
    service = runtime.service
    seen = {}  # where the request's own calls ran: the real ones, wrapped to note the thread

    def noting(name, call):
        def noted(*args, **kwargs):
            seen[name] = sorted(os.sched_getaffinity(0))
            return call(*args, **kwargs)
        return noted

    service.embedder.embed = noting("embed", service.embedder.embed)
    service._near_duplicates = noting("duplicate check", service._near_duplicates)
    service.store.upsert = noting("write", service.store.upsert)
    service.store.search = noting("search", service.store.search)
    told = RememberRequest(content="the billing service times out under load")
    stored = await service.remember(told)
    assert stored.success
    assert await service.recall(RecallRequest(query="billing timeouts"))
    ran = await service.request_threads.run(lambda: sorted(os.sched_getaffinity(0)))
    process = sorted(os.sched_getaffinity(0))
    placed = service.request_threads.place_caller()  # as the daemon does with its event loop
    loop = sorted(os.sched_getaffinity(0))
    ours = {t.native_id for t in threading.enumerate() if t.name.startswith("tm-request")}
    ours.add(threading.get_native_id())
    others = [affinity(t.name) for t in Path("/proc/self/task").iterdir()
              if int(t.name) not in ours]
    hold = threading.Event()  # a thread the placed loop starts: it inherits the loop's CPUs
    child = threading.Thread(target=hold.wait)
    child.start()
    second = RequestThreads()  # another runtime in the process: ours do not count as pinned
    await second.run(len, [])
    print(json.dumps({"process": process, "others": others, "ran": ran, "seen": seen,
                      "placed": sorted(placed or []), "loop": loop,
                      "health": service.health()["embedding"], "second": second.status(),
                      "found_again": sorted(caller_cpus() or []),
                      "child": affinity(child.native_id)}))
    hold.set()
    child.join()
    second.close()
    await runtime.stop()

asyncio.run(main())
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
    reason="thread placement is Linux-only, and needs two CPUs or more",
)
def test_requests_run_beside_onnxruntimes_pinned_threads(tmp_path: object) -> None:
    """In a fresh process (affinity is per thread, and other tests' runtimes leave threads):
    a runtime runs a request's embedding, duplicate check, write and recall search on threads
    limited to the CPUs that onnxruntime's pinned threads leave free, places the event loop's
    thread there when asked (the daemon does, after its warm-up), and /v1/health says which."""
    argv = [sys.executable, "-c", PROBE, str(tmp_path)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    process = found["process"]
    pinned = [set(cpus) for cpus in found["others"] if cpus != process]
    assert pinned, "onnxruntime pins its intra-op threads on a machine of two CPUs or more"
    free = sorted(set(process) - set().union(*pinned))
    # onnxruntime leaves the calling thread's CPU to it, and no thread of a library's pool
    # started from one of ours keeps ours (the tokenizers pool did, before tokenizing moved
    # to the calling thread: then no CPU was left free)
    assert free
    assert found["ran"] == free
    assert found["seen"] == {c: free for c in ("embed", "duplicate check", "write", "search")}
    assert found["placed"] == found["loop"] == free  # the event loop's thread, placed there too
    assert found["health"]["request_cpus"] == free
    assert found["second"] == free
    assert found["found_again"] == free  # nor do threads the placed loop started
    assert found["child"] == free
