"""Conversations: a conversation's messages stored as memories, one turn each."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Request, Response
from .fields import WHEN, MemoryId, ProjectName, Timestamp
from .limits import MAX_RUN_CHARS, MAX_SESSION_CHARS, MAX_SOURCE_INSTANCE_CHARS

MAX_MESSAGES = 1000
"""Messages in one request; a longer conversation is sent in pages (``first_index``)."""
MAX_CONVERSATION_ID_CHARS = 200
MAX_CONVERSATION_INDEX = 10_000_000
TOOL_CHARS = 500
"""What is kept of a tool message's output: its first characters (the rest is not stored)."""

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")


class ConversationMessage(Request):
    role: Role = Field(description="user, assistant, system or tool.")
    content: str = Field(
        description="What was said. At most server.max_content_chars characters; a tool "
        f"output may be longer: its first {TOOL_CHARS} characters are kept."
    )
    timestamp: Timestamp | None = Field(
        None,
        description=f"When it was said: {WHEN}; default the previous message's time (the "
        "first message's: now).",
    )
    name: str | None = Field(
        None,
        max_length=MAX_SOURCE_INSTANCE_CHARS,
        description="Who said it (a person or an agent); stored as the memory's "
        "source_instance and written before the text.",
    )


class IngestConversationRequest(Request):
    conversation_id: str = Field(
        max_length=MAX_CONVERSATION_ID_CHARS,
        description="A stable id of the conversation (e.g. a session or thread id): sending "
        "the conversation again stores only the messages not stored yet.",
    )
    messages: list[ConversationMessage] = Field(
        min_length=1,
        max_length=MAX_MESSAGES,
        description=f"1 to {MAX_MESSAGES} messages in the order they were said; a longer "
        "conversation is sent in pages (first_index).",
    )
    first_index: int = Field(
        0,
        ge=0,
        le=MAX_CONVERSATION_INDEX,
        description="The position of the first of these messages in the whole conversation "
        "(0 unless the conversation is sent in pages).",
    )
    project: ProjectName | None = Field(
        None, description="The project its memories belong to; default 'default'."
    )
    source_instance: str | None = Field(
        None,
        max_length=MAX_SOURCE_INSTANCE_CHARS,
        description="The agent the conversation is with: the source_instance of messages "
        "without a name; default: memory.default_source_instance.",
    )
    session: str | None = Field(
        None,
        max_length=MAX_SESSION_CHARS,
        description="The client session it belongs to, kept in each memory's metadata.",
    )
    run: str | None = Field(
        None,
        max_length=MAX_RUN_CHARS,
        description="The run it belongs to (a CI job, one invocation of an agent), kept in "
        "each memory's metadata.run.",
    )


class IngestConversationResult(Response):
    conversation_id: str
    project: str
    messages: int = Field(description="Messages received.")
    turns: int = Field(description="Memories the messages make (after folding).")
    stored: int = Field(description="Turns stored now.")
    existing: int = Field(description="Turns stored by an earlier send: left as they were.")
    folded: int = Field(
        description="Messages that made no turn of their own: system messages, empty ones, "
        "tool output and acknowledgements folded into the turn before."
    )
    memory_ids: list[MemoryId] = Field(description="Each turn's memory, in order.")
