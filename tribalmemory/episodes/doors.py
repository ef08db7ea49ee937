"""What to do after an error, at every door: how an action is called as an MCP tool, an HTTP
route and a command. The engine's errors say what to do in words and carry this as their
detail (the agent's "What to do", the CLI's second line, the HTTP answer's ``detail``).
tests/test_surface.py checks each door against the route table, the tools and the CLI."""

from __future__ import annotations

from typing import NamedTuple


class Door(NamedTuple):
    operation: str  # TribalAPI's method, the route table's name
    tool: str
    route: str
    command: str = ""  # none: the CLI has no command for it
    note: str = ""  # said after the tool and the route, e.g. which field to send


DOORS = {
    "regenerate": Door(
        "episode_regenerate",
        "tribal_episode_regenerate",
        "POST /v1/episodes/{episode_id}/regenerate",
        "tribalmemory episodes regenerate {episode_id}",
    ),
    "delete": Door(
        "episode_delete",
        "tribal_episode_delete",
        "DELETE /v1/episodes/{episode_id}",
        "tribalmemory episodes delete {episode_id}",
    ),
    "update": Door(
        "episode_update",
        "tribal_episode_update",
        "PATCH /v1/episodes/{episode_id}",
        note="structured",
    ),
    "list the entities": Door(
        "entities_list", "tribal_entities", "GET /v1/entities", "tribalmemory entities"
    ),
    "list the causal links": Door(
        "causes_list", "tribal_causes", "GET /v1/causes", "tribalmemory causes list"
    ),
}


def doors(*actions: str, **ids: str) -> str:
    """``regenerate: tribal_episode_regenerate, POST /v1/episodes/ep-1/regenerate, ...`` for
    each of ``actions`` (keys of :data:`DOORS`), their ``{episode_id}`` filled from ``ids``."""
    parts = []
    for action in actions:
        door = DOORS[action]
        note = f" ({door.note})" if door.note else ""
        ways = [door.tool + note, door.route.format(**ids) + note]
        if door.command:
            ways.append(door.command.format(**ids))
        parts.append(f"{action}: " + ", ".join(ways))
    return "; ".join(parts)
