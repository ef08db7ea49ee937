"""An event loop on a thread of its own, for litellm's requests.

A litellm request spends about 5 ms of Python on the event loop that awaits it (building the
request, its transport, reading the answer), and the first one imports the provider's SDK
(0.3 s for OpenAI's). On the daemon's event loop every request arriving meanwhile waited for
that. :func:`run` calls and awaits it on this loop instead; the daemon's loop only waits for
the result. One loop serves every client in the process, so that litellm's cached HTTP clients
always belong to the loop that uses them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def _running_loop() -> asyncio.AbstractEventLoop:
    """The LLM loop, started on first use."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="tm-llm-loop", daemon=True).start()
            _loop = loop
    return _loop


async def run(call: Callable[[], Awaitable[T]]) -> T:
    """The result of ``call()``, called and awaited on the LLM loop (none of the call's own
    code runs on the caller's loop). Cancelling the caller cancels it there."""

    async def there() -> T:
        return await call()

    future = asyncio.run_coroutine_threadsafe(there(), _running_loop())
    return await asyncio.wrap_future(future)
