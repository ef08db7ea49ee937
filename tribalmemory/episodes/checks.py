"""What merge and split checks share: a durable job queued when the detector grows an episode
to one of the check sizes (never offline: only an LLM answers them), and the count of waiting
checks in ``/v1/health``."""

from __future__ import annotations

from collections.abc import Sequence

from .budget import Budget
from .events import Grown
from .membership import Membership
from .state import EngineState
from .summariser import Summariser


def reached(old_count: int, new_count: int, sizes: Sequence[int]) -> bool:
    """Did growing an episode from ``old_count`` to ``new_count`` members reach one of
    ``sizes``? (A jump over a size counts once.) Pure."""
    return any(old_count < size <= new_count for size in sizes)


class GrowthChecks:
    """Checks of an episode queued as the detector grows it: the job ``kind``, queued at
    ``sizes``, due ``first_wait()`` seconds later. Subclasses say when they are on and run
    the job."""

    kind = ""
    sizes: tuple[int, ...] = ()

    def __init__(
        self,
        state: EngineState,
        summariser: Summariser,
        membership: Membership,
        budget: Budget,
    ) -> None:
        self.state = state
        self.store = state.store
        self.summariser = summariser
        self.membership = membership
        self.budget = budget
        self._claimed: set[str] = set()  # episodes in a check call now

    def enabled(self) -> bool:
        raise NotImplementedError

    def first_wait(self) -> float:
        """Seconds a newly queued check waits before it runs."""
        return 0.0

    def health(self) -> dict[str, int]:
        return {f"{self.kind}_waiting": self.store.jobs.count(self.kind)}

    def grown(self, event: Grown) -> None:
        """The detector grew an episode (:attr:`.events.Events.grown`): queue its check when it
        reached a check size (unless a check of it already waits: a confirmation is not
        overwritten). Offline (no LLM can be called) nothing is queued: only an LLM answers a
        check."""
        if not self.enabled() or not reached(event.old_count, event.new_count, self.sizes):
            return
        if not self.summariser.possible():
            return
        if self.store.jobs.has(self.kind, event.episode_id):
            return
        with self.store.transaction() as db:
            self.store.jobs.enqueue(db, self.kind, event.episode_id, event.now, self.first_wait())
        self.state.wake()
