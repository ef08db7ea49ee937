"""Claude Code's session files as conversations (pure).

Claude Code writes each session to ``~/.claude/projects/<folder>/<session id>.jsonl`` (the
folder: the working directory with every character but letters and digits as ``-``), one
record a line: ``{"type": "user" | "assistant", "message": {"role", "content"}, "timestamp",
"sessionId", "cwd", "uuid", ...}`` and bookkeeping records (``summary``, ``system``,
``file-history-snapshot``...). ``content`` is a string or a list of blocks: ``text``,
``thinking``, ``tool_use``, ``tool_result``, ``image``.

Kept: the text of user and assistant messages; a ``tool_use`` block (``<tool> <input as
JSON>``) and a ``tool_result`` block (its text) as ``tool`` messages, which fold into the turn
before (:mod:`tribalmemory.service.turns`); a slash command as ``/name args``, and its output
as a ``tool`` message. Dropped: thinking, images and documents, the bookkeeping records
(:data:`BOOKKEEPING`), records marked ``isMeta`` (text Claude Code adds), ``isSidechain`` (a
sub-agent's conversation) or ``isCompactSummary`` (the summary that continues a compacted
session). A record type or block type not known here is skipped with a warning naming its
line: the format grows with Claude Code's releases.
"""

from __future__ import annotations

import re
from typing import Any

from .session_lines import Builder, Session, compact, records

CLIENT = "claude-code"
BOOKKEEPING = frozenset(
    {
        "summary",
        "system",
        "file-history-snapshot",
        "file-history-delta",
        "attachment",
        "queue-operation",
        "mode",
        "last-prompt",
        "ai-title",
        "custom-title",
        "agent-name",
        "pr-link",
    }
)
"""Record types that are not said by anyone: dropped without a warning."""
DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking", "image", "document"})
SKIPPED_FLAGS = ("isMeta", "isSidechain", "isCompactSummary", "isVisibleInTranscriptOnly")
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_STDOUT = re.compile(r"^\s*<local-command-stdout>(.*?)</local-command-stdout>\s*$", re.S)


def read(text: str, stem: str) -> Session:
    """The session in a Claude Code file's ``text`` (its name without ``.jsonl``: ``stem``);
    TranscriptError naming each damaged line."""
    found, warnings, lines = records(text)
    out = Builder(warnings=warnings)
    ids: list[str] = []
    cwd: str | None = None
    for number, record in found:
        session_id, where = record.get("sessionId"), record.get("cwd")
        if isinstance(session_id, str) and session_id and session_id not in ids:
            ids.append(session_id)
        if cwd is None and isinstance(where, str) and where:
            cwd = where
        kind = record.get("type")
        if kind in ("user", "assistant"):
            if not any(record.get(flag) is True for flag in SKIPPED_FLAGS):
                _said(out, number, kind, record)
        elif kind not in BOOKKEEPING:
            out.warn(number, f"record type {kind!r} is not known here: skipped")
    conversation = stem if stem in ids or not ids else ids[0]
    return Session(conversation, cwd, out.messages, out.lines_of, out.warnings, lines)


def _said(out: Builder, number: int, kind: str, record: dict[str, Any]) -> None:
    """The messages of one user or assistant record."""
    message = record.get("message")
    if not isinstance(message, dict):
        out.warn(number, f"a {kind} record without a message: skipped")
        return
    given = message.get("role")
    role = given if given in ("user", "assistant") else kind
    when = record.get("timestamp")
    content = message.get("content")
    if isinstance(content, str):
        _text(out, number, role, content, when)
        return
    if not isinstance(content, list):
        out.warn(number, f"a {kind} message whose content is neither text nor blocks: skipped")
        return
    texts: list[str] = []
    for block in content:
        kind_of = block.get("type") if isinstance(block, dict) else None
        if kind_of == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
            continue
        if texts:  # the text before a tool call is said before it
            _text(out, number, role, "\n".join(texts), when)
            texts = []
        if kind_of == "tool_use":
            call = f"{block.get('name') or 'tool'} {compact(block.get('input', {}))}"
            out.add(number, "tool", call.strip(), when)
        elif kind_of == "tool_result":
            out.add(number, "tool", _result(block.get("content")), when)
        elif kind_of not in DROPPED_BLOCKS:
            out.warn(number, f"content block {kind_of!r} is not known here: skipped")
    if texts:
        _text(out, number, role, "\n".join(texts), when)


def _text(out: Builder, number: int, role: str, text: str, when: Any) -> None:
    """A message's text; a slash command as ``/name args``, its output as a tool message."""
    printed = _STDOUT.match(text)
    if printed:
        out.add(number, "tool", printed.group(1).strip(), when)
        return
    if text.lstrip().startswith("<local-command-caveat>"):
        return  # fixed text Claude Code adds before a command's output
    command = _COMMAND.search(text)
    if command and role == "user":
        given = _ARGS.search(text)
        text = f"{command.group(1).strip()} {given.group(1).strip() if given else ''}".strip()
    out.add(number, role, text, when)


def _result(content: Any) -> str:
    """A tool result's text: a string, or the text blocks of a list (images left out)."""
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return "" if content is None else compact(content)
