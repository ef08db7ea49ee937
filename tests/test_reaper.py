"""Daemons a test session started do not outlive it, even when pytest is killed (SIGKILL runs
no teardown): tests/reaper.py, started by helpers_reaper, ends them."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers_http import ISOLATED_ENV

TESTS = Path(__file__).resolve().parent
EXIT_BOUND = 60.0  # bounds a hang: the reaper's grace (10 s) plus a daemon's shutdown

INNER = """
import sys
from concurrent.futures import ThreadPoolExecutor
from helpers_http import free_port, start_daemon, write_config
from tribalmemory.client import ensure_daemon
from tribalmemory.config import load_config


def test_leaves_two_daemons_running(tmp_path):
    home = tmp_path / "detached"
    path = write_config(home, server={"port": free_port()}, episodes={"enabled": False})
    with ThreadPoolExecutor(1) as pool:  # both start at once
        detached = pool.submit(ensure_daemon, load_config(path), path)  # a session of its own
        attached = start_daemon(tmp_path / "attached")  # a child of pytest
        detached.result()
    print("PIDS", attached.process.pid, (home / "daemon.pid").read_text().strip(), flush=True)
    sys.stdin.read()  # until pytest is killed
"""


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the reaper needs Linux pidfds")
def test_daemons_do_not_outlive_a_killed_pytest(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(INNER, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ISOLATED_ENV}
    env.update(
        PYTHONPATH=os.pathsep.join([str(TESTS), *filter(None, [env.get("PYTHONPATH")])]),
        TRIBAL_MEMORY_HOME=str(tmp_path / "home"),
        HOME=str(tmp_path),
    )
    argv = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"]
    inner = subprocess.Popen(
        [*argv, "-p", "conftest", "test_inner.py"],  # the suite's conftest, as a plugin
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert inner.stdout is not None
    seen = []
    for line in inner.stdout:
        seen.append(line)
        if line.startswith("PIDS "):
            break
    else:
        inner.wait(30)
        pytest.fail("the inner session did not start its daemons:\n" + "".join(seen))
    pidfds = {os.pidfd_open(int(pid)): int(pid) for pid in line.split()[1:]}
    try:
        inner.kill()
        inner.wait(30)
        waiting = set(pidfds)
        deadline = time.monotonic() + EXIT_BOUND
        while waiting and (remaining := deadline - time.monotonic()) > 0:
            ended, _, _ = select.select(list(waiting), [], [], remaining)
            waiting -= set(ended)  # a pidfd is readable once its process has exited
        left = sorted(pidfds[fd] for fd in waiting)
        assert left == [], f"daemons still running after pytest was killed: {left}"
    finally:
        for fd in pidfds:
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(fd)
        if inner.stdin is not None:
            inner.stdin.close()
        inner.stdout.close()
