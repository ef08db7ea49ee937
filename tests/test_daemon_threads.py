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


HEAP_PROBE = """
import asyncio, gc, json, sys
from tribalmemory.cli.service import freeze_start_up_heap
from tribalmemory.config import config_from_dict
episodes = {"enabled": sys.argv[1] == "llm", "summarizer_provider": "openai",
            "summarizer_model": "gpt-4o-mini"}
config = config_from_dict({"data_dir": sys.argv[2], "episodes": episodes})
asyncio.run(freeze_start_up_heap(config))
print(json.dumps({"litellm": "litellm" in sys.modules, "frozen": gc.get_freeze_count(),
                  "tracked": len(gc.get_objects())}))
"""


def frozen_heap(llm: bool, data_dir: str, key: bool = True) -> dict[str, object]:
    """What ``freeze_start_up_heap`` left in a fresh process (gc.freeze is process-wide);
    ``key``: OPENAI_API_KEY is set."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    if key:
        env["OPENAI_API_KEY"] = "x"
    argv = [sys.executable, "-c", HEAP_PROBE, "llm" if llm else "off", data_dir]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_daemon_freezes_its_start_up_heap_with_litellm_in_it(tmp_path: object) -> None:
    """litellm's ~260,000 long-lived objects are frozen, so full collections skip them."""
    found = frozen_heap(llm=True, data_dir=str(tmp_path))
    assert found["litellm"] is True
    assert isinstance(found["frozen"], int) and found["frozen"] > 100_000
    assert found["tracked"] < 1_000  # what the probe itself made after the freeze
    without = frozen_heap(llm=False, data_dir=str(tmp_path))
    assert without["litellm"] is False  # no LLM configured: not imported for nothing
    assert isinstance(without["frozen"], int) and 0 < without["frozen"] < found["frozen"]
    keyless = frozen_heap(llm=True, data_dir=str(tmp_path), key=False)
    assert keyless["litellm"] is False  # the LLM lacks its key: nothing will use litellm
    assert isinstance(keyless["frozen"], int) and 0 < keyless["frozen"] < found["frozen"]
