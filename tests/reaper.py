"""Ends every process a pytest session started once the session is over, however it ended.

``helpers_reaper`` puts a marker unique to the session in the environment of everything the
session starts (daemons, detached ``service start`` daemons, CLI runs, fake LLM servers) and
runs this script in a session of its own, its stdin a pipe that only pytest holds. End of file
on stdin means the session ended: closed at the end of a normal run, or closed by the kernel
when pytest died (even by SIGKILL). Then every process whose environment carries the marker
gets SIGTERM, and SIGKILL if it has not exited after :data:`GRACE_SECONDS`.

Run as ``python reaper.py MARKER SPARE_PID`` (``SPARE_PID``: pytest itself, never signalled).
Linux only (``/proc``, pidfds); elsewhere it exits at once and the session is not swept.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

VARIABLE = "TRIBAL_TEST_SESSION"
GRACE_SECONDS = 10.0  # a daemon stops its runtime on SIGTERM within its own bounds


def carriers(marker: str, spare: set[int]) -> list[int]:
    """The processes whose environment (as started) carries ``VARIABLE=marker``."""
    entry = f"{VARIABLE}={marker}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in spare:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                variables = environ.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if entry in variables:
            found.append(int(name))
    return found


def end(pids: list[int], grace: float = GRACE_SECONDS) -> list[int]:
    """SIGTERM each process, SIGKILL those still running after ``grace`` seconds; the pids
    that had to be killed. pidfds, so that a pid reused meanwhile is never signalled."""
    waiting: dict[int, int] = {}
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except OSError:  # exited since it was found
            continue
        try:
            signal.pidfd_send_signal(fd, signal.SIGTERM)
        except OSError:
            os.close(fd)
            continue
        waiting[fd] = pid
    remaining = grace
    deadline = time.monotonic() + grace
    while waiting and remaining > 0:
        ready, _, _ = select.select(list(waiting), [], [], remaining)
        for fd in ready:  # a pidfd is readable once its process has exited
            del waiting[fd]
            os.close(fd)
        remaining = deadline - time.monotonic()
    killed = []
    for fd, pid in waiting.items():
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass
        os.close(fd)
    return killed


def main(argv: list[str]) -> int:
    marker, spare = argv[1], int(argv[2])
    if not (sys.platform.startswith("linux") and hasattr(os, "pidfd_open")):
        return 0
    while sys.stdin.buffer.read(65536):  # nothing is ever written: wait for end of file
        pass
    left = carriers(marker, {os.getpid(), spare})
    killed = end(left)
    if left:
        try:
            print(
                f"reaper: ended {len(left)} process(es) the session left running "
                f"(killed after {GRACE_SECONDS:g} s: {killed or 'none'})",
                file=sys.stderr,
            )
        except OSError:  # pytest's terminal is gone
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
