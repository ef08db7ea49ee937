"""litellm's requests run on an event loop of their own thread (tribalmemory.llm.loop)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tribalmemory.llm import loop as llm_loop


async def test_a_call_is_made_and_awaited_on_the_llm_loop() -> None:
    here = threading.current_thread()
    seen: list[threading.Thread] = []

    def call() -> asyncio.Future[str]:
        seen.append(threading.current_thread())  # the call itself, not only its awaiting

        async def answer() -> str:
            seen.append(threading.current_thread())
            await asyncio.sleep(0)
            return "ok"

        return asyncio.ensure_future(answer())

    assert await llm_loop.run(call) == "ok"
    assert len(seen) == 2 and seen[0] is seen[1] and seen[0] is not here
    assert seen[0].name == "tm-llm-loop"
    second: list[threading.Thread] = []

    async def again() -> None:
        second.append(threading.current_thread())

    await llm_loop.run(again)
    assert second == [seen[0]]  # one loop for every call in the process


async def test_cancelling_the_caller_cancels_the_call_there() -> None:
    started = threading.Event()
    cancelled = threading.Event()

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.create_task(llm_loop.run(slow))
    assert await asyncio.to_thread(started.wait, 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(cancelled.wait, 30)


async def test_an_error_reaches_the_caller() -> None:
    async def failing() -> None:
        raise ValueError("provider said no")

    with pytest.raises(ValueError, match="provider said no"):
        await llm_loop.run(failing)
