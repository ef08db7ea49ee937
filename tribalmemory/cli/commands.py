"""Memory and episode commands: one TribalAPI call each, against the daemon or the store.

Each command is ``async def (api, args) -> int`` where ``api`` is a
:class:`~tribalmemory.client.DaemonClient` when a daemon answers, else the in-process
:class:`~tribalmemory.api.TribalAPI` of a runtime opened for this one command.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..client import daemon_url
from ..config import Config
from ..errors import TribalError
from ..plural import counted
from . import elsewhere, fields
from .episode_view import episode_lines
from .output import clean, indented, print_json, print_mapping, table
from .reach import our_daemon, own_runtime

Api = Any  # TribalAPI or DaemonClient: the same methods
Command = Callable[[Api, argparse.Namespace], Awaitable[int]]


async def with_api(config: Config, command: Command, args: argparse.Namespace) -> int:
    """Run ``command`` against the daemon if one answers, else against the store directly.

    Another data folder's daemon on the port is an error (``WrongDaemon``), never used.
    """
    client = our_daemon(config, args.config)
    if client is not None:
        try:
            return await command(client, args)
        finally:
            await client.aclose()
    runtime = await own_runtime(config)
    try:
        return await command(runtime.api, args)
    finally:
        await runtime.stop()


def _text_argument(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


# -- memories ---------------------------------------------------------------------------------


async def remember(api: Api, args: argparse.Namespace) -> int:
    result = await api.remember(
        _text_argument(args.text),
        source_type=args.source_type,
        source_instance=args.source_instance,
        tags=args.tag or None,
        context=args.context,
        created_at=args.created_at,
        skip_dedup=args.force or None,
        project=args.project,
        shared=args.shared or None,
        **fields.given(args),
    )
    if args.json:
        print_json(result)
    elif result["success"]:
        episode = f" (episode {result['episode_id']})" if result.get("episode_id") else ""
        print(f"Stored {result['memory_id']}{episode}")
    else:
        print(f"Not stored: {clean(result.get('error') or 'duplicate')}")
    return 0


async def recall(api: Api, args: argparse.Namespace) -> int:
    result = await api.recall(
        args.query,
        limit=args.limit,
        tags=args.tag or None,
        include_superseded=args.include_superseded or None,
        project=args.project,
        **fields.given(args),
    )
    if args.json:
        print_json(result)
        return 0
    if not result["results"]:
        print(clean(await elsewhere.hint(api, args, "memory", "memories")))
    period = result.get("period")
    if period and result["results"]:
        print(
            f"Dated {clean(period['text'])} first: memories from {period['after'][:10]} to "
            f"{period['before'][:10]} (--no-query-dates: the words alone)."
        )
    for rank, hit in enumerate(result["results"], 1):
        memory = hit["memory"]
        tags = f"  [{clean(', '.join(memory['tags']))}]" if memory["tags"] else ""
        old = f"  superseded by {memory['superseded_by']}" if memory.get("superseded_by") else ""
        print(
            f"{rank}. {hit['similarity_score']:.3f}  {memory['id']}  "
            f"{clean(memory['source_type'])}  {clean(memory['created_at'][:10])}{tags}{old}"
        )
        print(indented(memory["content"]))
    for thread in result.get("context", []):
        title = clean(thread["title"] or "(untitled)")
        print(
            f"\nThread {thread['episode_id']} ({thread['memory_count']} memories): {title}"
            + (f": {clean(thread['gist'])}" if thread["gist"] else "")
        )
    if result.get("episodes"):
        rank_of = {hit["memory_id"]: rank for rank, hit in enumerate(result["results"], 1)}
        print("\nBy episode:")
        for group in result["episodes"]:
            ranks = ", ".join(str(rank_of[m]) for m in group["memory_ids"])
            title = clean(group["title"] or "(untitled)")
            print(f"  {group['similarity_score']:.3f}  {group['episode_id']}  {title}: {ranks}")
    return 0


async def used(api: Api, args: argparse.Namespace) -> int:
    result = await api.memory_used(args.id)
    if args.json:
        print_json(result)
    else:
        r = result["retrievability"]
        shown = "unknown" if r is None else f"{r:.2f}"
        accessed = counted(result["access_count"], "time")
        print(f"Marked {result['memory_id']} used: accessed {accessed}, retrievability {shown}")
    return 0


async def forget(api: Api, args: argparse.Namespace) -> int:
    result = await api.forget(args.id)
    if args.json:
        print_json(result)
    else:
        print(f"Forgot {result['memory_id']}")
    return 0


async def correct(api: Api, args: argparse.Namespace) -> int:
    result = await api.correct(
        args.id,
        _text_argument(args.text),
        source_instance=args.source_instance,
        tags=args.tag or None,
        context=args.context,
        **fields.given(args),
    )
    if args.json:
        print_json(result)
    else:
        episode = f" (episode {result['episode_id']})" if result.get("episode_id") else ""
        print(f"Stored correction {result['memory_id']}{episode}; {clean(args.id)} is superseded")
    return 0


async def stats(api: Api, args: argparse.Namespace) -> int:
    result = await api.stats()
    print_json(result) if args.json else print_mapping(result)
    return 0


async def projects(api: Api, args: argparse.Namespace) -> int:
    result = await api.projects()
    if args.json:
        print_json(result)
        return 0
    if not result["projects"]:
        print("No projects yet.")
        return 0
    rows = [
        [
            p["name"],
            p["memories"],
            p["shared_memories"],
            p["episodes"],
            (p["last_activity_at"] or "")[:16],
        ]
        for p in result["projects"]
    ]
    print(table(["PROJECT", "MEMORIES", "SHARED", "EPISODES", "LAST ACTIVE"], rows))
    return 0


async def sessions(api: Api, args: argparse.Namespace) -> int:
    result = await api.sessions(limit=args.limit, project=args.project, **fields.given(args))
    if args.json:
        print_json(result)
        return 0
    if not result["sessions"]:
        print("No sessions: no memory stored here names one (remember with a session).")
        return 0
    rows = [
        [
            clean(s["session"]),
            clean(s["project"]),
            clean(", ".join(s["source_instances"])),
            s["memory_count"],
            len(s["episode_ids"]),
            s["last_memory_at"][:16],
        ]
        for s in result["sessions"]
    ]
    print(table(["SESSION", "PROJECT", "AGENTS", "MEMORIES", "EPISODES", "LAST ACTIVE"], rows))
    if result["next_cursor"]:
        print(f"more: --cursor {result['next_cursor']}")
    return 0


LLM_CHECK_SECONDS = 20.0  # the first check imports litellm: seconds on a busy machine


async def after_llm_check(read: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """``read()`` (an answer with ``llm``) once the LLM's first check is done, its state no
    longer ``starting``, or after :data:`LLM_CHECK_SECONDS`."""
    result = await read()
    deadline = time.monotonic() + LLM_CHECK_SECONDS
    while (result.get("llm") or {}).get("state") == "starting" and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        result = await read()
    return result


async def costs(api: Api, args: argparse.Namespace) -> int:
    """The month's spend and the LLM's state; a store opened here (no daemon) waits for its
    first check of the LLM instead of printing ``starting``."""
    result = await after_llm_check(api.episode_costs)
    print_json(result) if args.json else print_mapping(result)
    return 0


def status(args: argparse.Namespace, config: Config) -> int:
    """Which daemon serves this data folder, and everything its health shows this client.

    Exit 0 when it runs, 3 when nothing answers on its port, 2 with a configuration error
    (then only the pid file can tell whether a daemon runs), 1 when another data folder's
    daemon holds the port (raised as ``WrongDaemon``).
    """
    if args.config_error is not None:
        from .service import running_pid

        pid = running_pid(config)
        state = f"running (pid {pid})" if pid else "not running"
        print(f"daemon: {state} for the data folder {config.data_path} (from its pid file)")
        print("fix the configuration file; `tribalmemory service stop` works meanwhile")
        return 2
    url = daemon_url(config)
    client = our_daemon(config, args.config)
    if client is None:
        from .service import running_pid

        pid = running_pid(config)
        held = port_held(config)
        daemon = {"running": False, "url": url, "data_dir": str(config.data_path)}
        if args.json:
            print_json({"daemon": {**daemon, "pid": pid, "port_held": held}})
        elif pid is not None:
            print(
                f"daemon: its process runs (pid {pid}, from the pid file of {config.data_path}) "
                f"but does not answer at {url}: started with another --port, still starting, "
                "or stuck"
            )
            print("`tribalmemory service logs` shows what it does; `tribalmemory service stop`")
        elif held:
            print(f"daemon: not running; something that is not a Tribal Memory daemon holds {url}")
            print("stop that program, or set server.port to a free port")
        else:
            print(f"daemon: not running (nothing answers at {url}; data folder {config.data_path})")
            given = getattr(args, "config", None)  # the same data folder's daemon, as typed
            extra = f" --config {shlex.quote(str(Path(given).resolve()))}" if given else ""
            start, serve = f"tribalmemory service start{extra}", f"tribalmemory serve{extra}"
            print(f"start it with `{start}` (or `{serve}`)")
        return 3
    return asyncio.run(_running_status(client, args, url))


def port_held(config: Config, timeout: float = 0.5) -> bool:
    """Whether something accepts connections on the daemon's host and port."""
    import socket

    try:
        with socket.create_connection((config.server.host, config.server.port), timeout):
            return True
    except OSError:
        return False


async def _running_status(client: Any, args: argparse.Namespace, url: str) -> int:
    try:
        health = client.health()
        try:
            counts: dict[str, Any] = await client.stats()
        except TribalError as exc:
            counts = {"error": exc.message}
    finally:
        await client.aclose()
    daemon = {"running": True, "url": url}
    if args.json:
        print_json({"daemon": daemon, "health": health, "stats": counts})
        return 0
    print(f"daemon: running at {url}")
    print_mapping(health)
    print_mapping({"stats": counts})
    return 0


# -- entities ---------------------------------------------------------------------------------


async def entities(api: Api, args: argparse.Namespace) -> int:
    """``entities``: the project's entities, or one (``NAME``) with its episodes and memories."""
    if args.name is not None:
        found = await api.entity_get(args.name, limit=args.limit, project=args.project)
        print_json(found) if args.json else print_entity(found)
        return 0
    result = await api.entities_list(
        query=args.query,
        kind=args.kind,
        limit=args.limit,
        project=args.project,
        **fields.given(args),
    )
    if args.json:
        print_json(result)
    elif not result["entities"]:
        print(f"No entities in project {result['project']}.")
    else:
        rows = [
            [
                e["name"] + (" (doubted)" if e["doubted"] else ""),
                e["kind"],
                e["mentions"],
                e["last_seen_at"][:16],
                ", ".join(e["aliases"]),
            ]
            for e in result["entities"]
        ]
        print(table(["ENTITY", "KIND", "MENTIONS", "LAST SEEN", "ALIASES"], rows))
    return 0


def print_entity(found: dict[str, Any]) -> None:
    entity = found["entity"]
    print(f"{entity['name']} ({entity['kind']}): {counted(entity['mentions'], 'memory')}")
    if entity["kind"] == "written":
        print("no entity is stored under this name: the memories that write it word for word")
    print(f"aliases: {', '.join(entity['aliases'])}")
    if found["also_written_as"]:
        written = ", ".join(found["also_written_as"])
        print(f"also written as: {written} ({counted(found['memory_count'], 'memory')} in all)")
    print(f"seen: {entity['first_seen_at'][:16]} .. {entity['last_seen_at'][:16]}")
    if found["episodes"]:
        rows = [
            [e["episode_id"], e["mentions"], e["last_mention_at"][:16], e["title"]]
            for e in found["episodes"]
        ]
        print(table(["EPISODE", "MENTIONS", "LAST", "TITLE"], rows))
    for memory in found["memories"]:
        print(f"- {memory['memory_id']} {memory['created_at'][:16]}")
        print(indented(memory["content"]))
    if found["co_occurring"]:
        named = ", ".join(f"{c['name']} ({c['mentions']})" for c in found["co_occurring"])
        print(f"named with: {named}")


# -- causes -----------------------------------------------------------------------------------


async def causes(api: Api, args: argparse.Namespace) -> int:
    """``causes list|path|add|remove``: causal links between episodes and memories."""
    project = args.project
    if args.action == "list":
        found = await api.causes_list(args.node, project=project)
        if args.json:
            print_json(found)
        elif not found["links"]:
            print(f"No causal links of {found['node']}.")
        else:
            print(table(LINK_HEADERS, [link_row(link) for link in found["links"]]))
    elif args.action == "path":
        found = await api.causal_path(args.from_node, args.to_node, project=project)
        print_json(found) if args.json else print_path(found)
    elif args.action == "add":
        added = await api.cause_add(args.cause, args.effect, note=args.note, project=project)
        print_json(added) if args.json else print(f"Linked: {added['link']['id']}")
    else:
        await api.cause_remove(args.link_id, project=project)
        print_json({"success": True}) if args.json else print(f"Removed {args.link_id}.")
    return 0


LINK_HEADERS = ["LINK", "CAUSE", "EFFECT", "CONFIDENCE", "SOURCE", "NOTE"]


def link_row(link: dict[str, Any]) -> list[Any]:
    return [
        link["id"],
        link["cause"],
        link["effect"],
        link["confidence"],
        link["source"],
        link["note"],
    ]


def print_path(found: dict[str, Any]) -> None:
    if found["path"] is None:
        print(f"No causal path: {found['reason']}.")
        return
    print(f"{found['from_node']} -> {found['to_node']} (confidence {found['confidence']})")
    for step in found["path"]:
        via = f"{step['relation']}, {step['source']} {step['confidence']}"
        print(f"  {step['cause']} -> {step['effect']} ({via})")


# -- episodes ---------------------------------------------------------------------------------


async def episodes_list(api: Api, args: argparse.Namespace) -> int:
    result = await api.episodes_list(
        status=args.status,
        limit=args.limit,
        offset=args.offset,
        outcome=args.outcome,
        tag=args.tag,
        participant=args.participant,
        project=args.project,
        **fields.given(args),
    )
    return await show_episodes(api, args, result)


async def show_episodes(api: Api, args: argparse.Namespace, result: dict[str, Any]) -> int:
    """A list or search's episodes; none found, what the project holds and where others are."""
    if not args.json and not result["episodes"]:
        print(clean(await elsewhere.hint(api, args, "episode", "episodes")))
        return 0
    print_json(result) if args.json else print_episodes(result["episodes"])
    return 0


def print_episodes(episodes: list[dict[str, Any]]) -> None:
    if not episodes:
        print("No episodes.")
        return
    rows = [
        [
            e.get("id"),
            e.get("status"),
            e.get("memory_count"),
            (e.get("last_activity_at") or e.get("updated_at") or "")[:16],
            e.get("title"),
        ]
        for e in episodes
    ]
    head = ["ID", "STATUS", "MEMORIES", "LAST ACTIVE", "TITLE"]
    if any(e.get("entities") is not None for e in episodes):  # --include-entities
        head.append("ENTITIES")
        for row, e in zip(rows, episodes, strict=True):
            row.append(clean(", ".join(n["name"] for n in e.get("entities") or [])))
    print(table(head, rows))


async def episodes_search(api: Api, args: argparse.Namespace) -> int:
    result = await api.episodes_search(
        args.query,
        time_start=args.since,
        time_end=args.until,
        status=args.status,
        limit=args.limit,
        project=args.project,
        **fields.given(args),
    )
    return await show_episodes(api, args, result)


async def episodes_replay(api: Api, args: argparse.Namespace) -> int:
    result = await api.episodes_replay(
        args.topic, limit=args.limit, project=args.project, **fields.given(args)
    )
    print_json(result) if args.json else print(clean(result["text"]))
    return 0


async def episodes_chain(api: Api, args: argparse.Namespace) -> int:
    result = await api.episode_chain(args.id)
    print_json(result) if args.json else print_episodes(result["chain"])
    return 0


async def episodes_show(api: Api, args: argparse.Namespace) -> int:
    result = await api.episode_get(
        args.id, include_timeline=args.timeline or None, **fields.given(args)
    )
    if args.json:
        print_json(result)
    else:
        print("\n".join(episode_lines(result)))
    return 0


async def episodes_create(api: Api, args: argparse.Namespace) -> int:
    result = await api.episode_create(
        args.title, args.memory_ids, parent_episode_id=args.parent, **fields.given(args)
    )
    if args.json:
        print_json(result)
    else:
        print(
            f"Created {clean(result['episode_id'])} with "
            f"{counted(result['memory_count'], 'memory')}"
        )
    return 0


async def episodes_rename(api: Api, args: argparse.Namespace) -> int:
    result = await api.episode_update(args.id, title=args.title)
    if args.json:
        print_json(result)
    else:
        print(f"Renamed {clean(args.id)}: {clean(result['episode']['title'])}")
    return 0


async def episodes_merge(api: Api, args: argparse.Namespace) -> int:
    result = await api.episode_merge(args.id, args.other_id)
    if args.json:
        print_json(result)
    else:
        print(
            f"Merged {clean(result['absorbed_id'])} into {clean(result['episode_id'])} "
            f"({counted(result['memory_count'], 'memory')})"
        )
    return 0


async def episodes_split(api: Api, args: argparse.Namespace) -> int:
    result = await api.episode_split(args.id, args.memory_ids, title=args.title)
    if args.json:
        print_json(result)
    else:
        print(
            f"Split {counted(result['memory_count'], 'memory')} of {clean(args.id)} into "
            f"{clean(result['episode_id'])}"
        )
    return 0


def simple(method: str, done: str) -> Command:
    """A command that calls ``api.<method>(id[, memory_id])`` and says ``done``."""

    async def run(api: Api, args: argparse.Namespace) -> int:
        ids = [args.id] + ([args.memory_id] if getattr(args, "memory_id", None) else [])
        result = await getattr(api, method)(*ids)
        print_json(result) if args.json else print(clean(done.format(*ids)))
        return 0

    return run


async def episodes_add(api: Api, args: argparse.Namespace) -> int:
    result = await api.episode_add(args.id, args.memory_id)
    if args.json:
        print_json(result)
    elif not result["added"]:
        print(clean(f"{args.memory_id} was in {args.id} already; nothing changed"))
    elif result["moved_from"]:
        print(clean(f"Moved {args.memory_id} from {result['moved_from']} to {args.id}"))
    else:
        print(clean(f"Added {args.memory_id} to {args.id}"))
    return 0


EPISODE_ACTIONS: dict[str, Command] = {
    "list": episodes_list,
    "show": episodes_show,
    "create": episodes_create,
    "search": episodes_search,
    "replay": episodes_replay,
    "chain": episodes_chain,
    "rename": episodes_rename,
    "merge": episodes_merge,
    "split": episodes_split,
    "add": episodes_add,
    "remove": simple("episode_remove", "Removed {1} from {0}"),
    "close": simple("episode_close", "Closed {0}"),
    "regenerate": simple("episode_regenerate", "Queued a full summary regeneration of {0}"),
    "delete": simple("episode_delete", "Deleted {0} (its memories are kept)"),
}
