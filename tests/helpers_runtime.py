"""The in-process runtime fixture ``engine_runtime``: a memory service with the episode engine
on a temporary data folder, started without the scheduler and stopped after the test. (The
``runtime`` fixture of :mod:`helpers_http` is the runtime an HTTP test client started.)"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tribalmemory.config import config_from_dict
from tribalmemory.runtime import Runtime, start_runtime

SETTLE_SECONDS = 30.0  # bounds a hang; the fake LLM answers at once


@pytest.fixture
async def engine_runtime(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Runtime]]]:
    """``await engine_runtime(**episodes)``: embedding detection and no summary debounce unless
    ``episodes`` says otherwise; ``client_kw`` adds LLM client options (retries back off
    10 ms). The summariser has checked the LLM before it is returned."""
    started: list[Runtime] = []

    async def make(client_kw: dict[str, Any] | None = None, **episodes: Any) -> Runtime:
        settings = {"detector_strategy": "embedding", "summary_debounce_seconds": 0, **episodes}
        config = config_from_dict({"data_dir": str(tmp_path / "data"), "episodes": settings})
        options = {"backoff_base": 0.01, **(client_kw or {})}
        rt = await start_runtime(config, run_scheduler=False, llm_options=options)
        started.append(rt)
        await rt.episodes.summariser.check()
        return rt

    yield make
    for rt in started:
        await rt.stop()


async def settle(rt: Runtime) -> None:
    """Wait until the episode queue is empty."""
    assert await rt.episodes.worker.drain(SETTLE_SECONDS), "episode work did not settle"
