"""A conversation's messages as turns, each turn one memory (pure).

The rules (docs/http.md, *Conversations*):

* a ``system`` message and an empty one make no turn;
* a ``tool`` message is added to the turn before it, as ``[tool] <output>``; only the first
  :data:`TOOL_CHARS` characters of a tool output are kept (:func:`tool_output`), so it may be
  longer than server.max_content_chars (with no turn before it, it is a turn of its own);
* an acknowledgement (``ok``, ``thanks!``, ``sounds good``: at most :data:`ACK_WORDS` words,
  all of them in :data:`ACKNOWLEDGEMENTS`) is added to the turn before it (with none before
  it, it makes no turn);
* every other message is a turn: ``"<name or role>: <content>"``.

A long conversation sent in pages (``first_index``) is cut where a turn starts
(:func:`pages`), so that it makes the same turns as sent whole.

A turn's id is derived from the project, the conversation id and the position of its first
message (:func:`turn_id`), so the same conversation sent again finds its turns stored. A turn
stored once is not changed: a tool message or an acknowledgement that arrives in a later send
after a stored turn is not added to it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..shapes.conversations import TOOL_CHARS

ACK_WORDS = 3
ACKNOWLEDGEMENTS = frozenset(
    "ok okay k kk yes yep yeah sure thanks thank you thx ty great cool nice perfect good "
    "sounds done got it will do alright right fine agreed lgtm np cheers".split()
)
ACK_PHRASES = frozenset({"no problem", "no worries"})
TURN_IDS = uuid.UUID("1f7a9a52-5b1e-4c8f-9d3e-7c2b6a0e4d11")
_WORDS = re.compile(r"[a-z']+")


@dataclass(frozen=True)
class Message:
    """One checked message: its position in the conversation, role, text, time, speaker."""

    index: int
    role: str
    content: str
    timestamp: datetime
    name: str | None = None


@dataclass
class Turn:
    """A memory to be: the message it starts with, and the text of the messages in it."""

    first: Message
    parts: list[str] = field(default_factory=list)

    @property
    def index(self) -> int:
        return self.first.index

    def text(self, max_chars: int) -> str:
        """The turn's text, at most ``max_chars`` characters (what was folded in is cut)."""
        joined = "\n".join(self.parts)
        return joined if len(joined) <= max_chars else joined[: max_chars - 1] + "…"


def tool_output(content: str) -> str:
    """What is kept of a tool message's content: its first :data:`TOOL_CHARS` characters
    (stripped; cut with an ellipsis). Cutting again changes nothing."""
    text = content.strip()
    return text if len(text) <= TOOL_CHARS else text[: TOOL_CHARS - 1] + "…"


def speaker(message: Message) -> str:
    return message.name or message.role


def is_acknowledgement(text: str) -> bool:
    """A short message that carries nothing but assent or thanks."""
    words = _WORDS.findall(text.lower())
    if " ".join(words) in ACK_PHRASES:
        return True
    return 0 < len(words) <= ACK_WORDS and all(w in ACKNOWLEDGEMENTS for w in words)


def starts_turn(role: str, content: str) -> bool:
    """Whether a message is a turn of its own wherever it stands (it folds into nothing): said
    by the user or the assistant, not empty, not an acknowledgement."""
    text = content.strip()
    return role in ("user", "assistant") and bool(text) and not is_acknowledgement(text)


def pages(
    starts: Sequence[bool],
    size: int,
    weights: Sequence[int] | None = None,
    budget: int | None = None,
) -> list[range]:
    """A conversation's messages cut into pages of at most ``size`` each (and, ``weights``
    given, of at most ``budget`` of their total weight: a request's bytes; a message heavier
    than that is a page of its own), every page but the first beginning with a message that
    starts a turn (``starts[i]``: :func:`starts_turn` of message ``i``), as late as
    possible: a tool output or an acknowledgement at a page's start would have no turn
    before it in its request. Only a run of messages of which none starts a turn, too long
    for one page, is cut where it must."""
    out: list[range] = []
    start, total = 0, len(starts)
    while start < total:
        end, used = start + 1, weights[start] if weights else 0
        while end < total and end - start < size:
            if weights and budget is not None and used + weights[end] > budget:
                break
            used += weights[end] if weights else 0
            end += 1
        if end < total:
            end = next((i for i in range(end, start, -1) if starts[i]), end)
        out.append(range(start, end))
        start = end
    return out


def turns_of(messages: list[Message]) -> tuple[list[Turn], int]:
    """The turns ``messages`` make (see the module docstring), and how many messages made
    no turn of their own."""
    turns: list[Turn] = []
    folded = 0
    for message in messages:
        text = message.content.strip()
        before = turns[-1] if turns else None
        if message.role == "system" or not text:
            folded += 1
        elif message.role == "tool":
            if before is None:
                turns.append(Turn(message, [f"{speaker(message)}: {tool_output(text)}"]))
                continue
            before.parts.append(f"[tool] {tool_output(text)}")
            folded += 1
        elif is_acknowledgement(text):
            if before is not None:
                before.parts.append(f"{speaker(message)}: {text}")
            folded += 1
        else:
            turns.append(Turn(message, [f"{speaker(message)}: {text}"]))
    return turns, folded


def turn_id(project: str, conversation_id: str, index: int) -> str:
    """The memory id of the turn that starts at message ``index`` of the conversation."""
    return str(uuid.uuid5(TURN_IDS, f"{project}\x1f{conversation_id}\x1f{index}"))
