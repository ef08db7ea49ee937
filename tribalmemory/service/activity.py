"""Requests first: background work waits for a quiet moment before it uses the CPU.

Background work (episode summaries: an extractive summary and the embedding of a long text)
runs on the same cores as the requests; started in the middle of a burst of requests, it slows
them down. :class:`RequestActivity` counts the requests in flight. Background code awaits
:meth:`RequestActivity.background_turn` before its CPU-heavy part: a turn is given as soon as
no request has run for ``quiet`` seconds, and under sustained load one turn per
``busy_interval`` seconds is given anyway, so background work always progresses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

QUIET_SECONDS = 0.05
BUSY_INTERVAL = 1.0


class RequestActivity:
    """Requests in flight, and the turns given to background work between them."""

    def __init__(
        self,
        quiet: float = QUIET_SECONDS,
        busy_interval: float = BUSY_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet
        self.busy_interval = busy_interval
        self.clock = clock
        self.in_flight = 0
        self.last_end = float("-inf")
        self.turns = 0
        self.forced_turns = 0  # turns given during load, after waiting busy_interval
        self._last_turn = float("-inf")
        self._turn_lock: asyncio.Lock | None = None

    @contextmanager
    def request(self) -> Iterator[None]:
        """Mark one request as running for the duration of the block."""
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self.last_end = self.clock()

    def quiet_now(self, now: float) -> bool:
        return self.in_flight == 0 and now - self.last_end >= self.quiet

    def busy(self) -> bool:
        """A request is running, or one ended less than ``quiet`` seconds ago."""
        return not self.quiet_now(self.clock())

    def wait_needed(self, now: float) -> float:
        """Seconds background work should still wait at ``now``; 0 means go."""
        if self.quiet_now(now):
            return 0.0
        return max(0.0, self._last_turn + self.busy_interval - now)

    async def background_turn(self) -> None:
        """Wait until background work may use the CPU; turns are given one at a time.

        Checks every ``quiet`` seconds rather than on each request's end, so that waiting
        costs the requests nothing, and once more after a step of the event loop before it
        gives the turn, so that a request arriving with the wake-up goes first.
        """
        if self._turn_lock is None:
            self._turn_lock = asyncio.Lock()
        async with self._turn_lock:
            while True:
                while (wait := self.wait_needed(self.clock())) > 0:
                    await asyncio.sleep(min(wait, self.quiet))
                # Look again one step of the event loop later: a request read in the same
                # step as this wake-up has not started yet (its first step is queued behind
                # ours); given now, the turn would make it wait for the background work.
                await asyncio.sleep(0)
                if self.wait_needed(self.clock()) == 0:
                    break
            now = self.clock()
            if not self.quiet_now(now):
                self.forced_turns += 1
            self.turns += 1
            self._last_turn = now
