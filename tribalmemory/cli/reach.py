"""Where a command runs: the data folder's daemon when one answers, else a runtime of its own."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..client import DaemonClient, find_daemon
from ..config import Config

if TYPE_CHECKING:
    from ..runtime import Runtime


def say_waiting(message: str) -> None:
    """Why a command waits for a daemon that does not answer yet, on stderr."""
    print(f"tribalmemory: {message}", file=sys.stderr, flush=True)


def our_daemon(config: Config, config_path: str | Path | None) -> DaemonClient | None:
    """A client of this data folder's daemon, saying so on stderr while a busy one is awaited."""
    return find_daemon(config, config_path=config_path, waiting=say_waiting)


async def own_runtime(config: Config) -> Runtime:
    """The store opened by this command alone (no daemon answers). The LLM is not checked at
    start (importing litellm takes seconds), only by a call or a status that needs it."""
    from ..runtime import start_runtime

    return await start_runtime(config, check_llm=False)
