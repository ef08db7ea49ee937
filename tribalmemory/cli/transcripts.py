"""Conversation files for ``tribalmemory ingest`` (pure): read and checked before anything is
sent, every problem reported with its line number.

Formats:

* a JSON object ``{"conversation_id": ..., "messages": [...]}``;
* a JSON list of messages (OpenAI style);

(problems in these two are reported by message number; a damaged one, by the line where the
JSON parser stopped)
* JSON lines, one message a line (blank lines are skipped; each damaged line is reported).

A message is ``{role, content, timestamp?, name?}``; other keys of the OpenAI format
(``tool_call_id``, ``tool_calls``...) are left out, and ``content`` given as a list of parts
keeps its text parts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..shapes.conversations import ROLES

MAX_REPORTED = 20


class TranscriptError(ValueError):
    """What is wrong with a file: one line per problem, each with its line number."""

    def __init__(self, problems: list[str]) -> None:
        shown = problems[:MAX_REPORTED]
        more = len(problems) - len(shown)
        if more:
            shown.append(f"... and {more} more")
        super().__init__("\n".join(shown))
        self.problems = problems


@dataclass(frozen=True)
class Transcript:
    conversation_id: str | None
    messages: list[dict[str, Any]]


def _text(content: Any) -> Any:
    """``content`` as text: a list of OpenAI content parts keeps its text parts."""
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        if len(texts) == len(parts):
            return "\n".join(texts)
    return content


def message(item: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The message ``item`` makes, or what is wrong with it."""
    if not isinstance(item, dict):
        return None, "a message must be an object with role and content"
    role = item.get("role")
    if role not in ROLES:
        given = "missing" if role is None else f"not {role!r}"
        return None, f"role must be one of {', '.join(ROLES)}, {given}"
    content = _text(item.get("content"))
    if content is None and (item.get("tool_calls") or role in ("system", "tool")):
        content = ""  # an assistant's tool call, a message with nothing said: folded
    if not isinstance(content, str):
        return None, "content must be a string (or a list of text parts)"
    out = {"role": role, "content": content}
    for key in ("timestamp", "name"):
        value = item.get(key)
        if value is not None:
            if not isinstance(value, str):
                return None, f"{key} must be a string"
            out[key] = value
    return out, None


def read(text: str) -> Transcript:
    """The conversation in ``text`` (any of the formats above); TranscriptError otherwise.
    A byte order mark at the start (editors on Windows write one) is not part of it."""
    text = text.removeprefix("\ufeff")
    stripped = text.lstrip()
    if not stripped:
        raise TranscriptError(["line 1: the file is empty"])
    if stripped[0] in "[{":
        try:
            whole = json.loads(text)
        except json.JSONDecodeError as exc:
            if stripped[0] == "[" or not _mostly_lines(text):  # one damaged document
                raise TranscriptError([f"line {exc.lineno}: not JSON: {exc.msg}"]) from None
            whole = None  # JSON lines, each an object
        if isinstance(whole, dict) and "messages" in whole:
            return _document(whole)
        if isinstance(whole, list):
            return _listed(whole)
    return _lines(text)


def _mostly_lines(text: str) -> bool:
    """Whether ``text`` (not one JSON document) is JSON lines, some of them damaged: at least
    half of its lines are JSON on their own. The lines of a document written over many lines
    (indented) are not: it is one damaged document, reported where the parser stopped."""
    lines = [line for line in text.splitlines() if line.strip()]
    whole = 0
    for line in lines:
        try:
            json.loads(line)
        except json.JSONDecodeError:
            continue
        whole += 1
    return 2 * whole >= len(lines)


def _document(whole: dict[str, Any]) -> Transcript:
    found = whole.get("conversation_id", whole.get("id"))
    if found is not None and not isinstance(found, str):
        raise TranscriptError(["line 1: conversation_id must be a string"])
    items = whole["messages"]
    if not isinstance(items, list):
        raise TranscriptError(["line 1: messages must be a list"])
    return _listed(items, found)


def _listed(items: list[Any], conversation: str | None = None) -> Transcript:
    """Messages of a JSON list; a problem is reported with the message's number."""
    numbered = ((f"message {number}", item, None) for number, item in enumerate(items, 1))
    return Transcript(conversation, _collected(numbered))


def _lines(text: str) -> Transcript:
    """Messages of JSON lines; a problem is reported with its line's number."""
    return Transcript(None, _collected(_parsed_lines(text)))


def _parsed_lines(text: str) -> Iterator[tuple[str, Any, str | None]]:
    """``(where, item, problem)`` of each non-blank line: its JSON, or why it is none."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line), None
        except json.JSONDecodeError as exc:
            yield f"line {number}", None, f"not JSON: {exc.msg}"


def _collected(entries: Iterable[tuple[str, Any, str | None]]) -> list[dict[str, Any]]:
    """The messages of ``entries`` (``(where, item, problem)``); TranscriptError naming every
    problem (a problem given, or what :func:`message` finds) where it is."""
    out, problems = [], []
    for where, item, problem in entries:
        kept = None
        if problem is None:
            kept, problem = message(item)
        if problem is not None:
            problems.append(f"{where}: {problem}")
        elif kept is not None:
            out.append(kept)
    if problems:
        raise TranscriptError(problems)
    return out
