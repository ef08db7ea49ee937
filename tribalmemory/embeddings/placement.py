"""Where requests' embeddings and store calls run: off the CPUs of onnxruntime's threads.

onnxruntime splits each call between the calling thread and its intra-op threads, which it
pins one to a CPU (on a 2-CPU machine: one thread, on CPU 1) and which spin between calls. A
caller that lands on the CPU of one of them shares that CPU with it, each waiting for the
other's share, and a 4-5 ms embedding takes 10-20 ms. Linux moves such a caller to another CPU
as soon as that one goes idle, but a CPU running only a ``SCHED_IDLE`` thread (the background
embedder, :mod:`.background`) never counts as idle: traced in the daemon with episodes on,
that was where the slowest 5 % of ``remember`` calls lost their time (docs/detection.md).
The store calls that follow an embedding (the duplicate check, the write, recall's search)
met the same fate: onnxruntime's thread spins on for a while after each call.

So requests' embeddings and those store calls run on a few threads of their own, each limited
to the CPUs no pinned thread of the process uses (Linux; elsewhere, or when onnxruntime
pinned nothing, anywhere). The daemon's event loop runs there too once it has started
(:meth:`RequestThreads.place_caller`): its steps (the episode engine's decision after each
write, its background work) otherwise landed beside onnxruntime's spinning thread as well.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger("tribalmemory.embeddings")

THREADS = 8  # calls at once: batches being embedded (2 at most) never hold up a recall
T = TypeVar("T")
_ours: set[int] = set()  # native ids of the threads placed here: pinned by us, not by onnxruntime
_handed: set[frozenset[int]] = set()  # the CPUs threads were placed on here


def parse_cpu_list(text: str) -> frozenset[int]:
    """``0-2,5`` → {0, 1, 2, 5} (the kernel's ``Cpus_allowed_list`` format)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return frozenset(cpus)


def free_cpus(process: frozenset[int], threads: list[frozenset[int]]) -> frozenset[int] | None:
    """The CPUs of ``process`` that no pinned thread (one allowed fewer CPUs than the process)
    uses; None when no thread is pinned or the pinned ones cover every CPU."""
    pinned = [cpus for cpus in threads if cpus < process]
    if not pinned:
        return None
    free = process - frozenset().union(*pinned)
    return free or None


def _allowed(status: Path) -> frozenset[int] | None:
    try:
        for line in status.read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return parse_cpu_list(line.partition(":")[2])
    except (OSError, ValueError):
        return None
    return None


def caller_cpus() -> frozenset[int] | None:
    """Where this process's request work should run (see the module docstring): read
    from ``/proc/self``, leaving out the threads placed here and those limited to CPUs handed
    out here (started by a placed thread: the event loop's); None on other systems or when
    nothing is pinned. The process's CPUs are those any of its threads may use (its main
    thread may be placed)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        every = [
            (int(task.name), cpus)
            for task in Path("/proc/self/task").iterdir()
            if task.name.isdigit() and (cpus := _allowed(task / "status"))
        ]
    except OSError:
        return None
    process = frozenset().union(*(cpus for _, cpus in every))
    threads = [cpus for tid, cpus in every if tid not in _ours and cpus not in _handed]
    return free_cpus(process, threads)


def _limit_calling_thread(cpus: frozenset[int], what: str) -> bool:
    """Limit the calling thread to ``cpus``; False (logged) when the system refuses."""
    try:
        os.sched_setaffinity(0, cpus)  # 0: the calling thread
    except OSError as exc:
        log.info("%s run on any CPU: %s", what, exc)
        return False
    return True


class RequestThreads:
    """A few threads for requests' embeddings and store calls, limited to :func:`caller_cpus`
    (found when the first one starts, once the model and its pinned threads exist)."""

    def __init__(
        self, threads: int = THREADS, find: Callable[[], frozenset[int] | None] = caller_cpus
    ) -> None:
        self._find = find
        self._lock = threading.Lock()
        self._found = False
        self._threads: set[int] = set()
        self.cpus: frozenset[int] | None = None
        self._executor = ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="tm-request", initializer=self._place
        )

    def _claim(self) -> None:
        """Count the calling thread as placed here (the caller holds the lock)."""
        self._threads.add(threading.get_native_id())
        _ours.add(threading.get_native_id())

    def _place(self) -> None:
        with self._lock:
            self._claim()  # before finding: it may have inherited a place
            if not self._found:
                self.cpus = self._find()
                self._found = True
                if self.cpus is not None:
                    _handed.add(self.cpus)
            cpus = self.cpus
        if cpus is not None:
            _limit_calling_thread(cpus, "requests' embeddings")

    def place_caller(self) -> frozenset[int] | None:
        """Limit the calling thread to the CPUs these threads run on, once found (a call has
        run here): the daemon's event loop, whose steps alternate with a request's calls here.
        Threads it starts afterwards inherit the limit. Its CPUs, or None (not found yet, any
        CPU, or the system refused)."""
        with self._lock:
            cpus = self.cpus
            if cpus is None:
                return None
            self._claim()
        return cpus if _limit_calling_thread(cpus, "the event loop's steps") else None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def status(self) -> list[int] | None:
        """For /v1/health: the CPUs requests' work runs on (None: any, or none yet)."""
        return sorted(self.cpus) if self.cpus is not None else None

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            _ours.difference_update(self._threads)
