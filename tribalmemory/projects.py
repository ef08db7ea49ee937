"""Project names: what a valid one is, and the project a working directory stands for.

A project is a short name (letters, digits, ``-``, ``_``, ``.``; at most 64 characters) kept
lower-case. Every memory and episode belongs to one; ``default`` when none is given. A read
may name :data:`ALL_PROJECTS` (``*``) instead: every project; a write always names one.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

DEFAULT_PROJECT = "default"
MAX_PROJECT_CHARS = 64
PROJECT_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"
ENV_VAR = "TRIBAL_MEMORY_PROJECT"
ALL_PROJECTS = "*"
"""What a read names to span every project (recall, listings, episode search...)."""
SCOPE_PATTERN = r"^(\*|[A-Za-z0-9._-]{1,64})$"
"""What a read's ``project`` may be: a project name or ``*``."""
_VALID = re.compile(PROJECT_PATTERN)
_INVALID_RUN = re.compile(r"[^a-z0-9._-]+")


def normalise(name: str) -> str:
    """``name`` trimmed and lower-cased; ValueError when it is not a valid project name
    (``*`` included: it names no one project, see :func:`scope`)."""
    cleaned = name.strip()
    if cleaned == ALL_PROJECTS:
        raise ValueError(
            f"project {ALL_PROJECTS!r} (all projects) is only for reads of memories and "
            "episodes; a memory or an episode is stored into one project, and entities and "
            "causal links are read one project at a time: name it (e.g. 'default') or leave "
            "it out"
        )
    if not _VALID.match(cleaned) or not cleaned.strip("."):  # '.' and '..' name no project
        raise ValueError(
            f"project {name[:80]!r} is not a valid name: use 1 to {MAX_PROJECT_CHARS} "
            "letters, digits, '-', '_' or '.'"
        )
    return cleaned.lower()


def is_all(name: object) -> bool:
    """Whether ``name`` is :data:`ALL_PROJECTS` (``*``, spaces around it allowed)."""
    return isinstance(name, str) and name.strip() == ALL_PROJECTS


def scope(name: str) -> str:
    """A read's project: :data:`ALL_PROJECTS` as it is, else :func:`normalise`."""
    return ALL_PROJECTS if is_all(name) else normalise(name)


def slug(text: str) -> str:
    """A valid project name made from any text (a folder name): lower-cased, each run of
    other characters replaced by ``-``, cut to 64; ``default`` when nothing is left."""
    name = _INVALID_RUN.sub("-", text.strip().lower()).strip("-.")[:MAX_PROJECT_CHARS]
    name = name.strip("-.")
    return name or DEFAULT_PROJECT


def git_toplevel(folder: Path) -> Path | None:
    """The top-level folder of the git work tree holding ``folder``, or None (no git, or
    not in a repository)."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    top = found.stdout.strip()
    return Path(top) if found.returncode == 0 and top else None


def from_directory(folder: Path) -> str:
    """The project a working directory stands for: its git repository's top-level folder
    name, else the folder's own name (see :func:`slug`)."""
    top = git_toplevel(folder)
    return slug((top or folder).name)


def choose(
    given: str | None, environ: Mapping[str, str], folder: Path, *, reads: bool = False
) -> str:
    """The project of a CLI or stdio MCP call: ``given`` (``--project``), else
    ``TRIBAL_MEMORY_PROJECT``, else the working directory's (:func:`from_directory`).
    ValueError when the one given or set is not a valid name; ``*`` is one for ``reads``."""
    return chosen(given, environ, folder, reads=reads)[0]


def chosen(
    given: str | None, environ: Mapping[str, str], folder: Path, *, reads: bool = False
) -> tuple[str, str]:
    """:func:`choose`'s project and where it comes from, for messages: ``--project``,
    ``$TRIBAL_MEMORY_PROJECT`` or ``the working directory <folder>``."""
    check = scope if reads else normalise
    if given:
        return check(given), "--project"
    if environ.get(ENV_VAR, "").strip():
        return check(environ[ENV_VAR]), f"${ENV_VAR}"
    return from_directory(folder), f"the working directory {folder}"
