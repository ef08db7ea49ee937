"""The daemon keeps numpy's BLAS on one thread (see ``cli.service.BLAS_THREADS``): the episode
detector's small matrix products must not leave BLAS threads spinning on the cores the next
request's embedding needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, numpy
from threadpoolctl import threadpool_info
before = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
from tribalmemory.cli.service import limit_blas_threads
limit_blas_threads()
after = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
print(json.dumps([before, after]))
"""


def test_the_daemon_limits_blas_to_one_thread() -> None:
    # In a process of its own: the limit is process-wide. BLAS starts with a thread per core
    # (unless told otherwise), so on a machine of two cores or more the call has to change it.
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    before, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert before  # numpy's BLAS was found
    if (os.cpu_count() or 1) >= 2:
        assert max(before) >= 2
    assert after == [1] * len(before)
