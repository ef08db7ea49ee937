"""What the session readers share (pure): a client's JSON lines numbered, and the session a
reader makes of them.

A line that is not JSON (or not a JSON object) is damage: the file is refused, every such
line named by number. The last line of a file that does not end with a line break and is not
JSON is not damage but a line the client is still writing: it is left out (a warning says
so) and read by the next ingest, when the file has grown.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .transcripts import TranscriptError


@dataclass(frozen=True)
class Session:
    """One session file as a conversation: its id, the folder it ran in, the messages
    ``{role, content, timestamp?}`` with the line each comes from, what was skipped
    (warnings, by line) and the lines read."""

    conversation_id: str
    cwd: str | None
    messages: list[dict[str, Any]]
    lines_of: list[int]
    warnings: list[str]
    lines: int


@dataclass
class Builder:
    """A session being read: the messages so far, each with its line."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    lines_of: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, number: int, role: str, content: str, timestamp: Any) -> None:
        message: dict[str, Any] = {"role": role, "content": content}
        if isinstance(timestamp, str) and timestamp:
            message["timestamp"] = timestamp
        self.messages.append(message)
        self.lines_of.append(number)

    def warn(self, number: int, text: str) -> None:
        self.warnings.append(f"line {number}: {text}")


Reader = Callable[[str, str], Session]
"""A client's reader: the text of a session file and its name without ``.jsonl``."""


def records(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str], int]:
    """``(line number, object)`` of each non-blank line of ``text``, the warnings (an
    unfinished last line) and the number of lines read; TranscriptError naming each damaged
    line."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    unfinished = bool(lines) and not text.endswith(("\n", "\r"))
    out: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    warnings: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            if unfinished and number == len(lines):
                warnings.append(
                    f"line {number}: not complete yet (the client is still writing it): "
                    "left for the next ingest"
                )
                return out, warnings, number - 1
            problems.append(f"line {number}: not JSON: {exc.msg}")
            continue
        if not isinstance(item, dict):
            problems.append(f"line {number}: not a JSON object")
            continue
        out.append((number, item))
    if problems:
        raise TranscriptError(problems)
    return out, warnings, len(lines)


def compact(value: Any) -> str:
    """``value`` as short text: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
