"""Requests first: background turns wait for quiet, and are forced under sustained load."""

from __future__ import annotations

import asyncio

from tribalmemory.service.activity import RequestActivity


def test_wait_needed_arithmetic() -> None:
    now = [100.0]
    activity = RequestActivity(quiet=0.05, busy_interval=1.0, clock=lambda: now[0])
    assert activity.wait_needed(now[0]) == 0.0  # nothing ever ran: go
    assert not activity.busy()
    with activity.request():
        assert activity.in_flight == 1 and activity.busy()
        assert activity.wait_needed(now[0]) == 0.0  # no turn given yet: the first is free
        activity._last_turn = now[0]
        assert abs(activity.wait_needed(now[0] + 0.4) - 0.6) < 1e-9  # busy
    now[0] += 0.01
    assert activity.in_flight == 0 and activity.last_end == 100.0
    assert abs(activity.wait_needed(100.02) - 0.98) < 1e-9  # quiet for 0.02 s only: not yet
    assert activity.wait_needed(100.06) == 0.0  # quiet for 0.06 s >= 0.05 s
    now[0] = 100.02
    assert activity.busy()  # a request ended 0.02 s ago
    now[0] = 100.06
    assert not activity.busy()


async def test_background_turn_waits_while_busy_then_is_forced() -> None:
    now = [0.0]
    activity = RequestActivity(quiet=0.001, busy_interval=10.0, clock=lambda: now[0])
    await activity.background_turn()  # idle: granted at once
    assert activity.turns == 1 and activity.forced_turns == 0
    with activity.request():
        task = asyncio.create_task(activity.background_turn())
        for _ in range(20):
            await asyncio.sleep(0.002)
        assert not task.done()  # a request is running and busy_interval has not passed
        now[0] = 10.5
        await asyncio.wait_for(task, 5)
    assert activity.turns == 2 and activity.forced_turns == 1


async def test_a_request_arriving_with_the_wake_up_goes_first() -> None:
    """A request read in the same step of the event loop as a waiting turn's wake-up starts
    before the turn is given: the turn waits for quiet (or the busy interval) again."""
    now = [0.0]
    activity = RequestActivity(quiet=0.001, busy_interval=10.0, clock=lambda: now[0])
    await activity.background_turn()
    now[0] = 5.0  # quiet for long, within the busy interval of the last turn
    arrived = asyncio.Event()
    done = asyncio.Event()

    async def request() -> None:
        with activity.request():
            arrived.set()
            await done.wait()

    turn = asyncio.create_task(activity.background_turn())  # its first step runs first
    running = asyncio.create_task(request())
    await arrived.wait()
    for _ in range(20):
        await asyncio.sleep(0.002)
    assert not turn.done() and activity.turns == 1  # given before: the request would wait
    done.set()
    await running
    now[0] = 5.5  # quiet again (0.5 s >= quiet)
    await asyncio.wait_for(turn, 5)
    assert activity.turns == 2 and activity.forced_turns == 0
