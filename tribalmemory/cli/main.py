"""``tribalmemory``: the command line (argparse).

Exit codes: 0 ok, 1 failed, 2 usage/config, 3 (``status`` only) no daemon is running.

Memory and episode commands talk to the daemon of their data folder when it answers on the
configured port, else open the store for the one command. ``--json`` prints the API's JSON
instead of text. Every file the command (or the daemon) creates is private (umask 077).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from .. import __version__
from ..config import Config, ConfigError, data_dir_of, load_config, load_env
from .output import CliError, clean

log = logging.getLogger("tribalmemory.cli")

Handler = Callable[[argparse.Namespace, Config], int]


def _api(name: str) -> Handler:
    """A handler that runs ``commands.<name>`` with a daemon client or a local runtime."""

    def handler(args: argparse.Namespace, config: Config) -> int:
        from . import commands

        command: Any
        if name == "episodes":
            command = commands.EPISODE_ACTIONS[args.action]
        else:
            command = getattr(commands, name)
        return asyncio.run(commands.with_api(config, command, args))

    return handler


def _ingest(args: argparse.Namespace, config: Config) -> int:
    """``ingest``: the file (or, ``--from``, the session files) checked with the
    configuration's limits, then sent."""
    from . import commands, ingest, ingest_from

    args.max_content_chars = config.server.max_content_chars
    args.max_body_bytes = config.server.max_body_bytes
    args.data_path = config.data_path  # where --from records the files it sent
    command = ingest_from.run if args.client else ingest.run
    return asyncio.run(commands.with_api(config, command, args))


def _lazy(module: str, name: str) -> Handler:
    def handler(args: argparse.Namespace, config: Config) -> int:
        from importlib import import_module

        result: int = getattr(import_module(f"tribalmemory.cli.{module}"), name)(args, config)
        return result

    return handler


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text)


def _project_option(parser: argparse.ArgumentParser, reads: bool) -> None:
    """``--project``: of what a command stores or changes, or (``reads``) of what it reads."""
    which = "the project, '*' for all" if reads else "the project"
    parser.add_argument(
        "--project",
        metavar="NAME",
        default=None,
        help=f"{which} (default: $TRIBAL_MEMORY_PROJECT, else the git repository's or "
        "folder's name of the working directory)",
    )


def build_parser() -> argparse.ArgumentParser:
    from .. import shapes
    from .fields import add_fields

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="configuration file (default: $TRIBAL_MEMORY_CONFIG, else "
        "~/.tribal-memory/config.yaml)",
    )
    output = argparse.ArgumentParser(add_help=False, parents=[common])
    output.add_argument("--json", action="store_true", help="print JSON")
    scoped = argparse.ArgumentParser(add_help=False, parents=[output])
    _project_option(scoped, reads=False)
    reads = argparse.ArgumentParser(add_help=False, parents=[output])
    _project_option(reads, reads=True)
    reads.add_argument(
        "--all-projects",
        action="store_true",
        help="every project (the same as --project '*')",
    )
    reads.set_defaults(project_reads=True)

    parser = argparse.ArgumentParser(
        prog="tribalmemory", description="Shared memory for AI agents."
    )
    parser.add_argument("--version", action="version", version=f"tribalmemory {__version__}")
    parser.add_argument("--config", metavar="PATH", default=None, help=argparse.SUPPRESS)
    parser.set_defaults(handler=None)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    def add(
        name: str, handler: Handler, text: str, parents: list[Any] | None = None
    ) -> argparse.ArgumentParser:
        command = sub.add_parser(
            name, help=text, description=text, parents=parents if parents is not None else [output]
        )
        command.set_defaults(handler=handler)
        return command

    serve = add("serve", _lazy("service", "serve"), "run the daemon (REST + MCP)", [common])
    serve.set_defaults(logs_deprecations=True)
    serve.add_argument("--host", help="address to bind (default: server.host)")
    serve.add_argument("--port", type=_port, help="TCP port (default: server.port)")
    serve.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    serve.add_argument(
        "--background",
        action="store_true",
        help="log to the log file only (used when started by a client)",
    )

    cmd = add("remember", _api("remember"), "store a memory", [scoped])
    cmd.add_argument("text", help="the memory; '-' reads standard input")
    cmd.add_argument("--tag", action="append", help="a tag (repeatable)")
    cmd.add_argument("--source-type", help="USER_EXPLICIT (default), AUTO_CAPTURE, ...")
    cmd.add_argument("--source-instance", help="who stores it (default: memory config)")
    cmd.add_argument("--context", help="where it came from")
    cmd.add_argument(
        "--created-at",
        metavar="TIME",
        help="when it was learned (ISO 8601, e.g. 2026-03-02T14:05:00Z; default now; at most "
        "5 minutes ahead)",
    )
    cmd.add_argument("--force", action="store_true", help="store even a near-duplicate")
    cmd.add_argument("--shared", action="store_true", help="every project sees it")
    add_fields(cmd, shapes.RememberRequest)

    cmd = add("recall", _api("recall"), "search memories", [reads])
    cmd.add_argument("query")
    cmd.add_argument("--limit", type=_positive, help="results (1-50, default 5)")
    cmd.add_argument("--tag", action="append", help="only memories with this tag (repeatable)")
    cmd.add_argument(
        "--include-superseded",
        action="store_true",
        help="also show memories a correction superseded",
    )
    add_fields(cmd, shapes.RecallRequest)

    cmd = add("forget", _api("forget"), "delete a memory")
    cmd.add_argument("id", help="memory id")

    cmd = add("used", _api("used"), "record that a recalled memory was used (retrievability)")
    cmd.add_argument("id", help="memory id")

    cmd = add("correct", _api("correct"), "replace a wrong or outdated memory by a correction")
    cmd.add_argument("id", help="id of the memory to correct")
    cmd.add_argument("text", help="the corrected memory; '-' reads standard input")
    cmd.add_argument("--tag", action="append", help="a tag (default: the old memory's tags)")
    cmd.add_argument("--source-instance", help="who stores it (default: memory config)")
    cmd.add_argument("--context", help="where it came from")
    add_fields(cmd, shapes.CorrectRequest)

    cmd = add("ingest", _ingest, "store a conversation file, a memory per turn", [scoped])
    cmd.add_argument(
        "file",
        nargs="?",
        metavar="FILE|PATH",
        help="a JSON object {conversation_id, messages}, a JSON list of messages or JSON lines "
        "of messages ({role, content, timestamp?, name?}); '-' reads standard input. With "
        "--from: a session file or a folder of them (default: the sessions of the working "
        "directory's repository)",
    )
    cmd.add_argument(
        "--from",
        dest="client",
        choices=["claude-code", "codex"],
        default=None,
        help="read the session files Claude Code or Codex writes, each one conversation, "
        "those changed since the last ingest only",
    )
    cmd.add_argument(
        "--conversation", metavar="ID", help="the conversation's id (default: the file's)"
    )
    cmd.add_argument("--source-instance", help="the agent it is with (default: memory config)")
    cmd.add_argument("--session", help="the client session it belongs to")
    cmd.add_argument("--run", help="the run it belongs to (a CI job, one agent invocation)")

    cmd = add(
        "status",
        _lazy("commands", "status"),
        "the daemon of this data folder: running or not (exit 3), store, episodes, LLM",
    )
    cmd.set_defaults(tolerates_config_error=True)
    add("stats", _api("stats"), "memory counts")
    add("projects", _api("projects"), "projects with their memory and episode counts")
    cmd = add("sessions", _api("sessions"), "client sessions, newest activity first", [reads])
    cmd.add_argument("--limit", type=_positive, help="sessions (1-100, default 20)")
    add_fields(cmd, shapes.SessionsQuery)
    add("costs", _api("costs"), "LLM spend of the episode engine")

    cmd = add(
        "entities",
        _api("entities"),
        "the things memories name (services, files, tickets, people), or one of them",
        [scoped],
    )
    cmd.add_argument("name", nargs="?", help="one entity (any alias): its episodes and memories")
    cmd.add_argument("--query", help="only entities whose name or an alias contains this")
    cmd.add_argument("--kind", choices=shapes.ENTITY_KINDS)
    cmd.add_argument("--limit", type=_positive, help="entities listed, or memories shown")
    add_fields(cmd, shapes.EntitiesListQuery)

    causes = sub.add_parser(
        "causes", help="what led to what: causal links between episodes and memories"
    ).add_subparsers(title="actions", metavar="ACTION", required=True)
    node_help = "episode:<id>, memory:<id>, or a bare id (a UUID is a memory)"
    for name, text in (
        ("list", "the causal links of an episode or a memory, strongest first"),
        ("path", "the shortest chain of causal links from one node to another"),
        ("add", "link a cause to its effect by hand"),
        ("remove", "remove a causal link"),
    ):
        cmd = causes.add_parser(name, help=text, description=text, parents=[scoped])
        cmd.set_defaults(handler=_api("causes"), action=name)
        if name == "list":
            cmd.add_argument("node", help=node_help)
        elif name == "path":
            cmd.add_argument("from_node", metavar="FROM", help=node_help)
            cmd.add_argument("to_node", metavar="TO", help=node_help)
        elif name == "add":
            cmd.add_argument("cause", help=node_help)
            cmd.add_argument("effect", help=node_help)
            cmd.add_argument("--note", help="why the one led to the other")
        else:
            cmd.add_argument("link_id", help="the link's id (cl-...), as listed")

    episodes = sub.add_parser("episodes", help="list and edit episodes").add_subparsers(
        title="actions", metavar="ACTION", required=True
    )

    def action(name: str, text: str, scope: bool = False) -> argparse.ArgumentParser:
        parents = [reads if scope else output]
        command = episodes.add_parser(name, help=text, description=text, parents=parents)
        command.set_defaults(handler=_api("episodes"), action=name)
        return command

    cmd = action("list", "episodes, most recently active first", scope=True)
    cmd.add_argument("--status", choices=("active", "closed", "archived"))
    cmd.add_argument("--limit", type=_positive)
    cmd.add_argument("--offset", type=_positive)
    cmd.add_argument("--outcome")
    cmd.add_argument("--tag")
    cmd.add_argument("--participant", help="a source_instance")
    add_fields(cmd, shapes.EpisodesListQuery)
    cmd = action("show", "one episode")
    cmd.add_argument("id")
    cmd.add_argument("--timeline", action="store_true", help="include the member memories")
    add_fields(cmd, shapes.EpisodeGetQuery)
    cmd = action("search", "episodes matching a query (recent ones first among equals)", scope=True)
    cmd.add_argument("query")
    cmd.add_argument("--since", metavar="TIME", help="active at or after (ISO 8601)")
    cmd.add_argument("--until", metavar="TIME", help="started at or before (ISO 8601)")
    cmd.add_argument("--status", choices=("active", "closed", "archived"))
    cmd.add_argument("--limit", type=_positive)
    add_fields(cmd, shapes.EpisodesSearchRequest)
    cmd = action("replay", "the episodes about a topic, oldest first", scope=True)
    cmd.add_argument("topic")
    cmd.add_argument("--limit", type=_positive)
    add_fields(cmd, shapes.EpisodesReplayRequest)
    cmd = action("chain", "the chain of episodes one belongs to, root first")
    cmd.add_argument("id")
    cmd = action("create", "create an episode from memories")
    cmd.add_argument("title")
    cmd.add_argument("memory_ids", nargs="+", metavar="MEMORY_ID")
    cmd.add_argument("--parent", help="the episode this one continues")
    add_fields(cmd, shapes.EpisodeCreateRequest)
    cmd = action("rename", "give an episode a new title (kept by later summaries)")
    cmd.add_argument("id", help="episode id")
    cmd.add_argument("title")
    cmd = action("merge", "merge two episodes (the one with more memories keeps its id)")
    cmd.add_argument("id", help="episode id")
    cmd.add_argument("other_id", help="the episode to merge with it")
    cmd = action("split", "move some memories of an episode into a new episode")
    cmd.add_argument("id", help="episode id")
    cmd.add_argument("memory_ids", nargs="+", metavar="MEMORY_ID")
    cmd.add_argument("--title", help="the new episode's title")
    for name, text in (
        ("add", "add a memory to an episode"),
        ("remove", "take a memory out of an episode"),
    ):
        cmd = action(name, text)
        cmd.add_argument("id", help="episode id")
        cmd.add_argument("memory_id")
    for name, text in (
        ("close", "close an episode"),
        ("regenerate", "regenerate an episode's summary"),
        ("delete", "delete an episode (its memories stay)"),
    ):
        action(name, text).add_argument("id", help="episode id")

    cmd = add("token", _lazy("tokens", "token"), "manage the API token", [common])
    cmd.add_argument("action", choices=("generate", "rotate", "show"))
    cmd.add_argument("--reveal", action="store_true", help="print the whole token")

    service = sub.add_parser("service", help="the background daemon").add_subparsers(
        title="actions", metavar="ACTION", required=True
    )
    cmd = service.add_parser("logs", help="show the daemon's log", parents=[common])
    cmd.set_defaults(handler=_lazy("service", "logs"), tolerates_config_error=True)
    cmd.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    cmd.add_argument("-n", "--lines", type=_positive, default=50, help="lines (default 50)")
    cmd.add_argument("--grep", metavar="TEXT", help="only lines containing TEXT")
    service.add_parser(
        "start", help="start the daemon in the background", parents=[common]
    ).set_defaults(handler=_lazy("service", "start"))
    service.add_parser("stop", help="stop the daemon", parents=[common]).set_defaults(
        handler=_lazy("service", "stop"), tolerates_config_error=True
    )

    cmd = add(
        "quickstart",
        _lazy("quickstart", "quickstart"),
        "start the daemon, store and recall a memory, show what is next",
        [common],
    )
    _project_option(cmd, reads=False)
    cmd = add("mcp", _lazy("service", "mcp"), "MCP server on stdio (for agent clients)", [common])
    cmd.add_argument(
        "--project",
        metavar="NAME",
        default=None,
        help="the project of tool calls that name none (default: $TRIBAL_MEMORY_PROJECT, else "
        "the git repository's or folder's name of the working directory)",
    )
    cmd.add_argument(
        "--all-projects",
        action="store_true",
        help="reads that name no project (recall, episode lists and searches) span every "
        "project; what is stored still goes to --project's",
    )
    cmd.add_argument(
        "--source-instance",
        metavar="NAME",
        default=None,
        help="who stores the memories (default: the MCP client's own name, from its "
        "clientInfo; `init` writes one per client)",
    )
    add(
        "reembed",
        _lazy("service", "reembed"),
        "recompute every vector with the configured model (daemon stopped)",
        [common],
    )
    cmd = add(
        "export",
        _lazy("portability", "export"),
        "write memories and episodes as JSON lines to standard output",
        [common],
    )
    cmd.add_argument("--since", metavar="TIME", help="memories created at or after (ISO 8601)")
    cmd.add_argument("--vectors", action="store_true", help="include each memory's vector")
    cmd.add_argument(
        "--project", metavar="NAME", default=None, help="only this project (default: all, '*')"
    )
    add_fields(cmd, shapes.ExportQuery)
    cmd.set_defaults(project_given_only=True)
    cmd = add("import", _lazy("portability", "import_"), "import an export file (by memory id)")
    cmd.add_argument(
        "file", help="a file written by `tribalmemory export` (or, with --from, a data folder)"
    )
    cmd.add_argument(
        "--from",
        dest="source",
        choices=["export", "tribalmemory-0.9"],
        default="export",
        help="what FILE is: an export (default) or a tribalmemory 0.9 data folder",
    )
    cmd.add_argument("--dry-run", action="store_true", help="check it and say what would change")
    cmd = add("backup", _lazy("portability", "backup"), "back up the data folder into DIR")
    cmd.add_argument("dir", metavar="DIR", help="a new or empty folder")
    cmd = add("restore", _lazy("portability", "restore"), "restore a backup (daemon stopped)")
    cmd.add_argument("dir", metavar="DIR", help="a folder written by `tribalmemory backup`")
    cmd.add_argument("--force", action="store_true", help="replace the data that is there")
    cmd = add(
        "doctor", _lazy("doctor", "doctor"), "check the data files (daemon stopped)", [common]
    )
    cmd.add_argument("--repair", action="store_true", help="move damaged files aside, rebuild")
    cmd = add("init", _lazy("init", "init"), "register the MCP server in agent clients", [common])
    cmd.add_argument("--claude-code", action="store_true", help="~/.claude.json")
    cmd.add_argument("--codex", action="store_true", help="~/.codex/config.toml")
    cmd.add_argument("--claude-desktop", action="store_true", help="claude_desktop_config.json")
    cmd.add_argument(
        "--project",
        dest="pin_project",
        metavar="NAME",
        default=None,
        help="the one project these clients read and store (default: Claude Code and Codex "
        "the repository they run in; Claude Desktop stores into 'default' and reads all)",
    )
    return parser


def _fail(message: str, detail: Any = None) -> None:
    """The error on stderr, then its detail: a hint as it is, a list an item a line, a mapping
    a ``key: value`` a line."""
    print(f"tribalmemory: {clean(message)}", file=sys.stderr)
    if isinstance(detail, str):
        lines = [detail] if detail else []
    elif isinstance(detail, dict):
        lines = [f"{key}: {_shown(value)}" for key, value in detail.items()]
    elif isinstance(detail, list):
        lines = [_shown(item) for item in detail]
    else:
        lines = [] if detail is None else [_shown(detail)]
    for line in lines:
        print(f"  {clean(line)}", file=sys.stderr)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _config(args: argparse.Namespace) -> Config:
    """The configuration; for commands that need only the data folder (``service stop``,
    ``service logs``, ``status``), a broken file leaves ``args.config_error`` instead."""
    args.config_error = None
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        if not getattr(args, "tolerates_config_error", False):
            raise
        args.config_error = exc
        _fail(f"configuration error: {exc}")
        return Config(data_dir=str(data_dir_of(args.config)))
    if not getattr(args, "logs_deprecations", False):  # serve logs them to its log file
        for note in config.deprecations:
            log.warning("%s", note)
    return config


FREE_TEXT = frozenset({"text", "query", "name", "topic", "title"})
"""Positional arguments that take words: the last of a command's, given more words than one
outside quotes, is what "unrecognized arguments" most often means."""


def _command_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)command's parser that ``argv`` names, e.g. ``causes add``'s."""
    current = parser
    for token in argv:
        subcommands = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if subcommands and token in subcommands[0].choices:
            current = subcommands[0].choices[token]
    return current


def _refuse_extra(
    parser: argparse.ArgumentParser, argv: list[str], args: argparse.Namespace, extra: list[str]
) -> NoReturn:
    """Exit 2 with the command's own usage (not the top level's), and, when the extra words
    follow a text given without quotes, the quoted text to type instead."""
    command = _command_parser(parser, argv)
    message = f"unrecognized arguments: {' '.join(extra)}"
    positionals = [a.dest for a in command._actions if not a.option_strings]
    last = positionals[-1] if positionals else None
    given = getattr(args, last, None) if last in FREE_TEXT else None
    if isinstance(given, str) and not any(word.startswith("-") for word in extra):
        words = shlex.quote(" ".join([given, *extra]))
        message += f"; a {last} of several words goes in quotes: {words}"
    command.error(message)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    args, extra = parser.parse_known_args(argv)
    if extra:
        _refuse_extra(parser, argv, args, extra)
    if args.handler is None:
        parser.print_help(sys.stderr)
        return 2
    previous = os.umask(0o077)  # the data folder's files are the user's alone
    try:
        return _run(args)
    finally:
        os.umask(previous)


def _choose_project(args: argparse.Namespace) -> None:
    """``--project``, else ``TRIBAL_MEMORY_PROJECT``, else the working directory's project, for
    the commands that take one (``export`` takes only what is given: default all). Reads take
    ``*`` (or ``--all-projects``): every project. ``args.project_source`` says where the
    project came from (for messages)."""
    from pathlib import Path

    from .. import projects

    if not hasattr(args, "project"):
        return
    reads = getattr(args, "project_reads", False)
    try:
        if getattr(args, "project_given_only", False):
            given = args.project  # '*' or none: every project
            every = given is None or projects.is_all(given)
            args.project = None if every else projects.normalise(given)
        elif reads and args.all_projects:
            if args.project is not None and not projects.is_all(args.project):
                raise CliError("give either --project or --all-projects, not both", 2)
            args.project, args.project_source = projects.ALL_PROJECTS, "--all-projects"
        else:
            args.project, args.project_source = projects.chosen(
                args.project, os.environ, Path.cwd(), reads=reads
            )
    except ValueError as exc:
        raise CliError(str(exc), 2) from None


def _run(args: argparse.Namespace) -> int:
    from ..embeddings import EmbeddingModelError
    from ..errors import TribalError
    from ..service.hooks import PluginError
    from ..storage.base import StorageError, StoreLockedError

    try:
        load_env()
        config = _config(args)
        _choose_project(args)
        return int(args.handler(args, config))
    except ConfigError as exc:
        _fail(f"configuration error: {exc}")
        return 2
    except StoreLockedError as exc:
        _fail(
            f"{exc}", "`tribalmemory status` shows whether a daemon answers on the configured port"
        )
        return 2
    except CliError as exc:
        _fail(exc.message)
        return exc.code
    except TribalError as exc:
        _fail(exc.message, exc.detail)
        return 1
    except (StorageError, EmbeddingModelError, PluginError) as exc:
        _fail(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (e.g. `| head`)
        return 1


def mcp_main() -> None:
    """``tribalmemory-mcp`` (the command 0.9 wrote into agents' configurations): the same as
    ``tribalmemory mcp``."""
    sys.exit(main(["mcp", *sys.argv[1:]]))


if __name__ == "__main__":
    sys.exit(main())
