"""Nothing a test session starts outlives it (load with ``pytest_plugins``).

Every process the session starts inherits ``TRIBAL_TEST_SESSION=<marker>``; ``tests/reaper.py``
waits in a session of its own for pytest to end (normally or killed) and then stops every
process that carries the marker: daemons of ``start_daemon``, detached daemons that
``ensure_daemon`` or ``quickstart`` started, CLI runs, fake LLM servers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from reaper import GRACE_SECONDS, VARIABLE

_started: list[subprocess.Popen[bytes]] = []


def pytest_configure(config: pytest.Config) -> None:
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    marker = uuid.uuid4().hex  # fresh: a pytest run inside a test sweeps only its own
    script = Path(__file__).with_name("reaper.py")
    _started.append(
        subprocess.Popen(
            [sys.executable, str(script), marker, str(os.getpid())],
            stdin=subprocess.PIPE,  # only this process holds the write end
            env=env,
            start_new_session=True,  # outlives a signal sent to pytest's process group
        )
    )
    os.environ[VARIABLE] = marker


def pytest_unconfigure(config: pytest.Config) -> None:
    """End of the session: let the reaper sweep what tests left running, and wait for it."""
    while _started:
        reaper = _started.pop()
        assert reaper.stdin is not None
        reaper.stdin.close()
        reaper.wait(GRACE_SECONDS + 30)
