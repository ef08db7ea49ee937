"""Sittings: the turns of one conversation said close together are one episode.

A memory whose ``metadata.conversation_id`` names a conversation (``POST /v1/conversations``
stores one per turn) and that follows the conversation's previous turn by at most
:data:`SITTING_GAP_SECONDS` (memory time) goes where that turn went: into its episode, or
into a new episode with it when it was a seed. A turn after a longer pause starts a new
sitting: it is a seed, and the turns after it join it (the episode may be chained to the
sitting before, as any new episode). The first turn of a conversation is decided as any
memory. Chit-chat that changes the subject mid-sitting stays in it; the detector alone cut a
sitting into about two episodes, and with a sitting's turns kept together but its first turn
decided by the detector, sittings days apart joined one episode (docs/benchmarks.md,
*Conversations in*). Each conversation's latest turn and the sitting episodes are kept in the
episode database (``conversations`` and ``sittings`` tables), so a restart changes nothing.
"""

from __future__ import annotations

from ..models import Memory
from ..timeutil import to_epoch
from .matching import MemoryFeatures, Placement
from .state import EngineState

SITTING_GAP_SECONDS = 3600.0
"""Turns at most an hour apart are one sitting."""


def conversation_of(memory: Memory) -> str | None:
    found = memory.metadata.get("conversation_id")
    return found if isinstance(found, str) and found else None


class Sittings:
    """Where the next turn of each conversation goes (see the module docstring)."""

    def __init__(self, state: EngineState) -> None:
        self.state = state

    def is_sitting(self, episode_id: str) -> bool:
        """Whether a conversation's turns are in ``episode_id``: a sitting, which a resumption
        check (:mod:`.resumption`) does not merge into the sitting before, as it would merge
        two episodes of one thread taken up after a pause that name the same people."""
        return self.state.store.conversations.is_sitting(episode_id)

    def placement(self, memory: Memory, features: MemoryFeatures) -> Placement | None:
        """Where ``memory`` goes as the next turn of its sitting; None: decided as any memory."""
        conversation = conversation_of(memory)
        if conversation is None:
            return None
        state = self.state
        before = state.store.conversations.latest(memory.project, conversation)
        if before is None:
            return None
        previous, said = before
        gap = to_epoch(memory.created_at) - said
        if gap > SITTING_GAP_SECONDS:
            return Placement.new_seed()  # a new sitting starts a thread of its own
        if gap < 0.0:
            return None  # said before the latest turn (a page sent again, out of order)
        episode = state.store.memberships.episode_of(previous)
        if episode is not None and episode in state.active:
            similarity = float(state.active[episode].centroid @ features.vector)
            return Placement(kind="join", target=episode, score=1.0, similarity=similarity)
        seed = state.seeds.get(previous)
        if seed is not None:
            similarity = float(seed.vector @ features.vector)
            return Placement(kind="seed", target=previous, score=1.0, similarity=similarity)
        return None

    def placed(self, memory: Memory) -> None:
        """Keep ``memory`` as its conversation's latest turn (unless a later one is kept), and
        its episode as a sitting."""
        conversation = conversation_of(memory)
        if conversation is None:
            return
        store = self.state.store
        episode = store.memberships.episode_of(memory.id)
        with store.transaction() as db:
            if episode is not None:
                store.conversations.mark_sitting(db, episode)
            store.conversations.record_turn(
                db, memory.project, conversation, memory.id, to_epoch(memory.created_at)
            )
