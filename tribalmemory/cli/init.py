"""``tribalmemory init``: register ``tribalmemory mcp`` in MCP clients' configuration files.

Only the ``tribal-memory`` entry is written; every other entry and setting is kept. Running it
again changes nothing. A file that cannot be parsed is left alone with an error. Each client's
entry names the client (``--source-instance``, :data:`CLIENT_NAMES`): the memories its agent
stores say who stored them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from .. import projects
from ..config import CONFIG_ENV, HOME_ENV, Config, env_file
from ..interfaces.auth import write_atomic
from .output import CliError

NAME = "tribal-memory"
DEFAULT_PROJECT = projects.DEFAULT_PROJECT
CLIENT_NAMES = {"Claude Code": "claude-code", "Codex": "codex", "Claude Desktop": "claude-desktop"}
"""The ``source_instance`` each client's memories are stored with."""


def installed_script() -> Path | None:
    """The ``tribalmemory`` script of this installation (its venv's ``bin``), if there is one."""
    for folder in (Path(sys.prefix) / "bin", Path(sys.executable).parent):
        script = folder / "tribalmemory"
        if script.is_file() and os.access(script, os.X_OK):
            return script.absolute()
    found = shutil.which("tribalmemory")
    return Path(found).absolute() if found else None


def shell_command() -> str:
    """How to type ``tribalmemory`` in a shell: bare when ``PATH`` finds this installation,
    else its full path (``python -m tribalmemory`` without a script)."""
    script = installed_script()
    if script is None:
        return f"{shlex.quote(sys.executable)} -m tribalmemory"
    found = shutil.which("tribalmemory")
    if found and Path(found).resolve() == script.resolve():
        return "tribalmemory"
    return shlex.quote(str(script))


def server_command(
    config_path: str | None, source_instance: str | None = None
) -> tuple[str, list[str]]:
    """The command an MCP client runs: this installation's script, else this Python's ``-m``;
    ``source_instance`` names who stores the memories of that client."""
    extra = ["--config", str(Path(config_path).expanduser().resolve())] if config_path else []
    if source_instance:
        extra += ["--source-instance", source_instance]
    script = installed_script()
    if script:
        return str(script.resolve()), ["mcp", *extra]
    return sys.executable, ["-m", "tribalmemory", "mcp", *extra]


def claude_desktop_path() -> Path:
    if sys.platform == "darwin":
        return (
            Path.home()
            / "Library"
            / "Application Support"
            / "Claude"
            / "claude_desktop_config.json"
        )
    if sys.platform == "win32":
        return (
            Path(os.environ.get("APPDATA", Path.home())) / "Claude" / "claude_desktop_config.json"
        )
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "Claude" / "claude_desktop_config.json"


def codex_path() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"


def _merged(old: Any, entry: dict[str, Any]) -> dict[str, Any]:
    """Our entry over the old one, keeping the user's extra keys (``env``, timeouts...).

    An HTTP registration (with ``url``) is replaced whole: its keys mean nothing for stdio.
    """
    if not isinstance(old, dict) or "url" in old:
        return entry
    merged = {**old, **entry}
    if isinstance(old.get("env"), dict) and isinstance(entry.get("env"), dict):
        merged["env"] = {**old["env"], **entry["env"]}  # the user's variables stay
    return merged


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777 if path.exists() else 0o600


def register_json(path: Path, entry: dict[str, Any]) -> str:
    """Set ``mcpServers["tribal-memory"]`` in a JSON file; 'added', 'updated' or 'unchanged'."""
    data: Any = {}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise CliError(f"{path} is not valid JSON ({exc}); nothing changed") from None
    servers = data.setdefault("mcpServers", {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise CliError(f"{path}: expected an object with an 'mcpServers' object; nothing changed")
    old = servers.get(NAME)
    new = _merged(old, entry)
    if new == old:
        return "unchanged"
    servers[NAME] = new
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", _mode(path))
    return "added" if old is None else "updated"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a valid TOML basic string
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
        )
    raise CliError(f"cannot rewrite a value of type {type(value).__name__}; edit by hand")


HEADER = re.compile(
    r"""^\s*\[\s*mcp_servers\s*\.\s*(tribal-memory|"tribal-memory"|'tribal-memory')
                        \s*[.\]]""",
    re.VERBOSE,
)


def _without_table(text: str) -> str:
    """``text`` without the ``[mcp_servers.tribal-memory]`` table and its sub-tables."""
    kept: list[str] = []
    held: list[str] = []  # comments and blank lines at the end of our table: the next one's
    skipping = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("["):
            skipping = bool(HEADER.match(line))
            kept.extend([] if skipping else held)
            held = []
        if not skipping:
            kept.append(line)
        elif not stripped or stripped.startswith("#"):
            held.append(line)
        else:
            held = []
    return "".join(kept)


def _others(data: dict[str, Any]) -> dict[str, Any]:
    servers = {k: v for k, v in data.get("mcp_servers", {}).items() if k != NAME}
    rest = {k: v for k, v in data.items() if k != "mcp_servers"}
    return rest | ({"mcp_servers": servers} if servers else {})


def register_toml(path: Path, entry: dict[str, Any]) -> str:
    """Set ``[mcp_servers.tribal-memory]`` in Codex's config.toml, keeping everything else."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CliError(f"{path} is not valid TOML ({exc}); nothing changed") from None
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise CliError(f"{path}: expected mcp_servers to be a table; nothing changed")
    old = servers.get(NAME)
    new = _merged(old, entry)
    if new == old:
        return "unchanged"
    kept = _without_table(text).rstrip()
    lines = [f"[mcp_servers.{NAME}]"] + [f"{k} = {_toml_value(v)}" for k, v in new.items()]
    result = (kept + "\n\n" if kept else "") + "\n".join(lines) + "\n"
    try:
        written = tomllib.loads(result)
    except tomllib.TOMLDecodeError:
        written = {}
    if _others(written) != _others(data) or written.get("mcp_servers", {}).get(NAME) != new:
        raise CliError(
            f"{path} defines {NAME} in a form this command cannot edit safely; "
            f"add [mcp_servers.{NAME}] by hand: {json.dumps(new)}"
        )
    write_atomic(path, result, _mode(path))
    return "added" if old is None else "updated"


def project_arguments(pinned: str | None, in_repository: bool) -> tuple[list[str], str]:
    """The ``mcp`` arguments that choose a client's project, and the sentence that says it
    (pure). ``pinned``: ``init --project``; ``in_repository``: the client runs in the
    repository it works on (Claude Code, Codex), else it runs anywhere (Claude Desktop)."""
    if pinned:
        return ["--project", pinned], f"It reads and stores project '{pinned}' only."
    if in_repository:
        return [], (
            "It reads and stores the project of the repository it runs in (its folder's "
            "name); pin one with --project NAME."
        )
    return ["--project", DEFAULT_PROJECT, "--all-projects"], (
        f"It stores into project '{DEFAULT_PROJECT}' and reads every project (it runs outside "
        "any repository); rerun with --claude-desktop --project NAME to read and store one "
        "project only."
    )


def init(args: argparse.Namespace, config: Config) -> int:
    """Register the MCP server in each chosen client, named after it; print what changed and
    the project each one uses."""
    try:
        pinned = None if args.pin_project is None else projects.normalise(args.pin_project)
    except ValueError as exc:
        raise CliError(str(exc), 2) from None

    # what this shell chose, which the client's environment will not have: its configuration
    # file and its data folder go into the entry
    config_file = args.config or os.environ.get(CONFIG_ENV) or None
    home = os.environ.get(HOME_ENV)
    env = {"env": {HOME_ENV: str(Path(home).expanduser().resolve())}} if home else {}

    def entry(label: str, in_repository: bool, **extra: str) -> dict[str, Any]:
        command, arguments = server_command(config_file, CLIENT_NAMES[label])
        chosen, _ = project_arguments(pinned, in_repository)
        return {**extra, "command": command, "args": [*arguments, *chosen], **env}

    targets = [
        (
            "Claude Code",
            args.claude_code,
            Path.home() / ".claude.json",
            entry("Claude Code", True, type="stdio"),
            True,
            register_json,
        ),
        ("Codex", args.codex, codex_path(), entry("Codex", True), True, register_toml),
        (
            "Claude Desktop",
            args.claude_desktop,
            claude_desktop_path(),
            entry("Claude Desktop", False),
            False,
            register_json,
        ),
    ]
    chosen = [t for t in targets if t[1]]
    if not chosen:
        raise CliError("choose at least one client: --claude-code, --codex, --claude-desktop", 2)
    for label, _, path, wanted, in_repository, register in chosen:
        which = project_arguments(pinned, in_repository)[1]
        outcome = register(path, wanted)
        if outcome == "unchanged":
            print(f"{label}: {NAME} already registered in {path}. {which}")
        else:
            shown = " ".join([wanted["command"], *wanted["args"]])
            print(
                f"{label}: {outcome} {NAME} in {path} ({shown}); its memories are stored as "
                f"source_instance {CLIENT_NAMES[label]}. {which}"
            )
    print(
        "Restart the client(s) to load the server. It reaches the daemon (starting it when "
        f"needed) and reads the token from {env_file()}."
    )
    return 0
