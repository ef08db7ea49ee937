"""Where Claude Code and Codex keep their session files, which of them belong to a repository,
and which were sent already (the ingest state).

Roots: ``$TRIBAL_CLAUDE_DIR``, else ``$CLAUDE_CONFIG_DIR``, else ``~/.claude`` (sessions under
``projects/``); ``$TRIBAL_CODEX_DIR``, else ``$CODEX_HOME``, else ``~/.codex`` (sessions under
``sessions/``).

The state, ``<data folder>/ingested/<client>.json``, maps each file sent to its size, time of
last change, lines read, conversation id and project; a file whose size and time are those
recorded (for the same project) is not read again.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..datafolder import make_private
from ..storage.integrity import write_json_atomically
from . import codex_sessions

log = logging.getLogger("tribalmemory.cli")

CLIENTS = ("claude-code", "codex")
ROOTS = {
    "claude-code": ("TRIBAL_CLAUDE_DIR", "CLAUDE_CONFIG_DIR", ".claude", "projects"),
    "codex": ("TRIBAL_CODEX_DIR", "CODEX_HOME", ".codex", "sessions"),
}
STATE_FOLDER = "ingested"
STATE_VERSION = 1
SIDE_FOLDERS = frozenset({"subagents", "tool-results"})
CWD_LINES = 50
"""Lines of a Claude Code session read to find its working directory (the first records may
be bookkeeping without one)."""


def sessions_root(client: str, environ: Mapping[str, str], home: Path) -> Path:
    """The folder holding ``client``'s session files."""
    ours, theirs, default, sessions = ROOTS[client]
    given = environ.get(ours, "").strip() or environ.get(theirs, "").strip()
    return (Path(given).expanduser() if given else home / default) / sessions


def claude_folder_names(path: Path) -> set[str]:
    """The names Claude Code may give the project folder of ``path``: every character but
    letters and digits as ``-`` (older releases: only ``/``, ``.``, ``\\`` and ``:``)."""
    text = str(path)
    return {re.sub(r"[^A-Za-z0-9]", "-", text), re.sub(r"[/.\\:]", "-", text)}


def inside(cwd: str | None, repository: Path) -> bool:
    """Whether a session's working directory is ``repository`` or a folder in it."""
    if not cwd:
        return False
    folder = Path(os.path.normpath(cwd))
    return folder == repository or repository in folder.parents


def repository_files(client: str, root: Path, repository: Path) -> list[Path]:
    """The session files of ``repository``: those of Claude Code's project folder of it and of
    its subfolders (a folder named like a subfolder's holds sessions whose ``cwd`` is inside
    the repository), or the Codex rollouts whose ``session_meta`` names a working directory
    inside it."""
    if client == "codex":
        return [p for p in _walk(root, "rollout-*.jsonl") if inside(_first_cwd(p), repository)]
    names = claude_folder_names(repository)
    found: list[Path] = []
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for folder in folders:
        if folder.name in names:
            found += _claude_sessions(folder)
        elif folder.name.startswith(tuple(f"{name}-" for name in names)):
            found += [p for p in _claude_sessions(folder) if inside(_claude_cwd(p), repository)]
    return sorted(set(found))


def given_files(client: str, path: Path) -> list[Path]:
    """The session files PATH names: itself (a file), or those in it (a folder)."""
    if path.is_file():
        return [path]
    if client == "claude-code":
        return sorted(f for folder in [path, *_folders(path)] for f in _claude_sessions(folder))
    return _walk(path, "rollout-*.jsonl")


def _claude_sessions(folder: Path) -> list[Path]:
    """A Claude Code project folder's session files (a sub-agent's ``agent-*.jsonl`` left
    out: it carries its parent's session id)."""
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.glob("*.jsonl") if p.is_file() and not p.name.startswith("agent-")
    )


def _folders(path: Path) -> Iterator[Path]:
    for root, dirs, _ in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in SIDE_FOLDERS)
        for name in dirs:
            yield Path(root, name)


def _walk(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if p.is_file()) if root.is_dir() else []


def _claude_cwd(path: Path, lines: int = CWD_LINES) -> str | None:
    """The working directory a Claude Code session names in its first ``lines`` lines."""
    try:
        with path.open(encoding="utf-8") as handle:
            for _, line in zip(range(lines), handle, strict=False):
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                cwd = record.get("cwd") if isinstance(record, dict) else None
                if isinstance(cwd, str) and cwd:
                    return cwd
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _first_cwd(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as handle:
            return codex_sessions.session_cwd(handle.readline())
    except (OSError, UnicodeDecodeError):
        return None


# -- the state ------------------------------------------------------------------------------


def state_path(data_path: Path, client: str) -> Path:
    return data_path / STATE_FOLDER / f"{client}.json"


def load_state(path: Path) -> dict[str, dict[str, Any]]:
    """The files recorded in ``path``; none when there is no state yet, or (with a WARNING)
    when it cannot be read: every file is then sent again, which stores only what is new."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("cannot read %s (%s): every session file is read and sent again", path, exc)
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        log.warning("%s is not an ingest state: every session file is sent again", path)
        return {}
    return {k: v for k, v in files.items() if isinstance(v, dict)}


def save_state(path: Path, files: dict[str, dict[str, Any]]) -> None:
    make_private(path.parent)
    write_json_atomically(path, {"version": STATE_VERSION, "files": files})


def fingerprint(path: Path) -> dict[str, int]:
    """What says a file changed: its size and time of last change (nanoseconds)."""
    info = path.stat()
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns}


def unchanged(entry: Mapping[str, Any] | None, now: Mapping[str, int], project: str) -> bool:
    """Whether a file recorded as ``entry`` is as it was when it was sent to ``project``."""
    if not entry:
        return False
    same = all(entry.get(key) == value for key, value in now.items())
    return same and entry.get("project") == project
