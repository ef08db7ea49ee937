"""Conversations in: a conversation's messages stored as memories, one turn each
(:mod:`.turns`), through the import's page path, so that the episode engine places them in
order and a conversation sent again stores only what is new."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import validation as check
from ..errors import InvalidInput, PayloadTooLarge
from ..models import Memory, SourceType
from ..shapes import IngestConversationRequest
from ..shapes.conversations import (
    MAX_CONVERSATION_ID_CHARS,
    MAX_CONVERSATION_INDEX,
    MAX_MESSAGES,
    ROLES,
    ConversationMessage,
)
from ..shapes.limits import MAX_RUN_CHARS, MAX_SESSION_CHARS, MAX_SOURCE_INSTANCE_CHARS, Range
from ..timeutil import utc_now
from . import turns
from .importing import ImportItem, ImportOperations

PAGE = 256  # turns stored at once, in one durable write (as an import's page)
FIRST_INDEX = Range(0, MAX_CONVERSATION_INDEX, 0)


@dataclass(frozen=True)
class Ingested:
    """What an ingest did (:class:`~tribalmemory.shapes.IngestConversationResult`'s fields)."""

    conversation_id: str
    project: str
    messages: int
    turns: int
    stored: int
    existing: int
    folded: int
    memory_ids: list[str]


def checked_messages(items: Any, first_index: int, max_chars: int) -> list[turns.Message]:
    """The request's messages, checked, each with its position in the conversation and its
    time (a message without one takes the previous message's; the first: now)."""
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_MESSAGES:
        raise InvalidInput(f"messages must be a list of 1 to {MAX_MESSAGES} messages")
    out: list[turns.Message] = []
    when = utc_now()
    for number, item in enumerate(items):
        where = f"messages[{number}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"{where} must be an object with role and content")
        try:
            check.fields(item, ConversationMessage)
            role = item["role"]
            if role not in ROLES:
                raise InvalidInput(f"role must be one of {', '.join(ROLES)}, not {role!r}")
            content = item["content"]
            if not isinstance(content, str):
                raise InvalidInput("content must be a string")
            if content.strip():  # a tool output is cut to what is kept (turns.tool_output)
                limit = len(content) if role == "tool" else max_chars
                check.text("content", content, limit, setting="server.max_content_chars")
            name = check.text("name", item.get("name"), MAX_SOURCE_INSTANCE_CHARS, required=False)
            said = check.memory_time("timestamp", item.get("timestamp"))
        except (InvalidInput, PayloadTooLarge) as exc:
            raise type(exc)(f"{where}: {exc.message}", exc.detail) from None
        when = said or when
        out.append(turns.Message(first_index + number, role, content, when, name))
    return out


class ConversationOperations(ImportOperations):
    """ingest_conversation."""

    async def _embedded(self, page: list[Memory]) -> list[ImportItem]:
        """``page`` with its vectors, ready for :meth:`import_page`."""
        self.check_space([m.content for m in page])
        texts = [m.content for m in page]
        vectors = await (self.embed_bulk(texts) if len(texts) > 1 else self.embed(texts))
        return [ImportItem(m, np.asarray(v)) for m, v in zip(page, vectors, strict=True)]

    async def ingest_conversation(self, request: IngestConversationRequest) -> Ingested:
        """Store a conversation's messages as memories, one per turn (:mod:`.turns`), in
        order, through the write-time hooks (the episode engine places them as if each had
        been remembered then). Idempotent by (project, conversation id, message position):
        the turns stored by an earlier send are left as they are, and only the others are
        embedded and stored."""
        conversation = check.text(
            "conversation_id", request.conversation_id, MAX_CONVERSATION_ID_CHARS
        )
        assert conversation is not None
        conversation = conversation.strip()
        first_index = check.integer("first_index", request.first_index, FIRST_INDEX)
        max_chars = self.config.server.max_content_chars
        messages = checked_messages(request.messages, first_index, max_chars)
        project = check.project(request.project)
        agent = check.text(
            "source_instance", request.source_instance, MAX_SOURCE_INSTANCE_CHARS, required=False
        )
        agent = agent or self.config.memory.default_source_instance
        session = check.text("session", request.session, MAX_SESSION_CHARS, required=False)
        run = check.text("run", request.run, MAX_RUN_CHARS, required=False)
        found, folded = turns.turns_of(messages)
        ids = [turns.turn_id(project, conversation, t.index) for t in found]
        known = {m.id for m in await asyncio.to_thread(self.store.get, ids)}
        new = [(t, i) for t, i in zip(found, ids, strict=True) if i not in known]
        now = utc_now()
        memories = [
            Memory(
                id=memory_id,
                content=turn.text(max_chars),
                source_type=SourceType.AUTO_CAPTURE,
                source_instance=turn.first.name or agent,
                tags=[],
                context=None,
                created_at=turn.first.timestamp,
                updated_at=now,
                metadata=_metadata(conversation, turn, session, run),
                project=project,
            )
            for turn, memory_id in new
        ]
        pages = [memories[start : start + PAGE] for start in range(0, len(memories), PAGE)]

        async def page(number: int) -> list[ImportItem]:
            return await self._embedded(pages[number])

        stored = await self.import_pages(len(pages), page)
        return Ingested(
            conversation_id=conversation,
            project=project,
            messages=len(messages),
            turns=len(found),
            stored=stored,
            existing=len(found) - stored,
            folded=folded,
            memory_ids=ids,
        )


def _metadata(
    conversation: str, turn: turns.Turn, session: str | None, run: str | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "conversation_id": conversation,
        "message_index": turn.index,
        "role": turn.first.role,
    }
    if turn.first.name:
        out["name"] = turn.first.name
    if session:
        out["session"] = session.strip()
    if run:
        out["run"] = run.strip()
    return out
