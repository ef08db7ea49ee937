"""The memory service: remember, recall, get, forget, correct and stats over one store.

Every interface (HTTP, MCP, CLI) reaches these operations through
:class:`~tribalmemory.api.TribalAPI`: remember, recall, list_memories and correct receive their
request shape (:mod:`tribalmemory.shapes`) with the values as the client sent them, and check
each field where they use it. Plugins extend the service through :class:`.hooks.HookRegistry`.

The service is made of one part per job, each in its module:

- :mod:`.state`: the parts every operation shares and the primitives over them (embedding,
  the guarded store write, reads by id, plugin-owned writes);
- :mod:`.remembering`: remember and remember_batch (the write path);
- :mod:`.edits`: correct and forget;
- :mod:`.recall`: recall and list_memories (the read path);
- :mod:`.importing`: an import's pages;
- :mod:`.conversations`: a conversation's messages, a memory per turn (:mod:`.turns`);
- :mod:`.usage`: access statistics (retrievability) read and recorded;
- :mod:`.status`: stats, projects and health.
"""

from __future__ import annotations

from .conversations import ConversationOperations
from .edits import EditOperations
from .recall import RecallOperations
from .sessions import SessionOperations
from .status import StatusOperations
from .usage import AccessOperations


class MemoryService(
    EditOperations,
    RecallOperations,
    ConversationOperations,
    AccessOperations,
    StatusOperations,
    SessionOperations,
):
    """Stores and finds memories; runs the registered write-time hooks."""
