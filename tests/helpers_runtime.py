"""The in-process runtime fixture ``engine_runtime``: a memory service with the episode engine
on a temporary data folder, started without the scheduler and stopped after the test. (The
``runtime`` fixture of :mod:`helpers_http` is the runtime an HTTP test client started.)"""

from __future__ import annotations

import os
import subprocess
import sys
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


async def story_episode(
    rt: Runtime, story: list[tuple[str, str]], title: str, project: str = "shop"
) -> tuple[str, list[str]]:
    """Remember ``story`` (text, time) in ``project``, make its memories one episode and let
    the engine settle: the episode's id and the memories' ids."""
    ids = []
    for text, at in story:
        stored = await rt.api.remember(text, created_at=at, project=project)
        ids.append(stored["memory_id"])
    created = await rt.api.episode_create(title, ids)
    await settle(rt)
    return created["episode_id"], ids


def killed_at_decision(nth: int, run: str, setup: str = "") -> str:
    """A script for ``python -c`` that runs ``setup`` (statements), starts a runtime on the
    configuration named by argv[1] and runs ``run`` (an awaited expression of ``runtime`` and
    ``Path(sys.argv[2])``); the episode engine's ``nth`` decision kills it with SIGKILL before
    it decides: that memory is stored, not decided."""
    return f"""
import asyncio, json, os, signal, sys
from pathlib import Path
from tribalmemory.config import load_config
from tribalmemory.episodes.detection import Detection
from tribalmemory.runtime import start_runtime
{setup}
decided = 0
original = Detection.detect

async def detect(self, memory, vector):
    global decided
    decided += 1
    if decided == {nth}:
        os.kill(os.getpid(), signal.SIGKILL)
    return await original(self, memory, vector)

Detection.detect = detect

async def main():
    runtime = await start_runtime(load_config(Path(sys.argv[1])), run_scheduler=False)
    await {run}

asyncio.run(main())
"""


def run_killed(script: str, config: Path, argument: Path, home: Path) -> None:
    """Run ``script`` (a killer above) on ``config`` with ``argument`` as argv[2], ``home`` as
    ``TRIBAL_MEMORY_HOME`` and no API key; it must die of SIGKILL."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["TRIBAL_MEMORY_HOME"] = str(home)
    killed = subprocess.run(
        [sys.executable, "-c", script, str(config), str(argument)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]


def killed_at_sixth_decision(module: str, run: str) -> str:
    """:func:`killed_at_decision` at the sixth decision, with ``{module}.PAGE`` set to 4: the
    second page is stored and its first memory decided."""
    package, name = module.rsplit(".", 1)
    return killed_at_decision(6, run, f"from {package} import {name}\n{name}.PAGE = 4")


def killed_after_remember(text: str, project: str) -> str:
    """A script for ``python -c`` that starts a runtime on the configuration named by argv[1],
    holds its entity work (its first pass at start done), remembers ``text`` in ``project``,
    prints ``{"result": <remember's answer>, "mentions": <the memory's stored mentions>}`` as
    one JSON line, and kills itself with SIGKILL at once: the memory was acknowledged, its
    entities not yet found."""
    return f"""
import asyncio, json, os, signal, sys
from pathlib import Path
from tribalmemory.config import load_config
from tribalmemory.runtime import start_runtime

async def main():
    runtime = await start_runtime(load_config(Path(sys.argv[1])), run_scheduler=False)
    work = runtime.episodes.engine.entity_work
    await asyncio.wait_for(work.idle.wait(), 60)
    held = asyncio.Event()

    async def never():
        await held.wait()

    work.turn = never
    result = await runtime.api.remember({text!r}, project={project!r})
    mentions = sorted(runtime.episodes.store.entities.names_of(result["memory_id"]))
    print(json.dumps({{"result": result, "mentions": mentions}}), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""
