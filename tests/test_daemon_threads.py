"""The daemon keeps numpy's BLAS on one thread (see ``cli.service.BLAS_THREADS``): the episode
detector's small matrix products must not leave BLAS threads spinning on the cores the next
request's embedding needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
from threadpoolctl import threadpool_info
if sys.argv[1] == "limit":  # first thing, as `serve` does, before this probe touches numpy
    from tribalmemory.cli.service import limit_blas_threads
    limit_blas_threads()
import numpy
print(json.dumps([p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]))
"""


def blas_threads(limit: bool) -> list[int]:
    """BLAS pools' thread counts in a fresh process (the limit is process-wide)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    argv = [sys.executable, "-c", PROBE, "limit" if limit else "default"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_daemon_limits_blas_to_one_thread() -> None:
    # BLAS starts with a thread per core (unless told otherwise), so on a machine of two cores
    # or more the call has to change it.
    before = blas_threads(limit=False)
    assert before  # numpy's BLAS was found
    if (os.cpu_count() or 1) >= 2:
        assert max(before) >= 2
    assert blas_threads(limit=True) == [1] * len(before)
