"""``tribalmemory ingest --from claude-code|codex [PATH]``: the session files of a client, each
read whole (:mod:`.claude_code_sessions`, :mod:`.codex_sessions`) and sent as one conversation
(the session id) when it changed since the last ingest (:mod:`.session_files`).

Without PATH: the sessions of the working directory's repository (its git top-level folder,
else the folder itself). A damaged file is refused (nothing of it sent; the others are) and
makes the exit code 2; a file is recorded as sent only once all of it is stored.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .. import projects
from ..plural import counted
from ..shapes.conversations import MAX_CONVERSATION_ID_CHARS
from ..timeutil import to_iso, utc_now
from . import claude_code_sessions, codex_sessions, session_files
from .ingest import checked, kept, send
from .output import CliError, clean, print_json
from .session_lines import Reader, Session
from .transcripts import TranscriptError

READERS: dict[str, Reader] = {
    claude_code_sessions.CLIENT: claude_code_sessions.read,
    codex_sessions.CLIENT: codex_sessions.read,
}
COUNTED = ("messages", "turns", "stored", "existing", "folded")


async def run(api: Any, args: argparse.Namespace) -> int:
    client = args.client
    if args.conversation:
        raise CliError("--conversation names one conversation; with --from each session is one", 2)
    if args.file == "-":
        raise CliError("--from reads session files: give a file or folder as PATH, not '-'", 2)
    root = session_files.sessions_root(client, os.environ, Path.home())
    if args.file:
        given = Path(args.file).expanduser()
        if not given.exists():
            raise CliError(f"{args.file}: no such file or folder", 2)
        source, files = str(given), session_files.given_files(client, given)
    else:
        folder = Path.cwd()
        repository = projects.git_toplevel(folder) or folder
        source, files = str(repository), session_files.repository_files(client, root, repository)
    state_file = session_files.state_path(args.data_path, client)
    state = session_files.load_state(state_file)
    reports = []
    for path in files:
        report, entry = await _one(api, args, path, state.get(str(path.absolute())))
        _show(report)
        if entry is not None:
            state[str(path.absolute())] = entry
            session_files.save_state(state_file, state)
        reports.append(report)
    summary = _summary(client, args.project, source, reports)
    if args.json:
        print_json(summary)
    elif not files:
        where = f"in {root}" if not args.file else f"in {source}"
        print(f"No {client} session file of {clean(source)} found ({clean(where)}).")
    else:
        print(_sentence(summary))
    return 2 if summary["refused"] else 0


async def _one(
    api: Any, args: argparse.Namespace, path: Path, recorded: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """What became of one file, and its state entry once it is all stored (else None)."""
    report: dict[str, Any] = {"path": str(path), "conversation_id": None, "warnings": []}
    try:
        now = session_files.fingerprint(path)
        if session_files.unchanged(recorded, now, args.project):
            report["conversation_id"] = (recorded or {}).get("conversation_id")
            return report | {"status": "unchanged"}, None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return report | {"status": "refused", "problems": [f"cannot read it: {exc}"]}, None
    try:
        session = READERS[args.client](text, path.stem)
    except TranscriptError as exc:
        return report | {"status": "refused", "problems": exc.problems}, None
    report["conversation_id"] = session.conversation_id
    if len(session.conversation_id) > MAX_CONVERSATION_ID_CHARS:
        problem = f"its session id is longer than {MAX_CONVERSATION_ID_CHARS} characters"
        return report | {"status": "refused", "problems": [problem]}, None
    messages, cut = _fitted(session, args.max_content_chars)
    report["warnings"] = session.warnings + cut
    entry = now | {
        "lines": session.lines,
        "conversation_id": session.conversation_id,
        "project": args.project,
    }
    if not messages:
        return report | {"status": "empty"}, entry | {"sent_at": to_iso(utc_now())}
    try:
        weights = checked(messages, args, str(path), lambda i: f"line {session.lines_of[i]}")
    except CliError as exc:
        problem = exc.message.partition("nothing was sent: ")[2] or exc.message
        return report | {"status": "refused", "problems": [problem]}, None
    result = await send(
        api,
        args,
        session.conversation_id,
        messages,
        weights,
        session=args.session or session.conversation_id,
        source_instance=args.source_instance or args.client,
    )
    report |= {key: result[key] for key in COUNTED}
    return report | {"status": "sent"}, entry | {"sent_at": to_iso(utc_now())}


def _fitted(session: Session, limit: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The session's messages as sent: a tool output cut to what is kept of it, a message
    longer than server.max_content_chars cut to it (its turn keeps no more), with a warning."""
    out, warnings = [], []
    for message, line in zip(session.messages, session.lines_of, strict=True):
        message = kept(message)
        text = message["content"]
        if len(text) > limit:
            warnings.append(
                f"line {line}: a message of {len(text)} characters cut to "
                f"server.max_content_chars ({limit})"
            )
            message = message | {"content": text[: limit - 1] + "…"}
        out.append(message)
    return out, warnings


def _show(report: dict[str, Any]) -> None:
    """One file's outcome on stderr, and each of its warnings and problems."""
    path, status = clean(report["path"]), report["status"]
    for warning in report["warnings"]:
        print(f"tribalmemory: warning: {path}: {clean(warning)}", file=sys.stderr)
    if status == "sent":
        said = (
            f"{counted(report['messages'], 'message')}, {counted(report['turns'], 'turn')}: "
            f"{report['stored']} stored, {report['existing']} there already"
        )
    elif status == "unchanged":
        said = "unchanged since the last ingest, skipped"
    elif status == "empty":
        said = "nothing said in it (only records that are not kept)"
    else:
        said = "refused, nothing of it was sent:\n  " + "\n  ".join(
            clean(p) for p in report["problems"]
        )
    print(f"{path}: {said}", file=sys.stderr)


def _summary(
    client: str, project: str, source: str, reports: list[dict[str, Any]]
) -> dict[str, Any]:
    summary: dict[str, Any] = {"client": client, "project": project, "source": source}
    for status in ("sent", "unchanged", "empty", "refused"):
        summary[status] = sum(r["status"] == status for r in reports)
    for key in ("turns", "stored", "existing"):
        summary[key] = sum(r.get(key, 0) for r in reports)
    return summary | {"files": reports}


def _sentence(summary: dict[str, Any]) -> str:
    parts = [f"{summary['sent']} sent"]
    if summary["sent"]:
        parts[0] += f" ({summary['stored']} turns stored, {summary['existing']} there already)"
    parts += [f"{summary[k]} {k}" for k in ("unchanged", "empty", "refused") if summary[k]]
    return (
        f"{summary['client']} sessions of {clean(summary['source'])} into project "
        f"'{summary['project']}': {counted(len(summary['files']), 'file')}: " + ", ".join(parts)
    )
