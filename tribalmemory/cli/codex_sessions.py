"""Codex's session files (rollouts) as conversations (pure).

Codex writes each session to ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``, one
record a line: ``{"timestamp", "type", "payload"}`` with ``type`` one of ``session_meta``
(``payload.id``: the session id, ``payload.cwd``), ``response_item`` (what the model saw and
said), ``event_msg`` (the same as events for the screen), ``turn_context`` and ``compacted``.
A ``response_item``'s ``payload.type`` is ``message`` (``role``, ``content`` blocks
``input_text`` / ``output_text``), ``function_call`` / ``custom_tool_call`` /
``local_shell_call`` / ``web_search_call``, their outputs, ``reasoning``...

Kept: the text of user and assistant messages; a tool call (``<tool> <arguments>``) and its
output (its text) as ``tool`` messages, which fold into the turn before
(:mod:`tribalmemory.service.turns`). Dropped: ``event_msg``, ``turn_context`` and
``compacted`` records (:data:`BOOKKEEPING`); developer and system messages, and the context
Codex adds as user messages (environment, AGENTS.md instructions: :data:`INJECTED`);
reasoning, images, compaction and snapshot items (:data:`DROPPED_ITEMS`). A record type or
item type not known here is skipped with a warning naming its line: the format grows with
Codex's releases.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .session_lines import Builder, Session, compact, records

CLIENT = "codex"
BOOKKEEPING = frozenset({"event_msg", "turn_context", "compacted", "world_state"})
DROPPED_ITEMS = frozenset(
    {
        "reasoning",
        "compaction",
        "compaction_summary",
        "context_compaction",
        "compaction_trigger",
        "ghost_snapshot",
        "image_generation_call",
        "additional_tools",
        "agent_message",
        "tool_search_output",
        "other",
    }
)
CALLS = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"}
)
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
TEXT_BLOCKS = frozenset({"input_text", "output_text", "text"})
_ID_IN_NAME = re.compile(
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE
)


def read(text: str, stem: str) -> Session:
    """The session in a Codex rollout's ``text`` (its name without ``.jsonl``: ``stem``);
    TranscriptError naming each damaged line."""
    found, warnings, lines = records(text)
    out = Builder(warnings=warnings)
    session_id: str | None = None
    cwd: str | None = None
    for number, record in found:
        kind, payload = record.get("type"), record.get("payload")
        if kind == "session_meta":
            if session_id is None and isinstance(payload, dict):
                given, where = payload.get("id"), payload.get("cwd")
                session_id = given if isinstance(given, str) and given else None
                cwd = where if isinstance(where, str) and where else cwd
        elif kind == "response_item":
            if isinstance(payload, dict):
                _item(out, number, payload, record.get("timestamp"))
            else:
                out.warn(number, "a response_item without a payload: skipped")
        elif kind not in BOOKKEEPING:
            out.warn(number, f"record type {kind!r} is not known here: skipped")
    named = _ID_IN_NAME.search(stem)
    conversation = session_id or (named.group(1) if named else stem)
    return Session(conversation, cwd, out.messages, out.lines_of, out.warnings, lines)


def session_cwd(first_line: str) -> str | None:
    """The working directory a rollout's first line (its ``session_meta``) names, if any."""
    try:
        found, _, _ = records(first_line + "\n")
    except ValueError:
        return None
    for _, record in found:
        payload = record.get("payload")
        if record.get("type") == "session_meta" and isinstance(payload, dict):
            cwd = payload.get("cwd")
            return cwd if isinstance(cwd, str) and cwd else None
    return None


def _item(out: Builder, number: int, item: dict[str, Any], when: Any) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "assistant"):
            return  # developer and system instructions
        text = _text(item.get("content"))
        if role == "user" and text.lstrip().startswith(INJECTED):
            return
        out.add(number, role, text, when)
    elif kind in CALLS:
        out.add(number, "tool", _call(kind, item), when)
    elif kind in OUTPUTS:
        out.add(number, "tool", _output(item.get("output")), when)
    elif kind not in DROPPED_ITEMS:
        out.warn(number, f"response item {kind!r} is not known here: skipped")


def _text(content: Any) -> str:
    """The text blocks of a message's content (images left out)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") in TEXT_BLOCKS]
    return "\n".join(p for p in parts if isinstance(p, str))


def _call(kind: str, item: dict[str, Any]) -> str:
    """A tool call as ``<tool> <arguments>``."""
    if kind == "local_shell_call":
        action = item.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        shown = " ".join(command) if isinstance(command, list) else compact(command or "")
        return f"shell {shown}".strip()
    if kind == "web_search_call":
        action = item.get("action")
        query = action.get("query") if isinstance(action, dict) else None
        return f"web_search {compact(query or '')}".strip()
    name = item.get("name") or kind
    given = item.get("input", item.get("arguments", ""))
    return f"{name} {compact(given)}".strip()


def _output(output: Any) -> str:
    """A tool output's text: a string (a shell's ``{"output": ..., "metadata": ...}`` as its
    output), ``{"content": ...}`` (older rollouts) or a list of content items."""
    if isinstance(output, dict):
        output = output.get("content", output)
    if isinstance(output, list):
        return _text(output)
    if isinstance(output, str) and output.startswith('{"output":'):
        try:
            printed = json.loads(output).get("output")
        except (json.JSONDecodeError, AttributeError):
            printed = None
        if isinstance(printed, str):
            return printed
    return "" if output is None else compact(output)
