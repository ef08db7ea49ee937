"""``tribalmemory ingest FILE``: a conversation file (:mod:`.transcripts`) checked whole, then
sent in pages to ``ingest_conversation``, with a progress bar on a terminal."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, PayloadTooLarge
from ..plural import counted
from ..portability import progress
from ..service import turns
from ..service.conversations import checked_messages
from ..shapes.conversations import MAX_MESSAGES
from .output import CliError, print_json
from .transcripts import TranscriptError, read

# Messages a request at most, and at most half of server.max_body_bytes of them; a page ends
# where a turn starts (turns.pages).
PAGE = 500


def _text(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {source}: {exc}", 2) from None


async def run(api: Any, args: argparse.Namespace) -> int:
    """Check every message (as the server will), then send the pages in order; sums the
    answers. Nothing is sent when any message is wrong. (``--from``: :mod:`.ingest_from`.)"""
    if not args.file:
        raise CliError("give FILE ('-' reads standard input), or --from claude-code|codex", 2)
    try:
        transcript = read(_text(args.file))
    except TranscriptError as exc:
        raise CliError(f"{args.file}: nothing was sent:\n{exc}", 2) from None
    conversation = args.conversation or transcript.conversation_id
    if not conversation:
        raise CliError(
            f"{args.file} names no conversation: give --conversation ID (a stable id: "
            "sending it again stores only what is new)",
            2,
        )
    messages = [kept(m) for m in transcript.messages]
    if not messages:
        raise CliError(f"{args.file}: no message in it", 2)
    weights = checked(messages, args, args.file)
    result = await send(api, args, conversation, messages, weights)
    if args.json:
        print_json(result)
    else:
        print(
            f"Conversation {result['conversation_id']}: {counted(result['messages'], 'message')}, "
            f"{counted(result['turns'], 'turn')}: {result['stored']} stored, {result['existing']} "
            f"there already; {counted(result['folded'], 'message')} folded into the turn before"
        )
    return 0


def checked(
    messages: list[dict[str, Any]],
    args: argparse.Namespace,
    source: str,
    where: Callable[[int], str] | None = None,
) -> list[int]:
    """Each message's size in a request; CliError (nothing sent) naming the first message the
    server would refuse (``where(i)``: how to name message ``i``, default its number)."""
    limit = args.max_content_chars
    for start in range(0, len(messages), MAX_MESSAGES):  # the server's checks, on every page
        try:
            checked_messages(messages[start : start + MAX_MESSAGES], start, limit)
        except (InvalidInput, PayloadTooLarge) as exc:
            problem = _numbered(exc.message, start, where)
            raise CliError(f"{source}: nothing was sent: {problem}", 2) from None
    weights = [_bytes(m) for m in messages]
    budget = args.max_body_bytes // 2  # the rest: room for the request's other fields
    for number, weight in enumerate(weights, 1):
        if weight > budget:
            named = where(number - 1) if where else f"message {number}"
            raise CliError(
                f"{source}: nothing was sent: {named} is {weight} bytes as JSON, "
                f"more than a request can carry (half of server.max_body_bytes, "
                f"{args.max_body_bytes})",
                2,
            )
    return weights


async def send(
    api: Any,
    args: argparse.Namespace,
    conversation: str,
    messages: list[dict[str, Any]],
    weights: list[int],
    session: str | None = None,
    source_instance: str | None = None,
) -> dict[str, Any]:
    """Send checked ``messages`` in pages (a progress bar on a terminal); the answers summed."""
    totals: dict[str, Any] = {"messages": 0, "turns": 0, "stored": 0, "existing": 0}
    totals |= {"folded": 0, "memory_ids": []}
    answer: dict[str, Any] = {}
    budget = args.max_body_bytes // 2
    with progress.bar("Ingesting", len(messages), progress.wanted(args.json)) as advance:
        starts = [turns.starts_turn(m["role"], m["content"]) for m in messages]
        for cut in turns.pages(starts, PAGE, weights, budget):
            page = _dated(messages, cut.start, cut.stop)
            answer = await api.ingest_conversation(
                conversation_id=conversation,
                messages=page,
                first_index=cut.start,
                project=args.project,
                source_instance=source_instance or args.source_instance,
                session=session or args.session,
                run=args.run,
            )
            for key in ("messages", "turns", "stored", "existing", "folded"):
                totals[key] += answer[key]
            totals["memory_ids"] += answer["memory_ids"]
            advance(len(page))
    result = {"conversation_id": answer["conversation_id"], "project": answer["project"]}
    return result | totals


def kept(message: dict[str, Any]) -> dict[str, Any]:
    """A tool message with only what the server keeps of its output (turns.tool_output):
    an agent's tool output (a file read, a log) need not travel."""
    if message["role"] != "tool":
        return message
    return message | {"content": turns.tool_output(message["content"])}


def _bytes(message: dict[str, Any]) -> int:
    """A message's size in a request body (UTF-8 JSON, as the client sends it), with its comma."""
    return len(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()) + 1


def _dated(messages: list[dict[str, Any]], start: int, stop: int) -> list[dict[str, Any]]:
    """``messages[start:stop]``, the first of them given the time of the last message before
    it that has one when it has none (as it would take sent in one request, not now)."""
    page = messages[start:stop]
    if page and "timestamp" not in page[0]:
        before = (messages[i] for i in range(start - 1, -1, -1))
        said = next((m["timestamp"] for m in before if "timestamp" in m), None)
        if said is not None:
            page[0] = page[0] | {"timestamp": said}
    return page


def _numbered(message: str, start: int, where: Callable[[int], str] | None = None) -> str:
    """The server's ``messages[i]: ...`` as the file's message number (or ``where(i)``)."""
    head, sep, rest = message.partition("]: ")
    if sep and head.startswith("messages["):
        index = start + int(head.removeprefix("messages["))
        return f"{where(index) if where else f'message {index + 1}'}: {rest}"
    return message
